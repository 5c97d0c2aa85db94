/* Tests for model/: config.json, safetensors, model folders, dtype conversions, npy. Small
 * files are built from C in a fresh temporary directory per test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"

/* ------------------------------------------------------------------------ helpers */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static int make_tmpdir(void **state) {
    char *dir = strdup("/tmp/test_loader.XXXXXX");
    if (!dir || !mkdtemp(dir)) return -1;
    *state = dir;
    return 0;
}

static int remove_tmpdir(void **state) {
    nftw(*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(*state);
    return 0;
}

/* dir/name into a static ring of buffers (a test needs a few paths at once). */
static const char *at(const char *dir, const char *name) {
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

static void write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (n) assert_int_equal(fwrite(bytes, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

static void write_text(const char *path, const char *text) { write_bytes(path, text, strlen(text)); }

/* A safetensors file with an explicit header-length field, header text and data bytes. */
static void write_st_raw(const char *path, uint64_t hlen_field, const char *header,
                         const void *data, size_t data_len) {
    size_t hlen = strlen(header);
    unsigned char *buf = calloc(1, 8 + hlen + data_len + 1);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen_field >> (8 * i));
    memcpy(buf + 8, header, hlen);
    if (data_len) memcpy(buf + 8 + hlen, data, data_len);
    write_bytes(path, buf, 8 + hlen + data_len);
    free(buf);
}

/* header + data_len zero bytes, with the correct header length. */
static void write_st_header(const char *path, const char *header, size_t data_len) {
    void *zeros = calloc(1, data_len + 1);
    write_st_raw(path, strlen(header), header, zeros, data_len);
    free(zeros);
}

typedef struct {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[4];
    const void *data;        /* product(shape) * dtype size bytes */
} tdesc;

static size_t dtype_bytes(const char *dt) { return strcmp(dt, "F32") == 0 ? 4 : 2; }

static size_t tdesc_bytes(const tdesc *t) {
    size_t n = dtype_bytes(t->dtype);
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

/* A well-formed safetensors file holding tensors t[0..n) packed in order, with metadata and
 * the header padded to 8 bytes as the reference writer does. */
static void write_st_tensors(const char *path, const tdesc *t, int n) {
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
        off += tdesc_bytes(&t[i]);
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
        memcpy(data + pos, t[i].data, tdesc_bytes(&t[i]));
        pos += tdesc_bytes(&t[i]);
    }
    write_st_raw(path, padded, header, data, off);
    free(data);
    free(header);
}

/* Expects st_open(path) to fail with every `want` substring in the message. */
static void expect_st_error(const char *path, const char *want1, const char *want2) {
    st_file f;
    char err[LLM_ERR_LEN] = "";
    assert_int_equal(st_open(path, &f, err, sizeof err), -1);
    assert_null(f.map);
    assert_null(f.tensors);
    assert_non_null(strstr(err, path));
    if (want1 && !strstr(err, want1)) fail_msg("error \"%s\" lacks \"%s\"", err, want1);
    if (want2 && !strstr(err, want2)) fail_msg("error \"%s\" lacks \"%s\"", err, want2);
}

/* --------------------------------------------------------------- safetensors: valid */

static void test_safetensors_f32_round_trip(void **state) {
    const char *path = at(*state, "a.safetensors");
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1.5f, 0.25f, 1e30f};
    tdesc t[] = {{"weight.a", "F32", 2, {2, 3}, a}, {"bias", "F32", 1, {3}, b}};
    write_st_tensors(path, t, 2);
    st_file f;
    char err[LLM_ERR_LEN];
    assert_int_equal(st_open(path, &f, err, sizeof err), 0);
    assert_int_equal(f.n_tensors, 2);                 /* __metadata__ skipped */
    const st_tensor *ta = st_find(&f, "weight.a"), *tb = st_find(&f, "bias");
    assert_non_null(ta);
    assert_non_null(tb);
    assert_int_equal(ta->dtype, DT_F32);
    assert_int_equal(ta->ndim, 2);
    assert_int_equal(ta->shape[0], 2);
    assert_int_equal(ta->shape[1], 3);
    assert_int_equal(ta->nbytes, sizeof a);
    assert_memory_equal(ta->data, a, sizeof a);
    assert_int_equal(tb->ndim, 1);
    assert_memory_equal(tb->data, b, sizeof b);
    assert_null(st_find(&f, "__metadata__"));
    assert_null(st_find(&f, "weight"));
    assert_null(st_find(&f, "zzz"));
    st_close(&f);
    assert_null(f.map);
    st_close(&f);                                     /* twice is harmless */
}

static void test_safetensors_f16_and_bf16_round_trip(void **state) {
    const char *path = at(*state, "h.safetensors");
    uint16_t h[4] = {0x3c00, 0xc000, 0x7bff, 0x0001}, bf[2] = {0x3f80, 0xc000};
    float s = 7;
    tdesc t[] = {{"h", "F16", 2, {2, 2}, h}, {"b", "BF16", 1, {2}, bf}, {"scalar", "F32", 0, {0}, &s}};
    write_st_tensors(path, t, 3);
    st_file f;
    char err[LLM_ERR_LEN];
    assert_int_equal(st_open(path, &f, err, sizeof err), 0);
    const st_tensor *th = st_find(&f, "h"), *tb = st_find(&f, "b"), *ts = st_find(&f, "scalar");
    assert_non_null(th);
    assert_non_null(tb);
    assert_non_null(ts);
    assert_int_equal(th->dtype, DT_F16);
    assert_int_equal(tb->dtype, DT_BF16);
    assert_int_equal(ts->ndim, 0);
    assert_int_equal(ts->nbytes, 4);
    assert_memory_equal(th->data, h, sizeof h);
    assert_memory_equal(tb->data, bf, sizeof bf);
    assert_true(f16_to_f32(((const uint16_t *)th->data)[2]) == 65504.0f);
    assert_true(bf16_to_f32(((const uint16_t *)tb->data)[1]) == -2.0f);
    st_close(&f);
}

static void test_safetensors_finds_every_name_among_many(void **state) {
    const char *path = at(*state, "many.safetensors");
    enum { N = 50 };
    tdesc t[N];
    char names[N][32];
    float vals[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "t.%d", (i * 37) % N);   /* unsorted in the file */
        vals[i] = (float)i;
        t[i] = (tdesc){names[i], "F32", 1, {1}, &vals[i]};
    }
    write_st_tensors(path, t, N);
    st_file f;
    char err[LLM_ERR_LEN];
    assert_int_equal(st_open(path, &f, err, sizeof err), 0);
    for (int i = 0; i < N; i++) {
        const st_tensor *x = st_find(&f, names[i]);
        assert_non_null(x);
        assert_true(*(const float *)x->data == vals[i]);
    }
    assert_null(st_find(&f, "t."));
    assert_null(st_find(&f, "t.50"));
    st_close(&f);
}

static void test_safetensors_accepts_empty_header_and_space_padding(void **state) {
    const char *path = at(*state, "e.safetensors");
    write_st_header(path, "{}      ", 0);
    st_file f;
    char err[LLM_ERR_LEN];
    assert_int_equal(st_open(path, &f, err, sizeof err), 0);
    assert_int_equal(f.n_tensors, 0);
    assert_null(st_find(&f, "x"));
    st_close(&f);
}

static void test_st_close_is_safe_on_zeroed_struct(void **state) {
    st_file f;
    memset(&f, 0, sizeof f);
    st_close(&f);
    st_close(NULL);
}

static void test_dtype_size_and_name(void **state) {
    assert_int_equal(dtype_size(DT_F32), 4);
    assert_int_equal(dtype_size(DT_F16), 2);
    assert_int_equal(dtype_size(DT_BF16), 2);
    assert_string_equal(dtype_name(DT_F32), "F32");
    assert_string_equal(dtype_name(DT_F16), "F16");
    assert_string_equal(dtype_name(DT_BF16), "BF16");
}

/* ------------------------------------------------------------- safetensors: malformed */

static void test_safetensors_rejects_missing_file(void **state) {
    expect_st_error(at(*state, "nope.safetensors"), "cannot open", NULL);
}

static void test_safetensors_rejects_file_shorter_than_8_bytes(void **state) {
    const char *path = at(*state, "short.safetensors");
    write_bytes(path, "\x10\0\0", 3);
    expect_st_error(path, "too short", NULL);
    write_bytes(path, "", 0);
    expect_st_error(path, "too short", NULL);
}

static void test_safetensors_rejects_truncated_data(void **state) {
    const char *path = at(*state, "trunc.safetensors");
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 12);
    expect_st_error(path, "w: data_offsets", "outside");
}

