/* Tests for the `buzz` and `buzz_logn` policies (POLICIES.md §4, golden vectors §15.2, property
 * tests §15.1). The pure selection functions are checked against the golden vectors; the hooks
 * are driven on a small hand-built kv_cache (head_dim 4) through kv_prefill / kv_decode_slot /
 * kv_write / kv_post_attn, with a shadow of the accumulated scores kept by the test.
 *
 * Kept whole (over ~500 lines): the golden-vector and hook tests of both policies drive the one
 * rig defined at the top (the cache plus the shadow of every token's accumulated score, and the
 * reference round ref_round); a split would copy that rig into each file.
 */
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

/* From eviction/policy_buzz.c and eviction/policy_buzz_logn.c. */
extern const policy_ops policy_buzz, policy_buzz_logn;
int buzz_shat(int s);
double buzz_theorem_ratio(int s);
int buzz_interval_sample(int n, int stride, int *out);
int buzz_local_max_sample(const float *score, int n, int stride, int *out);
int buzz_round_select(int n_old, int n_new, const float *new_score, int s, int new_sampler,
                      int swap_strides, int T, int *out);
int buzz_map_budget(int C, int k, int s, int mode, int *w, int *T);
float buzz_logn_factor(int n, double base);

/* ------------------------------------------------------------------------ the test rig */

#define D 4

/* A kv_cache driven through the real hooks, plus the shadow of every token's accumulated score
 * (acc[l][g][pos], summed exactly like the engine and the policy do). */
typedef struct {
    kv_cache kv;
    int L, Hkv, H, G, max_pos, stride;
    float *acc;     /* [L][Hkv][max_pos] */
    float *probs;   /* [H][stride] */
    float *colsum;  /* [Hkv][stride] */
    float *k, *v;   /* [max_pos][Hkv][D] */
    int64_t evict_before;
} rig;

/* Deterministic pseudo-random value in [0, 1) for (layer, head, query pos, key pos). */
static float u01(int l, int h, int q, int kpos)
{
    uint64_t z = 0x9E3779B97F4A7C15ull * (uint64_t)(l * 1000003 + h * 7919 + 1) ^
                 ((uint64_t)q << 20) ^ (uint64_t)kpos * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((z >> 40) * (1.0 / 16777216.0));
}

/* Sets NAME=VALUE pairs (NULL-terminated list) and sizes the cache. Returns kv_init's result;
 * err receives its message. */
static int rig_open(rig *r, const policy_ops *ops, double budget, int N, int max_new, int L, int Hkv,
                    int H, const char *const *set, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    policy_params p;
    if (ts_params(&p, ops, budget, 0, set, err, errlen) != 0) return -1;
    r->L = L;
    r->Hkv = Hkv;
    r->H = H;
    r->G = H / Hkv;
    r->max_pos = N + max_new;
    if (kv_init(&r->kv, ops, &p, L, Hkv, H, D, N, max_new, err, errlen) != 0) return -1;
    int cap = 0;
    for (int i = 0; i < L * Hkv; i++)
        if (r->kv.cap[i] > cap) cap = r->kv.cap[i];
    r->stride = cap + 1 + r->max_pos;
    r->acc = calloc((size_t)L * Hkv * r->max_pos, sizeof *r->acc);
    r->probs = calloc((size_t)H * r->stride, sizeof *r->probs);
    r->colsum = calloc((size_t)Hkv * r->stride, sizeof *r->colsum);
    r->k = calloc((size_t)r->max_pos * Hkv * D, sizeof *r->k);
    r->v = calloc((size_t)r->max_pos * Hkv * D, sizeof *r->v);
    assert_non_null(r->acc);
    /* K/V of position pos in head g: [pos, g, 1, 0] and [-pos, g, 2, 0] (layer added below) */
    for (int pos = 0; pos < r->max_pos; pos++)
        for (int g = 0; g < Hkv; g++) {
            float *k = r->k + ((size_t)pos * Hkv + g) * D, *v = r->v + ((size_t)pos * Hkv + g) * D;
            k[0] = (float)pos, k[1] = (float)g, k[2] = 1, k[3] = 0;
            v[0] = (float)-pos, v[1] = (float)g, v[2] = 2, v[3] = 0;
        }
    return 0;
}

static void rig_close(rig *r)
{
    kv_free(&r->kv);
    free(r->acc);
    free(r->probs);
    free(r->colsum);
    free(r->k);
    free(r->v);
}

static float *acc_of(rig *r, int l, int g, int pos) { return r->acc + ((size_t)(l * r->Hkv + g) * r->max_pos + pos); }

/* Column sum a chunk [pos0, pos0+n) gives the candidate at position kpos in (l, g): a made-up
 * but deterministic number (only the policy's use of it is under test). */
