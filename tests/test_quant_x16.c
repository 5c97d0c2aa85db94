/* Tests for the 16-row interleaved block weights (WL_X16: kernels.h, kernels/cpu/quant_x16*.c):
 *  - packing is a permutation of the bytes: unpack(pack(W)) = W for whole groups, parts of a
 *    group and single blocks (x16_block), and the packed bytes differ from the ggml ones;
 *  - each of these with Q5's 5th bits as masks and as planes (x16_use_planes);
 *  - the X16 decode kernels against the same family's kernels on the ggml layout (random blocks)
 *    and against an exact int64 reference at the extremes (max nibbles and 5th bits, Q8_0 ±127 /
 *    −128, activations all ±32767);
 *  - matmul on a WL_X16 weight equals matmul on the WL_ROWS one: bit for bit wherever the rows
 *    are unpacked for the family's own kernels (prefill, families without an X16 kernel, the
 *    dequantize + sgemm mode), within f32 rounding through the X16 kernel; 1 and 2 threads; a
 *    call whose row split cuts a group (matmul_multi after a 40-row matrix); widen_row;
 *  - weight_x16_wanted: which dtypes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1; Q4_K and Q6_K on AVX512-VNNI and
 *    the 256-bit families, rows up to X16K_MAX_K), shapes and families (AVX2/AVX-VNNI and
 *    AVX-512, 16-bit activations).
 * Families the CPU cannot run are skipped, and say so. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/quant.h"
#include "kernels/kernels.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) { return ts_xorshift(&rng); }
static float frand(void) { return (float)(rnd() * (2.0 / 4294967296.0) - 1.0); }   /* [-1, 1) */