static void test_safetensors_rejects_garbage(void **state) {
    const char *path = at(*state, "garbage.safetensors");
    unsigned char junk[4096];
    srand(1234);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)rand();
    write_bytes(path, junk, sizeof junk);
    expect_st_error(path, NULL, NULL);
    junk[0] = 100; memset(junk + 1, 0, 7);              /* plausible length, garbage JSON */
    write_bytes(path, junk, sizeof junk);
    expect_st_error(path, "malformed JSON", NULL);
}

static void test_safetensors_rejects_header_length_past_eof(void **state) {
    const char *path = at(*state, "past.safetensors");
    write_st_raw(path, 1000, "{}", NULL, 0);
    expect_st_error(path, "header length 1000", "past the end");
    write_st_raw(path, UINT64_MAX, "{}", NULL, 0);    /* must not overflow 8 + len */
    expect_st_error(path, "header length", NULL);
}

static void test_safetensors_rejects_huge_header_length(void **state) {
    const char *path = at(*state, "huge.safetensors");
    write_st_raw(path, (uint64_t)200 << 20, "{}", NULL, 0);
    expect_st_error(path, "larger than", NULL);
}

static void test_safetensors_rejects_malformed_json(void **state) {
    const char *path = at(*state, "bad.safetensors");
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4);
    expect_st_error(path, "malformed JSON", NULL);
    write_st_header(path, "{} trailing", 0);
    expect_st_error(path, "malformed JSON", NULL);
    write_st_header(path, "[1, 2]", 0);
    expect_st_error(path, "not a JSON object", NULL);
    write_st_header(path, "", 0);
    expect_st_error(path, "malformed JSON", NULL);
}

static void test_safetensors_rejects_offsets_outside_buffer(void **state) {
    const char *path = at(*state, "out.safetensors");
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 8);
    expect_st_error(path, "w: data_offsets [8, 16] outside the data buffer of 8 bytes", NULL);
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8);
    expect_st_error(path, "w: data_offsets [8, 0]", NULL);
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8);
    expect_st_error(path, "w: data_offsets must be", NULL);
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,1e300]}}", 8);
    expect_st_error(path, "w: data_offsets must be", NULL);
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 8);
    expect_st_error(path, "w: data_offsets must be", NULL);
}

