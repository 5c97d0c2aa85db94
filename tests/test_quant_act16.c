/* Tests for the 16-bit activations of the block-format matmuls (kernels/cpu/quant16*.c,
 * cpu_quant_act_bits):
 *  - the 16-bit quantizer, re-derived here (d = amax/32767, q = nearest even of x·32767/amax,
 *    the A32/16 group layout, the block sums, zero padding, blocks too small to scale), and every
 *    family's quantizer writes the scalar one's bytes;
 *  - the scalar reference is the dot product of the dequantized weights with the dequantized
 *    activations (q·d) up to f32 rounding;
 *  - every family's 16-bit kernels (matvec, register tiles, packed-panel GEMM) against the scalar
 *    reference at odd sizes (1..9 blocks: every tail of the groups of 4; 1, 17, 37 rows);
 *  - no int32 overflow: blocks at the extremes (max nibbles and max scales, Q6_K q = −32 with
 *    scale −128, Q8_0 −128) times activations all at ±32767, every family against an exact
 *    int64 reference;
 *  - matmul in 16 bits against the f32 reference within the bound of the 16-bit rounding
 *    (Σ|w|·amax_b/32767), its RMS within twice the rounding noise, decode = prefill up to f32
 *    rounding, for every family and 1 or 2 threads; cpu_quant_act_bits set and read back, and 8
 *    bits giving the 8-bit kernels' results.
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

static uint64_t rng = 0xD1B54A32D192ED03ull;
static uint32_t rnd(void) { return ts_xorshift(&rng); }
static float frand(void) { return (float)(rnd() * (2.0 / 4294967296.0) - 1.0); }   /* [-1, 1) */