static const dtype_t XTYPES[] = {DT_Q8_0, DT_Q4_0, DT_Q4_1, DT_Q5_0, DT_Q5_1, DT_Q4_K, DT_Q6_K};
#define N_XTYPES 7
static int kq(dtype_t dt) { return dt == DT_Q4_K || dt == DT_Q6_K; }
static const char *const FAMILIES[] = {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni"};
#define N_FAMILIES 5


static uint8_t *packed(dtype_t dt, const uint8_t *W, int rows, int K)
{
    uint8_t *P = ts_aligned(dtype_row_bytes(dt, K) * rows);
    weight_x16_pack(dt, W, P, rows, K);
    return P;
}

static void test_pack_is_a_permutation_unpack_inverts_it_once(void **state)
{
    (void)state;
    for (int t = 0; t < N_XTYPES; t++) {
        dtype_t dt = XTYPES[t];
        const int bk = dtype_block(dt);
        for (int K = bk; K <= 7 * bk; K += 2 * bk) {   /* 32 .. 224, K-quants 256 .. 1792 */
            int rows = 48;
            size_t rb = dtype_row_bytes(dt, K), bb = dtype_block_bytes(dt);
            uint8_t *W = ts_rand_blocks(dt, rows, K, &rng), *P = packed(dt, W, rows, K), *U = ts_aligned(rb * 16);
            for (int bmi2 = 0; bmi2 < 2; bmi2++) {   /* both ways of turning qh into masks */
                uint8_t *P2 = ts_aligned(rb * rows);
                if (x16_use_bmi2(bmi2) == bmi2) {
                    weight_x16_pack(dt, W, P2, rows, K);
                    assert_memory_equal(P2, P, rb * rows);
                }
                free(P2);
            }
            x16_use_bmi2(-1);
            assert_true(memcmp(W, P, rb * rows) != 0);   /* a different arrangement ... */
            unsigned long hw[256] = {0}, hp[256] = {0};  /* ... of the same bytes (the masks aside) */
            for (size_t i = 0; i < rb * rows; i++) hw[W[i]]++, hp[P[i]]++;
            if (dt == DT_Q8_0 || dt == DT_Q4_0 || dt == DT_Q4_1 || kq(dt)) assert_memory_equal(hw, hp, sizeof hw);
            for (int g = 0; g < rows / 16; g++) {
                for (int bmi2 = 0; bmi2 < 2; bmi2++) {   /* both ways of turning Q5 masks into qh */
                    memset(U, 0, rb * 16);
                    if (x16_use_bmi2(bmi2) != bmi2) continue;
                    weight_x16_unpack(dt, P + (size_t)g * 16 * rb, U, 0, 16, K);
                    assert_memory_equal(U, W + (size_t)g * 16 * rb, rb * 16);
                }
                x16_use_bmi2(-1);
                weight_x16_unpack(dt, P + (size_t)g * 16 * rb, U, 3, 5, K);
                assert_memory_equal(U, W + ((size_t)g * 16 + 3) * rb, rb * 5);
            }
            uint8_t blk[256];   /* one block (Q6_K: 210 bytes) */
            for (int r = 0; r < rows; r += 7)
                for (int b = 0; b < K / bk; b++) {
                    x16_block(dt, P, K, r, b, blk);
                    assert_memory_equal(blk, W + (size_t)r * rb + (size_t)b * bb, bb);
                }
            free(W), free(P), free(U);
        }
    }
}

/* the extremes: every nibble 15 (Q5: every 5th bit set too; Q6_K: every quant 63) or 0,
 * alternating by block; d of either sign; m = 0.005; K-quant scales and mins at their largest
 * (Q4_K 63, Q6_K 127 and -128 alternating) */
static void extreme_rows(dtype_t dt, uint8_t *W, int rows, int K)
{
    size_t bb = dtype_block_bytes(dt), rb = dtype_row_bytes(dt, K);
    for (int r = 0; r < rows; r++)
        for (int b = 0; b < K / dtype_block(dt); b++) {
            uint8_t *p = W + (size_t)r * rb + (size_t)b * bb;
            int v = r + b;
            uint16_t d = f32_to_f16(v & 1 ? -0.01f : 0.01f), m = f32_to_f16(0.005f);
            if (kq(dt)) {
                memset(p, v & 2 ? 0xFF : 0x00, bb);
                if (dt == DT_Q4_K) {
                    memset(p + 4, 0xFF, 12);
                    memcpy(p, &d, 2), memcpy(p + 2, &m, 2);
                } else {
                    for (int j = 0; j < 16; j++) p[192 + j] = j & 1 ? 0x80 : 0x7F;
                    memcpy(p + 208, &d, 2);
                }
                continue;
            }
            memset(p, dt == DT_Q8_0 ? (v & 2 ? 0x7F : 0x80) : (v & 2 ? 0xFF : 0x00), bb);   /* Q8_0: 127 or -128 */
            memcpy(p, &d, 2);
            if (dt == DT_Q4_1 || dt == DT_Q5_1) memcpy(p + 2, &m, 2);
        }
}

static void test_x16_kernels_match_the_row_kernels_and_exact_sums_once(void **state)
{
    (void)state;
    int tested = 0;
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_quant_ops *q8 = cpu_quant_find(FAMILIES[f]), *q = q8 ? q8->w16 : NULL;
        for (int t = 0; t < N_XTYPES && q; t++) {
            dtype_t dt = XTYPES[t];
            qmm_fn kx = cpu_quant_x16(q, dt);
            if (!kx) continue;
            for (int K = kq(dt) ? 256 : 32; K <= (kq(dt) ? 256 * 5 : 32 * 13); K += kq(dt) ? 512 : 96)
                for (int ext = 0; ext < 2; ext++) {
                    int rows = 48;
                    size_t rb = dtype_row_bytes(dt, K);
                    uint8_t *W = ts_rand_blocks(dt, rows, K, &rng);
                    if (ext) extreme_rows(dt, W, rows, K);
                    uint8_t *P = packed(dt, W, rows, K);
                    float *x = ts_aligned((size_t)K * 4), *wf = ts_aligned((size_t)rows * K * 4);
                    for (int k = 0; k < K; k++) x[k] = ext ? (k % 3 ? 1.0f : -1.0f) : frand() * ((k * 7) % 13 ? 1.0f : 30.0f);
                    qact_fmt fm = quant_act_fmt(q, dt);
                    size_t xs = qact_row_bytes(fm, K);
                    uint8_t *X = ts_aligned(xs);
                    quant_act_row(q, fm, X, x, K);
                    float *yx = ts_aligned((size_t)rows * 4), *yr = ts_aligned((size_t)rows * 4);
                    kx(yx, 0, P, 0, X, xs, rows, 1, K);
                    q->mm[dt](yr, 0, W, rb, X, xs, rows, 1, K);
                    dequantize_row(dt, W, wf, (int64_t)rows * K);
                    /* the activations as the kernels see them: q·d per element (A32/16; A256/16:
                     * element order, d per 256) */
                    const int16_t *xq = (const int16_t *)X;
                    const float *xd = (const float *)(X + (kq(dt) ? qa16_off_d256(K) : qa16_off_d32(K)));
                    for (int r = 0; r < rows; r++) {
                        double ref = 0, mag = 0;
                        for (int k = 0; k < K; k++) {
                            double xv = kq(dt) ? (double)xq[k] * xd[k / 256] : (double)xq[qa16_idx32(k / 32, k % 32)] * xd[k / 32];
                            ref += (double)wf[(size_t)r * K + k] * xv;
                            mag += fabs((double)wf[(size_t)r * K + k] * xv);
                        }
                        TS_CLOSE(yx[r], ref, 2e-6 * mag + 1e-30, "%s %s K %d%s: X16 kernel row %d vs exact", FAMILIES[f], dtype_name(dt), K,
                              ext ? " extremes" : "", r);
                        TS_CLOSE(yx[r], yr[r], 2e-6 * mag + 1e-30, "%s %s K %d%s: X16 kernel row %d vs the row kernel", FAMILIES[f],
                              dtype_name(dt), K, ext ? " extremes" : "", r);
                    }
                    tested++;
                    free(W), free(P), free(x), free(wf), free(X), free(yx), free(yr);
                }
        }
    }
    if (!tested) printf("  [ SKIP ] no X16 kernel on this CPU (AVX2 + FMA + F16C needed)\n");
    else printf("  %d (family, dtype, K) cases\n", tested);
}

