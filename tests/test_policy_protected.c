/* Tests for the other sink + recent evict-then-attend policies: l2norm (§10.2), random (§10.4)
 * and scissorhands (§10.1), on small hand-built caches (head_dim 4) against reference
 * computations written here, with the §15.1 properties: capacity, protected sets, one eviction
 * per step once full. hashevict: tests/test_policy_lsh.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eviction/eviction.h"
#include "tests/support/support.h"

/* the pure functions under test (eviction/policy_*.c) */
extern float l2norm_norm(const float *x, int d);
extern int l2norm_victim(const int32_t *pos, const float *norm, int n, int sink, int recent, int t);
extern int random_victim(uint64_t seed, int layer, int g, int t, const int32_t *pos, int n,
                         int sink, int recent);
extern double scissorhands_slot_importance(const kv_cache *kv, int layer, int g, int j);
extern int scissorhands_slot_records(const kv_cache *kv, int layer, int g, int j);

#define D TS_D
#define MAXN 256

/* ------------------------------------------------------------------------ l2norm */

static void test_l2norm_decode_evicts_largest_norm_outside_protected_sets(void **st)
{
    (void)st;
    enum { HKV = 2, N = 6, STEPS = 40 };
    const char *flags[] = {"l2-sink", "1", "l2-recent", "2", NULL};
    kv_cache kv;
    ts_make_kv(&kv, "l2norm", 1, HKV, HKV, N, STEPS, 6, 0, flags);
    assert_int_equal(kv.cap[0], 6);
    uint64_t rng = 3;
    float q[N * HKV * D], k[N * HKV * D], v[N * HKV * D];
    ts_fill(q, sizeof q / sizeof *q, &rng), ts_fill(k, sizeof k / sizeof *k, &rng), ts_fill(v, sizeof v / sizeof *v, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    for (int t = N; t < N + STEPS; t++)
        for (int g = 0; g < HKV; g++) {
            float x[D];
            ts_fill(x, D, &rng);
            /* reference: the largest norm among the candidates */
            int n = kv_len(&kv, 0, g);
            float norm[MAXN];
            for (int j = 0; j < n; j++) norm[j] = l2norm_norm(kv_keys(&kv, 0, g) + j * D, D);
            int want = l2norm_victim(kv_positions(&kv, 0, g), norm, n, 1, 2, t);
            ts_assert_protected(&kv, 0, g, 1, 2, t);
            int64_t ev = kv.evictions;
            assert_int_equal(ts_decode(&kv, 0, g, t, x, x, x), want);
            assert_int_equal(kv.evictions - ev, 1);
            assert_int_equal(kv_len(&kv, 0, g), 6);
        }
    kv_free(&kv);
}

static void test_l2norm_prefill_keeps_sinks_recent_and_lowest_norms(void **st)
{
    (void)st;
    enum { N = 12 };
    const char *flags[] = {"l2-sink", "2", "l2-recent", "3", NULL};
    kv_cache kv;
    ts_make_kv(&kv, "l2norm", 1, 1, 1, N, 4, 8, 0, flags);
    /* key p = (scale_p, 0, 0, 0): norms chosen so that positions 9, 4, 6 are the lowest */
    const float scale[N] = {9, 9, 5, 8, 1, 7, 2, 6, 9, 0.5f, 9, 9};
    float q[N * D] = {0}, k[N * D] = {0}, v[N * D] = {0};
    for (int p = 0; p < N; p++) k[p * D] = scale[p];
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    const int32_t want[8] = {0, 1, 2, 4, 6, 9, 10, 11};
    /* sinks 0, 1; recent 9, 10, 11; lowest of the rest: 4 (1), 6 (2), 2 (5) */
    assert_int_equal(kv_len(&kv, 0, 0), 8);
    assert_memory_equal(kv_positions(&kv, 0, 0), want, sizeof want);
    /* the next step evicts the largest unprotected norm: position 2 (5) vs 4 (1), 6 (2) */
    float x[D] = {1, 0, 0, 0};
    int slot = ts_decode(&kv, 0, 0, N, x, x, x);
    assert_int_equal(slot, 2);
    kv_free(&kv);
}

/* ------------------------------------------------------------------------ random */

static void run_random(uint64_t seed, int32_t *final_pos, int *n_final)
{
    enum { N = 20, STEPS = 60 };
    const char *flags[] = {"rnd-sink", "2", "rnd-recent", "3", NULL};
    kv_cache kv;
    ts_make_kv(&kv, "random", 2, 2, 2, N, STEPS, 10, seed, flags);
    uint64_t rng = 4;
    float q[N * 2 * D], k[N * 2 * D], v[N * 2 * D];
    ts_fill(q, sizeof q / sizeof *q, &rng), ts_fill(k, sizeof k / sizeof *k, &rng), ts_fill(v, sizeof v / sizeof *v, &rng);
    for (int l = 0; l < 2; l++) {
        ts_prefill(&kv, l, N, 0, q, k, v, NULL, 0);
        ts_assert_protected(&kv, l, 0, 2, 3, N);
        assert_int_equal(kv_len(&kv, l, 0), 10);
    }
    for (int t = N; t < N + STEPS; t++)
        for (int l = 0; l < 2; l++)
            for (int g = 0; g < 2; g++) {
                float x[D];
                ts_fill(x, D, &rng);
                ts_assert_protected(&kv, l, g, 2, 3, t);
                int want = random_victim(seed, l, g, t, kv_positions(&kv, l, g), kv_len(&kv, l, g), 2, 3);
                int64_t ev = kv.evictions;
                assert_int_equal(ts_decode(&kv, l, g, t, x, x, x), want);
                assert_int_equal(kv.evictions - ev, 1);
                assert_int_equal(kv_len(&kv, l, g), 10);
            }
    *n_final = kv_len(&kv, 1, 1);
    memcpy(final_pos, kv_positions(&kv, 1, 1), (size_t)*n_final * sizeof *final_pos);
    kv_free(&kv);
}

static void test_random_protects_sinks_and_recent_and_evicts_one_per_step(void **st)
{
    (void)st;
    int32_t a[16], b[16], c[16];
    int na, nb, nc;
    run_random(1, a, &na);
    run_random(1, b, &nb);
    run_random(2, c, &nc);
    /* reproducible with the seed, different with another */
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na * sizeof *a);
    assert_true(memcmp(a, c, (size_t)na * sizeof *a) != 0);
}

