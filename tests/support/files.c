/* files.c — the file builders of tests/support/files.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/files.h"

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

int ts_make_tmpdir(void **state) {
    char *dir = strdup("/tmp/test_model_files.XXXXXX");
    if (!dir || !mkdtemp(dir)) return -1;
    *state = dir;
    return 0;
}

int ts_remove_tmpdir(void **state) {
    nftw(*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(*state);
    return 0;
}

/* dir/name into a static ring of buffers (a test needs a few paths at once). */
const char *ts_at(const char *dir, const char *name) {
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

void ts_write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (n) assert_int_equal(fwrite(bytes, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

void ts_write_text(const char *path, const char *text) { ts_write_bytes(path, text, strlen(text)); }

/* A safetensors file with an explicit header-length field, header text and data bytes. */
void ts_write_st_raw(const char *path, uint64_t hlen_field, const char *header,
                     const void *data, size_t data_len) {
    size_t hlen = strlen(header);
    unsigned char *buf = calloc(1, 8 + hlen + data_len + 1);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen_field >> (8 * i));
    memcpy(buf + 8, header, hlen);
    if (data_len) memcpy(buf + 8 + hlen, data, data_len);
    ts_write_bytes(path, buf, 8 + hlen + data_len);
    free(buf);
}

/* header + data_len zero bytes, with the correct header length. */
void ts_write_st_header(const char *path, const char *header, size_t data_len) {
    void *zeros = calloc(1, data_len + 1);
    ts_write_st_raw(path, strlen(header), header, zeros, data_len);
    free(zeros);
}


static size_t dtype_bytes(const char *dt) { return strcmp(dt, "F32") == 0 ? 4 : 2; }

size_t ts_tdesc_bytes(const ts_tdesc *t) {
    size_t n = dtype_bytes(t->dtype);
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

/* A well-formed safetensors file holding tensors t[0..n) packed in order, with metadata and
 * the header padded to 8 bytes as the reference writer does. */
void ts_write_st_tensors(const char *path, const ts_tdesc *t, int n) {
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(root, t[i].name);
        cJSON_AddStringToObject(e, "dtype", t[i].dtype);
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t[i].ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        cJSON *offs = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += ts_tdesc_bytes(&t[i]);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    size_t hlen = strlen(json), padded = (hlen + 7) / 8 * 8;
    char *header = malloc(padded + 1);
    memcpy(header, json, hlen);
    memset(header + hlen, ' ', padded - hlen);
    header[padded] = 0;
    free(json);
    unsigned char *data = malloc(off + 1);
    size_t pos = 0;
    for (int i = 0; i < n; i++) {
        memcpy(data + pos, t[i].data, ts_tdesc_bytes(&t[i]));
        pos += ts_tdesc_bytes(&t[i]);
    }
    ts_write_st_raw(path, padded, header, data, off);
    free(data);
    free(header);
}


const char *const TS_TINY_CONFIG_FIELDS =
    "\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
    "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"vocab_size\": 10";

/* Writes DIR/config.json = { TS_TINY_CONFIG_FIELDS, extra } and returns its path. */
const char *ts_write_config(const char *dir, const char *extra) {
    char json[2048];
    snprintf(json, sizeof json, "{%s%s%s}", TS_TINY_CONFIG_FIELDS, extra && *extra ? ", " : "", extra ? extra : "");
    const char *path = ts_at(dir, "config.json");
    ts_write_text(path, json);
    return path;
}
