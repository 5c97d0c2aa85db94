/* Tests for SubGen's `subgen` (greedy k-center eviction, POLICIES.md §8.2, §7.6 decode modes):
 * the §15.2 golden vectors (k-center, and subgen_stream's online clustering), and hook tests on
 * small hand-built caches (head_dim 4): what the prefill keeps, the decode modes, identity.
 * subgen_stream's hooks and §15.3 statistics: tests/test_policy_subgen_stream.c. */
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

/* the pure functions under test (eviction/policy_subgen*.c) */
extern int subgen_gonzalez(const float *const *X, int n, int d, int k, int first, int *centers,
                           double *radius, double *dist);
extern int subgen_select(const float *const *X, int n, int d, int target, int recent, int *keep,
                         int *centers, double *dist);
extern int subgen_stream_assign(float *reps, int64_t *counts, int *m, int m_max, int d,
                                double delta, const float *x, int *created);

#define D 4

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
    ts_make_kv(&kv, "subgen", 1, HKV, 2 * HKV, N, MAX_NEW, 15, 0, NULL);
    assert_int_equal(kv.cap[0], 15);
    uint64_t rng = 6;
    static float q[N * 2 * HKV * D], k[N * HKV * D], v[N * HKV * D];
    ts_fill(q, sizeof q / sizeof *q, &rng), ts_fill(k, sizeof k / sizeof *k, &rng), ts_fill(v, sizeof v / sizeof *v, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
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
            ts_fill(x, 2 * D, &rng);
            int n = kv_len(&kv, 0, g);
            assert_int_equal(ts_decode(&kv, 0, g, t, x, x, x), n);
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
    ts_make_kv(&kv, "subgen", 1, 1, 1, N, MAX_NEW, 8, 0, flags);
    assert_int_equal(kv.cap[0], 18);
    uint64_t rng = 7;
    float q[N * D], k[N * D], v[N * D];
    ts_fill(q, N * D, &rng), ts_fill(k, N * D, &rng), ts_fill(v, N * D, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    assert_int_equal(kv_len(&kv, 0, 0), 8);
    for (int i = 5; i < 8; i++) assert_int_equal(kv_positions(&kv, 0, 0)[i], N - 8 + i); /* r = 3 */
    for (int t = N; t < N + MAX_NEW; t++) {
        float x[D];
        ts_fill(x, D, &rng);
        ts_decode(&kv, 0, 0, t, x, x, x);
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
    ts_make_kv(&kv, "subgen", 1, 1, 1, N, MAX_NEW, 6, 0, NULL);
    assert_int_equal(kv.cap[0], 6);
    uint64_t rng = 8;
    float q[N * D], k[N * D], v[N * D];
    ts_fill(q, N * D, &rng), ts_fill(k, N * D, &rng), ts_fill(v, N * D, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    /* C' = ⌊6/2⌋ = 3: one recent token (⌊3/2⌋) and two centers, the first at position 0 */
    assert_int_equal(kv_len(&kv, 0, 0), 3);
    assert_int_equal(kv_positions(&kv, 0, 0)[0], 0);
    assert_int_equal(kv_positions(&kv, 0, 0)[2], N - 1);
    int compressions = 0;
    for (int t = N; t < N + MAX_NEW; t++) {
        float x[D];
        ts_fill(x, D, &rng);
        ts_decode(&kv, 0, 0, t, x, x, x);
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
    ts_make_kv(&kv, "subgen", 1, 1, 1, N, 40, 10, 0, flags);
    assert_int_equal(kv.cap[0], 10);
    uint64_t rng = 9;
    float q[N * D], k[N * D], v[N * D];
    ts_fill(q, N * D, &rng), ts_fill(k, N * D, &rng), ts_fill(v, N * D, &rng);
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    assert_int_equal(kv_len(&kv, 0, 0), 6);
    int compressions = 0;
    for (int t = N; t < N + STEPS; t++) {
        float x[D];
        ts_fill(x, D, &rng);
        ts_decode(&kv, 0, 0, t, x, x, x);
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
    ts_make_kv(&kv, "subgen", 1, 1, 1, N, 4, 12, 0, NULL); /* C' = 8: r = 4, k = 4 */
    uint64_t rng = 10;
    float q[N * D], k[N * D], v[N * D];
    ts_fill(q, N * D, &rng), ts_fill(k, N * D, &rng), ts_fill(v, N * D, &rng);
    /* reference: the selection re-run over the kept set + each chunk */
    int32_t ref_pos[N];
    const float *ref_rows[N];
    int n_ref = 0;
    for (int c = 0; c < 3; c++) {
        ts_prefill(&kv, 0, 8, 8 * c, q + 8 * c * D, k + 8 * c * D, v + 8 * c * D, NULL, 0);
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
    ts_make_kv(&kv, "subgen", 1, 1, 1, 10, 10, 1.0, 0, NULL);
    uint64_t rng = 1;
    float q[10 * D], k[10 * D], v[10 * D];
    ts_fill(q, 40, &rng), ts_fill(k, 40, &rng), ts_fill(v, 40, &rng);
    ts_prefill(&kv, 0, 10, 0, q, k, v, NULL, 0);
    for (int t = 10; t < 19; t++) {
        float x[D];
        ts_fill(x, D, &rng);
        assert_int_equal(ts_decode(&kv, 0, 0, t, x, x, x), t);
        kv_post_attn(&kv, 0, 0, t, NULL, 0);
    }
    assert_int_equal(kv.evictions, 0);
    kv_free(&kv);
    const char *flags[] = {"subgen-recent", "12", NULL};
    ts_expect_init_error(policy_find("subgen"), 12, flags, 100, 10, "--subgen-recent");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