static void test_random_victim_is_uniform_over_candidates(void **st)
{
    (void)st;
    /* 8 candidates at positions 10..17 (sinks 0, 1; recent window excludes them) */
    int32_t pos[10] = {0, 1, 10, 11, 12, 13, 14, 15, 16, 17};
    int count[10] = {0};
    const int T = 8000;
    for (int t = 100; t < 100 + T; t++) count[random_victim(3, 0, 0, t, pos, 10, 2, 5)]++;
    assert_int_equal(count[0] + count[1], 0);
    double chi2 = 0, e = T / 8.0;
    for (int j = 2; j < 10; j++) chi2 += (count[j] - e) * (count[j] - e) / e;
    assert_true(chi2 < 24.3); /* df 7, p = 0.001 */
}

/* ------------------------------------------------------------------------ scissorhands */

static void test_scissorhands_prompt_history_is_mean_attention_at_least_1_over_N(void **st)
{
    (void)st;
    enum { N = 5 };
    kv_cache kv;
    const char *flags[] = {"sh-sink", "1", "sh-recent", "1", NULL};
    ts_make_kv(&kv, "scissorhands", 1, 1, 1, N, 10, 10, 0, flags);
    /* colsum from the §15.2 H2O rows: {2.8, 0.7, 0.9, 0.4, 0.2}; mean over N − j rows:
     * 0.56, 0.175, 0.3, 0.2, 0.2 → ≥ 1/5: 1, 0, 1, 1, 1 */
    float colsum[N] = {2.8f, 0.7f, 0.9f, 0.4f, 0.2f};
    float q[N * D] = {0}, k[N * D] = {0}, v[N * D] = {0};
    ts_prefill(&kv, 0, N, 0, q, k, v, colsum, N);
    float x[D] = {0};
    ts_decode(&kv, 0, 0, N, x, x, x); /* pre_attn writes the prompt history */
    const double want[N] = {1, 0, 1, 1, 1};
    for (int j = 0; j < N; j++) {
        assert_int_equal(scissorhands_slot_records(&kv, 0, 0, j), 1);
        assert_true(scissorhands_slot_importance(&kv, 0, 0, j) == want[j]);
    }
    kv_free(&kv);
}