/* matmul (n rows of x) of w (WL_ROWS) and of its WL_X16 copy, family fam, threads threads. */
static void check_matmul(dtype_t dt, int rows, int K, int n, const char *fam, int threads)
{
    uint8_t *W = ts_rand_blocks(dt, rows, K, &rng), *P = packed(dt, W, rows, K);
    float *x = ts_aligned((size_t)n * K * 4), *wf = ts_aligned((size_t)rows * K * 4);
    for (int i = 0; i < n * K; i++) x[i] = frand() * (i % 11 ? 1.0f : 20.0f);
    dequantize_row(dt, W, wf, (int64_t)rows * K);
    weight_t wr = {dt, W, rows, K, WL_ROWS}, wx = {dt, P, rows, K, WL_X16};
    float *yr = ts_aligned((size_t)n * rows * 4), *yx = ts_aligned((size_t)n * rows * 4);
    cpu_set_threads(threads);
    assert_int_equal(cpu_quant_use(fam), 0);
    const cpu_quant_ops *q = cpu_quant();
    for (int mode = 0; mode < 2; mode++) {   /* the quantized kernels; dequantize + sgemm */
        if (mode && n == 1) continue;
        cpu_qgemm_mode = mode;
        matmul(yr, x, &wr, n);
        matmul(yx, x, &wx, n);
        cpu_qgemm_mode = 0;
        if (n > 1 || !cpu_quant_x16(q, dt)) {
            if (memcmp(yr, yx, (size_t)n * rows * 4) != 0)
                fail_msg("%s %s rows %d K %d n %d threads %d mode %d: WL_X16 != WL_ROWS (unpacked rows must give the same bits)", fam,
                         dtype_name(dt), rows, K, n, threads, mode);
        } else {
            for (int r = 0; r < rows; r++)
                TS_CLOSE(yx[r], yr[r], 2e-6 * ts_mag(wf + (size_t)r * K, x, K) + 1e-30, "%s %s rows %d K %d threads %d: y[%d]", fam,
                      dtype_name(dt), rows, K, threads, r);
        }
    }
    /* a call whose rows split inside the X16 matrix's groups: 40 rows of WL_ROWS Q8_0 first
     * (decode: the X16 kernel into a 16-row buffer; prefill: whole groups through the X16 GEMM,
     * the rest unpacked) */
    if (threads == 2) {
        int r0 = 40;
        uint8_t *W0 = ts_rand_blocks(DT_Q8_0, r0, K, &rng);
        weight_t w0 = {DT_Q8_0, W0, r0, K, WL_ROWS};
        float *y0 = ts_aligned((size_t)n * r0 * 4), *y0b = ts_aligned((size_t)n * r0 * 4);
        float *ym[2] = {y0, yx};
        const weight_t *wm[2] = {&w0, &wx}, *wr2[2] = {&w0, &wr};
        matmul_multi(ym, wm, 2, x, n);
        ym[0] = y0b, ym[1] = yr;
        matmul_multi(ym, wr2, 2, x, n);
        assert_memory_equal(y0, y0b, (size_t)n * r0 * 4);
        if (n > 1 || !cpu_quant_x16(q, dt)) {
            if (memcmp(yr, yx, (size_t)n * rows * 4) != 0)
                fail_msg("%s %s n %d after a 40-row matrix: WL_X16 != WL_ROWS", fam, dtype_name(dt), n);
        } else {
            for (int r = 0; r < rows; r++)
                TS_CLOSE(yx[r], yr[r], 2e-6 * ts_mag(wf + (size_t)r * K, x, K) + 1e-30, "%s %s after a 40-row matrix: y[%d]", fam,
                      dtype_name(dt), r);
        }
        free(W0), free(y0), free(y0b);
    }
    float *row = ts_aligned((size_t)K * 4);
    for (int r = 0; r < rows; r += 5) {
        widen_row(row, &wx, r);
        assert_memory_equal(row, wf + (size_t)r * K, (size_t)K * 4);
    }
    assert_int_equal(cpu_quant_use(NULL), 0);
    free(W), free(P), free(x), free(wf), free(yr), free(yx), free(row);
}

