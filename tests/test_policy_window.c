/* Tests for the window-like policies: eviction/policy_local.c, policy_streaming.c and the
 * layer-wise policy_tova.c (POLICIES.md §2.2, §2.3, §10.3). Property tests of §15.1 (capacity,
 * protected sets, cadence, state follows its slot, identity) on small hand-built KV caches
 * driven through kv_prefill / kv_decode_slot / kv_write / kv_post_attn / post_attn_layer with
 * hand-made statistics, plus the pure selection functions.
 *
 * Kept whole (a little over 500 lines): the three policies share the token formulas, the
 * trace runner and the layer-wise checks at the top.
 * Kept whole (over ~500 lines): local, streaming and tova share the hand-built cache driver and its shadow
 * statistics; the file is long because the §15.1 properties are checked for each of them.
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

extern const policy_ops policy_local, policy_streaming, policy_tova;

/* The pure selection functions (documented in the policy files). */
int local_prefill_select(int n, int cap, int *keep);
int streaming_prefill_select(int n, int n_sinks, int cap, int *keep);
int tova_prefill_select(const float *score, const int32_t *pos, int n, int cap, int *keep,
                        int *heap, unsigned char *sel);
int tova_select_victim(const float *score, const int32_t *pos, int n);

#define D 4       /* head_dim of every test cache */
#define MAXP 256  /* positions tracked by the tests */
#define STRIDE TS_STRIDE /* probs / colsum row stride (≥ cap + 1 and ≥ candidates) */

/* ------------------------------------------------------------------------ helpers */

/* The key / value a token at position p has in KV head g: small distinct numbers (the tova
 * prefill computes a softmax over them). */
static float key_of(int p, int g, int i)
{
    return (float)(((p * 7 + g * 13 + i * 5) % 17) - 8) * 0.125f + (float)p * 1e-3f;
}
static float val_of(int p, int g, int i) { return (float)(p * 100 + g * 10 + i); }

/* kv_init with ops, budget and NAME=VALUE parameters (NULL-terminated pairs). */
static void init_cache(kv_cache *kv, const policy_ops *ops, double budget, int n_layers,
                       int n_kv_heads, int n_heads, int n_prompt, int max_new, const char *const *set)
{
    ts_kv(kv, ops, budget, 0, set, n_layers, n_kv_heads, n_heads, D, n_prompt, max_new);
}

/* Query of head h for the token at position p (tova's prefill reads the chunk's last row). */
static float query_of(int p, int h, int i) { return (float)(((p * 3 + h * 11 + i * 7) % 13) - 6) * 0.5f; }

/* The tests' tokens: keys, values and queries by key_of, val_of, query_of. */
static const ts_tokens TOK = {key_of, val_of, query_of};

/* Prefill of positions pos0..pos0+n-1 in every layer (no column sums: none of these policies
 * asks for them). */
static void prefill(kv_cache *kv, int pos0, int n)
{
    ts_prefill_tokens(kv, &TOK, pos0, n, NULL);
}

/* One decode step at position t in every layer, as the engine does it, with the layer hook. */
static void decode_step(kv_cache *kv, int t, ts_prob_fn f, void *ctx)
{
    ts_decode_tokens(kv, &TOK, t, f, ctx, 0);
}

/* Live positions of every (layer, head) = {0..n_sink-1} ∪ {last-w+1..last}. */
static void assert_sinks_and_window(const kv_cache *kv, int n_sink, int w, int last)
{
    int want[MAXP], n = 0;
    for (int p = 0; p < n_sink && p <= last; p++) want[n++] = p;
    for (int p = last - w + 1; p <= last; p++)
        if (p >= n_sink) want[n++] = p;
    for (int l = 0; l < kv->n_layers; l++)
        for (int g = 0; g < kv->n_kv_heads; g++) ts_assert_live(kv, l, g, want, n);
}

/* Slots of (layer, 0..n_kv_heads-1) hold the same positions in the same order (layer-wise). */
static void assert_heads_share_slots(const kv_cache *kv)
{
    for (int l = 0; l < kv->n_layers; l++)
        for (int g = 1; g < kv->n_kv_heads; g++) {
            assert_int_equal(kv_len(kv, l, g), kv_len(kv, l, 0));
            for (int j = 0; j < kv_len(kv, l, 0); j++)
                assert_int_equal(kv_positions(kv, l, g)[j], kv_positions(kv, l, 0)[j]);
        }
}