static void test_safetensors_rejects_overlapping_offsets(void **state) {
    const char *path = at(*state, "overlap.safetensors");
    write_st_header(path,
                    "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]},"
                    "\"c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 32);
    expect_st_error(path, "overlaps", NULL);
    write_st_header(path,
                    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8);
    expect_st_error(path, "overlaps", NULL);
}

static void test_safetensors_rejects_size_not_matching_shape(void **state) {
    const char *path = at(*state, "size.safetensors");
    write_st_header(path, "{\"w\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24);
    expect_st_error(path, "w: data_offsets span 24 bytes, shape [2, 3] of F16 needs 12", NULL);
}

static void test_safetensors_rejects_shape_product_overflow(void **state) {
    const char *path = at(*state, "ovf.safetensors");
    /* 2^32 * 2^32 elements wraps to 0 in 64 bits; must not be taken for an empty tensor */
    write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0);
    expect_st_error(path, "w: shape [4294967296, 4294967296] is too large", NULL);
    write_st_header(path, "{\"w\":{\"dtype\":\"F16\",\"shape\":[1125899906842624,1024,8],\"data_offsets\":[0,0]}}", 0);
    expect_st_error(path, "w: shape", "too large");      /* elements fit, bytes wrap to 0 */
}

static void test_safetensors_rejects_unknown_dtype(void **state) {
    const char *path = at(*state, "dt.safetensors");
    write_st_header(path, "{\"tok\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4);
    expect_st_error(path, "tok", "I8");
    write_st_header(path, "{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8);
    expect_st_error(path, "x: unsupported dtype F64", NULL);
    write_st_header(path, "{\"x\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    expect_st_error(path, "x: missing dtype", NULL);
}

static void test_safetensors_rejects_bad_entries(void **state) {
    const char *path = at(*state, "entries.safetensors");
    static const struct { const char *header, *want; } cases[] = {
        {"{\"w\":[1,2]}", "w: entry is not an object"},
        {"{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", "w: missing dtype"},
        {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", "w: missing shape"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", "w: data_offsets must be"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "w: shape[0]"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", "w: shape[0]"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", "w: shape[0]"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", "w: 5 dimensions"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "w: duplicate tensor"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st_header(path, cases[i].header, 8);
        expect_st_error(path, cases[i].want, NULL);
    }
}

static void test_safetensors_rejects_tensor_name_of_256_chars(void **state) {
    const char *path = at(*state, "long.safetensors");
    char name[257], header[512];
    memset(name, 'n', 256);
    name[256] = 0;
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    write_st_header(path, header, 4);
    expect_st_error(path, "name longer than 255", NULL);
    name[255] = 0;                                     /* 255 chars fit */
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    write_st_header(path, header, 4);
    st_file f;
    char err[LLM_ERR_LEN];
    assert_int_equal(st_open(path, &f, err, sizeof err), 0);
    assert_non_null(st_find(&f, name));
    st_close(&f);
}

/* Every truncation and many random byte corruptions of a valid file: st_open either succeeds
 * with tensors inside the file or fails cleanly (valgrind/ASan catch stray reads). */
static void test_safetensors_corrupted_files_never_crash(void **state) {
    const char *good = at(*state, "good.safetensors"), *bad = at(*state, "bad.safetensors");
    float a[6] = {1, 2, 3, 4, 5, 6};
    uint16_t h[2] = {1, 2};
    tdesc t[] = {{"a", "F32", 2, {2, 3}, a}, {"h", "BF16", 1, {2}, h}};
    write_st_tensors(good, t, 2);
    FILE *fp = fopen(good, "rb");
    assert_non_null(fp);
    unsigned char buf[512];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    assert_true(n > 8 && n < sizeof buf);
    char err[LLM_ERR_LEN];
    st_file f;
    for (size_t len = 0; len < n; len++) {
        write_bytes(bad, buf, len);
        assert_int_equal(st_open(bad, &f, err, sizeof err), -1);
    }
    srand(42);
    unsigned char mut[512];
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(mut, buf, n);
        int flips = 1 + rand() % 3;
        for (int k = 0; k < flips; k++) {
            size_t pos = (size_t)rand() % (n < 120 ? n : 120);   /* mostly the header */
            mut[pos] = (iter & 1) ? (unsigned char)rand() : (unsigned char)"{}[],:\"0123456789 -e."[rand() % 21];
        }
        write_bytes(bad, mut, n);
        if (st_open(bad, &f, err, sizeof err) == 0) {
            for (int i = 0; i < f.n_tensors; i++) {
                const unsigned char *d = f.tensors[i].data;
                assert_true(d >= (const unsigned char *)f.map && d + f.tensors[i].nbytes <= (const unsigned char *)f.map + f.size);
            }
            st_close(&f);
        } else {
            assert_true(err[0] != 0);
        }
    }
}

/* ------------------------------------------------------------------- conversions */

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void test_f16_to_f32_known_bit_patterns(void **state) {
    assert_true(f16_to_f32(0x3c00) == 1.0f);
    assert_true(f16_to_f32(0xc000) == -2.0f);
    assert_true(f16_to_f32(0x7bff) == 65504.0f);
    assert_true(f16_to_f32(0x0001) == ldexpf(1, -24));          /* smallest subnormal */
    assert_true(f16_to_f32(0x03ff) == ldexpf(1023, -24));       /* largest subnormal */
    assert_true(f16_to_f32(0x0400) == ldexpf(1, -14));          /* smallest normal */
    assert_true(f16_to_f32(0x3555) == 0x1.554p-2f);
    assert_int_equal(bits(f16_to_f32(0x0000)), 0x00000000);
    assert_int_equal(bits(f16_to_f32(0x8000)), 0x80000000);     /* -0 */
    assert_true(isinf(f16_to_f32(0x7c00)) && f16_to_f32(0x7c00) > 0);
    assert_true(isinf(f16_to_f32(0xfc00)) && f16_to_f32(0xfc00) < 0);
    assert_true(isnan(f16_to_f32(0x7e00)));
    assert_true(isnan(f16_to_f32(0x7c01)));
}

static void test_f32_to_f16_rounds_to_nearest_even(void **state) {
    assert_int_equal(f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(f32_to_f16(65519.0f), 0x7bff);              /* below the halfway point */
    assert_int_equal(f32_to_f16(65520.0f), 0x7c00);              /* tie to even → inf */
    assert_int_equal(f32_to_f16(1e10f), 0x7c00);
    assert_int_equal(f32_to_f16(-INFINITY), 0xfc00);
    assert_int_equal(f32_to_f16(NAN) & 0x7c00, 0x7c00);
    assert_true((f32_to_f16(NAN) & 0x3ff) != 0);
    assert_int_equal(f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00);        /* tie → even (down) */
    assert_int_equal(f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3c02);    /* tie → even (up) */
    assert_int_equal(f32_to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3c01);
    assert_int_equal(f32_to_f16(ldexpf(1, -24)), 0x0001);
    assert_int_equal(f32_to_f16(ldexpf(1, -25)), 0x0000);              /* tie → 0 */
    assert_int_equal(f32_to_f16(ldexpf(3, -25)), 0x0002);              /* 1.5 units → 2 */
    assert_int_equal(f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
    assert_int_equal(f32_to_f16(-ldexpf(1, -30)), 0x8000);
    assert_int_equal(f32_to_f16(ldexpf(1023.5f, -24)), 0x0400);        /* rounds up to normal */
    assert_int_equal(f32_to_f16(ldexpf(1, -14)), 0x0400);
    /* every finite/inf half round-trips exactly */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
        if (f32_to_f16(f16_to_f32((uint16_t)h)) != h) fail_msg("half 0x%04x does not round-trip", h);
    }
}

static void test_bf16_known_bit_patterns_and_rounding(void **state) {
    assert_true(bf16_to_f32(0x3f80) == 1.0f);
    assert_true(bf16_to_f32(0xc000) == -2.0f);
    assert_true(bf16_to_f32(0x0001) == ldexpf(1, -133));         /* smallest subnormal */
    assert_true(bf16_to_f32(0x7f7f) == 0x1.fep127f);              /* largest finite */
    assert_true(isinf(bf16_to_f32(0x7f80)));
    assert_true(isnan(bf16_to_f32(0x7fc0)));
    assert_int_equal(f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(f32_to_bf16(-2.0f), 0xc000);
    assert_int_equal(f32_to_bf16(from_bits(0x3f808000)), 0x3f80);  /* tie → even (down) */
    assert_int_equal(f32_to_bf16(from_bits(0x3f818000)), 0x3f82);  /* tie → even (up) */
    assert_int_equal(f32_to_bf16(from_bits(0x3f808001)), 0x3f81);
    assert_int_equal(f32_to_bf16(from_bits(0x3f807fff)), 0x3f80);
    assert_int_equal(f32_to_bf16(from_bits(0x00008000)), 0x0000);  /* subnormal tie → 0 */
    assert_int_equal(f32_to_bf16(from_bits(0x00018000)), 0x0002);
    assert_int_equal(f32_to_bf16(from_bits(0x7f7fffff)), 0x7f80);  /* FLT_MAX rounds to inf */
    assert_int_equal(f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(f32_to_bf16(-INFINITY), 0xff80);
    uint16_t n = f32_to_bf16(from_bits(0x7f800001));               /* nan payload in low bits */
    assert_true((n & 0x7f80) == 0x7f80 && (n & 0x7f) != 0);
    for (uint32_t b = 0; b < 0x10000; b++) {
        if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) continue;
        if (f32_to_bf16(bf16_to_f32((uint16_t)b)) != b) fail_msg("bf16 0x%04x does not round-trip", b);
    }
}

/* --------------------------------------------------------------------------- npy */

static void test_npy_write_then_read_round_trip(void **state) {
    const char *path = at(*state, "x.npy");
    float x[6] = {1.5f, -2, 0, 1e-30f, 3e30f, 7};
    char err[LLM_ERR_LEN];
    assert_int_equal(npy_write_f32(path, x, 2, 3, err, sizeof err), 0);
    float *y = NULL;
    int64_t rows = 0, cols = 0;
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 3);
    assert_memory_equal(x, y, sizeof x);
    free(y);
    FILE *fp = fopen(path, "rb");                     /* header padded to 64 bytes, v1.0 */
    unsigned char pre[10];
    assert_int_equal(fread(pre, 1, 10, fp), 10);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fclose(fp);
    assert_memory_equal(pre, "\x93NUMPY\x01\x00", 8);
    assert_int_equal((10 + (pre[8] | pre[9] << 8)) % 64, 0);
    assert_int_equal(size, 10 + (pre[8] | pre[9] << 8) + (long)sizeof x);
}

/* A .npy with the given version, header dict and data. */
static void write_npy(const char *path, int version, const char *dict, const void *data, size_t n) {
    unsigned char buf[1024];
    size_t pre = version == 1 ? 10 : 12, hlen = strlen(dict) + 1;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)version;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, dict, hlen - 1);
    buf[pre + hlen - 1] = '\n';
    if (n) memcpy(buf + pre + hlen, data, n);
    write_bytes(path, buf, pre + hlen + n);
}

static void test_npy_reads_int_and_f64_1d_and_v2_headers(void **state) {
    const char *path = at(*state, "i.npy");
    char err[LLM_ERR_LEN];
    float *y;
    int64_t rows, cols;
    int64_t i8[3] = {5, -7, 1 << 20};
    write_npy(path, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", i8, sizeof i8);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 3);
    assert_int_equal(cols, 1);
    assert_true(y[0] == 5 && y[1] == -7 && y[2] == (float)(1 << 20));
    free(y);
    int32_t i4[4] = {1, 2, 3, -4};
    write_npy(path, 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", i4, sizeof i4);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 2);
    assert_true(y[3] == -4);
    free(y);
    double f8[2] = {0.5, -1e10};
    write_npy(path, 1, "{'descr':'<f8','fortran_order':False,'shape':(1,2)}", f8, sizeof f8);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), 0);
    assert_true(y[0] == 0.5f && y[1] == -1e10f);
    free(y);
    write_npy(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", NULL, 0);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 0);
    free(y);
}

static void test_npy_rejects_malformed_files(void **state) {
    const char *path = at(*state, "bad.npy");
    float d[4] = {0};
    static const struct { const char *dict; size_t n; const char *want; } cases[] = {
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", 16, "'>f4' not supported"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", 8, "not supported"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16, "not C order"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 1), }", 16, "1-D or 2-D"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4, "1-D or 2-D"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 16, "needs 20"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 12, "needs 16"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999, 99999999999999), }", 16, "needs"},
        {"{'fortran_order': False, 'shape': (4,), }", 16, "no descr"},
    };
    char err[LLM_ERR_LEN];
    float *y = (float *)1;
    int64_t rows, cols;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_npy(path, 1, cases[i].dict, d, cases[i].n);
        assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), -1);
        assert_null(y);
        assert_non_null(strstr(err, path));
        if (!strstr(err, cases[i].want)) fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].want);
    }
    write_bytes(path, "\x93NUMPX\x01\x00\x00\x00", 10);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a .npy"));
    write_bytes(path, "\x93NUMPY\x01\x00\xff\x00{}", 12);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "past the end"));
    assert_int_equal(npy_read_f32(at(*state, "none.npy"), &y, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "none.npy: cannot open"));
}