static const dtype_t QTYPES[] = {DT_Q8_0, DT_Q4_0, DT_Q4_1, DT_Q5_0, DT_Q5_1, DT_Q4_K, DT_Q5_K, DT_Q6_K};
#define N_QTYPES 8
static const char *const FAMILIES[] = {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni"};
#define N_FAMILIES 5

/* the 16-bit table of the family called name, or NULL (and a SKIP line once per call site) */
static const cpu_quant_ops *fam16(const char *name, int say)
{
    const cpu_quant_ops *q = cpu_quant_find(name);
    if (!q && say) printf("  [ SKIP ] %s 16-bit kernels: this CPU (or build) cannot run them\n", name);
    return q ? q->w16 : NULL;
}

static void *xmalloc(size_t n) { return ts_aligned(n); }

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static uint8_t *rand_weights(dtype_t dt, int rows, int K) { return ts_rand_blocks(dt, rows, K, &rng); }

static double mag_of(const float *w, const float *x, int K) { return ts_mag(w, x, K); }


/* The quantized activation row as f32 (q·d per element, element order). */
static void act16_values(const uint8_t *r, int kind, int K, double *out)
{
    const int16_t *qs = (const int16_t *)r;
    for (int k = 0; k < K; k++) {
        if (kind == QA_32) out[k] = qs[qa16_idx32(k / 32, k % 32)] * (double)((const float *)(r + qa16_off_d32(K)))[k / 32];
        else out[k] = qs[k] * (double)((const float *)(r + qa16_off_d256(K)))[k / 256];
    }
}

/* ------------------------------------------------------------------ quantizers */

static void edge_rows(float *x, int K, int row)
{
    for (int k = 0; k < K; k++) x[k] = frand() * (row % 3 == 0 ? 3.0f : 0.01f);
    if (row == 1)
        for (int k = 0; k < K && k < 64; k++) x[k] = 0.0f;
    if (row == 2)   /* ties: x · 32767/amax at k + 0.5 (amax = 32767 · 2^-10) */
        for (int k = 0; k < K; k++) x[k] = ldexpf((float)((k * 37) % 32767 - 16383) + ((k & 1) ? 0.5f : 0.0f), -10);
    if (row == 2)
        for (int b = 0; b < K / 32; b++) x[32 * b + 5] = ldexpf(32767.0f, -10);
    if (row == 4) x[K / 2] = -50.0f;
    if (row == 5)   /* a block (and for K ≥ 256 a super-block's first 32) too small to scale */
        for (int k = 0; k < 32; k++) x[k] = ldexpf(frand(), -110);
}

static void test_quantizer16_rederived_and_every_family_writes_the_same_bytes(void **state)
{
    (void)state;
    const int Ks[] = {32, 96, 160, 256, 768, 1792};
    for (int ki = 0; ki < 6; ki++) {
        int K = Ks[ki];
        float *x = xmalloc((size_t)K * 4);
        for (int row = 0; row < 6; row++) {
            edge_rows(x, K, row);
            for (int kind = 0; kind < 2; kind++) {
                if (kind == QA_256 && K % QKK) continue;
                for (int c = 0; c <= 16; c += 8) {
                    if (kind == QA_256 && c) continue;
                    qact_fmt fm = {kind, c, 16};
                    size_t rb = qact_row_bytes(fm, K);
                    uint8_t *r0 = xmalloc(rb), *r1 = xmalloc(rb);
                    memset(r0, 0x5A, rb);
                    quant_act_row(&cpu_quant_scalar16, fm, r0, x, K);
                    const int16_t *qs = (const int16_t *)r0;
                    int bk = kind == QA_32 ? 32 : 256;
                    const float *d = (const float *)(r0 + (kind == QA_32 ? qa16_off_d32(K) : qa16_off_d256(K)));
                    for (int b = 0; b < K / bk; b++) {
                        float amax = 0;
                        for (int l = 0; l < bk; l++) amax = fmaxf(amax, fabsf(x[bk * b + l]));
                        int zero = !(amax >= 0x1p-100f);
                        assert_true(d[b] == (zero ? 0.0f : amax / 32767.0f));
                        float id = zero ? 0.0f : 32767.0f / amax;
                        for (int l = 0; l < bk; l++) {
                            int q = kind == QA_32 ? qs[qa16_idx32(b, l)] : qs[bk * b + l];
                            assert_int_equal(q, (int)nearbyintf(x[bk * b + l] * id));
                            assert_true(q >= -32767 && q <= 32767);
                        }
                        if (kind == QA_32) {
                            int sum = 0;
                            for (int l = 0; l < 32; l++) sum += qs[qa16_idx32(b, l)];
                            const float *s2 = (const float *)(r0 + qa16_off_s2(K));
                            assert_true(s2[2 * b] == 0.0f && s2[2 * b + 1] == d[b] * (float)sum);
                            if (c) assert_int_equal(((const int32_t *)(r0 + qa16_off_corr(K)))[b], -c * sum);
                        } else
                            for (int s = 0; s < 8; s++) {
                                int sum = 0;
                                for (int l = 0; l < 32; l++) sum += qs[256 * b + 32 * s + l];
                                assert_true(((const float *)(r0 + qa16_off_bs32f(K)))[8 * b + s] == (float)sum);
                            }
                    }
                    if (kind == QA_32)   /* the padding blocks of the last group: zero */
                        for (int b = K / 32; b < 4 * qa16_groups(K); b++) {
                            for (int l = 0; l < 32; l++) assert_int_equal(qs[qa16_idx32(b, l)], 0);
                            assert_true(d[b] == 0.0f);
                            assert_true(((const float *)(r0 + qa16_off_s2(K)))[2 * b + 1] == 0.0f);
                            if (c) assert_int_equal(((const int32_t *)(r0 + qa16_off_corr(K)))[b], 0);
                        }
                    for (int f = 1; f < N_FAMILIES; f++) {
                        const cpu_quant_ops *q = fam16(FAMILIES[f], 0);
                        if (!q) continue;
                        memset(r1, 0x5A, rb);
                        quant_act_row(q, fm, r1, x, K);
                        if (memcmp(r0, r1, rb))
                            fail_msg("%s act%s/16 c=%d K=%d row %d differs from scalar", q->name, kind ? "256" : "32", c, K, row);
                    }
                    free(r0);
                    free(r1);
                }
            }
        }
        free(x);
    }
}

/* The scalar reference is Σ w·x̂ over the dequantized rows (x̂ = q·d), up to f32 rounding. */
static void test_scalar16_reference_is_the_dot_product_of_dequantized_rows(void **state)
{
    (void)state;
    for (int t = 0; t < N_QTYPES; t++) {
        dtype_t dt = QTYPES[t];
        for (int nbk = 1; nbk <= 6; nbk++) {
            int K = nbk * dtype_block(dt);
            uint8_t *W = rand_weights(dt, 1, K);
            float *x = xmalloc((size_t)K * 4), *wf = xmalloc((size_t)K * 4);
            for (int k = 0; k < K; k++) x[k] = frand() * (k % 5 == 0 ? 8.0f : 1.0f);
            dequantize_row(dt, W, wf, K);
            qact_fmt fm = quant_act_fmt(&cpu_quant_scalar16, dt);
            uint8_t *X = xmalloc(qact_row_bytes(fm, K));
            quant_act_row(&cpu_quant_scalar16, fm, X, x, K);
            double *xh = xmalloc((size_t)K * 8), ref = 0, mag = 0;
            act16_values(X, fm.kind, K, xh);
            for (int k = 0; k < K; k++) {
                ref += wf[k] * xh[k];
                mag += fabs(wf[k] * xh[k]);
            }
            float y;
            cpu_quant_scalar16.mm[dt](&y, 0, W, 0, X, 0, 1, 1, K);
            TS_CLOSE(y, ref, 2e-6 * mag + 1e-30, "%s K %d: scalar16 dot vs Σ w·x̂", dtype_name(dt), K);
            free(W), free(x), free(wf), free(X), free(xh);
        }
    }
}

/* ------------------------------------------------------------------ family kernels */

static void test_kernels16_every_family_match_scalar_at_odd_sizes(void **state)
{
    (void)state;
    static const int NXS[] = {1, 2, 3, 4, 5, 17, 64};
    const int ROWS[] = {1, 17, 37, 5};
    int tested = 0;
    for (int f = 1; f < N_FAMILIES; f++) {
        const cpu_quant_ops *q = fam16(FAMILIES[f], 1);
        if (!q) continue;
        for (int t = 0; t < N_QTYPES; t++) {
            dtype_t dt = QTYPES[t];
            int k256 = dtype_block(dt) == 256;
            for (int ki = 0; ki < (k256 ? 3 : 9); ki++)
                tested += ts_quant_check_vs_scalar(&cpu_quant_scalar16, q, dt, ROWS[ki % 4], (ki + 1) * dtype_block(dt),
                                                   NXS, 7, "/16", &rng);
        }
    }
    printf("  %d (family, dtype, K, n) cases\n", tested);
}

/* Weight blocks at their extremes: every quant the largest magnitude the format allows with the
 * largest scales, so each block's integer sum is as large as it gets. */
static void extreme_block(dtype_t dt, uint8_t *p, int variant)
{
    size_t bb = dtype_block_bytes(dt);
    uint16_t one = f32_to_f16(variant & 1 ? -0.01f : 0.01f), half = f32_to_f16(0.005f);
    switch (dt) {
    case DT_Q8_0: memset(p + 2, variant & 2 ? 0x7F : 0x80, 32); put16(p, one); break;   /* q = 127 or −128 */
    case DT_Q4_0: case DT_Q4_1: memset(p + (dt == DT_Q4_0 ? 2 : 4), variant & 2 ? 0xFF : 0x00, 16); break;
    case DT_Q5_0: case DT_Q5_1: {
        const int ho = dt == DT_Q5_0 ? 2 : 4;
        memset(p + ho, variant & 2 ? 0xFF : 0x00, 4);   /* q = 31 or 0 (Q5_0: 15 or −16) */
        memset(p + ho + 4, variant & 2 ? 0xFF : 0x00, 16);
        break;
    }
    case DT_Q4_K: case DT_Q5_K:
        memset(p + 4, 0xFF, 12);   /* scales and mins 63 */
        memset(p + 16, 0xFF, bb - 16);   /* (Q5_K: qh too) q = 15 / 31 */
        break;
    default:   /* Q6_K: q = −32 (all bits 0) or 31, scales −128 or 127 */
        memset(p, variant & 2 ? 0xFF : 0x00, 192);
        memset(p + 192, variant & 2 ? 0x7F : 0x80, 16);
        put16(p + 208, one);
        return;
    }
    if (dt != DT_Q8_0) {
        put16(p, one);
        if (dt == DT_Q4_1 || dt == DT_Q5_1 || dt == DT_Q4_K || dt == DT_Q5_K) put16(p + 2, half);
    }
}

static void test_kernels16_do_not_overflow_at_the_extremes(void **state)
{
    (void)state;
    int tested = 0;
    for (int t = 0; t < N_QTYPES; t++) {
        dtype_t dt = QTYPES[t];
        int K = 7 * dtype_block(dt), rows = 3, nx = 6;
        size_t rb = dtype_row_bytes(dt, K), bb = dtype_block_bytes(dt);
        uint8_t *W = malloc(rb * rows);
        assert_non_null(W);
        for (int r = 0; r < rows; r++)
            for (int b = 0; b < K / dtype_block(dt); b++) extreme_block(dt, W + r * rb + b * bb, r + b);
        float *x = xmalloc((size_t)nx * K * 4), *wf = xmalloc((size_t)rows * K * 4);
        dequantize_row(dt, W, wf, (int64_t)rows * K);
        for (int j = 0; j < nx; j++)   /* ±1 (so every quant is ±32767), signs by row */
            for (int k = 0; k < K; k++) x[(size_t)j * K + k] = j % 3 == 0 ? 1.0f : j % 3 == 1 ? -1.0f : (k & 1 ? 1.0f : -1.0f);
        for (int f = 0; f < N_FAMILIES; f++) {
            const cpu_quant_ops *q = fam16(FAMILIES[f], 0);
            if (!q) continue;
            qact_fmt fm = quant_act_fmt(q, dt);
            size_t xs = qact_row_bytes(fm, K);
            uint8_t *X = xmalloc(xs * nx), *buf = q->gemm[dt] ? xmalloc(q->gemm_buf(dt, K)) : NULL;
            double *xh = xmalloc((size_t)K * 8);
            float *y = xmalloc((size_t)nx * rows * 4), *yg = xmalloc((size_t)nx * rows * 4), y1;
            for (int j = 0; j < nx; j++) quant_act_row(q, fm, X + j * xs, x + (size_t)j * K, K);
            q->mm[dt](y, rows, W, rb, X, xs, rows, nx, K);
            if (buf) q->gemm[dt](yg, rows, W, rb, X, xs, rows, nx, K, buf);
            for (int j = 0; j < nx; j++) {
                act16_values(X + j * xs, fm.kind, K, xh);
                for (int r = 0; r < rows; r++) {
                    double ref = 0, mag = 0;
                    for (int k = 0; k < K; k++) {
                        ref += (double)wf[(size_t)r * K + k] * xh[k];
                        mag += fabs((double)wf[(size_t)r * K + k] * xh[k]);
                    }
                    q->mm[dt](&y1, 0, W + r * rb, rb, X + j * xs, 0, 1, 1, K);
                    TS_CLOSE(y[(size_t)j * rows + r], ref, 1e-5 * mag, "%s/16 %s extremes: tile y[%d][%d]", FAMILIES[f], dtype_name(dt), j, r);
                    TS_CLOSE(y1, ref, 1e-5 * mag, "%s/16 %s extremes: matvec y[%d][%d]", FAMILIES[f], dtype_name(dt), j, r);
                    if (buf) TS_CLOSE(yg[(size_t)j * rows + r], ref, 1e-5 * mag, "%s/16 %s extremes: packed GEMM y[%d][%d]", FAMILIES[f], dtype_name(dt), j, r);
                }
            }
            tested++;
            free(X), free(buf), free(xh), free(y), free(yg);
        }
        free(W), free(x), free(wf);
    }
    printf("  %d (family, dtype) cases at the extremes\n", tested);
}

/* ---------------------------------------------------------------- matmul end to end */

static void check_matmul16(dtype_t dt, int rows, int K, int n, const char *fam, int threads)
{
    uint8_t *W = rand_weights(dt, rows, K);
    float *wf = xmalloc((size_t)rows * K * 4), *x = xmalloc((size_t)n * K * 4);
    for (int j = 0; j < n; j++)   /* rows of different scales, with outliers */
        for (int k = 0; k < K; k++) x[(size_t)j * K + k] = frand() * (float)(1 + j % 4) * ((k * 7) % 13 == 0 ? 40.0f : 1.0f);
    dequantize_row(dt, W, wf, (int64_t)rows * K);
    weight_t w = {dt, W, rows, K, WL_ROWS};
    float *y = xmalloc((size_t)n * rows * 4), *y1 = xmalloc((size_t)rows * 4);
    cpu_set_threads(threads);
    assert_int_equal(cpu_quant_use(fam), 0);
    matmul(y, x, &w, n);
    int bk = dtype_block(dt);
    double e2 = 0, v2 = 0;
    for (int j = 0; j < n; j++) {
        const float *xj = x + (size_t)j * K;
        for (int r = 0; r < rows; r++) {
            const float *wr = wf + (size_t)r * K;
            double ref = 0, bound = 0;
            for (int b = 0; b < K / bk; b++) {
                double amax = 0, wabs = 0, w2 = 0;
                for (int l = 0; l < bk; l++) {
                    amax = fmax(amax, fabs(xj[b * bk + l]));
                    wabs += fabs(wr[b * bk + l]);
                    w2 += (double)wr[b * bk + l] * wr[b * bk + l];
                    ref += (double)wr[b * bk + l] * xj[b * bk + l];
                }
                double step = amax / 32767;
                bound += wabs * step / 2;
                v2 += w2 * step * step / 12;
            }
            float got = y[(size_t)j * rows + r];
            TS_CLOSE(got, ref, bound + 2e-6 * mag_of(wr, xj, K) + 1e-6, "%s/16 %s rows %d K %d n %d threads %d: y[%d][%d] vs f32 reference",
                  fam, dtype_name(dt), rows, K, n, threads, j, r);
            e2 += (got - ref) * (got - ref);
        }
        if (j < 3 || j == n - 1) {
            matmul(y1, xj, &w, 1);
            for (int r = 0; r < rows; r++)
                TS_CLOSE(y1[r], y[(size_t)j * rows + r], 1e-5 * mag_of(wf + (size_t)r * K, xj, K), "%s/16 %s: decode vs prefill row %d",
                      fam, dtype_name(dt), j);
        }
    }
    if (!(e2 <= 4 * v2)) fail_msg("%s/16 %s n %d: RMS error %.3g > 2 × the rounding noise %.3g", fam, dtype_name(dt), n, sqrt(e2), sqrt(v2));
    assert_int_equal(cpu_quant_use(NULL), 0);
    free(W), free(wf), free(x), free(y), free(y1);
}

static void test_matmul16_matches_f32_reference(void **state)
{
    (void)state;
    assert_int_equal(cpu_quant_act_bits(0), 16);   /* the default */
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!fam16(FAMILIES[f], 1)) continue;
        for (int t = 0; t < N_QTYPES; t++) {
            dtype_t dt = QTYPES[t];
            int K = dtype_block(dt) == 256 ? 512 : 96;
            check_matmul16(dt, 37, K, 1, FAMILIES[f], 1);
            check_matmul16(dt, 37, K, 5, FAMILIES[f], 1);
            check_matmul16(dt, 301, K * 3, 9, FAMILIES[f], 2);
            check_matmul16(dt, 300, K * 2, 1, FAMILIES[f], 2);
        }
    }
    cpu_set_threads(1);
}

