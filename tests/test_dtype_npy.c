/* Tests for the dtype conversions (f16, bf16 <-> f32: known bit patterns, round to nearest even,
 * every value round-trips) and model/npy.c (write then read, versions 1 and 2, int and f64
 * arrays, malformed files). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "tests/support/files.h"

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
    const char *path = ts_at(*state, "x.npy");
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
    ts_write_bytes(path, buf, pre + hlen + n);
}

static void test_npy_reads_int_and_f64_1d_and_v2_headers(void **state) {
    const char *path = ts_at(*state, "i.npy");
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
    const char *path = ts_at(*state, "bad.npy");
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
    ts_write_bytes(path, "\x93NUMPX\x01\x00\x00\x00", 10);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a .npy"));
    ts_write_bytes(path, "\x93NUMPY\x01\x00\xff\x00{}", 12);
    assert_int_equal(npy_read_f32(path, &y, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "past the end"));
    assert_int_equal(npy_read_f32(ts_at(*state, "none.npy"), &y, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "none.npy: cannot open"));
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, ts_make_tmpdir, ts_remove_tmpdir)
    const struct CMUnitTest tests[] = {
        T(test_f16_to_f32_known_bit_patterns),
        T(test_f32_to_f16_rounds_to_nearest_even),
        T(test_bf16_known_bit_patterns_and_rounding),
        T(test_npy_write_then_read_round_trip),
        T(test_npy_reads_int_and_f64_1d_and_v2_headers),
        T(test_npy_rejects_malformed_files),
    };
#undef T
    return cmocka_run_group_tests_name("dtype_npy", tests, NULL, NULL);
}