static void test_matmul_on_x16_weights_equals_matmul_on_rows_once(void **state)
{
    (void)state;
    assert_int_equal(cpu_quant_act_bits(0), 16);
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!cpu_quant_find(FAMILIES[f])) {
            printf("  [ SKIP ] %s: this CPU (or build) cannot run it\n", FAMILIES[f]);
            continue;
        }
        for (int t = 0; t < N_XTYPES; t++) {
            dtype_t dt = XTYPES[t];
            const int k1 = kq(dt) ? 256 : 96, k2 = kq(dt) ? 512 : 160, k3 = kq(dt) ? 768 : 576;
            check_matmul(dt, 48, k1, 1, FAMILIES[f], 1);
            check_matmul(dt, 48, k1, 3, FAMILIES[f], 1);
            check_matmul(dt, 304, k2, 9, FAMILIES[f], 2);
            check_matmul(dt, 304, k3, 1, FAMILIES[f], 2);
            check_matmul(dt, 304, k3, 9, FAMILIES[f], 2);   /* enough work for 2 prefill threads */
        }
    }
    /* 8-bit activations: the 8-bit tables have no X16 kernel, so the unpacked rows, bit for bit */
    assert_int_equal(cpu_quant_act_bits(8), 8);
    check_matmul(DT_Q4_1, 304, 160, 1, "scalar", 2);
    if (cpu_quant_find("avx512vnni")) check_matmul(DT_Q5_0, 304, 160, 1, "avx512vnni", 2);
    if (cpu_quant_find("avx512vnni")) check_matmul(DT_Q6_K, 304, 512, 1, "avx512vnni", 2);
    assert_int_equal(cpu_quant_act_bits(16), 16);
    cpu_set_threads(1);
}

