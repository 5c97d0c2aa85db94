/* test_sampler.c — greedy sampling (model/sampler.c): the vectorized argmax against the plain
 * loop it replaces (the lowest index of the largest logit; NaNs never win except at index 0),
 * on random rows of every length around its 16-lane blocks, with many ties, -inf and NaN, and a
 * vocabulary-sized row; and the decode step-time quantiles of a generation (model/generate.c
 * gen_step_ms_quantile, the --json decode_step_ms_median / _p90). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"

static int plain_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static uint64_t rng = 42;
static unsigned next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33);
}

static void test_greedy_matches_plain_loop(void **state)
{
    (void)state;
    enum { N = 151936 };
    float *x = malloc(N * sizeof *x), *copy = malloc(N * sizeof *copy);
    assert_non_null(x);
    assert_non_null(copy);
    sampler s;
    assert_int_equal(sampler_init(&s, N, 0.0f, 1.0f, 0, 1), 0);
    for (int trial = 0; trial < 20000; trial++) {
        int n = trial < 19990 ? 1 + (int)(next() % 80) : N - (int)(next() % 40);
        int kinds = 2 + (int)(next() % 8);   /* few distinct values: many ties */
        for (int i = 0; i < n; i++) {
            unsigned r = next() % 16;
            x[i] = r == 0 ? NAN : r == 1 ? -INFINITY : r == 2 && trial % 3 == 0 ? INFINITY
                                                               : (float)(next() % kinds) - 3.0f;
        }
        s.vocab = n;
        memcpy(copy, x, (size_t)n * sizeof *x);
        int got = sampler_sample(&s, copy), want = plain_argmax(x, n);
        if (got != want) fail_msg("trial %d, n %d: argmax %d, the plain loop %d", trial, n, got, want);
    }
    sampler_free(&s);
    free(x);
    free(copy);
}

static void test_step_quantiles(void **state)
{
    (void)state;
    float steps[] = {5.0f, 1.0f, 4.0f, 2.0f, 3.0f, 100.0f};   /* one stall */
    gen_result r = {0};
    assert_true(gen_step_ms_quantile(&r, 0.5) == 0.0);        /* no step */
    r.step_ms = steps;
    r.n_decode_steps = 5;
    assert_true(fabs(gen_step_ms_quantile(&r, 0.5) - 3.0) < 1e-9);
    assert_true(fabs(gen_step_ms_quantile(&r, 0.9) - 4.6) < 1e-6);   /* 4 + 0.6 * (5 - 4) */
    assert_true(fabs(gen_step_ms_quantile(&r, 0.0) - 1.0) < 1e-9);
    assert_true(fabs(gen_step_ms_quantile(&r, 1.0) - 5.0) < 1e-9);
    r.n_decode_steps = 6;                                     /* the stall moves the median by half a step */
    assert_true(fabs(gen_step_ms_quantile(&r, 0.5) - 3.5) < 1e-9);
    assert_true(steps[0] == 5.0f && steps[5] == 100.0f);      /* the steps themselves stay in order */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_matches_plain_loop),
        cmocka_unit_test(test_step_quantiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
