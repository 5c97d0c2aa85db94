/* Tests for the BF16 × BF16 prefill GEMM of `--act-bits 8` (kernels/cpu/gemm_bf16_avx512.c),
 * on CPUs with AVX512-BF16 (skipped, saying so, elsewhere):
 *  - cpu_round_bf16_avx512bf16 rounds to nearest even (ties included) at every length 0..70
 *    (the vector body and the masked tail), against a scalar reference;
 *  - cpu_gemm_nt_bf16_avx512bf16 against float64 sums of the bf16 operands at K with and
 *    without a 32-column tail and above the 2048-column chunk, every tile shape (8/4/1 weight
 *    rows × 3/2/1 tokens), and the same bits for any split of the rows or of the tokens;
 *  - matmul (the public entry, 2 threads): with act-bits 8, BF16 weights and n > 1 give exactly
 *    the kernel's bits on the rounded activations; with act-bits 16 (the default) the f32
 *    activations are kept (float64 reference with unrounded x); decode (n = 1) is the same
 *    under both settings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"
#include "tests/support/support.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static float *rand_floats(size_t n)
{
    float *a = malloc(n * sizeof *a + 4);
    assert_non_null(a);
    for (size_t i = 0; i < n; i++) a[i] = ts_xorshift_float(&rng);
    return a;
}

static uint16_t bf16_rne(float f)   /* the scalar reference: round to nearest, ties to even */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double bf16_val(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int have(void)
{
    if (cpu_has_avx512bf16()) return 1;
    printf("  [ SKIP ] this CPU has no AVX512-BF16: the --act-bits 8 BF16 path is not used here\n");
    return 0;
}

static void test_round_is_nearest_even_at_every_length(void **state)
{
    (void)state;
    if (!have()) return;
#ifdef LLM_SIMD_X86
    for (int n = 0; n <= 70; n++) {
        float *x = rand_floats((size_t)n + 1);
        for (int i = 0; i < n; i += 5) {   /* exact ties: halfway between two bf16 values */
            uint32_t u;
            memcpy(&u, &x[i], 4);
            u = (u & 0xFFFF0000u) | 0x8000u;
            memcpy(&x[i], &u, 4);
        }
        uint16_t *o = malloc(((size_t)n + 1) * 2);
        assert_non_null(o);
        o[n] = 0xABCD;
        cpu_round_bf16_avx512bf16(o, x, (size_t)n);
        for (int i = 0; i < n; i++)
            if (o[i] != bf16_rne(x[i])) fail_msg("n %d: bf16(%.9g) = %04x, expected %04x", n, x[i], o[i], bf16_rne(x[i]));
        assert_int_equal(o[n], 0xABCD);   /* nothing written past n */
        free(x), free(o);
    }
#endif
}

static void test_gemm_matches_float64_and_any_split_gives_the_same_bits(void **state)
{
    (void)state;
    if (!have()) return;
#ifdef LLM_SIMD_X86
    const int Ks[] = {1, 7, 32, 33, 768, 2050, 4100}, ns[] = {1, 2, 3, 4, 7, 50}, rows_[] = {1, 5, 8, 13, 37};
    for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ri = 0; ri < sizeof rows_ / sizeof *rows_; ri++) {
                int K = Ks[ki], n = ns[ni], rows = rows_[ri];
                if (K > 2050 && (n > 7 || rows > 13)) continue;   /* the chunked K: small shapes do */
                uint16_t *W = malloc((size_t)rows * K * 2), *x = malloc((size_t)n * K * 2);
                float *y = malloc((size_t)n * rows * 4), *y2 = malloc((size_t)n * rows * 4);
                assert_true(W && x && y && y2);
                for (size_t i = 0; i < (size_t)rows * K; i++) W[i] = bf16_rne(ts_xorshift_float(&rng));
                for (size_t i = 0; i < (size_t)n * K; i++) x[i] = bf16_rne(ts_xorshift_float(&rng));
                cpu_gemm_nt_bf16_avx512bf16(y, rows, x, n, W, 0, rows, K);
                for (int j = 0; j < n; j++)
                    for (int r = 0; r < rows; r++) {
                        double sum = 0, mag = 0;
                        for (int c = 0; c < K; c++) {
                            double p = bf16_val(W[(size_t)r * K + c]) * bf16_val(x[(size_t)j * K + c]);
                            sum += p, mag += fabs(p);
                        }
                        TS_CLOSE(y[(size_t)j * rows + r], sum, 1e-5 * mag + 1e-30, "gemm_nt_bf16 K %d n %d rows %d: y[%d][%d]", K, n,
                                 rows, j, r);
                    }
                int a = rows / 3, b = n / 2;   /* rows split at a (not a multiple of 8), tokens at b */
                memset(y2, 0xff, (size_t)n * rows * 4);
                cpu_gemm_nt_bf16_avx512bf16(y2, rows, x, b, W, 0, a, K);
                cpu_gemm_nt_bf16_avx512bf16(y2, rows, x, b, W, a, rows, K);
                cpu_gemm_nt_bf16_avx512bf16(y2 + (size_t)b * rows, rows, x + (size_t)b * K, n - b, W, 0, rows, K);
                assert_memory_equal(y, y2, (size_t)n * rows * 4);
                free(W), free(x), free(y), free(y2);
            }
#endif
}

