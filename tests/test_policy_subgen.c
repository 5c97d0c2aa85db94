/* Tests for SubGen: `subgen` (greedy k-center eviction, POLICIES.md §8.2, §7.6 decode modes) and
 * `subgen_stream` (Algorithm 1 behind an exact window, §8.3): the §15.2 golden vectors, hook
 * tests on small hand-built caches (head_dim 4), and the §15.3 statistical checks with a modest
 * number of seeds (value-norm reservoir ∝ ‖v‖², cluster samples uniform, unbiased estimators,
 * exact attention when the window holds every token). */
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
#include "kernels/kernels.h"

/* the pure functions under test (eviction/policy_subgen*.c) */
extern int subgen_gonzalez(const float *const *X, int n, int d, int k, int first, int *centers,
                           double *radius, double *dist);
extern int subgen_select(const float *const *X, int n, int d, int target, int recent, int *keep,
                         int *centers, double *dist);
extern int subgen_stream_assign(float *reps, int64_t *counts, int *m, int m_max, int d,
                                double delta, const float *x, int *created);
extern void subgen_stream_sums(const kv_cache *kv, int layer, int g, const float *q, float scale,
                               double shift, double *num, double *den);
extern void subgen_stream_info(const kv_cache *kv, int layer, int g, int *m, int64_t *n_inserted,
                               double *mu, double *delta);
extern int subgen_stream_m_pos(const kv_cache *kv, int layer, int g, int j);
extern int subgen_stream_cluster(const kv_cache *kv, int layer, int g, int i, int j, float *rep,
                                 int64_t *count);

#define D 4

/* ------------------------------------------------------------------------ helpers */

