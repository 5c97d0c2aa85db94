/* Tests for the run-time software prefetch distances (kernels/cpu/prefetch.h):
 *  - cpu_prefetch_set: the named sets, field=bytes pairs, the order they apply in, and a one-line
 *    error that leaves the distances unchanged for an unknown set or field, a value out of
 *    0..65536, a missing or trailing-garbage number;
 *  - a distance changes timing only: decode products (n = 1, 1 and 2 threads) on F32, F16,
 *    BF16, Q8_0, Q5_0, Q4_K and Q6_K in rows and interleaved 16 rows at a time (WL_X16), in every
 *    quantized-kernel family this CPU runs, give the same bits under the intel set, the amd set,
 *    all distances 0 and all 65536 (prefetches far past the end of the weights: a prefetch
 *    never faults), each call hinted (matmul_next_hint) so that 2-thread quantized calls run
 *    the workers' read-ahead (idle = 0 and 65536 among the sets), and the hint is gone after
 *    the call (taken by a quantized product, dropped by the others);
 *  - the hint's bookkeeping (matmul_next_hint_bytes' spans, taken once). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"
#include "kernels/kernels.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static float frand(void) { return (float)(ts_xorshift(&rng) * (2.0 / 4294967296.0) - 1.0); }

static void test_set_parses_sets_and_fields_and_rejects_bad_specs(void **state)
{
    (void)state;
    char err[200];
    const cpu_prefetch saved = cpu_pf;
    assert_non_null(cpu_prefetch_preset("intel"));
    assert_non_null(cpu_prefetch_preset("amd"));
    assert_null(cpu_prefetch_preset("arm"));

    assert_int_equal(cpu_prefetch_set("intel", err, sizeof err), 0);
    assert_memory_equal(&cpu_pf, cpu_prefetch_preset("intel"), sizeof cpu_pf);
    assert_string_equal(cpu_prefetch_name(), "intel");
    assert_int_equal(cpu_prefetch_set("amd,x16=4096,mv32=64", err, sizeof err), 0);   /* the set, then the fields */
    assert_int_equal(cpu_pf.x16, 4096);
    assert_int_equal(cpu_pf.mv32, 64);
    assert_int_equal(cpu_pf.q16, cpu_prefetch_preset("amd")->q16);
    assert_string_equal(cpu_prefetch_name(), "custom");
    assert_int_equal(cpu_prefetch_set("q16_l2=0,split_l2=65536,idle=0", err, sizeof err), 0);   /* fields only: on top */
    assert_int_equal(cpu_pf.idle, 0);
    assert_int_equal(cpu_pf.x16, 4096);
    assert_int_equal(cpu_pf.q16_l2, 0);
    assert_int_equal(cpu_pf.split_l2, 65536);

    const cpu_prefetch before = cpu_pf;
    static const char *const bad[] = {"arm", "x16", "x16=", "x16=12k", "x16=-1", "x16=65537", "q32=64", "amd,bogus=1", "x16=64,intelx", "idle=65537"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        if (cpu_prefetch_set(bad[i], err, sizeof err) != -1) fail_msg("'%s' accepted", bad[i]);
        if (!strstr(err, "prefetch:") || strchr(err, '\n')) fail_msg("'%s': error '%s' is not one line naming prefetch", bad[i], err);
        assert_memory_equal(&cpu_pf, &before, sizeof cpu_pf);   /* unchanged, even after a good first part */
    }
    char d[256];
    cpu_prefetch_describe(d, sizeof d);
    assert_non_null(strstr(d, "x16=4096"));
    assert_non_null(strstr(d, "split_l2=65536"));
    assert_non_null(strstr(d, "idle=0"));
    cpu_pf = saved;
}

/* y = W·x (n = 1) under each distance set, each call hinted (matmul_next_hint) to be followed by
 * a product over w and W_next (the read-ahead reads both); the outputs must be bit-identical. */
static void check_same_bits(const weight_t *w, const float *x, const char *what)
{
    static const char *const sets[] = {"intel", "amd", "x16=0,x16k=0,q16=0,q16_l2=0,q16_256=0,q8=0,split=0,split_l2=0,mv16=0,mv32=0,x16nta=0,idle=0",
                                       "x16=65536,x16k=65536,q16=65536,q16_l2=65536,q16_256=65536,q8=65536,split=65536,split_l2=65536,mv16=65536,mv32=65536,x16nta=65536,idle=65536"};
    weight_t w_next = *w;
    w_next.rows = w->rows / 2;   /* the front half of w's rows */
    const weight_t *next[2] = {w, &w_next};
    const cpu_prefetch saved = cpu_pf;
    char err[200];
    float *y0 = ts_aligned((size_t)w->rows * 4), *y = ts_aligned((size_t)w->rows * 4);
    for (int threads = 1; threads <= 2; threads++) {
        cpu_set_threads(threads);
        for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
            assert_int_equal(cpu_prefetch_set(sets[s], err, sizeof err), 0);
            matmul_next_hint(next, 2);
            matmul_next_hint_bytes(1, x, (size_t)w->cols * 4);   /* and a span for worker 1 */
            matmul(s ? y : y0, x, w, 1);
            assert_null(matmul_take_hint());   /* taken (quantized) or dropped (F32/F16/BF16) */
            if (s && memcmp(y, y0, (size_t)w->rows * 4) != 0)
                fail_msg("%s, %d thread(s): the output under '%s' differs from the intel set's", what, threads, sets[s]);
        }
    }
    cpu_set_threads(1);
    cpu_pf = saved;
    free(y0), free(y);
}