/* ------------------------------------------------------------------------ config */

static const char *TINY_CONFIG_FIELDS =
    "\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
    "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"vocab_size\": 10";

/* Writes DIR/config.json = { TINY_CONFIG_FIELDS, extra } and returns its path. */
static const char *write_config(const char *dir, const char *extra) {
    char json[2048];
    snprintf(json, sizeof json, "{%s%s%s}", TINY_CONFIG_FIELDS, extra && *extra ? ", " : "", extra ? extra : "");
    const char *path = at(dir, "config.json");
    write_text(path, json);
    return path;
}

static void expect_config_error(const char *path, const char *want) {
    model_config c;
    char err[LLM_ERR_LEN] = "";
    assert_int_equal(config_load(path, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    if (!strstr(err, want)) fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void test_config_reads_fields_and_defaults(void **state) {
    const char *path = write_config(*state, "\"architectures\": [\"LlamaForCausalLM\"], \"torch_dtype\": \"float32\"");
    model_config c;
    char err[LLM_ERR_LEN];
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_int_equal(c.hidden_size, 8);
    assert_int_equal(c.intermediate_size, 16);
    assert_int_equal(c.n_layers, 2);
    assert_int_equal(c.n_heads, 2);
    assert_int_equal(c.n_kv_heads, 1);
    assert_int_equal(c.head_dim, 4);
    assert_int_equal(c.vocab_size, 10);
    assert_int_equal(c.max_position_embeddings, 2048);
    assert_true(c.rms_norm_eps == 1e-6f);
    assert_true(c.rope_theta == 10000.0f);
    assert_true(c.rope_scaling_factor == 1.0f);
    assert_int_equal(c.tie_word_embeddings, 0);
    assert_int_equal(c.bos_token_id, 1);
    assert_int_equal(c.eos_token_id, 2);

    write_text(path, "{\"hidden_size\": 64, \"intermediate_size\": 172, \"num_hidden_layers\": 5, "
                     "\"num_attention_heads\": 8, \"vocab_size\": 128256, \"max_position_embeddings\": 512, "
                     "\"rms_norm_eps\": 1e-05, \"rope_theta\": 500000.0, \"tie_word_embeddings\": true, "
                     "\"bos_token_id\": 128000, \"eos_token_id\": [128001, 128009], \"rope_scaling\": null}");
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_int_equal(c.n_kv_heads, 8);                 /* defaults to n_heads */
    assert_int_equal(c.head_dim, 8);
    assert_int_equal(c.max_position_embeddings, 512);
    assert_true(c.rms_norm_eps == 1e-5f);
    assert_true(c.rope_theta == 500000.0f);
    assert_int_equal(c.tie_word_embeddings, 1);
    assert_int_equal(c.bos_token_id, 128000);
    assert_int_equal(c.eos_token_id, 128001);          /* first of the list */
}

static void test_config_reads_linear_rope_scaling(void **state) {
    const char *path = write_config(*state, "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 4.0}");
    model_config c;
    char err[LLM_ERR_LEN];
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_true(c.rope_scaling_factor == 4.0f);
    write_config(*state, "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2}");
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_true(c.rope_scaling_factor == 2.0f);
}

static void test_config_rejects_unsupported_rope_scaling(void **state) {
    const char *path = write_config(*state, "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}");
    expect_config_error(path, "rope_scaling type \"llama3\"");
    write_config(*state, "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}");
    expect_config_error(path, "\"dynamic\"");
    write_config(*state, "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 0.5}");
    expect_config_error(path, "rope_scaling.factor=0.5 must be >= 1");
    write_config(*state, "\"rope_scaling\": {\"type\": \"linear\"}");
    expect_config_error(path, "rope_scaling.factor");
    write_config(*state, "\"rope_scaling\": 2");
    expect_config_error(path, "rope_scaling");
}

static void test_config_rejects_kv_heads_not_dividing_heads(void **state) {
    const char *path = at(*state, "config.json");
    write_text(path, "{\"hidden_size\": 64, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
                     "\"num_attention_heads\": 8, \"num_key_value_heads\": 3, \"vocab_size\": 10}");
    expect_config_error(path, "config.json: num_key_value_heads=3 does not divide num_attention_heads=8");
}

static void test_config_rejects_zero_and_missing_sizes(void **state) {
    const char *path = at(*state, "config.json");
    static const struct { const char *json, *want; } cases[] = {
        {"{\"hidden_size\": 0, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "hidden_size=0 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 0, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "num_hidden_layers=0 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": -1}", "vocab_size=-1 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 0, \"vocab_size\": 10}", "num_attention_heads=0 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"num_key_value_heads\": 0, \"vocab_size\": 10}",
         "num_key_value_heads=0 must be positive"},
        {"{\"hidden_size\": 8, \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"vocab_size\": 10}",
         "missing intermediate_size"},
        {"{\"hidden_size\": 8.5, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "hidden_size must be an integer"},
        {"{\"hidden_size\": \"8\", \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "hidden_size must be an integer"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 1e12, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "intermediate_size must be an integer"},
        {"{\"hidden_size\": 12, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 8, \"vocab_size\": 10}", "num_attention_heads=8 does not divide hidden_size=12"},
        {"{\"hidden_size\": 6, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "head_dim=3 must be even"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text(path, cases[i].json);
        expect_config_error(path, cases[i].want);
    }
    write_config(*state, "\"rms_norm_eps\": 0");
    expect_config_error(path, "rms_norm_eps=0 must be positive");
    write_config(*state, "\"rope_theta\": -1");
    expect_config_error(path, "rope_theta=-1 must be positive");
    write_config(*state, "\"max_position_embeddings\": 0");
    expect_config_error(path, "max_position_embeddings=0 must be positive");
    write_config(*state, "\"eos_token_id\": []");
    expect_config_error(path, "eos_token_id");
}

static void test_config_accepts_explicit_head_dim(void **state) {
    const char *path = at(*state, "config.json");
    write_text(path, "{\"hidden_size\": 12, \"intermediate_size\": 16, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 4, \"vocab_size\": 10}");
    model_config c;
    char err[LLM_ERR_LEN];
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_int_equal(c.head_dim, 4);
}

static void test_config_rejects_malformed_json_and_missing_file(void **state) {
    const char *path = at(*state, "config.json");
    write_text(path, "{\"hidden_size\": 8,");
    expect_config_error(path, "malformed JSON");
    write_text(path, "{\"hidden_size\": 8} {}");
    expect_config_error(path, "malformed JSON");
    write_text(path, "[8]");
    expect_config_error(path, "not a JSON object");
    write_text(path, "");
    expect_config_error(path, "malformed JSON");
    expect_config_error(at(*state, "absent.json"), "cannot open");
}

/* ----------------------------------------------------------------- model folders */

typedef struct {
    const char *dtype;         /* of every tensor; "F32" when NULL */
    int with_lm_head;
    int with_inv_freq;
    int shards;                /* 0: model.safetensors; 2: two shards + index.json */
    const char *omit;          /* tensor left out of the files (and the index) */
    const char *reshape;       /* tensor written with shape [reshape_rows][reshape_cols] */
    int reshape_rows, reshape_cols;
    const char *config_extra;
} model_spec;

enum { DIM = 8, FFN = 16, LAYERS = 2, HEADS = 2, KV = 1, HD = DIM / HEADS, VOCAB = 10 };

typedef struct { char name[96]; int rows, cols; } tshape;   /* rows 0: 1-D */

static int tiny_tensors(tshape *t, const model_spec *s) {
    int n = 0;
#define ADD(r, c, ...) (snprintf(t[n].name, sizeof t[n].name, __VA_ARGS__), t[n].rows = (r), t[n].cols = (c), n++)
    ADD(VOCAB, DIM, "model.embed_tokens.weight");
    for (int l = 0; l < LAYERS; l++) {
        ADD(0, DIM, "model.layers.%d.input_layernorm.weight", l);
        ADD(HEADS * HD, DIM, "model.layers.%d.self_attn.q_proj.weight", l);
        ADD(KV * HD, DIM, "model.layers.%d.self_attn.k_proj.weight", l);
        ADD(KV * HD, DIM, "model.layers.%d.self_attn.v_proj.weight", l);
        ADD(DIM, HEADS * HD, "model.layers.%d.self_attn.o_proj.weight", l);
        if (s->with_inv_freq) ADD(0, HD / 2, "model.layers.%d.self_attn.rotary_emb.inv_freq", l);
        ADD(0, DIM, "model.layers.%d.post_attention_layernorm.weight", l);
        ADD(FFN, DIM, "model.layers.%d.mlp.gate_proj.weight", l);
        ADD(FFN, DIM, "model.layers.%d.mlp.up_proj.weight", l);
        ADD(DIM, FFN, "model.layers.%d.mlp.down_proj.weight", l);
    }
    ADD(0, DIM, "model.norm.weight");
    if (s->with_lm_head) ADD(VOCAB, DIM, "lm_head.weight");
#undef ADD
    return n;
}

/* The value written at element i of tensor name (exact in bf16 and f16). */
static float tval(const char *name, size_t i) {
    unsigned h = 5381;
    for (const char *p = name; *p; p++) h = h * 33 + (unsigned char)*p;
    return (float)(h % 61) - 30.0f + (float)(i % 8) * 0.125f;
}

static void make_model(const char *dir, const model_spec *s) {
    write_config(dir, s->config_extra);
    tshape ts[64];
    int n = tiny_tensors(ts, s);
    const char *dtype = s->dtype ? s->dtype : "F32";
    tdesc td[64];
    void *bufs[64];
    int nt = 0;
    for (int i = 0; i < n; i++) {
        if (s->omit && !strcmp(ts[i].name, s->omit)) continue;
        int rows = ts[i].rows, cols = ts[i].cols;
        if (s->reshape && !strcmp(ts[i].name, s->reshape)) rows = s->reshape_rows, cols = s->reshape_cols;
        size_t count = (size_t)(rows ? rows : 1) * (size_t)cols;
        bufs[nt] = malloc(count * 4);
        for (size_t k = 0; k < count; k++) {
            float v = tval(ts[i].name, k);
            if (!strcmp(dtype, "F32")) ((float *)bufs[nt])[k] = v;
            else if (!strcmp(dtype, "F16")) ((uint16_t *)bufs[nt])[k] = f32_to_f16(v);
            else ((uint16_t *)bufs[nt])[k] = f32_to_bf16(v);
        }
        td[nt] = (tdesc){ts[i].name, dtype, rows ? 2 : 1, {rows ? rows : cols, cols}, bufs[nt]};
        nt++;
    }
    if (!s->shards) {
        write_st_tensors(at(dir, "model.safetensors"), td, nt);
    } else {
        /* tensor i goes to shard i % 2; the index maps every name to its shard */
        const char *names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
        tdesc part[2][64];
        int np[2] = {0, 0};
        cJSON *root = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
        cJSON_AddNumberToObject(meta, "total_size", 1234);
        cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
        for (int i = 0; i < nt; i++) {
            part[i % 2][np[i % 2]++] = td[i];
            cJSON_AddStringToObject(map, td[i].name, names[i % 2]);
        }
        for (int k = 0; k < 2; k++) write_st_tensors(at(dir, names[k]), part[k], np[k]);
        char *json = cJSON_Print(root);
        write_text(at(dir, "model.safetensors.index.json"), json);
        free(json);
        cJSON_Delete(root);
    }
    for (int i = 0; i < nt; i++) free(bufs[i]);
}

static void expect_load_error(const char *dir, const char *want1, const char *want2) {
    model_weights m;
    char err[LLM_ERR_LEN] = "";
    assert_int_equal(model_load(dir, &m, err, sizeof err), -1);
    assert_null(m.files);                              /* cleaned up */
    assert_null(m.layers);
    if (!strstr(err, want1)) fail_msg("error \"%s\" lacks \"%s\"", err, want1);
    if (want2 && !strstr(err, want2)) fail_msg("error \"%s\" lacks \"%s\"", err, want2);
}

/* Every weight of m holds the values make_model wrote (as F32 after model_to_f32, or in
 * the file dtype). */
static void check_weight(const weight_t *w, const char *name, int rows, int cols) {
    assert_int_equal(w->rows, rows);
    assert_int_equal(w->cols, cols);
    assert_non_null(w->data);
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++) {
        float v = w->dtype == DT_F32 ? ((const float *)w->data)[i]
                : w->dtype == DT_F16 ? f16_to_f32(((const uint16_t *)w->data)[i])
                                     : bf16_to_f32(((const uint16_t *)w->data)[i]);
        if (v != tval(name, i)) fail_msg("%s[%zu] = %g, expected %g", name, i, v, tval(name, i));
    }
}

static void check_tiny_model(const model_weights *m) {
    assert_int_equal(m->cfg.hidden_size, DIM);
    assert_int_equal(m->cfg.n_layers, LAYERS);
    check_weight(&m->embed, "model.embed_tokens.weight", VOCAB, DIM);
    check_weight(&m->final_norm, "model.norm.weight", 1, DIM);
    for (int l = 0; l < LAYERS; l++) {
        const layer_weights *lw = &m->layers[l];
        char name[96];
#define CHECK(field, suffix, r, c) \
        (snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, suffix), check_weight(&lw->field, name, r, c))
        CHECK(attn_norm, "input_layernorm", 1, DIM);
        CHECK(wq, "self_attn.q_proj", HEADS * HD, DIM);
        CHECK(wk, "self_attn.k_proj", KV * HD, DIM);
        CHECK(wv, "self_attn.v_proj", KV * HD, DIM);
        CHECK(wo, "self_attn.o_proj", DIM, HEADS * HD);
        CHECK(ffn_norm, "post_attention_layernorm", 1, DIM);
        CHECK(w_gate, "mlp.gate_proj", FFN, DIM);
        CHECK(w_up, "mlp.up_proj", FFN, DIM);
        CHECK(w_down, "mlp.down_proj", DIM, FFN);
#undef CHECK
    }
}

static void test_model_load_reads_tiny_folder(void **state) {
    model_spec s = {.with_lm_head = 1};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(m.n_files, 1);
    assert_int_equal(m.embed.dtype, DT_F32);
    check_tiny_model(&m);
    model_free(&m);
    assert_null(m.files);
}

static void test_model_load_accepts_trailing_slash_in_dir(void **state) {
    model_spec s = {0};
    make_model(*state, &s);
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/", (const char *)*state);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(dir, &m, err, sizeof err), 0);
    model_free(&m);
    snprintf(dir, sizeof dir, "%s/", (const char *)*state);
    remove(at(*state, "model.safetensors"));
    snprintf(dir, sizeof dir, "%s/", (const char *)*state);
    assert_int_equal(model_load(dir, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "no model.safetensors or model.safetensors.index.json"));
}

static void test_model_load_ties_lm_head_when_absent(void **state) {
    model_spec s = {.with_lm_head = 0};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    assert_int_equal(m.lm_head.rows, VOCAB);
    assert_int_equal(m.lm_head.cols, DIM);
    model_free(&m);
}

static void test_model_load_keeps_separate_lm_head_when_untied(void **state) {
    model_spec s = {.with_lm_head = 1};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(m.cfg.tie_word_embeddings, 0);
    assert_ptr_not_equal(m.lm_head.data, m.embed.data);
    check_weight(&m.lm_head, "lm_head.weight", VOCAB, DIM);
    model_free(&m);
}

static void test_model_load_ties_when_config_says_so_even_with_lm_head(void **state) {
    model_spec s = {.with_lm_head = 1, .config_extra = "\"tie_word_embeddings\": true"};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    model_free(&m);
}

static void test_model_load_reports_missing_tensor(void **state) {
    model_spec s = {.omit = "model.layers.1.mlp.up_proj.weight"};
    make_model(*state, &s);
    char want[1200];
    snprintf(want, sizeof want, "%s/model.safetensors: missing tensor model.layers.1.mlp.up_proj.weight",
             (const char *)*state);
    expect_load_error(*state, want, NULL);
    s.omit = "model.norm.weight";
    make_model(*state, &s);
    expect_load_error(*state, "missing tensor model.norm.weight", NULL);
}

static void test_model_load_reports_shape_mismatch_with_both_shapes(void **state) {
    model_spec s = {.reshape = "model.layers.1.mlp.up_proj.weight", .reshape_rows = 12, .reshape_cols = DIM};
    make_model(*state, &s);
    expect_load_error(*state, "model.safetensors: model.layers.1.mlp.up_proj.weight: shape [12, 8], config says [16, 8]", NULL);
    s = (model_spec){.reshape = "model.norm.weight", .reshape_rows = 0, .reshape_cols = 6};
    make_model(*state, &s);
    expect_load_error(*state, "model.norm.weight: shape [6], config says [8]", NULL);
    s = (model_spec){.reshape = "model.layers.0.input_layernorm.weight", .reshape_rows = 1, .reshape_cols = DIM};
    make_model(*state, &s);
    expect_load_error(*state, "model.layers.0.input_layernorm.weight: shape [1, 8], config says [8]", NULL);
    s = (model_spec){.reshape = "model.layers.0.self_attn.k_proj.weight", .reshape_rows = DIM, .reshape_cols = DIM};
    make_model(*state, &s);
    expect_load_error(*state, "k_proj.weight: shape [8, 8], config says [4, 8]", NULL);
}

static void test_model_load_ignores_rotary_inv_freq(void **state) {
    model_spec s = {.with_inv_freq = 1};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    check_tiny_model(&m);
    model_free(&m);
}

static void test_model_load_reads_two_shards_via_index(void **state) {
    model_spec s = {.with_lm_head = 1, .with_inv_freq = 1, .shards = 2, .dtype = "BF16"};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(m.n_files, 2);
    assert_int_equal(m.layers[1].w_down.dtype, DT_BF16);
    check_tiny_model(&m);
    check_weight(&m.lm_head, "lm_head.weight", VOCAB, DIM);
    model_free(&m);
}

static void test_model_load_ties_lm_head_absent_from_index(void **state) {
    model_spec s = {.shards = 2, .dtype = "F16"};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    check_tiny_model(&m);
    model_free(&m);
}

static void test_model_load_reports_missing_shard(void **state) {
    model_spec s = {.shards = 2};
    make_model(*state, &s);
    remove(at(*state, "model-00002-of-00002.safetensors"));
    expect_load_error(*state, "model.safetensors.index.json: shard", "model-00002-of-00002.safetensors is missing");
}

static void test_model_load_reports_tensor_missing_from_index_or_shard(void **state) {
    model_spec s = {.shards = 2, .omit = "model.layers.0.mlp.gate_proj.weight"};
    make_model(*state, &s);
    expect_load_error(*state, "model.safetensors.index.json: missing tensor model.layers.0.mlp.gate_proj.weight", NULL);
    /* the index names shard 1 for a tensor that only shard 2 holds */
    s.omit = NULL;
    make_model(*state, &s);
    const char *index = at(*state, "model.safetensors.index.json");
    write_text(index, "{\"weight_map\": {\"model.embed_tokens.weight\": \"model-00002-of-00002.safetensors\", "
                      "\"model.norm.weight\": \"model-00001-of-00002.safetensors\"}}");
    expect_load_error(*state, "model-00002-of-00002.safetensors: missing tensor model.embed_tokens.weight", NULL);
}

static void test_model_load_rejects_malformed_index(void **state) {
    const char *index = at(*state, "model.safetensors.index.json");
    write_config(*state, NULL);
    write_text(index, "{\"weight_map\": ");
    expect_load_error(*state, "model.safetensors.index.json: malformed JSON", NULL);
    write_text(index, "{\"metadata\": {}}");
    expect_load_error(*state, "missing \"weight_map\"", NULL);
    write_text(index, "{\"weight_map\": {\"model.norm.weight\": 3}}");
    expect_load_error(*state, "weight_map[\"model.norm.weight\"] is not a file name", NULL);
}

static void test_model_load_reports_missing_weights_and_config(void **state) {
    char want[1200];
    write_config(*state, NULL);
    snprintf(want, sizeof want, "%s: no model.safetensors or model.safetensors.index.json", (const char *)*state);
    expect_load_error(*state, want, NULL);
    remove(at(*state, "config.json"));
    expect_load_error(*state, "no config.json: not a Hugging Face model folder (give a folder with config.json", NULL);
    model_spec s = {0};
    make_model(*state, &s);
    write_text(at(*state, "config.json"), "{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
               "\"num_attention_heads\": 2, \"num_key_value_heads\": 3, \"vocab_size\": 10}");
    expect_load_error(*state, "config.json: num_key_value_heads=3 does not divide num_attention_heads=2", NULL);
}

static void test_model_load_reports_corrupt_safetensors(void **state) {
    write_config(*state, NULL);
    write_st_raw(at(*state, "model.safetensors"), 999, "{}", NULL, 0);
    expect_load_error(*state, "model.safetensors: header length 999", NULL);
}

static void test_model_to_f32_converts_and_shares_tied_buffer(void **state) {
    model_spec s = {.dtype = "BF16"};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(m.embed.dtype, DT_BF16);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);
    assert_int_equal(m.n_owned, 2 + 9 * LAYERS);        /* embed, norm, layers; lm_head shared */
    assert_int_equal(m.embed.dtype, DT_F32);
    assert_int_equal(m.layers[0].wq.dtype, DT_F32);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    assert_int_equal(m.lm_head.dtype, DT_F32);
    check_tiny_model(&m);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);   /* already F32: no-op */
    assert_int_equal(m.n_owned, 2 + 9 * LAYERS);
    model_free(&m);
}

static void test_model_to_f32_converts_untied_f16_lm_head(void **state) {
    model_spec s = {.dtype = "F16", .with_lm_head = 1};
    make_model(*state, &s);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(*state, &m, err, sizeof err), 0);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);
    assert_int_equal(m.n_owned, 3 + 9 * LAYERS);
    assert_ptr_not_equal(m.lm_head.data, m.embed.data);
    check_weight(&m.lm_head, "lm_head.weight", VOCAB, DIM);
    check_tiny_model(&m);
    model_free(&m);
}

