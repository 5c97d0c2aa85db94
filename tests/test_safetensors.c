/* Tests for model/safetensors.c: well-formed files (F32, F16, BF16, many names, empty header)
 * and every kind of malformed one, each a one-line error naming the file (and the tensor).
 * Files are built from C (tests/support/files.h) in a fresh temporary folder per test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "tests/support/files.h"

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
    const char *path = ts_at(*state, "a.safetensors");
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1.5f, 0.25f, 1e30f};
    ts_tdesc t[] = {{"weight.a", "F32", 2, {2, 3}, a}, {"bias", "F32", 1, {3}, b}};
    ts_write_st_tensors(path, t, 2);
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
    const char *path = ts_at(*state, "h.safetensors");
    uint16_t h[4] = {0x3c00, 0xc000, 0x7bff, 0x0001}, bf[2] = {0x3f80, 0xc000};
    float s = 7;
    ts_tdesc t[] = {{"h", "F16", 2, {2, 2}, h}, {"b", "BF16", 1, {2}, bf}, {"scalar", "F32", 0, {0}, &s}};
    ts_write_st_tensors(path, t, 3);
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
    const char *path = ts_at(*state, "many.safetensors");
    enum { N = 50 };
    ts_tdesc t[N];
    char names[N][32];
    float vals[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "t.%d", (i * 37) % N);   /* unsorted in the file */
        vals[i] = (float)i;
        t[i] = (ts_tdesc){names[i], "F32", 1, {1}, &vals[i]};
    }
    ts_write_st_tensors(path, t, N);
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
    const char *path = ts_at(*state, "e.safetensors");
    ts_write_st_header(path, "{}      ", 0);
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
    expect_st_error(ts_at(*state, "nope.safetensors"), "cannot open", NULL);
}

static void test_safetensors_rejects_file_shorter_than_8_bytes(void **state) {
    const char *path = ts_at(*state, "short.safetensors");
    ts_write_bytes(path, "\x10\0\0", 3);
    expect_st_error(path, "too short", NULL);
    ts_write_bytes(path, "", 0);
    expect_st_error(path, "too short", NULL);
}

static void test_safetensors_rejects_truncated_data(void **state) {
    const char *path = ts_at(*state, "trunc.safetensors");
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 12);
    expect_st_error(path, "w: data_offsets", "outside");
}

static void test_safetensors_rejects_garbage(void **state) {
    const char *path = ts_at(*state, "garbage.safetensors");
    unsigned char junk[4096];
    srand(1234);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)rand();
    ts_write_bytes(path, junk, sizeof junk);
    expect_st_error(path, NULL, NULL);
    junk[0] = 100; memset(junk + 1, 0, 7);              /* plausible length, garbage JSON */
    ts_write_bytes(path, junk, sizeof junk);
    expect_st_error(path, "malformed JSON", NULL);
}

static void test_safetensors_rejects_header_length_past_eof(void **state) {
    const char *path = ts_at(*state, "past.safetensors");
    ts_write_st_raw(path, 1000, "{}", NULL, 0);
    expect_st_error(path, "header length 1000", "past the end");
    ts_write_st_raw(path, UINT64_MAX, "{}", NULL, 0);    /* must not overflow 8 + len */
    expect_st_error(path, "header length", NULL);
}

static void test_safetensors_rejects_huge_header_length(void **state) {
    const char *path = ts_at(*state, "huge.safetensors");
    ts_write_st_raw(path, (uint64_t)200 << 20, "{}", NULL, 0);
    expect_st_error(path, "larger than", NULL);
}

static void test_safetensors_rejects_malformed_json(void **state) {
    const char *path = ts_at(*state, "bad.safetensors");
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4);
    expect_st_error(path, "malformed JSON", NULL);
    ts_write_st_header(path, "{} trailing", 0);
    expect_st_error(path, "malformed JSON", NULL);
    ts_write_st_header(path, "[1, 2]", 0);
    expect_st_error(path, "not a JSON object", NULL);
    ts_write_st_header(path, "", 0);
    expect_st_error(path, "malformed JSON", NULL);
}