/* The hint's bookkeeping: spans only after matmul_next_hint, for threads 1..7, at most 4 each;
 * taken once; a new hint starts empty. */
static void test_next_hint_is_taken_once_and_keeps_at_most_four_spans_a_thread(void **state)
{
    (void)state;
    static float a[64];
    weight_t w0 = {DT_F32, a, 4, 16, WL_ROWS}, w1 = w0;
    const weight_t *ws[2] = {&w0, &w1};
    assert_null(matmul_take_hint());
    matmul_next_hint_bytes(1, a, 64);   /* no hint started: ignored */
    assert_null(matmul_take_hint());
    matmul_next_hint(ws, 2);
    for (int i = 0; i < 6; i++) matmul_next_hint_bytes(1, a + i, 4 * (size_t)(i + 1));
    matmul_next_hint_bytes(0, a, 64);    /* the caller: not a worker */
    matmul_next_hint_bytes(8, a, 64);    /* past MM_HINT_THREADS */
    matmul_next_hint_bytes(2, NULL, 64);
    matmul_next_hint_bytes(2, a, 0);
    const matmul_hint *h = matmul_take_hint();
    assert_non_null(h);
    assert_int_equal(h->k, 2);
    assert_ptr_equal(h->w[0], &w0);
    assert_ptr_equal(h->w[1], &w1);
    assert_int_equal(h->n[0], 0);
    assert_int_equal(h->n[1], 4);
    assert_int_equal(h->n[2], 0);
    for (int i = 0; i < 4; i++) {
        assert_ptr_equal(h->p[1][i], (const char *)(a + i));
        assert_int_equal(h->len[1][i], 4 * (size_t)(i + 1));
    }
    assert_null(matmul_take_hint());     /* once */
    matmul_next_hint_bytes(1, a, 64);    /* after the take, without a new hint: ignored */
    assert_null(matmul_take_hint());
    matmul_next_hint(ws, 0);             /* a new hint starts with no spans */
    h = matmul_take_hint();
    assert_non_null(h);
    assert_int_equal(h->k, 0);
    assert_int_equal(h->n[1], 0);
}

static void test_outputs_do_not_depend_on_the_distances(void **state)
{
    (void)state;
    const int rows = 304, K = 1536;   /* enough work for the 2-thread row split */
    float *x = ts_aligned((size_t)K * 4), *wf = ts_aligned((size_t)rows * K * 4);
    for (int i = 0; i < K; i++) x[i] = frand();
    for (int i = 0; i < rows * K; i++) wf[i] = frand();
    uint16_t *wh = ts_aligned((size_t)rows * K * 2), *wb = ts_aligned((size_t)rows * K * 2);
    for (int i = 0; i < rows * K; i++) wh[i] = f32_to_f16(wf[i]), wb[i] = f32_to_bf16(wf[i]);
    weight_t f32 = {DT_F32, wf, rows, K, WL_ROWS}, f16 = {DT_F16, wh, rows, K, WL_ROWS}, bf16 = {DT_BF16, wb, rows, K, WL_ROWS};
    check_same_bits(&f32, x, "F32");
    check_same_bits(&f16, x, "F16");
    check_same_bits(&bf16, x, "BF16");

    static const char *const fams[] = {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni"};
    static const dtype_t types[] = {DT_Q8_0, DT_Q5_0, DT_Q4_K, DT_Q6_K};
    int tested = 0;
    for (int bits = 16; bits >= 8; bits -= 8) {
        assert_int_equal(cpu_quant_act_bits(bits), bits);
        for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
            if (!cpu_quant_find(fams[f])) continue;
            assert_int_equal(cpu_quant_use(fams[f]), 0);
            for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
                uint8_t *W = ts_rand_blocks(types[t], rows, K, &rng);
                weight_t w = {types[t], W, rows, K, WL_ROWS};
                char what[96];
                snprintf(what, sizeof what, "%s rows, %s, %d-bit activations", dtype_name(types[t]), fams[f], bits);
                check_same_bits(&w, x, what);
                if (x16_dtype(types[t])) {   /* and interleaved 16 rows at a time */
                    uint8_t *P = ts_aligned(dtype_row_bytes(types[t], K) * rows);
                    weight_x16_pack(types[t], W, P, rows, K);
                    weight_t wx = {types[t], P, rows, K, WL_X16};
                    snprintf(what, sizeof what, "%s x16, %s, %d-bit activations", dtype_name(types[t]), fams[f], bits);
                    check_same_bits(&wx, x, what);
                    free(P);
                }
                free(W);
                tested++;
            }
        }
    }
    assert_int_equal(cpu_quant_use(NULL), 0);
    assert_int_equal(cpu_quant_act_bits(16), 16);
    printf("  %d (family, activation width, dtype) cases, plus F32 / F16 / BF16\n", tested);
    free(x), free(wf), free(wh), free(wb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_parses_sets_and_fields_and_rejects_bad_specs),
        cmocka_unit_test(test_next_hint_is_taken_once_and_keeps_at_most_four_spans_a_thread),
        cmocka_unit_test(test_outputs_do_not_depend_on_the_distances),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