static float colsum_of(int l, int g, int pos0, int n, int kpos)
{
    return u01(l, 100 + g, pos0 + n, kpos) * (float)(kpos >= pos0 ? pos0 + n - kpos : n);
}

/* Prefills positions [pos0, pos0+n) of every layer through kv_prefill. */
static void rig_prefill(rig *r, int pos0, int n)
{
    char err[256];
    kv_cache *kv = &r->kv;
    for (int l = 0; l < r->L; l++) {
        for (int g = 0; g < r->Hkv; g++) {
            int n_live = kv_len(kv, l, g);
            const int32_t *P = kv_positions(kv, l, g);
            for (int j = 0; j < n_live + n; j++) {
                int kpos = j < n_live ? P[j] : pos0 + j - n_live;
                float c = colsum_of(l, g, pos0, n, kpos);
                r->colsum[(size_t)g * r->stride + j] = c;
                *acc_of(r, l, g, kpos) += c;
            }
        }
        kv_prefill_chunk c = {.layer = l, .n_new = n, .pos0 = pos0, .q_new = NULL,
                              .k_new = r->k + (size_t)pos0 * r->Hkv * D,
                              .v_new = r->v + (size_t)pos0 * r->Hkv * D, .colsum = r->colsum,
                              .cand_stride = r->stride};
        assert_int_equal(kv_prefill(kv, &c, err, sizeof err), 0);
    }
    kv_sample_stats(kv);
}

/* The probability query head h of (l, g) puts on the key at kpos at step t (unnormalized: the
 * policy only adds them up). */
static float prob_of(int l, int h, int t, int kpos) { return 0.01f * u01(l, h, t, kpos); }

/* One decode step at position t in every layer; returns the evictions it caused (all heads). */
static int64_t rig_decode(rig *r, int t)
{
    kv_cache *kv = &r->kv;
    int64_t before = kv->evictions;
    float q[64 * D] = {0};
    for (int l = 0; l < r->L; l++) {
        for (int g = 0; g < r->Hkv; g++) {
            const float *k = r->k + ((size_t)t * r->Hkv + g) * D, *v = r->v + ((size_t)t * r->Hkv + g) * D;
            int slot = kv_decode_slot(kv, l, g, t, q, k, v);
            assert_int_equal(slot, kv_len(kv, l, g) - 1); /* buzz appends */
            kv_write(kv, l, g, slot, t, k, v);
        }
        for (int g = 0; g < r->Hkv; g++) {
            int len = kv_len(kv, l, g);
            const int32_t *P = kv_positions(kv, l, g);
            assert_true(len <= kv->cap[kv_idx(kv, l, g)] + 1);
            for (int j = 0; j < len; j++) {
                float a = 0.0f;
                for (int h = 0; h < r->G; h++) {
                    float p = prob_of(l, g * r->G + h, t, P[j]);
                    r->probs[(size_t)h * r->stride + j] = p;
                    a += p;
                }
                *acc_of(r, l, g, P[j]) += a;
            }
            kv_post_attn(kv, l, g, t, r->probs, r->stride);
        }
    }
    kv_sample_stats(kv);
    return kv->evictions - before;
}

/* Invariants after any hook, with `last` = the newest position written: capacity, strictly
 * increasing positions, sink 0..k-1 and window last-w+1..last present, K/V and score follow
 * their slot, equal sizes across the heads of a layer. */
static void rig_check(rig *r, int k, int w, int last, int check_scores)
{
    kv_cache *kv = &r->kv;
    for (int l = 0; l < r->L; l++)
        for (int g = 0; g < r->Hkv; g++) {
            int len = kv_len(kv, l, g);
            const int32_t *P = kv_positions(kv, l, g);
            const float *K = kv_keys(kv, l, g), *V = kv_values(kv, l, g), *S = kv_scores(kv, l, g);
            assert_true(len <= kv->cap[kv_idx(kv, l, g)]);
            assert_int_equal(len, kv_len(kv, l, 0));
            for (int j = 1; j < len; j++) assert_true(P[j] > P[j - 1]);
            int n_tok = last + 1, ks = k < n_tok ? k : n_tok, ws = w < n_tok - ks ? w : n_tok - ks;
            for (int j = 0; j < ks; j++) assert_int_equal(P[j], j);
            for (int j = 0; j < ws; j++) assert_int_equal(P[len - 1 - j], last - j);
            for (int j = 0; j < len; j++) {
                assert_true(K[j * D] == (float)P[j] && K[j * D + 1] == (float)g);
                assert_true(V[j * D] == (float)-P[j] && V[j * D + 1] == (float)g);
                if (check_scores) {
                    float want = *acc_of(r, l, g, P[j]);
                    assert_true(fabsf(S[j] - want) <= 1e-6f * fabsf(want) + 1e-12f);
                }
            }
        }
}