static void test_scissorhands_history_is_a_ring_of_the_last_hist_steps(void **st)
{
    (void)st;
    kv_cache kv;
    const char *flags[] = {"sh-hist", "3", "sh-sink", "0", "sh-recent", "0", NULL};
    ts_make_kv(&kv, "scissorhands", 1, 1, 1, 1, 30, 20, 0, flags);
    float q[D] = {0}, k[D] = {0}, v[D] = {0}, colsum[1] = {1.0f};
    ts_prefill(&kv, 0, 1, 0, q, k, v, colsum, 1); /* position 0: history [1] */
    /* steps 1..5 with two live slots; position 0 gets p = 0.9, 0.1, 0.1, 0.1, 0.9 */
    const float p0[5] = {0.9f, 0.1f, 0.1f, 0.1f, 0.9f};
    const double want[5] = {1.0, 2.0 / 3, 1.0 / 3, 0.0, 1.0 / 3};
    for (int t = 1; t <= 5; t++) {
        float x[D] = {0};
        int n = kv_len(&kv, 0, 0);
        ts_decode(&kv, 0, 0, t, x, x, x);
        float probs[32] = {0};
        probs[0] = p0[t - 1];
        for (int j = 1; j <= n; j++) probs[j] = (1.0f - p0[t - 1]) / n;
        kv_post_attn(&kv, 0, 0, t, probs, 32);
        assert_int_equal(scissorhands_slot_records(&kv, 0, 0, 0), t + 1 < 3 ? t + 1 : 3);
        double imp = scissorhands_slot_importance(&kv, 0, 0, 0);
        assert_true(fabs(imp - want[t - 1]) < 1e-12);
    }
    kv_free(&kv);
}

/* p̄ over the G heads of a group, threshold 1/|S|: the victim is the least important candidate,
 * and the rings move with their slots. */