static void test_x16_wanted_for_the_dtypes_shapes_and_families_it_serves(void **state)
{
    (void)state;
    uint8_t dummy[64];
    weight_t w = {DT_Q4_1, dummy, 32, 64, WL_ROWS};
    assert_int_equal(cpu_quant_use("scalar"), 0);
    assert_int_equal(weight_x16_wanted(&w), 0);   /* no X16 kernel in the scalar family */
    if (cpu_quant_find("avx512vnni") || cpu_quant_find("avx512")) {
        const int vnni = cpu_quant_find("avx512vnni") != NULL;
        assert_int_equal(cpu_quant_use(vnni ? "avx512vnni" : "avx512"), 0);
        assert_int_equal(weight_x16_wanted(&w), 1);
        weight_t odd = w, q8 = w, q4k = {DT_Q4_K, dummy, 32, 256, WL_ROWS}, done = w, f16 = w;
        weight_t q6k = {DT_Q6_K, dummy, 32, 512, WL_ROWS}, q6k_long = q6k, q4k_odd = q4k;
        q6k_long.cols = X16K_MAX_K + 256;
        q4k_odd.rows = 24;
        odd.rows = 40;
        q8.dtype = DT_Q8_0;
        f16.dtype = DT_F16;
        done.layout = WL_X16;
        assert_int_equal(weight_x16_wanted(&odd), 0);
        assert_int_equal(weight_x16_wanted(&q8), 1);
        assert_int_equal(weight_x16_wanted(&f16), 0);
        assert_int_equal(weight_x16_wanted(&q4k), vnni);   /* the K-quants: not the AVX-512 family without VNNI */
        assert_int_equal(weight_x16_wanted(&q6k), vnni);
        assert_int_equal(weight_x16_wanted(&q6k_long), 0);   /* the planes live on the stack */
        assert_int_equal(weight_x16_wanted(&q4k_odd), 0);
        assert_int_equal(weight_x16_wanted(&done), 0);
        assert_int_equal(cpu_quant_act_bits(8), 8);
        assert_int_equal(weight_x16_wanted(&w), 0);   /* 8-bit activations: no X16 kernel */
        assert_int_equal(cpu_quant_act_bits(16), 16);
    } else {
        printf("  [ SKIP ] the AVX-512 families: this CPU (or build) cannot run them\n");
    }
    if (cpu_quant_find("avx2")) {   /* the 256-bit families have the kernels too, K-quants included */
        assert_int_equal(cpu_quant_use("avx2"), 0);
        assert_int_equal(weight_x16_wanted(&w), 1);
        weight_t q4k = {DT_Q4_K, dummy, 32, 256, WL_ROWS}, q6k_long = {DT_Q6_K, dummy, 32, X16K_MAX_K + 256, WL_ROWS};
        assert_int_equal(weight_x16_wanted(&q4k), 1);
        assert_int_equal(weight_x16_wanted(&q6k_long), 0);   /* the planes live on the stack */
        assert_int_equal(cpu_quant_act_bits(8), 8);
        assert_int_equal(weight_x16_wanted(&q4k), 0);   /* 8-bit activations: no X16 kernel */
        assert_int_equal(cpu_quant_act_bits(16), 16);
    }
    assert_int_equal(cpu_quant_use(NULL), 0);
}

/* fn with both ways of keeping Q5's 5th bits (x16_use_planes), the CPU's default restored after */
static void both_layouts(void (*fn)(void **), void **state)
{
    for (int planes = 0; planes < 2; planes++) {
        assert_int_equal(x16_use_planes(planes), planes);
        printf("  5th bits as %s\n", planes ? "planes" : "masks");
        fn(state);
    }
    x16_use_planes(-1);
}
static void test_pack_is_a_permutation_unpack_inverts_it(void **state) { both_layouts(test_pack_is_a_permutation_unpack_inverts_it_once, state); }
static void test_x16_kernels_match_the_row_kernels_and_exact_sums(void **state) { both_layouts(test_x16_kernels_match_the_row_kernels_and_exact_sums_once, state); }
static void test_matmul_on_x16_weights_equals_matmul_on_rows(void **state) { both_layouts(test_matmul_on_x16_weights_equals_matmul_on_rows_once, state); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_is_a_permutation_unpack_inverts_it),
        cmocka_unit_test(test_x16_kernels_match_the_row_kernels_and_exact_sums),
        cmocka_unit_test(test_matmul_on_x16_weights_equals_matmul_on_rows),
        cmocka_unit_test(test_x16_wanted_for_the_dtypes_shapes_and_families_it_serves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
