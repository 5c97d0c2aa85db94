/* Tests for SubGen's `subgen_stream` (Algorithm 1 behind an exact window, POLICIES.md §8.3):
 * hook tests on small hand-built caches (head_dim 4) and the §15.3 statistical checks with a
 * modest number of seeds (value-norm reservoir ∝ ‖v‖², cluster samples uniform, unbiased
 * estimators, exact attention when the window holds every token, the auto δ). */
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
#include "kernels/kernels.h"

/* the functions under test (eviction/policy_subgen_stream.c, policy_common.c) */
extern int subgen_gonzalez(const float *const *X, int n, int d, int k, int first, int *centers,
                           double *radius, double *dist);
extern void subgen_stream_sums(const kv_cache *kv, int layer, int g, const float *q, float scale,
                               double shift, double *num, double *den);
extern void subgen_stream_info(const kv_cache *kv, int layer, int g, int *m, int64_t *n_inserted,
                               double *mu, double *delta);
extern int subgen_stream_m_pos(const kv_cache *kv, int layer, int g, int j);
extern int subgen_stream_cluster(const kv_cache *kv, int layer, int g, int i, int j, float *rep,
                                 int64_t *count);

#define D TS_D

/* ------------------------------------------------------------------------ subgen_stream */

/* The §15.3 setting: C = 12 with r = 2, s = 4, t = 2, m_max = 4 (2 + 4 + 6 = 12); an 8-token
 * prompt, so positions 0..5 go into the sketch and 6, 7 stay in the window. Keys of 0..5 form
 * two clusters ({0, 1, 3, 5} near the origin, {2, 4} near (3, 3, 0, 0)) for δ = 1. */
enum { SS_N = 8 };
static const float ss_keys[SS_N][D] = {
    {0.1f, 0.0f, 0.2f, 0.0f}, {-0.2f, 0.1f, 0.0f, 0.1f}, {3.0f, 3.0f, 0.0f, 0.0f},
    {0.0f, -0.1f, 0.1f, 0.2f}, {3.2f, 2.9f, 0.1f, 0.0f}, {0.2f, 0.2f, -0.1f, 0.0f},
    {1.0f, 0.0f, 0.0f, 1.0f}, {0.0f, 1.0f, 1.0f, 0.0f}};
static const float ss_vals[SS_N][D] = {
    {1, 0, 0, 0}, {0, 2, 0, 0}, {1, 1, 1, 0}, {0, 0, 0.5f, 0}, {3, 0, 0, 1}, {0, 1, 0, 2},
    {1, 1, 1, 1}, {-1, 0, 1, 0}};

static void make_ss(kv_cache *kv, uint64_t seed)
{
    const char *flags[] = {"ss-recent", "2", "ss-s", "4", "ss-t", "2", "ss-mmax", "4",
                           "ss-delta", "1", NULL};
    ts_make_kv(kv, "subgen_stream", 1, 1, 1, SS_N, 8, 12, seed, flags);
    assert_int_equal(kv->cap[0], 2);
    float q[SS_N * D] = {0};
    ts_prefill(kv, 0, SS_N, 0, q, &ss_keys[0][0], &ss_vals[0][0], NULL, 0);
}

static double sqnorm(const float *x)
{
    double s = 0;
    for (int i = 0; i < D; i++) s += (double)x[i] * x[i];
    return s;
}

static void test_subgen_stream_value_samples_are_drawn_proportional_to_squared_norm(void **st)
{
    (void)st;
    enum { SEEDS = 3000, S = 4 };
    long count[6] = {0};
    double mu_want = 0;
    for (int p = 0; p < 6; p++) mu_want += sqnorm(ss_vals[p]);
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        kv_cache kv;
        make_ss(&kv, seed);
        /* Lemma 1 invariant μ = Σ‖v‖², Lemma 2: Σ n_i = tokens inserted */
        int m;
        int64_t n_ins;
        double mu, delta;
        subgen_stream_info(&kv, 0, 0, &m, &n_ins, &mu, &delta);
        assert_int_equal(n_ins, 6);
        assert_true(fabs(mu - mu_want) < 1e-9);
        int64_t total = 0;
        for (int i = 0; i < m; i++) {
            int64_t c;
            subgen_stream_cluster(&kv, 0, 0, i, 0, NULL, &c);
            total += c;
        }
        assert_int_equal(total, 6);
        for (int j = 0; j < S; j++) {
            int p = subgen_stream_m_pos(&kv, 0, 0, j);
            assert_true(p >= 0 && p < 6);
            count[p]++;
        }
        kv_free(&kv);
    }
    /* chi-square against ‖v_i‖² / Σ‖v‖² (df 5, p = 0.001 → 20.5) */
    double chi2 = 0, n = (double)SEEDS * S;
    for (int p = 0; p < 6; p++) {
        double e = n * sqnorm(ss_vals[p]) / mu_want;
        chi2 += (count[p] - e) * (count[p] - e) / e;
    }
    assert_true(chi2 < 20.5);
}