static void test_scissorhands_evicts_least_important_and_state_follows_slot(void **st)
{
    (void)st;
    enum { N = 6, G = 2, STEPS = 30 };
    const char *flags[] = {"sh-sink", "1", "sh-recent", "1", NULL};
    kv_cache kv;
    ts_make_kv(&kv, "scissorhands", 1, 1, G, N, STEPS, 6, 0, flags);
    assert_int_equal(kv.cap[0], 6);
    float q[N * G * D] = {0}, k[N * D] = {0}, v[N * D] = {0};
    float colsum[N] = {0};
    for (int j = 0; j < N; j++) colsum[j] = 1.01f * G * (N - j) / N; /* all just above 1/N */
    ts_prefill(&kv, 0, N, 0, q, k, v, colsum, N);
    /* reference rings by position: ones and records (hist 400 is never reached) */
    int ones[N + STEPS], recs[N + STEPS];
    for (int p = 0; p < N; p++) ones[p] = 1, recs[p] = 1;
    uint64_t rng = 8;
    for (int t = N; t < N + STEPS; t++) {
        int n = kv_len(&kv, 0, 0);
        const int32_t *P = kv_positions(&kv, 0, 0);
        /* reference victim: least ones/recs among pos ≥ 1 and pos < t − 1, ties older */
        int want = -1;
        for (int j = 0; j < n; j++) {
            int p = P[j];
            if (p < 1 || p >= t - 1) continue;
            if (want < 0) { want = j; continue; }
            int pw = P[want];
            long a = (long)ones[p] * recs[pw], b = (long)ones[pw] * recs[p];
            if (a < b || (a == b && p < pw)) want = j;
        }
        ts_assert_protected(&kv, 0, 0, 1, 1, t);
        int64_t ev = kv.evictions;
        float x[D] = {0};
        int slot = ts_decode(&kv, 0, 0, t, x, x, x);
        assert_int_equal(slot, want);
        assert_int_equal(kv.evictions - ev, 1);
        ones[t] = 0, recs[t] = 0;
        /* hand-made probabilities: head 0 random, head 1 its mirror; mean decides */
        float probs[2 * 16];
        float sum0 = 0, sum1 = 0;
        for (int j = 0; j < n; j++) {
            probs[j] = ts_frand(&rng) + 1.0f, sum0 += probs[j];
            probs[16 + j] = ts_frand(&rng) + 1.0f, sum1 += probs[16 + j];
        }
        for (int j = 0; j < n; j++) probs[j] /= sum0, probs[16 + j] /= sum1;
        kv_post_attn(&kv, 0, 0, t, probs, 16);
        for (int j = 0; j < n; j++) {
            int p = P[j];
            float mean = (probs[j] + probs[16 + j]) / 2.0f;
            ones[p] += mean >= 1.0f / n;
            recs[p]++;
            double want_imp = (double)ones[p] / recs[p];
            assert_true(fabs(scissorhands_slot_importance(&kv, 0, 0, j) - want_imp) < 1e-12);
        }
    }
    kv_free(&kv);
}

static void test_scissorhands_prefill_keeps_sinks_recent_and_top_mean_attention(void **st)
{
    (void)st;
    enum { N = 10 };
    const char *flags[] = {"sh-sink", "1", "sh-recent", "2", NULL};
    kv_cache kv;
    ts_make_kv(&kv, "scissorhands", 1, 1, 1, N, 5, 6, 0, flags);
    /* mean over N − j rows: 1: 0.9/9 = 0.1, 2: 2.4/8 = 0.3, 3: 0.7/7, 4: 1.2/6 = 0.2,
     * 5: 1.5/5 = 0.3, 6: 0.2/4, 7: 0.3/3 → top 3: 2, 5, 4 */
    float colsum[N] = {5, 0.9f, 2.4f, 0.7f, 1.2f, 1.5f, 0.2f, 0.3f, 0.5f, 0.1f};
    float q[N * D] = {0}, k[N * D] = {0}, v[N * D] = {0};
    ts_prefill(&kv, 0, N, 0, q, k, v, colsum, N);
    const int32_t want[6] = {0, 2, 4, 5, 8, 9};
    assert_int_equal(kv_len(&kv, 0, 0), 6);
    assert_memory_equal(kv_positions(&kv, 0, 0), want, sizeof want);
    kv_free(&kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_l2norm_decode_evicts_largest_norm_outside_protected_sets),
        cmocka_unit_test(test_l2norm_prefill_keeps_sinks_recent_and_lowest_norms),
        cmocka_unit_test(test_random_protects_sinks_and_recent_and_evicts_one_per_step),
        cmocka_unit_test(test_random_victim_is_uniform_over_candidates),
        cmocka_unit_test(test_scissorhands_prompt_history_is_mean_attention_at_least_1_over_N),
        cmocka_unit_test(test_scissorhands_history_is_a_ring_of_the_last_hist_steps),
        cmocka_unit_test(test_scissorhands_evicts_least_important_and_state_follows_slot),
        cmocka_unit_test(test_scissorhands_prefill_keeps_sinks_recent_and_top_mean_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
