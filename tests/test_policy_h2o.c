/* Tests for eviction/policy_h2o.c: the golden vectors of POLICIES.md §15.2 (H2O), and the
 * property tests of §15.1 (capacity, protected sets, cadence, state follows its slot, identity)
 * on small hand-built KV caches driven through kv_prefill / kv_decode_slot / kv_write /
 * kv_post_attn with hand-made statistics. */
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

extern const policy_ops policy_h2o;

/* The pure selection functions of policy_h2o.c (documented there). */
int h2o_prefill_select(const float *score, const int32_t *pos, int n, int n_sink, int n_recent,
                       int cap, int *keep, int *heap, unsigned char *sel);
int h2o_select_victim(const float *score, const int32_t *pos, int n, int n_sink, int recent_from,
                      int mean_upto);

#define D 4           /* head_dim of every test cache */
#define MAXP 256      /* positions tracked by the tests */
#define STRIDE TS_STRIDE /* probs / colsum row stride (≥ cap + 1 and ≥ candidates) */

/* ------------------------------------------------------------------------ helpers */

/* The key / value a token at position p has in KV head g (distinct per position and head). */
static float key_of(int p, int g, int i) { return (float)(p * 100 + g * 10 + i); }
static float val_of(int p, int g, int i) { return -(float)(p * 100 + g * 10 + i) - 0.5f; }

/* kv_init with the h2o ops, budget and NAME=VALUE parameters (NULL-terminated pairs). */
static void init_cache(kv_cache *kv, double budget, int n_layers, int n_kv_heads, int n_heads,
                       int n_prompt, int max_new, const char *const *set)
{
    ts_kv(kv, &policy_h2o, budget, 0, set, n_layers, n_kv_heads, n_heads, D, n_prompt, max_new);
}

/* The tests' tokens: keys and values by key_of / val_of, zero queries. */
static const ts_tokens TOK = {key_of, val_of, NULL};

/* Prefill of the prompt pos0..pos0+n-1 in every layer with the given column sums (same for all
 * layers, [hkv][STRIDE], or NULL). */
static void prefill(kv_cache *kv, int pos0, int n, const float *colsum)
{
    ts_prefill_tokens(kv, &TOK, pos0, n, colsum);
}

/* One decode step at position t in every layer, as the engine does it (ts_decode_tokens). */
static void decode_step(kv_cache *kv, int t, ts_prob_fn f, void *ctx)
{
    ts_decode_tokens(kv, &TOK, t, f, ctx, 0);
}

/* ------------------------------------------------------------------------ golden vectors §15.2 */

/* The H2O example: N = 5, C = 4 → hh = 2, R = 2. Causal prompt attention rows. */
static const float golden_rows[5][5] = {
    {1.0f}, {0.6f, 0.4f}, {0.5f, 0.1f, 0.4f}, {0.4f, 0.1f, 0.2f, 0.3f}, {0.3f, 0.1f, 0.3f, 0.1f, 0.2f},
};

/* colsum[j] = Σ_i rows[i][j] → {2.8, 0.7, 0.9, 0.4, 0.2} */
static void golden_colsum(float *colsum)
{
    memset(colsum, 0, STRIDE * sizeof *colsum);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j <= i; j++) colsum[j] += golden_rows[i][j];
}

static void test_h2o_golden_colsum_is_2_8_0_7_0_9_0_4_0_2(void **state)
{
    (void)state;
    float cs[STRIDE];
    golden_colsum(cs);
    const float want[5] = {2.8f, 0.7f, 0.9f, 0.4f, 0.2f};
    for (int j = 0; j < 5; j++) assert_float_equal(cs[j], want[j], 1e-6);
}