static void test_model_free_is_safe_on_zeroed_struct(void **state) {
    model_weights m;
    memset(&m, 0, sizeof m);
    model_free(&m);
    model_free(&m);
    model_free(NULL);
    char err[LLM_ERR_LEN];
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);
    model_free(&m);
}

static void test_model_load_reads_stories260K(void **state) {
    const char *shared = getenv("LLM_SHARED");
    char dir[1024], cfg[1100];
    snprintf(dir, sizeof dir, "%s/models/stories260K", shared && *shared ? shared : "../shared");
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (access(cfg, R_OK) != 0) skip();
    model_weights m;
    char err[LLM_ERR_LEN];
    if (model_load(dir, &m, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(m.cfg.hidden_size, 64);
    assert_int_equal(m.cfg.n_layers, 5);
    assert_int_equal(m.cfg.n_heads, 8);
    assert_int_equal(m.cfg.n_kv_heads, 4);
    assert_int_equal(m.cfg.head_dim, 8);
    assert_int_equal(m.cfg.vocab_size, 512);
    assert_int_equal(m.cfg.intermediate_size, 172);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    assert_int_equal(m.layers[4].w_down.rows, 64);
    assert_int_equal(m.layers[4].w_down.cols, 172);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);   /* F32 already: nothing owned */
    assert_int_equal(m.n_owned, 0);
    model_free(&m);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, make_tmpdir, remove_tmpdir)
    const struct CMUnitTest tests[] = {
        T(test_safetensors_f32_round_trip),
        T(test_safetensors_f16_and_bf16_round_trip),
        T(test_safetensors_finds_every_name_among_many),
        T(test_safetensors_accepts_empty_header_and_space_padding),
        T(test_st_close_is_safe_on_zeroed_struct),
        T(test_dtype_size_and_name),
        T(test_safetensors_rejects_missing_file),
        T(test_safetensors_rejects_file_shorter_than_8_bytes),
        T(test_safetensors_rejects_truncated_data),
        T(test_safetensors_rejects_garbage),
        T(test_safetensors_rejects_header_length_past_eof),
        T(test_safetensors_rejects_huge_header_length),
        T(test_safetensors_rejects_malformed_json),
        T(test_safetensors_rejects_offsets_outside_buffer),
        T(test_safetensors_rejects_overlapping_offsets),
        T(test_safetensors_rejects_size_not_matching_shape),
        T(test_safetensors_rejects_shape_product_overflow),
        T(test_safetensors_rejects_unknown_dtype),
        T(test_safetensors_rejects_bad_entries),
        T(test_safetensors_rejects_tensor_name_of_256_chars),
        T(test_safetensors_corrupted_files_never_crash),
        T(test_f16_to_f32_known_bit_patterns),
        T(test_f32_to_f16_rounds_to_nearest_even),
        T(test_bf16_known_bit_patterns_and_rounding),
        T(test_npy_write_then_read_round_trip),
        T(test_npy_reads_int_and_f64_1d_and_v2_headers),
        T(test_npy_rejects_malformed_files),
        T(test_config_reads_fields_and_defaults),
        T(test_config_reads_linear_rope_scaling),
        T(test_config_rejects_unsupported_rope_scaling),
        T(test_config_rejects_kv_heads_not_dividing_heads),
        T(test_config_rejects_zero_and_missing_sizes),
        T(test_config_accepts_explicit_head_dim),
        T(test_config_rejects_malformed_json_and_missing_file),
        T(test_model_load_reads_tiny_folder),
        T(test_model_load_accepts_trailing_slash_in_dir),
        T(test_model_load_ties_lm_head_when_absent),
        T(test_model_load_keeps_separate_lm_head_when_untied),
        T(test_model_load_ties_when_config_says_so_even_with_lm_head),
        T(test_model_load_reports_missing_tensor),
        T(test_model_load_reports_shape_mismatch_with_both_shapes),
        T(test_model_load_ignores_rotary_inv_freq),
        T(test_model_load_reads_two_shards_via_index),
        T(test_model_load_ties_lm_head_absent_from_index),
        T(test_model_load_reports_missing_shard),
        T(test_model_load_reports_tensor_missing_from_index_or_shard),
        T(test_model_load_rejects_malformed_index),
        T(test_model_load_reports_missing_weights_and_config),
        T(test_model_load_reports_corrupt_safetensors),
        T(test_model_to_f32_converts_and_shares_tied_buffer),
        T(test_model_to_f32_converts_untied_f16_lm_head),
        T(test_model_free_is_safe_on_zeroed_struct),
        T(test_model_load_reads_stories260K),
    };
#undef T
    return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