/* Independent reference of one round over the middle positions mid[0..M-1] (n_old old first),
 * scores by position: every ŝ-th old one and the first maximum of every hive of s new ones.
 * Returns the kept count in out. */
static int ref_round(const int *mid, int M, int n_old, const float *score_by_pos, int s, int *out)
{
    int c = 0, sh = (s + 1) / 2;
    for (int i = 0; i < n_old; i += sh) out[c++] = mid[i];
    for (int i = n_old; i < M; i += s) {
        int best = mid[i];
        for (int j = i + 1; j < i + s && j < M; j++)
            if (score_by_pos[mid[j]] > score_by_pos[best]) best = mid[j];
        out[c++] = best;
    }
    return c;
}

static const char *const TRACE_PARAMS[] = {"buzz-k", "4", "buzz-w", "8", "buzz-T", "35",
                                           "buzz-s", "5", NULL};

/* ------------------------------------------------------------------------ golden vectors */

static void test_buzz_golden_theorem_table_s3_to_s9(void **state)
{
    (void)state;
    const int s[] = {3, 4, 5, 6, 7, 8, 9}, sh[] = {2, 2, 3, 3, 4, 4, 5};
    const double r[] = {2.5, 3.0, 4.3333, 5.0, 6.25, 7.0, 8.2};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(buzz_shat(s[i]), sh[i]);
        assert_true(fabs(buzz_theorem_ratio(s[i]) - r[i]) < 1e-4);
    }
}

static void test_buzz_golden_one_round_keeps_2_4_6_8_10_13(void **state)
{
    (void)state;
    /* middle positions 2..13, n_old 5 (2..6), new 7..13 with these scores, s = 3 (ŝ = 2) */
    const float new_score[7] = {0.1f, 0.5f, 0.2f, 0.9f, 0.3f, 0.4f, 0.05f};
    int out[12];
    int c = buzz_round_select(5, 7, new_score, 3, 0, 0, -1, out);
    const int want[] = {2, 4, 6, 8, 10, 13};
    assert_int_equal(c, 6);
    for (int i = 0; i < c; i++) assert_int_equal(2 + out[i], want[i]);
}