static void test_act_bits_setting_switches_the_kernels(void **state)
{
    (void)state;
    assert_int_equal(cpu_quant_act_bits(0), 16);
    assert_int_equal(cpu_quant_act_bits(12), -1);
    assert_int_equal(cpu_quant_act_bits(0), 16);
    assert_int_equal(cpu_quant()->bits, 16);
    int K = 256, rows = 40, n = 7;
    for (int t = 0; t < N_QTYPES; t++) {
        dtype_t dt = QTYPES[t];
        uint8_t *W = rand_weights(dt, rows, K);
        float *x = xmalloc((size_t)n * K * 4), *y8 = xmalloc((size_t)n * rows * 4), *y16 = xmalloc((size_t)n * rows * 4);
        for (int i = 0; i < n * K; i++) x[i] = frand();
        weight_t w = {dt, W, rows, K, WL_ROWS};
        for (int nn = 1; nn <= n; nn += n - 1) {
            assert_int_equal(cpu_quant_act_bits(8), 8);
            assert_int_equal(cpu_quant()->bits, 8);
            matmul(y8, x, &w, nn);
            /* 8 bits: the 8-bit table's own kernels, bit for bit */
            const cpu_quant_ops *q8 = cpu_quant();
            qact_fmt fm = quant_act_fmt(q8, dt);
            size_t xs = qact_row_bytes(fm, K);
            uint8_t *X = xmalloc(xs);
            float *yr = xmalloc((size_t)rows * 4);
            quant_act_row(q8, fm, X, x, K);
            q8->mm[dt](yr, 0, W, dtype_row_bytes(dt, K), X, xs, rows, 1, K);
            if (nn == 1) assert_memory_equal(yr, y8, (size_t)rows * 4);
            assert_int_equal(cpu_quant_act_bits(16), 16);
            matmul(y16, x, &w, nn);
            int differ = memcmp(y8, y16, (size_t)nn * rows * 4) != 0;
            assert_true(differ);
            free(X), free(yr);
        }
        free(W), free(x), free(y8), free(y16);
    }
}

int main(void)
{
    printf("16-bit quantized kernels in use: %s (SIMD family %s)\n", cpu_quant()->name, cpu_simd_name());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantizer16_rederived_and_every_family_writes_the_same_bytes),
        cmocka_unit_test(test_scalar16_reference_is_the_dot_product_of_dequantized_rows),
        cmocka_unit_test(test_kernels16_every_family_match_scalar_at_odd_sizes),
        cmocka_unit_test(test_kernels16_do_not_overflow_at_the_extremes),
        cmocka_unit_test(test_matmul16_matches_f32_reference),
        cmocka_unit_test(test_act_bits_setting_switches_the_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