static void test_matmul_rounds_activations_only_with_act_bits_8(void **state)
{
    (void)state;
    if (!have()) return;
#ifdef LLM_SIMD_X86
    if (cpu_simd() != &cpu_simd_avx512) {
        printf("  [ SKIP ] the active SIMD family is %s, not avx512\n", cpu_simd()->name);
        return;
    }
    cpu_set_threads(2);
    const int rows = 300, cols = 576, ns[] = {1, 5, 64};
    uint16_t *Wb = malloc((size_t)rows * cols * 2);
    assert_non_null(Wb);
    for (size_t i = 0; i < (size_t)rows * cols; i++) Wb[i] = bf16_rne(ts_xorshift_float(&rng));
    weight_t w = {.dtype = DT_BF16, .data = Wb, .rows = rows, .cols = cols};
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
        int n = ns[ni];
        float *x = rand_floats((size_t)n * cols), *y16 = malloc((size_t)n * rows * 4), *y8 = malloc((size_t)n * rows * 4);
        float *yk = malloc((size_t)n * rows * 4);
        uint16_t *xb = malloc((size_t)n * cols * 2);
        assert_true(y16 && y8 && yk && xb);
        assert_int_equal(cpu_quant_act_bits(16), 16);
        matmul(y16, x, &w, n);
        assert_int_equal(cpu_quant_act_bits(8), 8);
        matmul(y8, x, &w, n);
        assert_int_equal(cpu_quant_act_bits(16), 16);
        for (int j = 0; j < n; j++)   /* the default: f32 activations */
            for (int r = 0; r < rows; r += 7) {
                double s = 0, mag = 0;
                for (int c = 0; c < cols; c++) {
                    double p = bf16_val(Wb[(size_t)r * cols + c]) * x[(size_t)j * cols + c];
                    s += p, mag += fabs(p);
                }
                TS_CLOSE(y16[(size_t)j * rows + r], s, 1e-5 * mag, "act-bits 16, n %d: y[%d][%d]", n, j, r);
            }
        if (n == 1) {   /* decode keeps f32 activations under either setting */
            assert_memory_equal(y16, y8, (size_t)rows * 4);
        } else {
            cpu_round_bf16_avx512bf16(xb, x, (size_t)n * cols);
            cpu_gemm_nt_bf16_avx512bf16(yk, rows, xb, n, Wb, 0, rows, cols);
            assert_memory_equal(y8, yk, (size_t)n * rows * 4);
            assert_memory_not_equal(y8, y16, (size_t)n * rows * 4);   /* it did round */
        }
        free(x), free(y16), free(y8), free(yk), free(xb);
    }
    free(Wb);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_is_nearest_even_at_every_length),
        cmocka_unit_test(test_gemm_matches_float64_and_any_split_gives_the_same_bits),
        cmocka_unit_test(test_matmul_rounds_activations_only_with_act_bits_8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