/* Prefill + decode with the positions checked after every step: capacity, one eviction per
 * (layer, head) per step once full, kept = sinks ∪ window, K/V follow. */
static void run_window_trace(const policy_ops *ops, double budget, const char *const *set, int n_prompt,
                             int n_new, int n_sink, int chunk)
{
    enum { L = 2, HKV = 2, H = 4 };
    kv_cache kv;
    init_cache(&kv, ops, budget, L, HKV, H, n_prompt, n_new, set);
    int cap = kv.cap[0], w = cap - n_sink;
    /* prefill, in chunks of `chunk` tokens */
    for (int p0 = 0; p0 < n_prompt; p0 += chunk) prefill(&kv, p0, p0 + chunk < n_prompt ? chunk : n_prompt - p0);
    assert_sinks_and_window(&kv, n_sink, w, n_prompt - 1);
    ts_assert_kv_follow(&kv, &TOK);
    for (int t = n_prompt; t < n_prompt + n_new; t++) {
        int64_t ev0 = kv.evictions;
        decode_step(&kv, t, ts_prob_random, NULL);
        /* cadence: one eviction per (layer, head) once more than C tokens were seen */
        assert_int_equal(kv.evictions - ev0, t + 1 > cap ? L * HKV : 0);
        for (int l = 0; l < L; l++)
            for (int g = 0; g < HKV; g++) assert_true(kv_len(&kv, l, g) <= cap);
        assert_sinks_and_window(&kv, n_sink, w, t);
        ts_assert_kv_follow(&kv, &TOK);
    }
    kv_free(&kv);
}

/* ------------------------------------------------------------------------ local §2.2 */

static void test_local_prefill_select_keeps_the_last_c(void **state)
{
    (void)state;
    int keep[10];
    assert_int_equal(local_prefill_select(9, 5, keep), 5);
    for (int i = 0; i < 5; i++) assert_int_equal(keep[i], 4 + i);
    assert_int_equal(local_prefill_select(3, 5, keep), 3);
    for (int i = 0; i < 3; i++) assert_int_equal(keep[i], i);
}

