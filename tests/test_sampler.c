/* test_sampler.c — greedy sampling (model/sampler.c): the vectorized argmax against the plain
 * loop it replaces (the lowest index of the largest logit; NaNs never win except at index 0),
 * on random rows of every length around its 16-lane blocks, with many ties, -inf and NaN, and a
 * vocabulary-sized row; the decode step-time quantiles of a generation (model/generate.c
 * gen_step_ms_quantile, the --json decode_step_ms_median / _p90); llama.cpp's penalties (a worked
 * example by hand, and random windows against a per-token transcription of
 * llama_sampler_penalties_apply); min-p (never a token below the threshold, each above it drawn). */
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

/* llama.cpp's penalties, worked by hand: logits {2, -1, 0.5, 3}, accepted 0 then 3, 1, 3 with a
 * window of 3 (so 0 has left it): 3 (count 2) 3 / 2 − 2·0.5 − 0.25 = 0.25; 1 (count 1, logit ≤ 0)
 * −1·2 − 0.5 − 0.25 = −2.75; 0 and 2 unchanged. Greedy picks 0 (2.0), not 3. */
static void test_penalties_by_hand(void **state)
{
    (void)state;
    sampler s;
    assert_int_equal(sampler_init(&s, 4, 0.0f, 1.0f, 0, 1), 0);
    assert_false(sampler_needs_logits(&s));
    assert_int_equal(sampler_set_penalties(&s, 2.0f, 0.5f, 0.25f, 3), 0);
    assert_true(sampler_needs_logits(&s));
    const int seq[] = {0, 3, 1, 3};
    for (int i = 0; i < 4; i++) sampler_accept(&s, seq[i]);
    float x[4] = {2.0f, -1.0f, 0.5f, 3.0f};
    assert_int_equal(sampler_sample(&s, x), 0);
    assert_true(x[0] == 2.0f && x[2] == 0.5f);
    assert_true(x[3] == 0.25f);
    assert_true(x[1] == -2.75f);
    for (int i = 0; i < 4; i++) assert_int_equal(s.count[i], 0);   /* scratch left clean */
    sampler_free(&s);
    /* off: repeat 1 and no frequency / presence, or a window of 0 in the CLI (not set) */
    assert_int_equal(sampler_init(&s, 4, 0.0f, 1.0f, 0, 1), 0);
    assert_int_equal(sampler_set_penalties(&s, 1.0f, 0.0f, 0.0f, 64), 0);
    assert_false(sampler_needs_logits(&s));
    assert_int_equal(sampler_set_penalties(&s, 0.0f, 0.0f, 0.0f, 64), -1);
    assert_int_equal(sampler_set_penalties(&s, 1.1f, 0.0f, 0.0f, 0), -1);
    sampler_free(&s);
}

/* llama_sampler_penalties_apply transcribed per candidate: the count of each id in the window
 * (the last last_n accepted), then divide / multiply and subtract. */
static void reference_penalties(float *x, int n, const int *seq, int n_seq, int last_n, float rep, float freq, float pres)
{
    const int from = n_seq > last_n ? n_seq - last_n : 0;
    for (int id = 0; id < n; id++) {
        int c = 0;
        for (int i = from; i < n_seq; i++) c += seq[i] == id;
        if (!c) continue;
        x[id] = x[id] <= 0 ? x[id] * rep : x[id] / rep;
        x[id] -= (float)c * freq + (float)(c > 0) * pres;
    }
}

static void test_penalties_random(void **state)
{
    (void)state;
    enum { N = 300, SEQ = 500 };
    float x[N], y[N];
    int seq[SEQ];
    for (int trial = 0; trial < 400; trial++) {
        const int last_n = 1 + (int)(next() % 90), n_seq = (int)(next() % SEQ);
        const float rep = 0.5f + (float)(next() % 200) / 100.0f, freq = (float)(next() % 5) / 10.0f,
                    pres = (float)(next() % 5) / 10.0f - 0.2f;
        sampler s;
        assert_int_equal(sampler_init(&s, N, 0.0f, 1.0f, 0, 1), 0);
        if (rep == 1.0f && freq == 0.0f && pres == 0.0f) {   /* off: nothing to compare */
            sampler_free(&s);
            continue;
        }
        assert_int_equal(sampler_set_penalties(&s, rep, freq, pres, last_n), 0);
        for (int i = 0; i < n_seq; i++) sampler_accept(&s, seq[i] = (int)(next() % 40));   /* many repeats */
        for (int i = 0; i < N; i++) x[i] = y[i] = (float)((int)(next() % 2001) - 1000) / 100.0f;
        reference_penalties(y, N, seq, n_seq, last_n, rep, freq, pres);
        int got = sampler_sample(&s, x);
        for (int i = 0; i < N; i++)
            if (x[i] != y[i]) fail_msg("trial %d: logit %d %g, reference %g", trial, i, x[i], y[i]);
        assert_int_equal(got, plain_argmax(y, N));
        sampler_free(&s);
    }
}

/* min-p at temperature 1: p ∝ e^logit; with min-p 0.3 a token is kept when its logit is at least
 * ln 0.3 ≈ −1.204 below the top one: of {0, −0.5, −1.1, −1.3, −4} the first three. */
static void test_min_p(void **state)
{
    (void)state;
    const float logits[5] = {0.0f, -0.5f, -1.1f, -1.3f, -4.0f};
    int seen[5] = {0};
    for (int top_p_on = 0; top_p_on < 2; top_p_on++)
        for (uint64_t seed = 1; seed <= 3000; seed++) {
            sampler s;
            assert_int_equal(sampler_init(&s, 5, 1.0f, top_p_on ? 0.999f : 1.0f, 0, seed), 0);
            s.min_p = 0.3f;
            float x[5];
            memcpy(x, logits, sizeof x);
            int id = sampler_sample(&s, x);
            assert_true(id >= 0 && id < 3);
            seen[id]++;
            sampler_free(&s);
        }
    assert_true(seen[0] > seen[1] && seen[1] > seen[2] && seen[2] > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_matches_plain_loop),
        cmocka_unit_test(test_step_quantiles),
        cmocka_unit_test(test_penalties_by_hand),
        cmocka_unit_test(test_penalties_random),
        cmocka_unit_test(test_min_p),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
