/* tests/support/files.h — builders of the files the model loader reads, for the cmocka tests of
 * model/ (test_safetensors.c, test_dtype_npy.c, test_config.c, test_loader.c): a fresh temporary
 * folder per test, paths in it, raw bytes, safetensors files (well-formed or with a chosen header)
 * and a tiny config.json. Failures are cmocka assertions. Include after <cmocka.h>. */
#ifndef LLM_TESTS_SUPPORT_FILES_H
#define LLM_TESTS_SUPPORT_FILES_H

#include <stddef.h>
#include <stdint.h>

/* cmocka setup / teardown: *state = a fresh folder under /tmp (char *); removed with its
 * contents afterwards. */
int ts_make_tmpdir(void **state);
int ts_remove_tmpdir(void **state);

/* dir/name in a static ring of 8 buffers (a test needs a few paths at once). */
const char *ts_at(const char *dir, const char *name);

/* path = bytes[0..n) / the text. */
void ts_write_bytes(const char *path, const void *bytes, size_t n);
void ts_write_text(const char *path, const char *text);

/* A safetensors file with an explicit header-length field, header text and data bytes. */
void ts_write_st_raw(const char *path, uint64_t hlen_field, const char *header, const void *data,
                     size_t data_len);

/* header + data_len zero bytes, with the correct header length. */
void ts_write_st_header(const char *path, const char *header, size_t data_len);

/* A tensor for ts_write_st_tensors. */
typedef struct {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[4];
    const void *data;        /* product(shape) * dtype size bytes */
} ts_tdesc;

/* Bytes of t's data: product(shape) × 4 (F32) or 2 (F16, BF16). */
size_t ts_tdesc_bytes(const ts_tdesc *t);

/* A well-formed safetensors file holding tensors t[0..n) packed in order, with metadata and
 * the header padded to 8 bytes as the reference writer does. */
void ts_write_st_tensors(const char *path, const ts_tdesc *t, int n);

/* The fields of a tiny LLaMA config: hidden 8, intermediate 16, 2 layers, 2 heads, 1 KV head,
 * vocabulary 10. */
extern const char *const TS_TINY_CONFIG_FIELDS;

/* Writes DIR/config.json = { TS_TINY_CONFIG_FIELDS, extra } and returns its path (ts_at). */
const char *ts_write_config(const char *dir, const char *extra);

#endif