static void test_local_prefill_keeps_positions_n_minus_c_to_n(void **state)
{
    (void)state;
    kv_cache kv;
    init_cache(&kv, &policy_local, 5, 1, 1, 1, 9, 3, NULL);
    prefill(&kv, 0, 9);
    const int want[5] = {4, 5, 6, 7, 8};
    ts_assert_live(&kv, 0, 0, want, 5);
    for (int j = 0; j < 5; j++) assert_int_equal(kv_positions(&kv, 0, 0)[j], 4 + j);
    assert_int_equal(kv.evictions, 4);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

static void test_local_keeps_the_c_most_recent_one_eviction_per_step(void **state)
{
    (void)state;
    run_window_trace(&policy_local, 5, NULL, 9, 20, 0, 9);
}

static void test_local_short_prompt_fills_then_slides(void **state)
{
    (void)state;
    run_window_trace(&policy_local, 6, NULL, 2, 25, 0, 2);
}

static void test_local_chunked_prefill_keeps_the_last_c(void **state)
{
    (void)state;
    run_window_trace(&policy_local, 5, NULL, 13, 12, 0, 4);
}

static void test_local_identity_when_budget_covers_everything(void **state)
{
    (void)state;
    ts_check_identity(&policy_local, NULL, &TOK, NULL);
}

static void test_local_has_no_parameters_and_needs_no_statistics(void **state)
{
    (void)state;
    policy_params p;
    memset(&p, 0, sizeof p);
    char err[256];
    assert_int_equal(policy_params_set(&p, &policy_local, "sink", "4", err, sizeof err), -1);
    assert_int_equal(policy_local.stats, 0);
    assert_ptr_equal(policy_find("local"), &policy_local);
}

/* ------------------------------------------------------------------------ streaming §2.3 */

static void test_streaming_prefill_select_keeps_sinks_and_recent(void **state)
{
    (void)state;
    int keep[20];
    assert_int_equal(streaming_prefill_select(20, 4, 10, keep), 10);
    const int want[10] = {0, 1, 2, 3, 14, 15, 16, 17, 18, 19};
    for (int i = 0; i < 10; i++) assert_int_equal(keep[i], want[i]);
    assert_int_equal(streaming_prefill_select(7, 4, 10, keep), 7);
    for (int i = 0; i < 7; i++) assert_int_equal(keep[i], i);
}

static void test_streaming_keeps_four_sinks_and_the_recent_window(void **state)
{
    (void)state;
    run_window_trace(&policy_streaming, 10, NULL, 20, 20, 4, 20);
}

static void test_streaming_prompt_shorter_than_the_sinks(void **state)
{
    (void)state;
    run_window_trace(&policy_streaming, 10, NULL, 2, 25, 4, 2);
}

static void test_streaming_chunked_prefill_keeps_sinks_and_window(void **state)
{
    (void)state;
    /* C = 8 ≤ 8 → floor(8/2) = 4 sinks; chunks of 3 (the first chunk holds fewer than 4) */
    run_window_trace(&policy_streaming, 8, NULL, 14, 10, 4, 3);
}

static void test_streaming_small_capacity_uses_half_as_sinks(void **state)
{
    (void)state;
    /* C = 6 → 3 sinks + a window of 3 */
    run_window_trace(&policy_streaming, 6, NULL, 10, 10, 3, 10);
}

static void test_streaming_sink_flag_and_generic_alias(void **state)
{
    (void)state;
    const char *set[] = {"sink", "2", NULL};
    run_window_trace(&policy_streaming, 10, set, 15, 10, 2, 15);
    const char *none[] = {"sink", "0", NULL};
    run_window_trace(&policy_streaming, 7, none, 15, 10, 0, 15);
}

static void test_streaming_sink_at_capacity_raises_it_and_bad_sink_is_an_error(void **state)
{
    (void)state;
    policy_params p;
    memset(&p, 0, sizeof p);
    p.budget = 6;
    char err[256];
    kv_cache kv;
    /* 6 sinks in a budget of 6 leave no window: the capacity is raised to 7 (POLICIES.md §1.2) */
    assert_int_equal(policy_params_set(&p, &policy_streaming, "sink", "6", err, sizeof err), 0);
    assert_int_equal(kv_init(&kv, &policy_streaming, &p, 1, 1, 1, D, 20, 5, err, sizeof err), 0);
    assert_int_equal(kv.cap[0], 7);
    kv_free(&kv);
    ts_expect_init_error(&policy_streaming, 6, (const char *const[]){"sink", "x", NULL}, 20, 5, "--sink");
}

static void test_streaming_identity_when_budget_covers_everything(void **state)
{
    (void)state;
    ts_check_identity(&policy_streaming, NULL, &TOK, NULL);
}

/* ------------------------------------------------------------------------ tova §10.3 */

static void test_tova_pure_selection_ties_favour_the_older_token(void **state)
{
    (void)state;
    const float s[5] = {0.2f, 0.1f, 0.1f, 0.3f, 0.1f};
    const int32_t p[5] = {4, 9, 2, 0, 7};
    assert_int_equal(tova_select_victim(s, p, 5), 2);
    /* top-3 of candidates by score: 3 (0.3), 0 (0.2), then the oldest of the 0.1 tie: slot 2 */
    const float c[6] = {0.2f, 0.1f, 0.1f, 0.3f, 0.1f, 0.05f};
    const int32_t cp[6] = {0, 1, 2, 3, 4, 5};
    int keep[6], heap[6];
    unsigned char sel[6];
    assert_int_equal(tova_prefill_select(c, cp, 6, 3, keep, heap, sel), 3);
    assert_int_equal(keep[0], 0);
    assert_int_equal(keep[1], 1);
    assert_int_equal(keep[2], 3);
}

/* Reference: the head-averaged attention of query row `qpos` over candidate keys (double). */
static void reference_last_row(const kv_cache *kv, int n, const float *cand_k /* [n][hkv][D] */,
                               int qpos, double *avg)
{
    int H = kv->n_heads, hkv = kv->n_kv_heads, G = H / hkv;
    for (int j = 0; j < n; j++) avg[j] = 0;
    for (int h = 0; h < H; h++) {
        double lg[MAXP], mx = -1e300, sum = 0;
        for (int j = 0; j < n; j++) {
            double dot = 0;
            for (int i = 0; i < D; i++) dot += (double)query_of(qpos, h, i) * cand_k[((size_t)j * hkv + h / G) * D + i];
            lg[j] = dot / sqrt((double)D);
            if (lg[j] > mx) mx = lg[j];
        }
        for (int j = 0; j < n; j++) sum += exp(lg[j] - mx);
        for (int j = 0; j < n; j++) avg[j] += exp(lg[j] - mx) / sum / H;
    }
}

/* Expected keep (positions, ascending) of the top-cap candidates by avg (ties: older). */
static int reference_top(const double *avg, const int *pos, int n, int cap, int *want)
{
    int idx[MAXP], m = 0;
    for (int j = 0; j < n; j++) idx[j] = j;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && (avg[idx[b]] > avg[idx[b - 1]] ||
                                  (avg[idx[b]] == avg[idx[b - 1]] && pos[idx[b]] < pos[idx[b - 1]])); b--) {
            int tmp = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = tmp;
        }
    for (int i = 0; i < cap && i < n; i++) want[m++] = pos[idx[i]];
    ts_sort_ints(want, m);
    return m;
}