static void test_buzz_golden_ties_first_maximum_keeps_0_4_6_9(void **state)
{
    (void)state;
    const float score[10] = {0.3f, 0.3f, 0.1f, 0.2f, 0.7f, 0.7f, 0, 0, 0, 0.5f};
    int out[10];
    int c = buzz_local_max_sample(score, 10, 3, out);
    const int want[] = {0, 4, 6, 9};
    assert_int_equal(c, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(out[i], want[i]);
    /* the same through a round with no old tokens */
    c = buzz_round_select(0, 10, score, 3, 0, 0, -1, out);
    assert_int_equal(c, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(out[i], want[i]);
}

/* N=60, k=4, w=8, s=5, T=35 through the real hooks (2 layers, 2 KV heads, GQA 2): 22 after
 * prefill, +1 per step up to 47, rounds at t = 85, 111, 137 back to 22; evictions only then. */
static void test_buzz_golden_trace_n60_22_to_47_rounds_at_85_111_137(void **state)
{
    (void)state;
    rig r;
    char err[256];
    assert_int_equal(rig_open(&r, &policy_buzz, 47, 60, 80, 2, 2, 4, TRACE_PARAMS, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 47);
    rig_prefill(&r, 0, 60);
    assert_int_equal(kv_len(&r.kv, 0, 0), 22);
    assert_int_equal(r.kv.evictions, 4 * (60 - 22));
    rig_check(&r, 4, 8, 59, 1);
    int size = 22, rounds[8], n_rounds = 0, differ = 0;
    for (int t = 60; t < 140; t++) {
        /* snapshot the middle of (0, 0) and (0, 1) before the step, to check the round's picks */
        int pre_len[2];
        int32_t pre_pos[2][64];
        for (int g = 0; g < 2; g++) {
            pre_len[g] = kv_len(&r.kv, 0, g);
            memcpy(pre_pos[g], kv_positions(&r.kv, 0, g), (size_t)pre_len[g] * sizeof(int32_t));
        }
        int64_t ev = rig_decode(&r, t);
        rig_check(&r, 4, 8, t, 1);
        if (ev) {
            rounds[n_rounds++] = t;
            assert_int_equal(ev, 4 * (48 - 22)); /* every head of every layer: 48 → 22 */
            assert_int_equal(kv_len(&r.kv, 1, 1), 22);
            size = 22;
            for (int g = 0; g < 2; g++) {
                /* middle = positions between the sink and the window, old ones first (10) */
                int mid[64], M = 0, want[64];
                for (int j = 4; j < pre_len[g]; j++) mid[M++] = pre_pos[g][j];
                mid[M++] = t;
                M -= 8;
                assert_int_equal(M, 36);
                float by_pos[160];
                for (int p = 0; p < 140; p++) by_pos[p] = *acc_of(&r, 0, g, p);
                int c = ref_round(mid, M, 10, by_pos, 5, want);
                assert_int_equal(c, 10); /* old 10 → 4, new 26 → 6 */
                for (int i = 0; i < c; i++) assert_int_equal(kv_positions(&r.kv, 0, g)[4 + i], want[i]);
            }
            for (int j = 0; j < 22; j++)
                differ += kv_positions(&r.kv, 0, 0)[j] != kv_positions(&r.kv, 0, 1)[j];
        } else {
            size++;
        }
        assert_int_equal(kv_len(&r.kv, 0, 0), size);
        assert_true(size <= 47);
    }
    assert_int_equal(n_rounds, 3);
    assert_int_equal(rounds[0], 85);
    assert_int_equal(rounds[1], 111);
    assert_int_equal(rounds[2], 137);
    assert_true(differ > 0); /* each KV head picks its own local maxima */
    rig_close(&r);
}

/* N=300, same parameters: 288 middle → 58 by local max → 20 by interval → |S| = 32. */
static void test_buzz_golden_long_prompt_n300_keeps_32(void **state)
{
    (void)state;
    rig r;
    char err[256];
    assert_int_equal(rig_open(&r, &policy_buzz, 47, 300, 10, 1, 2, 2, TRACE_PARAMS, err, sizeof err), 0);
    rig_prefill(&r, 0, 300);
    for (int g = 0; g < 2; g++) {
        assert_int_equal(kv_len(&r.kv, 0, g), 32);
        int mid[300], M = 0, lm[64], want[64];
        for (int p = 4; p < 292; p++) mid[M++] = p;
        float by_pos[300];
        for (int p = 0; p < 300; p++) by_pos[p] = *acc_of(&r, 0, g, p);
        int c = ref_round(mid, M, 0, by_pos, 5, lm);
        assert_int_equal(c, 58);
        c = ref_round(lm, c, c, by_pos, 5, want); /* all old: every 3rd */
        assert_int_equal(c, 20);
        for (int i = 0; i < 20; i++) assert_int_equal(kv_positions(&r.kv, 0, g)[4 + i], want[i]);
    }
    rig_check(&r, 4, 8, 299, 1);
    /* decode goes on from the prefilled old samples: the next round treats the 20 as old */
    for (int t = 300; t < 310; t++) {
        rig_decode(&r, t);
        rig_check(&r, 4, 8, t, 1);
    }
    rig_close(&r);
}

/* s=5, T=159 (w=36 from the mapping of C=199): the middle after successive rounds is
 * 32, 37, 38, 38 — the exact integer recursion a_n = ceil(a/ŝ) + ceil((T+1−a)/s). */
static void test_buzz_golden_exact_steady_state_32_37_38_38(void **state)
{
    (void)state;
    const int want[] = {32, 37, 38, 38};
    /* the recursion itself */
    int a = 0;
    for (int i = 0; i < 4; i++) {
        a = (a + 2) / 3 + (159 + 1 - a + 4) / 5;
        assert_int_equal(a, want[i]);
    }
    /* the mapping gives w = 36, T = 159 for C = 199 */
    int w, T;
    assert_int_equal(buzz_map_budget(199, 4, 5, 0, &w, &T), 0);
    assert_int_equal(w, 36);
    assert_int_equal(T, 159);
    /* the hooks */
    rig r;
    char err[256];
    assert_int_equal(rig_open(&r, &policy_buzz, 199, 40, 700, 1, 1, 1, NULL, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 199);
    rig_prefill(&r, 0, 40);
    int n = 0;
    for (int t = 40; t < 740 && n < 4; t++) {
        if (rig_decode(&r, t)) {
            assert_int_equal(kv_len(&r.kv, 0, 0) - 4 - 36, want[n]);
            n++;
        }
        assert_true(kv_len(&r.kv, 0, 0) <= 199);
    }
    assert_int_equal(n, 4);
    rig_check(&r, 4, 36, kv_positions(&r.kv, 0, 0)[kv_len(&r.kv, 0, 0) - 1], 1);
    rig_close(&r);
}

static void test_buzz_golden_peak_mapping_c64_to_c1024(void **state)
{
    (void)state;
    const int C[] = {64, 128, 200, 300, 512, 1024};
    const int W[] = {11, 23, 36, 55, 95, 191}, TT[] = {49, 101, 160, 241, 413, 829};
    for (int i = 0; i < 6; i++) {
        int w, T;
        assert_int_equal(buzz_map_budget(C[i], 4, 5, 0, &w, &T), 0);
        assert_int_equal(w, W[i]);
        assert_int_equal(T, TT[i]);
        /* kv_init: the capacity is exactly k + w + T = C */
        rig r;
        char err[256];
        assert_int_equal(rig_open(&r, &policy_buzz, C[i], 3000, 100, 1, 1, 1, NULL, err, sizeof err), 0);
        assert_int_equal(r.kv.cap[0], C[i]);
        rig_close(&r);
    }
}

static void test_buzz_logn_golden_log512_values(void **state)
{
    (void)state;
    const int n[] = {1, 50, 100, 200, 300, 512, 1024, 4096};
    const double want[] = {0, 0.6271, 0.7382, 0.8493, 0.9143, 1, 1.1111, 1.3333};
    for (int i = 0; i < 8; i++) assert_true(fabs(buzz_logn_factor(n[i], 512) - want[i]) < 1e-4);
    /* the engine hook */
    rig r;
    char err[256];
    assert_int_equal(rig_open(&r, &policy_buzz_logn, 0.5, 100, 100, 1, 1, 1, NULL, err, sizeof err), 0);
    assert_non_null(policy_buzz_logn.logit_scale);
    for (int i = 0; i < 8; i++)
        assert_true(fabs(policy_buzz_logn.logit_scale(&r.kv, n[i]) - want[i]) < 1e-4);
    rig_close(&r);
    const char *const base2[] = {"logn-base", "2", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz_logn, 0.5, 100, 100, 1, 1, 1, base2, err, sizeof err), 0);
    assert_true(fabsf(policy_buzz_logn.logit_scale(&r.kv, 8) - 3.0f) < 1e-6f);
    rig_close(&r);
    /* buzz itself leaves the scale alone */
    assert_null(policy_buzz.logit_scale);
}

/* ------------------------------------------------------------------------ hooks and properties */

/* budget 1.0: capacity = prompt + max_new, nothing is ever evicted or moved. */
static void test_buzz_identity_when_budget_covers_everything(void **state)
{
    (void)state;
    const policy_ops *ops[] = {&policy_buzz, &policy_buzz_logn};
    for (int o = 0; o < 2; o++) {
        rig r;
        char err[256];
        assert_int_equal(rig_open(&r, ops[o], 1.0, 60, 40, 2, 2, 4, NULL, err, sizeof err), 0);
        assert_int_equal(r.kv.cap[0], 100);
        rig_prefill(&r, 0, 60);
        for (int t = 60; t < 100; t++) assert_int_equal(rig_decode(&r, t), 0);
        for (int j = 0; j < 100; j++) assert_int_equal(kv_positions(&r.kv, 1, 1)[j], j);
        assert_int_equal(r.kv.evictions, 0);
        rig_check(&r, 4, 8, 99, 1);
        rig_close(&r);
        /* a tiny run (prompt < sink) with the full budget is not an error */
        assert_int_equal(rig_open(&r, ops[o], 1.0, 2, 1, 1, 1, 1, NULL, err, sizeof err), 0);
        rig_prefill(&r, 0, 2);
        assert_int_equal(rig_decode(&r, 2), 0);
        rig_close(&r);
    }
}

/* A structure the budget cannot hold (POLICIES.md §1.2): the capacity is raised to it. */
static void expect_raised(const policy_ops *ops, double budget, int N, int max_new,
                          const char *const *set, int want_cap)
{
    rig r;
    char err[256] = "";
    assert_int_equal(rig_open(&r, ops, budget, N, max_new, 1, 1, 1, set, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], want_cap);
    rig_close(&r);
}

static void test_buzz_rejects_bad_parameters_with_one_line_naming_the_flag(void **state)
{
    (void)state;
    const char *const s2[] = {"buzz-s", "2", NULL}, *const stride1[] = {"stride", "1", NULL};
    ts_expect_init_error(&policy_buzz, 0.5, s2, 100, 100, "--buzz-s");
    ts_expect_init_error(&policy_buzz_logn, 0.5, stride1, 100, 100, "--buzz-s");
    /* structures a budget of 40 cannot hold are raised to their minimum k + w + T (§1.2; the
     * caller reports the raise) where they used to fail */
    const char *const k50[] = {"sink", "50", NULL};        /* 50 + 1 + 1 */
    expect_raised(&policy_buzz, 40, 100, 100, k50, 52);
    const char *const w60[] = {"window", "60", NULL};      /* 4 + 60 + 1 */
    expect_raised(&policy_buzz, 40, 100, 100, w60, 65);
    const char *const w36[] = {"buzz-w", "36", NULL};      /* 4 + 36 leaves no middle: 41 */
    expect_raised(&policy_buzz, 40, 100, 100, w36, 41);
    const char *const t40[] = {"threshold", "40", NULL};   /* 4 + 1 + 40 */
    expect_raised(&policy_buzz, 40, 100, 100, t40, 45);
    const char *const both[] = {"buzz-w", "20", "buzz-T", "30", NULL}; /* 54 > 40 in peak mode */
    expect_raised(&policy_buzz, 40, 100, 100, both, 54);
    const char *const mode[] = {"budget-mode", "mean", NULL};
    ts_expect_init_error(&policy_buzz, 40, mode, 100, 100, "--budget-mode");
    const char *const swap[] = {"buzz-swap-strides", "2", NULL};
    ts_expect_init_error(&policy_buzz, 40, swap, 100, 100, "--buzz-swap-strides");
    const char *const base[] = {"logn-base", "1", NULL};
    ts_expect_init_error(&policy_buzz_logn, 40, base, 100, 100, "--logn-base");
    const char *const pq[] = {"logn-mode", "per-query", NULL};
    ts_expect_init_error(&policy_buzz_logn, 40, pq, 100, 100, "--logn-mode");
    /* a parameter buzz does not have */
    policy_params p = {.budget = 1};
    char err[256];
    assert_int_equal(policy_params_set(&p, &policy_buzz, "obs-window", "3", err, sizeof err), -1);
}

/* Generic aliases, "auto", one of w / T given (the other from C = k + w + T). */
static void test_buzz_generic_aliases_and_overrides_set_the_structure(void **state)
{
    (void)state;
    rig r;
    char err[256];
    const char *const gen[] = {"sink", "2", "window", "10", "stride", "3", "buzz-T", "auto", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 40, 100, 100, 1, 1, 1, gen, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 40); /* T = 40 - 2 - 10 = 28 */
    rig_prefill(&r, 0, 100);
    /* middle 88 → 30 by local max (s=3) → 15 (ŝ=2) ≤ 28 */
    assert_int_equal(kv_len(&r.kv, 0, 0), 2 + 15 + 10);
    rig_check(&r, 2, 10, 99, 1);
    for (int t = 100; t < 200; t++) {
        rig_decode(&r, t);
        rig_check(&r, 2, 10, t, 1);
    }
    rig_close(&r);
    const char *const tonly[] = {"threshold", "20", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 40, 100, 100, 1, 1, 1, tonly, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 40); /* w = 40 - 4 - 20 = 16 */
    rig_prefill(&r, 0, 100);
    rig_check(&r, 4, 16, 99, 1);
    assert_true(kv_len(&r.kv, 0, 0) <= 40);
    rig_close(&r);
}

/* C < k + s + 2 behaves as streaming with n_sink = k: sinks + the C − k most recent, one
 * eviction per step once full. */
static void test_buzz_degenerate_capacity_behaves_as_streaming(void **state)
{
    (void)state;
    rig r;
    char err[256];
    assert_int_equal(rig_open(&r, &policy_buzz, 10, 30, 20, 1, 2, 2, NULL, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 10);
    rig_prefill(&r, 0, 30);
    const int want[] = {0, 1, 2, 3, 24, 25, 26, 27, 28, 29};
    for (int j = 0; j < 10; j++) assert_int_equal(kv_positions(&r.kv, 0, 1)[j], want[j]);
    for (int t = 30; t < 50; t++) {
        assert_int_equal(rig_decode(&r, t), 2); /* one per KV head */
        rig_check(&r, 4, 6, t, 1);
        assert_int_equal(kv_len(&r.kv, 0, 0), 10);
    }
    rig_close(&r);
}

/* Prefilling one token per chunk makes the same rounds as decoding (the trigger is the same
 * middle > T and the scores are the same sums). */
static void test_buzz_prefill_in_chunks_of_one_matches_decode(void **state)
{
    (void)state;
    rig a, b;
    char err[256];
    assert_int_equal(rig_open(&a, &policy_buzz, 47, 150, 1, 1, 1, 1, TRACE_PARAMS, err, sizeof err), 0);
    assert_int_equal(rig_open(&b, &policy_buzz, 47, 150, 1, 1, 1, 1, TRACE_PARAMS, err, sizeof err), 0);
    rig_prefill(&b, 0, 1);
    for (int t = 0; t < 150; t++) {
        /* a: chunk [t, t+1) whose column sums are the decode probabilities of step t */
        kv_cache *kv = &a.kv;
        int n_live = kv_len(kv, 0, 0);
        const int32_t *P = kv_positions(kv, 0, 0);
        for (int j = 0; j <= n_live; j++) {
            int kpos = j < n_live ? P[j] : t;
            a.colsum[j] = prob_of(0, 0, t, kpos);
            *acc_of(&a, 0, 0, kpos) += a.colsum[j];
        }
        kv_prefill_chunk c = {.layer = 0, .n_new = 1, .pos0 = t, .k_new = a.k + (size_t)t * D,
                              .v_new = a.v + (size_t)t * D, .colsum = a.colsum, .cand_stride = a.stride};
        assert_int_equal(kv_prefill(kv, &c, err, sizeof err), 0);
        /* b: the decode path (position 0 was prefilled) */
        if (t > 0) rig_decode(&b, t);
        if (t == 0) continue;
        assert_int_equal(kv_len(&a.kv, 0, 0), kv_len(&b.kv, 0, 0));
        for (int j = 0; j < kv_len(&a.kv, 0, 0); j++) {
            assert_int_equal(kv_positions(&a.kv, 0, 0)[j], kv_positions(&b.kv, 0, 0)[j]);
            if (kv_positions(&a.kv, 0, 0)[j] > 0) /* position 0's prefill colsum differs */
                assert_true(kv_scores(&a.kv, 0, 0)[j] == kv_scores(&b.kv, 0, 0)[j]);
        }
        rig_check(&a, 4, 8, t, 1);
    }
    assert_true(a.kv.evictions > 0);
    rig_close(&a);
    rig_close(&b);
}

/* Chunked prefill (n_live > 0): live old samples stay old, the invariants hold after every
 * chunk, and decode continues from there. */
static void test_buzz_prefill_in_chunks_of_seven_keeps_invariants(void **state)
{
    (void)state;
    rig r;
    char err[256];
    assert_int_equal(rig_open(&r, &policy_buzz, 47, 300, 50, 2, 2, 4, TRACE_PARAMS, err, sizeof err), 0);
    for (int pos0 = 0; pos0 < 300; pos0 += 7) {
        int n = pos0 + 7 <= 300 ? 7 : 300 - pos0;
        rig_prefill(&r, pos0, n);
        rig_check(&r, 4, 8, pos0 + n - 1, 1);
    }
    for (int t = 300; t < 350; t++) {
        rig_decode(&r, t);
        rig_check(&r, 4, 8, t, 1);
    }
    rig_close(&r);
}

/* --budget-mode avg: capacity C is the target average, the peak k + w + T exceeds it. */
static void test_buzz_avg_mode_peak_exceeds_budget_average_near_it(void **state)
{
    (void)state;
    int w, T;
    assert_int_equal(buzz_map_budget(200, 4, 5, 1, &w, &T), 0);
    assert_int_equal(w, 53);  /* floor(196 / (1.5 + 4.3333/2)) */
    assert_int_equal(T, 230); /* round(4.3333 · 53) */
    rig r;
    char err[256];
    const char *const avg[] = {"budget-mode", "avg", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 200, 100, 3000, 1, 1, 1, avg, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 4 + 53 + 230);
    rig_prefill(&r, 0, 100);
    for (int t = 100; t < 3100; t++) rig_decode(&r, t);
    rig_check(&r, 4, 53, 3099, 0);
    double avg_len = r.kv.live_sum / r.kv.live_samples;
    assert_true(fabs(avg_len - 200) < 15);
    assert_true(r.kv.live_peak <= 287);
    rig_close(&r);
    /* the preset's explicit structure is allowed above the budget in avg mode only */
    const char *const both[] = {"buzz-w", "20", "buzz-T", "30", "budget-mode", "avg", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 40, 100, 100, 1, 1, 1, both, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 54);
    rig_close(&r);
}

/* Ablations (§4.7): interval new sampler, swapped strides, current-pass scores. */
static void test_buzz_ablations_interval_swap_and_current_score(void **state)
{
    (void)state;
    const float new_score[7] = {0.1f, 0.5f, 0.2f, 0.9f, 0.3f, 0.4f, 0.05f};
    int out[12];
    /* interval: first of every hive of 3 among 7..13 */
    int c = buzz_round_select(5, 7, new_score, 3, 1, 0, -1, out);
    const int want_iv[] = {2, 4, 6, 7, 10, 13};
    assert_int_equal(c, 6);
    for (int i = 0; i < c; i++) assert_int_equal(2 + out[i], want_iv[i]);
    /* swap: old every 3rd (2, 5), new local max over hives of 2 */
    c = buzz_round_select(5, 7, new_score, 3, 0, 1, -1, out);
    const int want_sw[] = {2, 5, 8, 10, 12, 13};
    assert_int_equal(c, 6);
    for (int i = 0; i < c; i++) assert_int_equal(2 + out[i], want_sw[i]);
    /* the flags reach the hooks */
    rig r;
    char err[256];
    const char *const iv[] = {"buzz-k", "4", "buzz-w", "8", "buzz-T", "35", "buzz-new-sampler",
                              "interval", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 47, 60, 10, 1, 1, 1, iv, err, sizeof err), 0);
    rig_prefill(&r, 0, 60);
    for (int i = 0; i < 10; i++) assert_int_equal(kv_positions(&r.kv, 0, 0)[4 + i], 4 + 5 * i);
    rig_close(&r);
    const char *const sw[] = {"buzz-k", "4", "buzz-w", "8", "buzz-T", "35", "buzz-swap-strides",
                              "1", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 47, 60, 10, 1, 1, 1, sw, err, sizeof err), 0);
    rig_prefill(&r, 0, 60);
    /* middle 48 → 16 by local max over hives of 3 (≤ 35) */
    assert_int_equal(kv_len(&r.kv, 0, 0), 4 + 16 + 8);
    rig_check(&r, 4, 8, 59, 1);
    rig_close(&r);
    const char *const cur[] = {"buzz-score", "current", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 0.5, 60, 60, 1, 1, 2, cur, err, sizeof err), 0);
    rig_prefill(&r, 0, 60);
    rig_decode(&r, 60);
    for (int j = 0; j < kv_len(&r.kv, 0, 0); j++) {
        int p = kv_positions(&r.kv, 0, 0)[j];
        float want = prob_of(0, 0, 60, p) + prob_of(0, 1, 60, p);
        assert_true(fabsf(kv_scores(&r.kv, 0, 0)[j] - want) < 1e-7f);
    }
    rig_close(&r);
}

/* Small T: a round alone would not fit under T, the extra interval passes keep |S| ≤ cap. */
static void test_buzz_tiny_threshold_still_respects_capacity(void **state)
{
    (void)state;
    rig r;
    char err[256];
    const char *const tiny[] = {"buzz-k", "1", "buzz-w", "2", "buzz-T", "1", "buzz-s", "3", NULL};
    assert_int_equal(rig_open(&r, &policy_buzz, 4, 20, 60, 1, 1, 1, tiny, err, sizeof err), 0);
    assert_int_equal(r.kv.cap[0], 4);
    rig_prefill(&r, 0, 20);
    rig_check(&r, 1, 2, 19, 1);
    for (int t = 20; t < 80; t++) {
        rig_decode(&r, t);
        rig_check(&r, 1, 2, t, 1);
    }
    rig_close(&r);
}

/* configs/buzz_paper.json: k=4, w=160, T=400, s=5 (the authors' run); capacity 564. */
static void test_buzz_paper_preset_loads_k4_w160_T400_s5(void **state)
{
    (void)state;
    const policy_ops *ops = NULL;
    policy_params p = {.budget = 1.0};
    char err[256];
    assert_int_equal(policy_preset_load("configs/buzz_paper.json", &ops, &p, err, sizeof err), 0);
    assert_ptr_equal(ops, &policy_buzz);
    kv_cache kv;
    assert_int_equal(kv_init(&kv, ops, &p, 1, 1, 1, D, 1000, 100, err, sizeof err), 0);
    assert_int_equal(kv.cap[0], 564);
    kv_free(&kv);
    /* a short run needs less than k + w + T */
    assert_int_equal(kv_init(&kv, ops, &p, 1, 1, 1, D, 100, 50, err, sizeof err), 0);
    assert_int_equal(kv.cap[0], 150);
    kv_free(&kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buzz_golden_theorem_table_s3_to_s9),
        cmocka_unit_test(test_buzz_golden_one_round_keeps_2_4_6_8_10_13),
        cmocka_unit_test(test_buzz_golden_ties_first_maximum_keeps_0_4_6_9),
        cmocka_unit_test(test_buzz_golden_trace_n60_22_to_47_rounds_at_85_111_137),
        cmocka_unit_test(test_buzz_golden_long_prompt_n300_keeps_32),
        cmocka_unit_test(test_buzz_golden_exact_steady_state_32_37_38_38),
        cmocka_unit_test(test_buzz_golden_peak_mapping_c64_to_c1024),
        cmocka_unit_test(test_buzz_logn_golden_log512_values),
        cmocka_unit_test(test_buzz_identity_when_budget_covers_everything),
        cmocka_unit_test(test_buzz_rejects_bad_parameters_with_one_line_naming_the_flag),
        cmocka_unit_test(test_buzz_generic_aliases_and_overrides_set_the_structure),
        cmocka_unit_test(test_buzz_degenerate_capacity_behaves_as_streaming),
        cmocka_unit_test(test_buzz_prefill_in_chunks_of_one_matches_decode),
        cmocka_unit_test(test_buzz_prefill_in_chunks_of_seven_keeps_invariants),
        cmocka_unit_test(test_buzz_avg_mode_peak_exceeds_budget_average_near_it),
        cmocka_unit_test(test_buzz_ablations_interval_swap_and_current_score),
        cmocka_unit_test(test_buzz_tiny_threshold_still_respects_capacity),
        cmocka_unit_test(test_buzz_paper_preset_loads_k4_w160_T400_s5),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