static void test_subgen_stream_cluster_samples_are_uniform_within_their_cluster(void **st)
{
    (void)st;
    enum { SEEDS = 3000, T = 2 };
    long count[6] = {0};
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        kv_cache kv;
        make_ss(&kv, seed);
        int m;
        int64_t n_ins;
        double mu, delta;
        subgen_stream_info(&kv, 0, 0, &m, &n_ins, &mu, &delta);
        /* two clusters, representatives 0 and 2 (first members), pairwise > δ apart */
        assert_int_equal(m, 2);
        float rep[2][D];
        int64_t c0, c1;
        subgen_stream_cluster(&kv, 0, 0, 0, 0, rep[0], &c0);
        subgen_stream_cluster(&kv, 0, 0, 1, 0, rep[1], &c1);
        assert_memory_equal(rep[0], ss_keys[0], sizeof rep[0]);
        assert_memory_equal(rep[1], ss_keys[2], sizeof rep[1]);
        assert_int_equal(c0, 4);
        assert_int_equal(c1, 2);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < T; j++) {
                int p = subgen_stream_cluster(&kv, 0, 0, i, j, NULL, NULL);
                /* every sample is a member within δ of its representative */
                double e = 0;
                for (int x = 0; x < D; x++) e += (ss_keys[p][x] - rep[i][x]) * (ss_keys[p][x] - rep[i][x]);
                assert_true(sqrt(e) <= 1.0);
                count[p]++;
            }
        kv_free(&kv);
    }
    /* cluster 0 = {0, 1, 3, 5}, cluster 1 = {2, 4}: uniform (df 3 + 1, p = 0.001 → 18.5) */
    double chi2 = 0;
    const int members0[4] = {0, 1, 3, 5}, members1[2] = {2, 4};
    for (int i = 0; i < 4; i++) {
        double e = SEEDS * T / 4.0;
        chi2 += (count[members0[i]] - e) * (count[members0[i]] - e) / e;
    }
    for (int i = 0; i < 2; i++) {
        double e = SEEDS * T / 2.0;
        chi2 += (count[members1[i]] - e) * (count[members1[i]] - e) / e;
    }
    assert_true(chi2 < 18.5);
}

static void test_subgen_stream_numerator_and_denominator_are_unbiased(void **st)
{
    (void)st;
    enum { SEEDS = 4000 };
    const float q[D] = {0.5f, -0.3f, 0.8f, 0.1f};
    const float scale = 0.5f;
    /* exact sums over every token seen, logits unshifted; the sketched part (positions 0..5)
     * separately, since the window's part is exact by construction */
    double num_exact[D] = {0}, den_exact = 0, num_sk[D] = {0}, den_sk = 0;
    for (int p = 0; p < SS_N; p++) {
        double l = 0;
        for (int x = 0; x < D; x++) l += (double)q[x] * ss_keys[p][x];
        double w = exp(l * scale);
        den_exact += w;
        if (p < 6) den_sk += w;
        for (int x = 0; x < D; x++) {
            num_exact[x] += w * ss_vals[p][x];
            if (p < 6) num_sk[x] += w * ss_vals[p][x];
        }
    }
    double num_mean[D] = {0}, den_mean = 0;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        kv_cache kv;
        make_ss(&kv, seed);
        double num[D], den;
        subgen_stream_sums(&kv, 0, 0, q, scale, 0.0, num, &den);
        for (int x = 0; x < D; x++) num_mean[x] += num[x] / SEEDS;
        den_mean += den / SEEDS;
        /* the attention output is the ratio (shift-invariant) */
        const policy_ops *ops = policy_find("subgen_stream");
        float out[D];
        ops->attend(&kv, 0, 0, q, scale, out);
        for (int x = 0; x < D; x++) assert_true(fabs(out[x] - num[x] / den) < 1e-5);
        kv_free(&kv);
    }
    /* the mean over seeds is within 2% (num, per component, of the sketched part's norm) and
     * 1% (den) of the sketched part: a 5% bias of either estimator fails */
    double nrm = 0;
    for (int x = 0; x < D; x++) nrm += num_sk[x] * num_sk[x];
    nrm = sqrt(nrm);
    for (int x = 0; x < D; x++) assert_true(fabs(num_mean[x] - num_exact[x]) < 0.02 * nrm);
    assert_true(fabs(den_mean - den_exact) < 0.01 * den_sk);
}