static void test_safetensors_rejects_offsets_outside_buffer(void **state) {
    const char *path = ts_at(*state, "out.safetensors");
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 8);
    expect_st_error(path, "w: data_offsets [8, 16] outside the data buffer of 8 bytes", NULL);
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8);
    expect_st_error(path, "w: data_offsets [8, 0]", NULL);
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8);
    expect_st_error(path, "w: data_offsets must be", NULL);
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,1e300]}}", 8);
    expect_st_error(path, "w: data_offsets must be", NULL);
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 8);
    expect_st_error(path, "w: data_offsets must be", NULL);
}

static void test_safetensors_rejects_overlapping_offsets(void **state) {
    const char *path = ts_at(*state, "overlap.safetensors");
    ts_write_st_header(path,
                       "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]},"
                       "\"c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 32);
    expect_st_error(path, " overlap", NULL);
    ts_write_st_header(path,
                       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8);
    expect_st_error(path, " overlap", NULL);
}

static void test_safetensors_rejects_size_not_matching_shape(void **state) {
    const char *path = ts_at(*state, "size.safetensors");
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24);
    expect_st_error(path, "w: data_offsets span 24 bytes, shape [2, 3] of F16 needs 12", NULL);
}

static void test_safetensors_rejects_shape_product_overflow(void **state) {
    const char *path = ts_at(*state, "ovf.safetensors");
    /* 2^32 * 2^32 elements wraps to 0 in 64 bits; must not be taken for an empty tensor */
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0);
    expect_st_error(path, "w: shape [4294967296, 4294967296] is too large", NULL);
    ts_write_st_header(path, "{\"w\":{\"dtype\":\"F16\",\"shape\":[1125899906842624,1024,8],\"data_offsets\":[0,0]}}", 0);
    expect_st_error(path, "w: shape", "too large");      /* elements fit, bytes wrap to 0 */
}

static void test_safetensors_rejects_unknown_dtype(void **state) {
    const char *path = ts_at(*state, "dt.safetensors");
    ts_write_st_header(path, "{\"tok\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4);
    expect_st_error(path, "tok", "I8");
    ts_write_st_header(path, "{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8);
    expect_st_error(path, "x: unsupported dtype F64", NULL);
    ts_write_st_header(path, "{\"x\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    expect_st_error(path, "x: missing dtype", NULL);
}

static void test_safetensors_rejects_bad_entries(void **state) {
    const char *path = ts_at(*state, "entries.safetensors");
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
         "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "tensor w appears twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_write_st_header(path, cases[i].header, 8);
        expect_st_error(path, cases[i].want, NULL);
    }
}

static void test_safetensors_rejects_tensor_name_of_256_chars(void **state) {
    const char *path = ts_at(*state, "long.safetensors");
    char name[257], header[512];
    memset(name, 'n', 256);
    name[256] = 0;
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    ts_write_st_header(path, header, 4);
    expect_st_error(path, "name longer than 255", NULL);
    name[255] = 0;                                     /* 255 chars fit */
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    ts_write_st_header(path, header, 4);
    st_file f;
    char err[LLM_ERR_LEN];
    assert_int_equal(st_open(path, &f, err, sizeof err), 0);
    assert_non_null(st_find(&f, name));
    st_close(&f);
}

/* Every truncation and many random byte corruptions of a valid file: st_open either succeeds
 * with tensors inside the file or fails cleanly (valgrind/ASan catch stray reads). */
static void test_safetensors_corrupted_files_never_crash(void **state) {
    const char *good = ts_at(*state, "good.safetensors"), *bad = ts_at(*state, "bad.safetensors");
    float a[6] = {1, 2, 3, 4, 5, 6};
    uint16_t h[2] = {1, 2};
    ts_tdesc t[] = {{"a", "F32", 2, {2, 3}, a}, {"h", "BF16", 1, {2}, h}};
    ts_write_st_tensors(good, t, 2);
    FILE *fp = fopen(good, "rb");
    assert_non_null(fp);
    unsigned char buf[512];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    assert_true(n > 8 && n < sizeof buf);
    char err[LLM_ERR_LEN];
    st_file f;
    for (size_t len = 0; len < n; len++) {
        ts_write_bytes(bad, buf, len);
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
        ts_write_bytes(bad, mut, n);
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

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, ts_make_tmpdir, ts_remove_tmpdir)
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
    };
#undef T
    return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