static float frand(uint64_t *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*st >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void fill(float *x, size_t n, uint64_t *st)
{
    for (size_t i = 0; i < n; i++) x[i] = frand(st);
}

static int try_make_kv(kv_cache *kv, const char *name, int L, int hkv, int H, int n_prompt,
                       int max_new, double budget, uint64_t seed, const char *const *flags,
                       char *err, size_t errlen)
{
    const policy_ops *ops = policy_find(name);
    assert_non_null(ops);
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = budget;
    pp.seed = seed;
    for (int i = 0; flags && flags[i]; i += 2)
        assert_int_equal(policy_params_set(&pp, ops, flags[i], flags[i + 1], err, errlen), 0);
    return kv_init(kv, ops, &pp, L, hkv, H, D, n_prompt, max_new, err, errlen);
}

static void make_kv(kv_cache *kv, const char *name, int L, int hkv, int H, int n_prompt,
                    int max_new, double budget, uint64_t seed, const char *const *flags)
{
    char err[256];
    int rc = try_make_kv(kv, name, L, hkv, H, n_prompt, max_new, budget, seed, flags, err, sizeof err);
    if (rc) fprintf(stderr, "kv_init: %s\n", err);
    assert_int_equal(rc, 0);
}

static void prefill(kv_cache *kv, int layer, int n, int pos0, const float *q, const float *k,
                    const float *v)
{
    kv_prefill_chunk c = {.layer = layer, .n_new = n, .pos0 = pos0, .q_new = q, .k_new = k,
                          .v_new = v, .colsum = NULL, .cand_stride = 0};
    char err[256];
    assert_int_equal(kv_prefill(kv, &c, err, sizeof err), 0);
}

static int decode(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                  const float *v)
{
    int slot = kv_decode_slot(kv, layer, g, t, q, k, v);
    kv_write(kv, layer, g, slot, t, k, v);
    return slot;
}

/* ------------------------------------------------------------------------ golden vectors */

static const float golden_P[8][2] = {{0, 0}, {0.1f, 0}, {5, 5}, {5.2f, 5.1f},
                                     {0, 4}, {10, 0},   {0.2f, 0.1f}, {9.8f, 0.3f}};

static void test_subgen_gonzalez_k3_centers_0_5_2_radius_4(void **st)
{
    (void)st;
    const float *X[8];
    for (int i = 0; i < 8; i++) X[i] = golden_P[i];
    int centers[8];
    double radius, dist[8];
    assert_int_equal(subgen_gonzalez(X, 8, 2, 3, 0, centers, &radius, dist), 3);
    const int want[3] = {0, 5, 2};
    assert_memory_equal(centers, want, sizeof want);
    assert_true(fabs(radius - 4.0) < 1e-6);
}

static void test_subgen_gonzalez_k4_centers_0_5_2_4_radius_0_3606(void **st)
{
    (void)st;
    const float *X[8];
    for (int i = 0; i < 8; i++) X[i] = golden_P[i];
    int centers[8];
    double radius, dist[8];
    assert_int_equal(subgen_gonzalez(X, 8, 2, 4, 0, centers, &radius, dist), 4);
    const int want[4] = {0, 5, 2, 4};
    assert_memory_equal(centers, want, sizeof want);
    assert_true(fabs(radius - 0.3606) < 1e-4);
    /* k ≥ n: every point, radius 0 */
    assert_int_equal(subgen_gonzalez(X, 8, 2, 20, 0, centers, &radius, dist), 8);
    assert_true(radius == 0.0);
}

static void test_subgen_stream_online_clustering_delta_1_golden(void **st)
{
    (void)st;
    float reps[8 * 2];
    int64_t counts[8];
    int m = 0, created;
    const int want_assign[8] = {0, 0, 1, 1, 2, 3, 0, 3};
    for (int i = 0; i < 8; i++)
        assert_int_equal(subgen_stream_assign(reps, counts, &m, 8, 2, 1.0, golden_P[i], &created),
                         want_assign[i]);
    assert_int_equal(m, 4);
    const float want_reps[4 * 2] = {0, 0, 5, 5, 0, 4, 10, 0};
    assert_memory_equal(reps, want_reps, sizeof want_reps);
    const int64_t want_counts[4] = {3, 2, 1, 2};
    assert_memory_equal(counts, want_counts, sizeof want_counts);
    /* the m_max cap: with 2 clusters the far points join the nearest one */
    m = 0;
    for (int i = 0; i < 8; i++) subgen_stream_assign(reps, counts, &m, 2, 2, 1.0, golden_P[i], &created);
    assert_int_equal(m, 2);
    assert_int_equal(counts[0] + counts[1], 8);
}

/* ------------------------------------------------------------------------ subgen hooks */

static void test_subgen_reserve_prefill_keeps_centers_and_recent_then_appends_to_C(void **st)
{
    (void)st;
    enum { N = 20, MAX_NEW = 5, HKV = 2 };
    kv_cache kv;
    make_kv(&kv, "subgen", 1, HKV, 2 * HKV, N, MAX_NEW, 15, 0, NULL);
    assert_int_equal(kv.cap[0], 15);
    uint64_t rng = 6;
    static float q[N * 2 * HKV * D], k[N * HKV * D], v[N * HKV * D];
    fill(q, sizeof q / sizeof *q, &rng), fill(k, sizeof k / sizeof *k, &rng), fill(v, sizeof v / sizeof *v, &rng);
    prefill(&kv, 0, N, 0, q, k, v);
    /* reference: C' = 15 − 5 = 10, r = 5 recent, k = 5 centers of positions 0..14 from 0 */
    for (int g = 0; g < HKV; g++) {
        const float *X[N];
        for (int p = 0; p < N; p++) X[p] = k + ((size_t)p * HKV + g) * D;
        int centers[N];
        double dist[N];
        assert_int_equal(subgen_gonzalez(X, 15, D, 5, 0, centers, NULL, dist), 5);
        int want[10], n = 0;
        for (int p = 0; p < 15; p++)
            for (int c = 0; c < 5; c++)
                if (centers[c] == p) want[n++] = p;
        for (int p = 15; p < 20; p++) want[n++] = p;
        assert_int_equal(kv_len(&kv, 0, g), 10);
        for (int i = 0; i < 10; i++) assert_int_equal(kv_positions(&kv, 0, g)[i], want[i]);
        assert_int_equal(kv_positions(&kv, 0, g)[0], 0); /* the first center is position 0 */
    }
    /* decode appends without evicting; the peak stays within C */
    int64_t ev = kv.evictions;
    for (int t = N; t < N + MAX_NEW - 1; t++)
        for (int g = 0; g < HKV; g++) {
            float x[2 * D];
            fill(x, 2 * D, &rng);
            int n = kv_len(&kv, 0, g);
            assert_int_equal(decode(&kv, 0, g, t, x, x, x), n);
            kv_post_attn(&kv, 0, g, t, NULL, 0);
            assert_true(kv_len(&kv, 0, g) <= 15);
        }
    assert_int_equal(kv.evictions, ev);
    kv_free(&kv);
}

static void test_subgen_grow_keeps_C_and_allocates_C_plus_max_new(void **st)
{
    (void)st;
    enum { N = 30, MAX_NEW = 10 };
    const char *flags[] = {"prefill-only-decode", "grow", "subgen-recent", "3", NULL};
    kv_cache kv;
    make_kv(&kv, "subgen", 1, 1, 1, N, MAX_NEW, 8, 0, flags);
    assert_int_equal(kv.cap[0], 18);
    uint64_t rng = 7;
    float q[N * D], k[N * D], v[N * D];
    fill(q, N * D, &rng), fill(k, N * D, &rng), fill(v, N * D, &rng);
    prefill(&kv, 0, N, 0, q, k, v);
    assert_int_equal(kv_len(&kv, 0, 0), 8);
    for (int i = 5; i < 8; i++) assert_int_equal(kv_positions(&kv, 0, 0)[i], N - 8 + i); /* r = 3 */
    for (int t = N; t < N + MAX_NEW; t++) {
        float x[D];
        fill(x, D, &rng);
        decode(&kv, 0, 0, t, x, x, x);
        kv_post_attn(&kv, 0, 0, t, NULL, 0);
    }
    assert_int_equal(kv_len(&kv, 0, 0), 8 + MAX_NEW);
    kv_free(&kv);
}

static void test_subgen_reserve_falls_back_to_recompression_when_max_new_fills_C(void **st)
{
    (void)st;
    enum { N = 20, MAX_NEW = 30 };
    kv_cache kv;
    make_kv(&kv, "subgen", 1, 1, 1, N, MAX_NEW, 6, 0, NULL);
    assert_int_equal(kv.cap[0], 6);
    uint64_t rng = 8;
    float q[N * D], k[N * D], v[N * D];
    fill(q, N * D, &rng), fill(k, N * D, &rng), fill(v, N * D, &rng);
    prefill(&kv, 0, N, 0, q, k, v);
    /* C' = ⌊6/2⌋ = 3: one recent token (⌊3/2⌋) and two centers, the first at position 0 */
    assert_int_equal(kv_len(&kv, 0, 0), 3);
    assert_int_equal(kv_positions(&kv, 0, 0)[0], 0);
    assert_int_equal(kv_positions(&kv, 0, 0)[2], N - 1);
    int compressions = 0;
    for (int t = N; t < N + MAX_NEW; t++) {
        float x[D];
        fill(x, D, &rng);
        decode(&kv, 0, 0, t, x, x, x);
        int before = kv_len(&kv, 0, 0);
        kv_post_attn(&kv, 0, 0, t, NULL, 0);
        int n = kv_len(&kv, 0, 0);
        assert_true(n <= 6);
        if (n < before) {
            /* back to C' with position 0 first and the newest token last */
            compressions++;
            assert_int_equal(n, 3);
            assert_int_equal(kv_positions(&kv, 0, 0)[0], 0);
            assert_int_equal(kv_positions(&kv, 0, 0)[2], t);
        }
        for (int j = 1; j < n; j++)
            assert_true(kv_positions(&kv, 0, 0)[j] > kv_positions(&kv, 0, 0)[j - 1]);
    }
    assert_int_equal(compressions, MAX_NEW / 4); /* every R + 1 = 4 steps */
    kv_free(&kv);
}

static void test_subgen_capped_recompresses_to_C_minus_R_when_full(void **st)
{
    (void)st;
    enum { N = 20, STEPS = 25 };
    const char *flags[] = {"prefill-only-decode", "capped", "subgen-recompress", "4", NULL};
    kv_cache kv;
    make_kv(&kv, "subgen", 1, 1, 1, N, 40, 10, 0, flags);
    assert_int_equal(kv.cap[0], 10);
    uint64_t rng = 9;
    float q[N * D], k[N * D], v[N * D];
    fill(q, N * D, &rng), fill(k, N * D, &rng), fill(v, N * D, &rng);
    prefill(&kv, 0, N, 0, q, k, v);
    assert_int_equal(kv_len(&kv, 0, 0), 6);
    int compressions = 0;
    for (int t = N; t < N + STEPS; t++) {
        float x[D];
        fill(x, D, &rng);
        decode(&kv, 0, 0, t, x, x, x);
        int before = kv_len(&kv, 0, 0);
        kv_post_attn(&kv, 0, 0, t, NULL, 0);
        assert_true(kv_len(&kv, 0, 0) <= 10);
        if (kv_len(&kv, 0, 0) < before) compressions++, assert_int_equal(kv_len(&kv, 0, 0), 6);
    }
    assert_int_equal(compressions, STEPS / 5); /* 6 → 11 takes 5 steps */
    kv_free(&kv);
}

static void test_subgen_select_matches_chunked_prefill(void **st)
{
    (void)st;
    enum { N = 24 };
    kv_cache kv;
    make_kv(&kv, "subgen", 1, 1, 1, N, 4, 12, 0, NULL); /* C' = 8: r = 4, k = 4 */
    uint64_t rng = 10;
    float q[N * D], k[N * D], v[N * D];
    fill(q, N * D, &rng), fill(k, N * D, &rng), fill(v, N * D, &rng);
    /* reference: the selection re-run over the kept set + each chunk */
    int32_t ref_pos[N];
    const float *ref_rows[N];
    int n_ref = 0;
    for (int c = 0; c < 3; c++) {
        prefill(&kv, 0, 8, 8 * c, q + 8 * c * D, k + 8 * c * D, v + 8 * c * D);
        const float *X[N];
        int32_t P[N];
        int n = 0;
        for (int i = 0; i < n_ref; i++) X[n] = ref_rows[i], P[n++] = ref_pos[i];
        for (int r = 0; r < 8; r++) X[n] = k + (8 * c + r) * D, P[n++] = 8 * c + r;
        int keep[N], centers[N];
        double dist[N];
        n_ref = subgen_select(X, n, D, 8, 4, keep, centers, dist);
        for (int i = 0; i < n_ref; i++) ref_rows[i] = X[keep[i]], ref_pos[i] = P[keep[i]];
        assert_int_equal(kv_len(&kv, 0, 0), n_ref);
        assert_memory_equal(kv_positions(&kv, 0, 0), ref_pos, (size_t)n_ref * sizeof *ref_pos);
    }
    kv_free(&kv);
}

static void test_subgen_identity_and_bad_recent(void **st)
{
    (void)st;
    kv_cache kv;
    make_kv(&kv, "subgen", 1, 1, 1, 10, 10, 1.0, 0, NULL);
    uint64_t rng = 1;
    float q[10 * D], k[10 * D], v[10 * D];
    fill(q, 40, &rng), fill(k, 40, &rng), fill(v, 40, &rng);
    prefill(&kv, 0, 10, 0, q, k, v);
    for (int t = 10; t < 19; t++) {
        float x[D];
        fill(x, D, &rng);
        assert_int_equal(decode(&kv, 0, 0, t, x, x, x), t);
        kv_post_attn(&kv, 0, 0, t, NULL, 0);
    }
    assert_int_equal(kv.evictions, 0);
    kv_free(&kv);
    char err[256];
    const char *flags[] = {"subgen-recent", "12", NULL};
    assert_int_equal(try_make_kv(&kv, "subgen", 1, 1, 1, 100, 10, 12, 0, flags, err, sizeof err), -1);
    assert_non_null(strstr(err, "--subgen-recent"));
}

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
    make_kv(kv, "subgen_stream", 1, 1, 1, SS_N, 8, 12, seed, flags);
    assert_int_equal(kv->cap[0], 2);
    float q[SS_N * D] = {0};
    prefill(kv, 0, SS_N, 0, q, &ss_keys[0][0], &ss_vals[0][0]);
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
    make_kv(&kv, "subgen_stream", 1, HKV, HKV * G, N, MAX_NEW, 1.0, 0, flags);
    assert_true(kv.cap[0] >= N + MAX_NEW);
    const policy_ops *ops = kv.ops;
    uint64_t rng = 3;
    static float q[N * HKV * G * D], k[N * HKV * D], v[N * HKV * D];
    fill(q, sizeof q / sizeof *q, &rng), fill(k, sizeof k / sizeof *k, &rng), fill(v, sizeof v / sizeof *v, &rng);
    prefill(&kv, 0, N, 0, q, k, v);
    for (int t = N; t < N + MAX_NEW - 1; t++)
        for (int g = 0; g < HKV; g++) {
            float qt[G * D], kt[D], vt[D], out[G * D], ref[D], probs[64];
            fill(qt, G * D, &rng), fill(kt, D, &rng), fill(vt, D, &rng);
            decode(&kv, 0, g, t, qt, kt, vt);
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
    make_kv(&kv, "subgen_stream", 1, 1, 1, N, 60, 40, 5, NULL);
    /* defaults for C = 40: r = 10, s = 10, t = 8, m_max = ⌊2·20/9⌋ = 4 */
    assert_int_equal(kv.cap[0], 10);
    uint64_t rng = 12;
    float q[N * D], k[N * D], v[N * D];
    fill(q, N * D, &rng), fill(k, N * D, &rng), fill(v, N * D, &rng);
    prefill(&kv, 0, N, 0, q, k, v);
    for (int t = N; t < N + STEPS; t++) {
        float x[3 * D], out[D];
        fill(x, 3 * D, &rng);
        decode(&kv, 0, 0, t, x, x + D, x + 2 * D);
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
    make_kv(&kv, "subgen_stream", 1, 1, 1, N, 10, 20, 0, NULL);
    /* C = 20: r = 5, s = 5, t = 8, m_max = 2 */
    uint64_t rng = 13;
    float q[N * D], k[N * D], v[N * D];
    fill(q, N * D, &rng), fill(k, N * D, &rng), fill(v, N * D, &rng);
    prefill(&kv, 0, N, 0, q, k, v);
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
    kv_cache kv;
    char err[256];
    const char *flags[] = {"ss-recent", "10", "ss-s", "10", NULL};
    assert_int_equal(try_make_kv(&kv, "subgen_stream", 1, 1, 1, 100, 10, 20, 0, flags, err, sizeof err), -1);
    assert_non_null(strstr(err, "--ss-mmax"));
    const char *flags2[] = {"ss-mmax", "10", NULL};
    assert_int_equal(try_make_kv(&kv, "subgen_stream", 1, 1, 1, 100, 10, 20, 0, flags2, err, sizeof err), -1);
    assert_non_null(strstr(err, "exceed the capacity"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subgen_gonzalez_k3_centers_0_5_2_radius_4),
        cmocka_unit_test(test_subgen_gonzalez_k4_centers_0_5_2_4_radius_0_3606),
        cmocka_unit_test(test_subgen_stream_online_clustering_delta_1_golden),
        cmocka_unit_test(test_subgen_reserve_prefill_keeps_centers_and_recent_then_appends_to_C),
        cmocka_unit_test(test_subgen_grow_keeps_C_and_allocates_C_plus_max_new),
        cmocka_unit_test(test_subgen_reserve_falls_back_to_recompression_when_max_new_fills_C),
        cmocka_unit_test(test_subgen_capped_recompresses_to_C_minus_R_when_full),
        cmocka_unit_test(test_subgen_select_matches_chunked_prefill),
        cmocka_unit_test(test_subgen_identity_and_bad_recent),
        cmocka_unit_test(test_subgen_stream_value_samples_are_drawn_proportional_to_squared_norm),
        cmocka_unit_test(test_subgen_stream_cluster_samples_are_uniform_within_their_cluster),
        cmocka_unit_test(test_subgen_stream_numerator_and_denominator_are_unbiased),
        cmocka_unit_test(test_subgen_stream_is_exact_attention_when_the_window_holds_every_token),
        cmocka_unit_test(test_subgen_stream_decode_moves_the_oldest_window_token_into_the_sketch),
        cmocka_unit_test(test_subgen_stream_auto_delta_is_the_gonzalez_radius_of_the_sketched_prompt),
        cmocka_unit_test(test_subgen_stream_rejects_a_sketch_larger_than_the_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