static void test_h2o_golden_prefill_keeps_0_2_3_4(void **state)
{
    (void)state;
    float cs[STRIDE];
    golden_colsum(cs);
    /* the pure selection: sinks 0, R = 2, C = 4 */
    int32_t pos[5] = {0, 1, 2, 3, 4};
    int keep[5], heap[5];
    unsigned char sel[5];
    assert_int_equal(h2o_prefill_select(cs, pos, 5, 0, 2, 4, keep, heap, sel), 4);
    const int want[4] = {0, 2, 3, 4};
    for (int i = 0; i < 4; i++) assert_int_equal(keep[i], want[i]);

    /* through the hooks: budget 4 tokens, default R = C − C/2 = 2; the kept slots' scores are
     * their column sums, and slots are in position order */
    kv_cache kv;
    init_cache(&kv, 4, 1, 1, 1, 5, 2, NULL);
    assert_int_equal(kv.cap[0], 4);
    prefill(&kv, 0, 5, cs);
    assert_int_equal(kv_len(&kv, 0, 0), 4);
    const float want_score[4] = {2.8f, 0.9f, 0.4f, 0.2f};
    for (int j = 0; j < 4; j++) {
        assert_int_equal(kv_positions(&kv, 0, 0)[j], want[j]);
        assert_float_equal(kv_scores(&kv, 0, 0)[j], want_score[j], 1e-6);
    }
    assert_int_equal(kv.evictions, 1);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

/* Decode probabilities of the golden example, by position. */
static float golden_prob(int layer, int h, int p, int t, void *ctx)
{
    (void)layer;
    (void)h;
    (void)ctx;
    static const float p5[7] = {0.5f, 0, 0.05f, 0.1f, 0.15f, 0.2f, 0};   /* t = 5 over 0,2,3,4,5 */
    static const float p6[7] = {0.4f, 0, 0.3f, 0, 0.1f, 0.1f, 0.1f};     /* t = 6 over 0,2,4,5,6 */
    return t == 5 ? p5[p] : p6[p];
}

static void test_h2o_golden_decode_evicts_3_then_4(void **state)
{
    (void)state;
    float cs[STRIDE];
    golden_colsum(cs);
    kv_cache kv;
    init_cache(&kv, 4, 1, 1, 1, 5, 2, NULL);
    prefill(&kv, 0, 5, cs);

    /* t = 5: scores {0:3.3, 2:0.95, 3:0.5, 4:0.35, 5:0.2}, recent {4, 5} → evict 3 */
    decode_step(&kv, 5, golden_prob, NULL);
    const int keep5[4] = {0, 2, 4, 5};
    ts_assert_live(&kv, 0, 0, keep5, 4);
    const float s5[6] = {3.3f, 0, 0.95f, 0, 0.35f, 0.2f};
    for (int i = 0; i < 4; i++)
        assert_float_equal(kv_scores(&kv, 0, 0)[ts_slot_of(&kv, 0, 0, keep5[i])], s5[keep5[i]], 1e-6);

    /* t = 6: evict 4 → keep [0, 2, 5, 6], scores {0:3.7, 2:1.25, 5:0.3, 6:0.1} */
    decode_step(&kv, 6, golden_prob, NULL);
    const int keep6[4] = {0, 2, 5, 6};
    ts_assert_live(&kv, 0, 0, keep6, 4);
    const float s6[7] = {3.7f, 0, 1.25f, 0, 0, 0.3f, 0.1f};
    for (int i = 0; i < 4; i++)
        assert_float_equal(kv_scores(&kv, 0, 0)[ts_slot_of(&kv, 0, 0, keep6[i])], s6[keep6[i]], 1e-6);
    assert_int_equal(kv.evictions, 3);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

static void test_h2o_golden_victims_from_pure_selection(void **state)
{
    (void)state;
    /* t = 5 (slots in any order): protected pos ≥ t − R + 1 = 4 */
    const float s5[5] = {0.35f, 3.3f, 0.2f, 0.95f, 0.5f};
    const int32_t p5[5] = {4, 0, 5, 2, 3};
    assert_int_equal(h2o_select_victim(s5, p5, 5, 0, 4, -1), 4); /* slot of position 3 */
    /* t = 6 */
    const float s6[5] = {3.7f, 1.25f, 0.45f, 0.3f, 0.1f};
    const int32_t p6[5] = {0, 2, 4, 5, 6};
    assert_int_equal(h2o_select_victim(s6, p6, 5, 0, 5, -1), 2); /* slot of position 4 */
}

/* ------------------------------------------------------------------------ selection details */

static void test_h2o_victim_ties_go_to_the_older_token(void **state)
{
    (void)state;
    const float s[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    const int32_t p[4] = {7, 3, 9, 5};
    assert_int_equal(h2o_select_victim(s, p, 4, 0, 100, -1), 1);
    /* prefill: equal scores keep the older candidates */
    const float cs[6] = {1, 1, 1, 1, 0, 0};
    const int32_t pos[6] = {0, 1, 2, 3, 4, 5};
    int keep[6], heap[6];
    unsigned char sel[6];
    assert_int_equal(h2o_prefill_select(cs, pos, 6, 0, 1, 3, keep, heap, sel), 3);
    assert_int_equal(keep[0], 0);
    assert_int_equal(keep[1], 1);
    assert_int_equal(keep[2], 5);
}

static void test_h2o_victim_skips_sinks_and_recent_and_returns_minus_one_when_all_protected(void **state)
{
    (void)state;
    const float s[5] = {0.0f, 0.1f, 0.9f, 0.0f, 0.0f};
    const int32_t p[5] = {0, 1, 2, 3, 4};
    /* sink 2 protects 0, 1; recent_from 3 protects 3, 4 → only 2 is a candidate */
    assert_int_equal(h2o_select_victim(s, p, 5, 2, 3, -1), 2);
    assert_int_equal(h2o_select_victim(s, p, 5, 3, 3, -1), -1);
}

static void test_h2o_mean_score_ranks_by_average_over_queries(void **state)
{
    (void)state;
    /* position 0 summed 1.0 over queries 0..9 (mean 0.1); position 5 summed 0.6 over 5..9
     * (mean 0.12): sum evicts 5, mean evicts 0 */
    const float s[3] = {1.0f, 0.6f, 5.0f};
    const int32_t p[3] = {0, 5, 9};
    assert_int_equal(h2o_select_victim(s, p, 3, 0, 9, -1), 1);
    assert_int_equal(h2o_select_victim(s, p, 3, 0, 9, 9), 0);
}

/* ------------------------------------------------------------------------ hook properties §15.1 */

/* Runs prefill + decode with random probabilities on a GQA cache and checks after every step:
 * capacity, one eviction per step once full, the protected sets, stored score = recomputed
 * score, K/V follow positions. */
static void run_random_trace(const char *const *set, int n_sink_want, int evict_first)
{
    enum { L = 2, HKV = 2, H = 4, N = 12, NEW = 30 };
    kv_cache kv;
    init_cache(&kv, 8, L, HKV, H, N, NEW, set);
    int cap = kv.cap[0], G = H / HKV;
    static double ref[L * HKV][MAXP];
    memset(ref, 0, sizeof ref);

    /* prefill with random column sums; the reference starts from them */
    float cs[HKV * STRIDE];
    for (int g = 0; g < HKV; g++)
        for (int j = 0; j < STRIDE; j++) cs[g * STRIDE + j] = ts_hash01(99, g, j, 0) * 3.0f;
    prefill(&kv, 0, N, cs);
    for (int l = 0; l < L; l++)
        for (int g = 0; g < HKV; g++) {
            assert_int_equal(kv_len(&kv, l, g), cap);
            for (int p = 0; p < N; p++) ref[l * HKV + g][p] = cs[g * STRIDE + p];
            /* prefill keep-list materialised in position order */
            const int32_t *pos = kv_positions(&kv, l, g);
            for (int j = 1; j < cap; j++) assert_true(pos[j - 1] < pos[j]);
        }

    int R = 0;
    for (int i = 0; set && set[i]; i += 2)
        if (!strcmp(set[i], "h2o-recent") || !strcmp(set[i], "window")) R = atoi(set[i + 1]);
    if (!R) R = cap - cap / 2;
    for (int t = N; t < N + NEW; t++) {
        int64_t ev0 = kv.evictions;
        decode_step(&kv, t, ts_prob_random, NULL);
        /* one eviction per (layer, head) per step: the cache was full since prefill */
        assert_int_equal(kv.evictions - ev0, L * HKV);
        for (int l = 0; l < L; l++)
            for (int g = 0; g < HKV; g++) {
                int n = kv_len(&kv, l, g);
                assert_int_equal(n, cap);
                const int32_t *pos = kv_positions(&kv, l, g);
                const float *score = kv_scores(&kv, l, g);
                /* the survivors' reference score gains this step's group probabilities */
                for (int j = 0; j < n; j++) {
                    double sum = 0;
                    for (int h = g * G; h < (g + 1) * G; h++) sum += ts_prob_random(l, h, pos[j], t, NULL);
                    ref[l * HKV + g][pos[j]] += sum;
                }
                for (int j = 0; j < n; j++) {
                    double want = ref[l * HKV + g][pos[j]];
                    assert_true(fabs(score[j] - want) <= 1e-5 * (1 + fabs(want)));
                }
                /* protected: sinks and the recent window */
                for (int p = 0; p < n_sink_want; p++) assert_true(ts_slot_of(&kv, l, g, p) >= 0);
                int first_recent = evict_first ? t - R : t - R + 1;
                for (int p = first_recent; p <= t; p++) assert_true(ts_slot_of(&kv, l, g, p) >= 0);
            }
        ts_assert_kv_follow(&kv, &TOK);
    }
    kv_free(&kv);
}

static void test_h2o_scores_follow_slots_and_one_eviction_per_step(void **state)
{
    (void)state;
    run_random_trace(NULL, 0, 0);
}

static void test_h2o_sinks_and_recent_window_are_never_evicted(void **state)
{
    (void)state;
    const char *set[] = {"h2o-sink", "2", "h2o-recent", "3", NULL};
    run_random_trace(set, 2, 0);
}

static void test_h2o_evict_first_mean_variant_keeps_capacity_and_protections(void **state)
{
    (void)state;
    const char *set[] = {"sink", "1", "window", "3", "h2o-order", "evict-first", "h2o-score", "mean", NULL};
    run_random_trace(set, 1, 1);
}

/* Evict-first: the victim is chosen from the history before the step's attention and the new
 * token takes its slot with a fresh score (its self-attention only). */
static float prob_evict_first(int layer, int h, int p, int t, void *ctx)
{
    (void)layer;
    (void)h;
    (void)ctx;
    /* at t = 4 position 2 gets a big mass: it must not save it (victim chosen before) */
    if (t == 4) return p == 2 ? 5.0f : 0.25f;
    return 0.0f;
}

static void test_h2o_evict_first_chooses_victim_before_attention(void **state)
{
    (void)state;
    const char *set[] = {"h2o-order", "evict-first", "h2o-recent", "1", NULL};
    kv_cache kv;
    init_cache(&kv, 3, 1, 1, 1, 3, 2, set);
    assert_int_equal(kv.cap[0], 3);
    /* prompt 0, 1, 2 with column sums 0.9, 0.1, 0.5: all kept */
    float cs[STRIDE] = {0.9f, 0.1f, 0.5f};
    prefill(&kv, 0, 3, cs);
    assert_int_equal(kv_len(&kv, 0, 0), 3);
    /* t = 3: protected 2 (R = 1 existing); min of {0: 0.9, 1: 0.1} → 1 is overwritten */
    int slot1 = ts_slot_of(&kv, 0, 0, 1);
    decode_step(&kv, 3, prob_evict_first, NULL);
    const int keep3[3] = {0, 2, 3};
    ts_assert_live(&kv, 0, 0, keep3, 3);
    assert_int_equal(ts_slot_of(&kv, 0, 0, 3), slot1);
    assert_float_equal(kv_scores(&kv, 0, 0)[slot1], 0.0f, 0);
    assert_int_equal(kv.evictions, 1);
    /* t = 4: history {0: 0.9, 2: 0.5, 3: 0.0}, protected 3 → evict 2 despite this step's mass */
    decode_step(&kv, 4, prob_evict_first, NULL);
    const int keep4[3] = {0, 3, 4};
    ts_assert_live(&kv, 0, 0, keep4, 3);
    assert_float_equal(kv_scores(&kv, 0, 0)[ts_slot_of(&kv, 0, 0, 4)], 0.25f, 1e-7);
    assert_int_equal(kv.evictions, 2);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

/* GQA: the score is the sum over the G query heads of the group. */
static float prob_by_head(int layer, int h, int p, int t, void *ctx)
{
    (void)layer;
    (void)ctx;
    (void)t;
    return (float)(h + 1) * 0.01f * (float)(p + 1);
}

static void test_h2o_gqa_score_sums_the_group_heads(void **state)
{
    (void)state;
    kv_cache kv;
    init_cache(&kv, 1.0, 1, 2, 4, 3, 1, NULL);
    prefill(&kv, 0, 3, NULL);
    decode_step(&kv, 3, prob_by_head, NULL);
    for (int g = 0; g < 2; g++)
        for (int j = 0; j < 4; j++) {
            int p = kv_positions(&kv, 0, g)[j];
            float want = (float)(2 * g + 1 + 2 * g + 2) * 0.01f * (float)(p + 1);
            assert_float_equal(kv_scores(&kv, 0, g)[j], want, 1e-6);
        }
    kv_free(&kv);
}

/* Identity: C ≥ N + max_new → no eviction, slots in position order, K/V untouched. */
static void test_h2o_identity_when_budget_covers_everything(void **state)
{
    (void)state;
    float cs[2 * STRIDE];
    for (int j = 0; j < 2 * STRIDE; j++) cs[j] = ts_hash01(1, 2, 3, j);
    ts_check_identity(&policy_h2o, NULL, &TOK, cs);
}

/* Chunked prefill: live slots + the chunk are the candidates; live scores keep accumulating. */
static void test_h2o_chunked_prefill_ranks_live_slots_with_their_scores(void **state)
{
    (void)state;
    const char *set[] = {"h2o-recent", "2", NULL};
    kv_cache kv;
    init_cache(&kv, 4, 1, 1, 1, 8, 0, set);
    /* chunk 1: positions 0..4 with the golden column sums → keep 0, 2, 3, 4 */
    float cs1[STRIDE];
    golden_colsum(cs1);
    prefill(&kv, 0, 5, cs1);
    const int keep1[4] = {0, 2, 3, 4};
    ts_assert_live(&kv, 0, 0, keep1, 4);
    /* chunk 2: positions 5..7; candidates 0,2,3,4 (live) then 5,6,7.
     * scores: 0: 2.8+0.1, 2: 0.9+0.05, 3: 0.4+0.9, 4: 0.2+0.0, 5: 0.3, 6: .., 7: ..
     * recent = {6, 7}; heavy top-2 of {0, 2, 3, 4, 5} → 0 (2.9), 3 (1.3) */
    float cs2[STRIDE] = {0.1f, 0.05f, 0.9f, 0.0f, 0.3f, 0.2f, 0.1f};
    prefill(&kv, 5, 3, cs2);
    const int keep2[4] = {0, 3, 6, 7};
    ts_assert_live(&kv, 0, 0, keep2, 4);
    const float want[4] = {2.9f, 1.3f, 0.2f, 0.1f};
    for (int j = 0; j < 4; j++) assert_float_equal(kv_scores(&kv, 0, 0)[j], want[j], 1e-6);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

/* ------------------------------------------------------------------------ parameters */

static void test_h2o_default_recent_is_c_minus_half_c(void **state)
{
    (void)state;
    /* C = 5 → R = 3, hh = 2: prompt of 8 with decreasing column sums keeps 0, 1, 5, 6, 7 */
    kv_cache kv;
    init_cache(&kv, 5, 1, 1, 1, 8, 0, NULL);
    float cs[STRIDE] = {8, 7, 6, 5, 4, 3, 2, 1};
    prefill(&kv, 0, 8, cs);
    const int want[5] = {0, 1, 5, 6, 7};
    ts_assert_live(&kv, 0, 0, want, 5);
    kv_free(&kv);
}

static void test_h2o_cold_compress_preset_raises_capacity_to_c_min(void **state)
{
    (void)state;
    /* sink 4 + recent 10 + one evictable (evict-first) → C_min 15 > ceil(0.1 · 50) */
    const char *set[] = {"h2o-score", "mean", "h2o-sink", "4", "h2o-recent", "10", "h2o-order",
                         "evict-first", NULL};
    kv_cache kv;
    init_cache(&kv, 0.1, 1, 1, 1, 40, 10, set);
    assert_int_equal(kv.cap[0], 15);
    kv_free(&kv);
}

static void test_h2o_bad_parameters_are_one_line_errors_naming_the_flag(void **state)
{
    (void)state;
    /* recent 0 would let attend-first evict the new token */
    ts_expect_init_error(&policy_h2o, 8, (const char *const[]){"h2o-recent", "0", NULL}, 10, 10, "--h2o-recent");
    /* unknown enum value */
    ts_expect_init_error(&policy_h2o, 8, (const char *const[]){"h2o-score", "max", NULL}, 10, 10, "--h2o-score");
    /* negative sink */
    ts_expect_init_error(&policy_h2o, 8, (const char *const[]){"h2o-sink", "-1", NULL}, 10, 10, "--h2o-sink");
    /* a parameter h2o does not have */
    policy_params p;
    char err[256];
    assert_int_equal(ts_params(&p, &policy_h2o, 8, 0, (const char *const[]){"buzz-s", "5", NULL}, err, sizeof err), -1);
}

/* Passthrough (issue 17): a budget covering prompt + max new leaves nothing to evict, so the
 * cache runs no hook and keeps no score; one token less and h2o's statistics are back. */
static void test_h2o_passthrough_only_when_nothing_can_be_evicted(void **state)
{
    (void)state;
    char err[256];
    for (int b = 0; b < 2; b++) {
        policy_params pp;
        memset(&pp, 0, sizeof pp);
        pp.budget = b == 0 ? 30 : 29;   /* absolute tokens; prompt 20 + 10 new = 30 */
        kv_cache kv;
        assert_int_equal(kv_init(&kv, &policy_h2o, &pp, 2, 2, 4, 4, 20, 10, err, sizeof err), 0);
        assert_int_equal(kv.passthrough, b == 0);
        if (b == 0) assert_null(kv.score);
        else assert_non_null(kv.score);
        kv_free(&kv);
    }
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = 30;
    pp.hooks_always = 1;
    kv_cache kv;
    assert_int_equal(kv_init(&kv, &policy_h2o, &pp, 2, 2, 4, 4, 20, 10, err, sizeof err), 0);
    assert_int_equal(kv.passthrough, 0);
    assert_non_null(kv.score);
    kv_free(&kv);
}

static void test_h2o_param_table_lists_the_section_16_flags(void **state)
{
    (void)state;
    const char *names[] = {"h2o-recent", "h2o-score", "h2o-sink", "h2o-order"};
    for (int i = 0; i < 4; i++) {
        int found = 0;
        for (const policy_param_def *d = policy_h2o.param_defs; d->name; d++)
            if (!strcmp(d->name, names[i])) found = 1;
        assert_true(found);
    }
    assert_ptr_equal(policy_find("h2o"), &policy_h2o);
    assert_int_equal(policy_h2o.stats, KV_STAT_DECODE_PROBS | KV_STAT_PREFILL_COLSUM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2o_golden_colsum_is_2_8_0_7_0_9_0_4_0_2),
        cmocka_unit_test(test_h2o_golden_prefill_keeps_0_2_3_4),
        cmocka_unit_test(test_h2o_golden_decode_evicts_3_then_4),
        cmocka_unit_test(test_h2o_golden_victims_from_pure_selection),
        cmocka_unit_test(test_h2o_victim_ties_go_to_the_older_token),
        cmocka_unit_test(test_h2o_victim_skips_sinks_and_recent_and_returns_minus_one_when_all_protected),
        cmocka_unit_test(test_h2o_mean_score_ranks_by_average_over_queries),
        cmocka_unit_test(test_h2o_scores_follow_slots_and_one_eviction_per_step),
        cmocka_unit_test(test_h2o_sinks_and_recent_window_are_never_evicted),
        cmocka_unit_test(test_h2o_evict_first_mean_variant_keeps_capacity_and_protections),
        cmocka_unit_test(test_h2o_evict_first_chooses_victim_before_attention),
        cmocka_unit_test(test_h2o_gqa_score_sums_the_group_heads),
        cmocka_unit_test(test_h2o_identity_when_budget_covers_everything),
        cmocka_unit_test(test_h2o_chunked_prefill_ranks_live_slots_with_their_scores),
        cmocka_unit_test(test_h2o_default_recent_is_c_minus_half_c),
        cmocka_unit_test(test_h2o_cold_compress_preset_raises_capacity_to_c_min),
        cmocka_unit_test(test_h2o_bad_parameters_are_one_line_errors_naming_the_flag),
        cmocka_unit_test(test_h2o_passthrough_only_when_nothing_can_be_evicted),
        cmocka_unit_test(test_h2o_param_table_lists_the_section_16_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