static void test_tova_prefill_keeps_top_c_by_head_averaged_last_row_attention(void **state)
{
    (void)state;
    enum { N = 16, HKV = 2, H = 4 };
    kv_cache kv;
    init_cache(&kv, &policy_tova, 6, 1, HKV, H, N, 4, NULL);
    /* the reference: candidates are the prompt's keys, the query is the last row's */
    float cand_k[N * HKV * D];
    int pos[N];
    for (int j = 0; j < N; j++) {
        pos[j] = j;
        for (int g = 0; g < HKV; g++)
            for (int i = 0; i < D; i++) cand_k[(j * HKV + g) * D + i] = key_of(j, g, i);
    }
    double avg[N];
    reference_last_row(&kv, N, cand_k, N - 1, avg);
    int want[N];
    int m = reference_top(avg, pos, N, 6, want);
    /* the choice is not simply the most recent tokens (else the test shows little) */
    assert_true(want[0] < N - 6);
    prefill(&kv, 0, N);
    for (int g = 0; g < HKV; g++) ts_assert_live(&kv, 0, g, want, m);
    assert_heads_share_slots(&kv);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

static void test_tova_chunked_prefill_scores_live_slots_with_their_cached_keys(void **state)
{
    (void)state;
    enum { N1 = 9, N2 = 7, HKV = 2, H = 4, CAP = 5 };
    kv_cache kv;
    init_cache(&kv, &policy_tova, CAP, 1, HKV, H, N1 + N2, 4, NULL);
    /* chunk 1 (positions 0..8) → the top 5 by its last row */
    prefill(&kv, 0, N1);
    int live[CAP];
    assert_int_equal(ts_live_positions(&kv, 0, 0, live), CAP);
    /* chunk 2: candidates = the live slots (in slot order) + positions 9..15 */
    float cand_k[(CAP + N2) * HKV * D];
    int pos[CAP + N2];
    for (int j = 0; j < CAP + N2; j++) {
        pos[j] = j < CAP ? kv_positions(&kv, 0, 0)[j] : N1 + (j - CAP);
        for (int g = 0; g < HKV; g++)
            for (int i = 0; i < D; i++) cand_k[(j * HKV + g) * D + i] = key_of(pos[j], g, i);
    }
    double avg[CAP + N2];
    reference_last_row(&kv, CAP + N2, cand_k, N1 + N2 - 1, avg);
    int want[CAP + N2];
    int m = reference_top(avg, pos, CAP + N2, CAP, want);
    prefill(&kv, N1, N2);
    for (int g = 0; g < HKV; g++) ts_assert_live(&kv, 0, g, want, m);
    assert_heads_share_slots(&kv);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

/* Decode probabilities: per head the argmin differs, but the head average is lowest at
 * position 1 (heads 0, 1 of KV head 0; heads 2, 3 of KV head 1). */
static float prob_avg_min_at_1(int layer, int h, int p, int t, void *ctx)
{
    (void)layer;
    (void)t;
    (void)ctx;
    static const float tab[4][5] = {
        /* pos:   0     1     2     3     4 */
        {0.30f, 0.05f, 0.30f, 0.01f, 0.34f},
        {0.20f, 0.10f, 0.02f, 0.30f, 0.38f},
        {0.01f, 0.10f, 0.30f, 0.30f, 0.29f},
        {0.30f, 0.10f, 0.30f, 0.29f, 0.01f},
    };
    return tab[h][p];
}

static void test_tova_evicts_the_same_position_in_every_head(void **state)
{
    (void)state;
    kv_cache kv;
    init_cache(&kv, &policy_tova, 4, 1, 2, 4, 4, 3, NULL);
    prefill(&kv, 0, 4);
    decode_step(&kv, 4, prob_avg_min_at_1, NULL);
    const int want[4] = {0, 2, 3, 4};
    for (int g = 0; g < 2; g++) ts_assert_live(&kv, 0, g, want, 4);
    assert_int_equal(kv.evictions, 2);
    assert_heads_share_slots(&kv);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

/* The new token gets the least attention: it is the one evicted. */
static float prob_new_token_least(int layer, int h, int p, int t, void *ctx)
{
    (void)layer;
    (void)h;
    (void)ctx;
    return p == t ? 0.01f : 0.2f + 0.01f * (float)p;
}

static void test_tova_may_evict_the_new_token(void **state)
{
    (void)state;
    kv_cache kv;
    init_cache(&kv, &policy_tova, 4, 2, 2, 4, 4, 3, NULL);
    prefill(&kv, 0, 4);
    decode_step(&kv, 4, prob_new_token_least, NULL);
    decode_step(&kv, 5, prob_new_token_least, NULL);
    const int want[4] = {0, 1, 2, 3};
    for (int l = 0; l < 2; l++)
        for (int g = 0; g < 2; g++) ts_assert_live(&kv, l, g, want, 4);
    assert_int_equal(kv.evictions, 2 * 2 * 2);
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

/* Equal attention everywhere: the tie goes to the older token, so TOVA slides like local. */
static float prob_uniform(int layer, int h, int p, int t, void *ctx)
{
    (void)layer;
    (void)h;
    (void)p;
    (void)t;
    (void)ctx;
    return 0.25f;
}

static void test_tova_ties_evict_the_oldest_token(void **state)
{
    (void)state;
    kv_cache kv;
    init_cache(&kv, &policy_tova, 4, 1, 2, 4, 4, 8, NULL);
    prefill(&kv, 0, 4);
    for (int t = 4; t < 12; t++) {
        decode_step(&kv, t, prob_uniform, NULL);
        const int want[4] = {t - 3, t - 2, t - 1, t};
        for (int g = 0; g < 2; g++) ts_assert_live(&kv, 0, g, want, 4);
    }
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

static void test_tova_one_eviction_per_step_once_full_and_capacity_holds(void **state)
{
    (void)state;
    enum { L = 2, HKV = 2, H = 4, N = 3, NEW = 30 };
    kv_cache kv;
    init_cache(&kv, &policy_tova, 7, L, HKV, H, N, NEW, NULL);
    prefill(&kv, 0, N);
    for (int t = N; t < N + NEW; t++) {
        int64_t ev0 = kv.evictions;
        decode_step(&kv, t, ts_prob_random, NULL);
        assert_int_equal(kv.evictions - ev0, t + 1 > 7 ? L * HKV : 0);
        for (int l = 0; l < L; l++)
            for (int g = 0; g < HKV; g++) assert_true(kv_len(&kv, l, g) <= 7);
        assert_heads_share_slots(&kv);
        ts_assert_kv_follow(&kv, &TOK);
    }
    kv_free(&kv);
}

static void test_tova_identity_when_budget_covers_everything(void **state)
{
    (void)state;
    ts_check_identity(&policy_tova, NULL, &TOK, NULL);
}

static void test_tova_without_the_layer_hook_stays_inside_its_region(void **state)
{
    (void)state;
    /* an engine that never calls post_attn_layer: the cache must not outgrow cap + 1 */
    kv_cache kv;
    init_cache(&kv, &policy_tova, 4, 1, 1, 1, 4, 6, NULL);
    prefill(&kv, 0, 4);
    for (int t = 4; t < 10; t++) {
        ts_decode_tokens(&kv, &TOK, t, prob_uniform, NULL, 1);
        assert_true(kv_len(&kv, 0, 0) <= kv.cap[0] + 1);
    }
    ts_assert_kv_follow(&kv, &TOK);
    kv_free(&kv);
}

static void test_cand_key_returns_the_rotated_keys_in_shifted_mode(void **state)
{
    (void)state;
    /* --rope shifted: policies that score candidates against q_new must see the keys the
     * attention saw (rotated by rank), which the engine hands over in the chunk */
    policy_params p;
    memset(&p, 0, sizeof p);
    p.budget = 5;
    p.rope_shifted = 1;
    char err[256];
    kv_cache kv;
    assert_int_equal(kv_init(&kv, &policy_tova, &p, 1, 2, 4, D, 12, 4, err, sizeof err), 0);
    float raw[3 * 2 * D], live_rot[2 * 6 * D], new_rot[2 * 3 * D];
    for (int i = 0; i < 3 * 2 * D; i++) raw[i] = (float)i;
    for (int i = 0; i < 2 * 6 * D; i++) live_rot[i] = 1000.0f + i;
    for (int i = 0; i < 2 * 3 * D; i++) new_rot[i] = 2000.0f + i;
    kv_prefill_chunk c = {.layer = 0, .n_new = 3, .pos0 = 2, .k_new = raw, .k_live_rot = live_rot,
                          .k_new_rot = new_rot, .rot_live_stride = 6, .rot_new_stride = 3};
    /* head 1, n_live 2: candidate 1 is live slot 1, candidate 3 is chunk token 1 */
    assert_ptr_equal(kv_cand_key(&kv, &c, 1, 2, 1), live_rot + (6 + 1) * D);
    assert_ptr_equal(kv_cand_key(&kv, &c, 1, 2, 3), new_rot + (3 + 1) * D);
    /* absolute mode: the cached keys and the chunk's keys as written */
    c.k_live_rot = c.k_new_rot = NULL;
    assert_ptr_equal(kv_cand_key(&kv, &c, 1, 2, 3), raw + (1 * 2 + 1) * D);
    assert_ptr_equal(kv_cand_key(&kv, &c, 1, 2, 0), kv_keys(&kv, 0, 1));
    kv_free(&kv);
}

static void test_tova_is_layer_wise_and_needs_decode_probabilities(void **state)
{
    (void)state;
    assert_non_null(policy_tova.post_attn_layer);
    assert_null(policy_tova.post_attn);
    assert_true(policy_tova.stats & KV_STAT_DECODE_PROBS);
    assert_ptr_equal(policy_find("tova"), &policy_tova);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_prefill_select_keeps_the_last_c),
        cmocka_unit_test(test_local_prefill_keeps_positions_n_minus_c_to_n),
        cmocka_unit_test(test_local_keeps_the_c_most_recent_one_eviction_per_step),
        cmocka_unit_test(test_local_short_prompt_fills_then_slides),
        cmocka_unit_test(test_local_chunked_prefill_keeps_the_last_c),
        cmocka_unit_test(test_local_identity_when_budget_covers_everything),
        cmocka_unit_test(test_local_has_no_parameters_and_needs_no_statistics),
        cmocka_unit_test(test_streaming_prefill_select_keeps_sinks_and_recent),
        cmocka_unit_test(test_streaming_keeps_four_sinks_and_the_recent_window),
        cmocka_unit_test(test_streaming_prompt_shorter_than_the_sinks),
        cmocka_unit_test(test_streaming_chunked_prefill_keeps_sinks_and_window),
        cmocka_unit_test(test_streaming_small_capacity_uses_half_as_sinks),
        cmocka_unit_test(test_streaming_sink_flag_and_generic_alias),
        cmocka_unit_test(test_streaming_sink_at_capacity_raises_it_and_bad_sink_is_an_error),
        cmocka_unit_test(test_streaming_identity_when_budget_covers_everything),
        cmocka_unit_test(test_tova_pure_selection_ties_favour_the_older_token),
        cmocka_unit_test(test_tova_prefill_keeps_top_c_by_head_averaged_last_row_attention),
        cmocka_unit_test(test_tova_chunked_prefill_scores_live_slots_with_their_cached_keys),
        cmocka_unit_test(test_tova_evicts_the_same_position_in_every_head),
        cmocka_unit_test(test_tova_may_evict_the_new_token),
        cmocka_unit_test(test_tova_ties_evict_the_oldest_token),
        cmocka_unit_test(test_tova_one_eviction_per_step_once_full_and_capacity_holds),
        cmocka_unit_test(test_tova_identity_when_budget_covers_everything),
        cmocka_unit_test(test_tova_without_the_layer_hook_stays_inside_its_region),
        cmocka_unit_test(test_cand_key_returns_the_rotated_keys_in_shifted_mode),
        cmocka_unit_test(test_tova_is_layer_wise_and_needs_decode_probabilities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