static void test_subgen_stream_is_exact_attention_when_the_window_holds_every_token(void **st)
{
    (void)st;
    enum { N = 10, MAX_NEW = 8, HKV = 2, G = 2 };
    const char *flags[] = {"ss-recent", "3", NULL}; /* ignored: r = C when everything fits */
    kv_cache kv;
    ts_make_kv(&kv, "subgen_stream", 1, HKV, HKV * G, N, MAX_NEW, 1.0, 0, flags);
    assert_true(kv.cap[0] >= N + MAX_NEW);
    const policy_ops *ops = kv.ops;
    uint64_t rng = 3;
    static float q[N * HKV * G * D], k[N * HKV * D], v[N * HKV * D];
    ts_fill(q, sizeof q / sizeof *q, &rng), ts_fill(k, sizeof k / sizeof *k, &rng), ts_fill(v, sizeof v / sizeof *v, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    for (int t = N; t < N + MAX_NEW - 1; t++)
        for (int g = 0; g < HKV; g++) {
            float qt[G * D], kt[D], vt[D], out[G * D], ref[D], probs[64];
            ts_fill(qt, G * D, &rng), ts_fill(kt, D, &rng), ts_fill(vt, D, &rng);
            ts_decode(&kv, 0, g, t, qt, kt, vt);
            assert_int_equal(kv_len(&kv, 0, g), t + 1);
            ops->attend(&kv, 0, g, qt, 0.5f, out);
            for (int h = 0; h < G; h++) {
                attn_decode_head(qt + h * D, kv_keys(&kv, 0, g), DT_F32, kv_values(&kv, 0, g), DT_F32,
                                 kv_len(&kv, 0, g), D, 0.5f, probs, ref);
                assert_memory_equal(out + h * D, ref, sizeof ref);
            }
        }
    assert_int_equal(kv.evictions, 0);
    kv_free(&kv);
}

static void test_subgen_stream_decode_moves_the_oldest_window_token_into_the_sketch(void **st)
{
    (void)st;
    enum { N = 6, STEPS = 30 };
    kv_cache kv;
    ts_make_kv(&kv, "subgen_stream", 1, 1, 1, N, 60, 40, 5, NULL);
    /* defaults for C = 40: r = 10, s = 10, t = 8, m_max = ⌊2·20/9⌋ = 4 */
    assert_int_equal(kv.cap[0], 10);
    uint64_t rng = 12;
    float q[N * D], k[N * D], v[N * D];
    ts_fill(q, N * D, &rng), ts_fill(k, N * D, &rng), ts_fill(v, N * D, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    for (int t = N; t < N + STEPS; t++) {
        float x[3 * D], out[D];
        ts_fill(x, 3 * D, &rng);
        ts_decode(&kv, 0, 0, t, x, x + D, x + 2 * D);
        int n = kv_len(&kv, 0, 0);
        assert_int_equal(n, t + 1 < 10 ? t + 1 : 10);
        /* the window holds exactly the last n positions */
        for (int j = 0; j < n; j++) assert_true(kv_positions(&kv, 0, 0)[j] >= t + 1 - n);
        int m;
        int64_t n_ins;
        double mu, delta;
        subgen_stream_info(&kv, 0, 0, &m, &n_ins, &mu, &delta);
        assert_int_equal(n_ins, t + 1 - n);
        assert_true(m <= 4);
        assert_true(delta == 0.0); /* no prompt key went into the sketch */
        kv.ops->attend(&kv, 0, 0, x, 0.5f, out);
        for (int e = 0; e < D; e++) assert_true(isfinite(out[e]));
    }
    kv_free(&kv);
}

static void test_subgen_stream_auto_delta_is_the_gonzalez_radius_of_the_sketched_prompt(void **st)
{
    (void)st;
    enum { N = 40 };
    kv_cache kv;
    ts_make_kv(&kv, "subgen_stream", 1, 1, 1, N, 10, 20, 0, NULL);
    /* C = 20: r = 5, s = 5, t = 8, m_max = 2 */
    uint64_t rng = 13;
    float q[N * D], k[N * D], v[N * D];
    ts_fill(q, N * D, &rng), ts_fill(k, N * D, &rng), ts_fill(v, N * D, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    const float *X[N];
    for (int p = 0; p < N - 5; p++) X[p] = k + p * D;
    int centers[N];
    double radius, dist[N];
    subgen_gonzalez(X, N - 5, D, 2, 0, centers, &radius, dist);
    int m;
    int64_t n_ins;
    double mu, delta;
    subgen_stream_info(&kv, 0, 0, &m, &n_ins, &mu, &delta);
    assert_true(delta == radius);
    assert_int_equal(n_ins, N - 5);
    assert_int_equal(kv_len(&kv, 0, 0), 5);
    kv_free(&kv);
}

static void test_subgen_stream_rejects_a_sketch_larger_than_the_budget(void **st)
{
    (void)st;
    const char *flags[] = {"ss-recent", "10", "ss-s", "10", NULL};
    ts_expect_init_error(policy_find("subgen_stream"), 20, flags, 100, 10, "--ss-mmax");
    const char *flags2[] = {"ss-mmax", "10", NULL};
    ts_expect_init_error(policy_find("subgen_stream"), 20, flags2, 100, 10, "exceed the capacity");
}

/* Passthrough (issue 17: a run where nothing can be evicted costs what `full` costs): a budget
 * covering prompt + max new makes subgen_stream (whose attend is exact while its sketch is empty)
 * and buzz_logn (whose logit scale the engine applies either way) passthrough, with no scores;
 * one token less and they are not. */
static void test_subgen_stream_and_buzz_logn_are_passthrough_when_nothing_can_be_evicted(void **state)
{
    (void)state;
    const char *names[] = {"subgen_stream", "buzz_logn"};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 2; b++) {
            kv_cache kv;
            policy_params pp;
            char err[256];
            assert_int_equal(ts_params(&pp, policy_find(names[i]), b == 0 ? 30 : 29, 1, NULL, err, sizeof err), 0);
            pp.hooks_always = 0;   /* as a real run */
            assert_int_equal(kv_init(&kv, policy_find(names[i]), &pp, 2, 2, 4, TS_D, 20, 10, err, sizeof err), 0);
            if (kv.passthrough != (b == 0)) fail_msg("%s budget %d: passthrough %d", names[i], 30 - b, kv.passthrough);
            if (b == 0) assert_null(kv.score);
            kv_free(&kv);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subgen_stream_value_samples_are_drawn_proportional_to_squared_norm),
        cmocka_unit_test(test_subgen_stream_cluster_samples_are_uniform_within_their_cluster),
        cmocka_unit_test(test_subgen_stream_numerator_and_denominator_are_unbiased),
        cmocka_unit_test(test_subgen_stream_is_exact_attention_when_the_window_holds_every_token),
        cmocka_unit_test(test_subgen_stream_decode_moves_the_oldest_window_token_into_the_sketch),
        cmocka_unit_test(test_subgen_stream_auto_delta_is_the_gonzalez_radius_of_the_sketched_prompt),
        cmocka_unit_test(test_subgen_stream_rejects_a_sketch_larger_than_the_budget),
        cmocka_unit_test(test_subgen_stream_and_buzz_logn_are_passthrough_when_nothing_can_be_evicted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
