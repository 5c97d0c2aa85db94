/* Tests for the snap family's hooks: snapkv, pyramidkv, ada_snapkv, ada_pyramidkv (POLICIES.md
 * §5-§7) on small hand-built caches (head_dim 4): what the prefill keeps, the observation window,
 * GQA reduction, per-head (ada) and per-layer (pyramid) capacities, the decode modes (reserve,
 * capped, grow) and that K/V/positions follow their slots through compaction and the ada
 * re-partition of a layer's arena. The §15.2 golden vectors: tests/test_policy_snap_golden.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eviction/snap_internal.h" /* the pure functions of snap_score.c, snap_alloc.c */
#include "tests/support/support.h"

extern const policy_ops policy_snapkv, policy_pyramidkv, policy_ada_snapkv, policy_ada_pyramidkv;

#define D 4

/* ------------------------------------------------------------------------ hand-built caches */

/* A toy sequence: q [T][H][D], k and v [T][Hkv][D] for positions 0..T−1 (prompt then decode);
 * v[t][g] = {t, g, 0, 0} so a slot's value tells which token and head it holds. */
typedef struct {
    int L, Hkv, H, T;
    float *q, *k, *v;
} toy;

static toy toy_new(int L, int Hkv, int H, int T)
{
    toy s = {L, Hkv, H, T, calloc((size_t)T * H * D, sizeof(float)), calloc((size_t)T * Hkv * D, sizeof(float)),
             calloc((size_t)T * Hkv * D, sizeof(float))};
    for (int t = 0; t < T; t++)
        for (int g = 0; g < Hkv; g++) {
            s.v[((size_t)t * Hkv + g) * D + 0] = (float)t;
            s.v[((size_t)t * Hkv + g) * D + 1] = (float)g;
        }
    /* every query looks along the first axis */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) s.q[((size_t)t * H + h) * D] = 1.0f;
    return s;
}

static void toy_free(toy *s)
{
    free(s->q);
    free(s->k);
    free(s->v);
}

static float *toy_k(toy *s, int t, int g) { return s->k + ((size_t)t * s->Hkv + g) * D; }
static float *toy_q(toy *s, int t, int h) { return s->q + ((size_t)t * s->H + h) * D; }

/* kv_init of ops with budget (tokens when > 1) and NAME, VALUE pairs (NULL-terminated); err [256]. */
static int make_kv(kv_cache *kv, const policy_ops *ops, double budget, const toy *s, int n_prompt, int max_new,
                   const char *const *set, char *err)
{
    return ts_kv_try(kv, ops, budget, 0, set, s->L, s->Hkv, s->H, D, n_prompt, max_new, err, 256);
}

/* Prefill positions 0..n−1 in chunks of `chunk` tokens through kv_prefill. */
static void prefill(kv_cache *kv, toy *s, int n, int chunk)
{
    char err[256];
    for (int off = 0; off < n; off += chunk) {
        int m = n - off < chunk ? n - off : chunk;
        for (int l = 0; l < s->L; l++) {
            kv_prefill_chunk c = {.layer = l, .n_new = m, .pos0 = off,
                                  .q_new = s->q + (size_t)off * s->H * D,
                                  .k_new = s->k + (size_t)off * s->Hkv * D,
                                  .v_new = s->v + (size_t)off * s->Hkv * D, .colsum = NULL, .cand_stride = 0};
            int rc = kv_prefill(kv, &c, err, sizeof err);
            if (rc) fprintf(stderr, "%s\n", err);
            assert_int_equal(rc, 0);
        }
    }
}

/* One decode step at position t, as the engine does it (slot, write, then post_attn). */
static void decode(kv_cache *kv, toy *s, int t)
{
    int G = s->H / s->Hkv;
    for (int l = 0; l < s->L; l++) {
        for (int g = 0; g < s->Hkv; g++) {
            int slot = kv_decode_slot(kv, l, g, t, toy_q(s, t, g * G), toy_k(s, t, g),
                                      s->v + ((size_t)t * s->Hkv + g) * D);
            assert_true(slot <= kv->cap[kv_idx(kv, l, g)]);
            kv_write(kv, l, g, slot, t, toy_k(s, t, g), s->v + ((size_t)t * s->Hkv + g) * D);
        }
        for (int g = 0; g < s->Hkv; g++) kv_post_attn(kv, l, g, t, NULL, 0);
    }
}

/* Every live slot holds the K/V of the token its position says, positions strictly increase,
 * |S| ≤ cap, and each layer's regions are contiguous (Σ (cap + 1) per layer = its arena). */
static void check_slots(const kv_cache *kv, toy *s)
{
    size_t at = 0;
    for (int l = 0; l < kv->n_layers; l++)
        for (int g = 0; g < kv->n_kv_heads; g++) {
            int i = kv_idx(kv, l, g), n = kv->len[i];
            assert_true(n <= kv->cap[i]);
            assert_int_equal(kv->off[i], at);
            at += (size_t)kv->cap[i] + 1;
            const int32_t *P = kv_positions(kv, l, g);
            const float *K = kv_keys(kv, l, g), *V = kv_values(kv, l, g);
            for (int j = 0; j < n; j++) {
                if (j) assert_true(P[j] > P[j - 1]);
                assert_float_equal(V[(size_t)j * D + 0], (float)P[j], 0.0f);
                assert_float_equal(V[(size_t)j * D + 1], (float)g, 0.0f);
                assert_memory_equal(K + (size_t)j * D, toy_k(s, P[j], g), D * sizeof(float));
            }
        }
    assert_int_equal(at, kv->n_slots);
}

static int total_len(const kv_cache *kv, int l)
{
    int n = 0;
    for (int g = 0; g < kv->n_kv_heads; g++) n += kv_len(kv, l, g);
    return n;
}

/* The §15.2 SnapKV toy through the hooks: N = 16, w = 4, kernel 3, C = 10 with max_new = 2
 * (reserve → prompt target 8). Key 7 draws the window's attention, key 10 less, the rest none. */
static void test_snapkv_prefill_keeps_6_7_8_9_and_window_12_to_15(void **state)
{
    (void)state;
    toy s = toy_new(1, 1, 1, 18);
    toy_k(&s, 7, 0)[0] = 8.0f;
    toy_k(&s, 10, 0)[0] = 4.0f;
    kv_cache kv;
    char err[256];
    const char *set[] = {"obs-window", "4", "pool-kernel", "3", NULL};
    assert_int_equal(make_kv(&kv, &policy_snapkv, 10, &s, 16, 2, set, err), 0);
    assert_int_equal(kv.cap[0], 10);
    prefill(&kv, &s, 16, 16);
    const int want[8] = {6, 7, 8, 9, 12, 13, 14, 15};
    assert_int_equal(kv_len(&kv, 0, 0), 8);
    for (int j = 0; j < 8; j++) assert_int_equal(kv_positions(&kv, 0, 0)[j], want[j]);
    check_slots(&kv, &s);
    assert_int_equal(kv.evictions, 8);
    /* reserve: decode appends max_new − 1 (and max_new) tokens without evicting */
    decode(&kv, &s, 16);
    decode(&kv, &s, 17);
    assert_int_equal(kv_len(&kv, 0, 0), 10);
    assert_int_equal(kv.evictions, 8);
    check_slots(&kv, &s);
    kv_free(&kv);
    toy_free(&s);
}

/* Prefill in chunks (5 + 5 + 6): the final keep still holds the window and the heavy token. */
static void test_snapkv_chunked_prefill_keeps_window_and_heavy_token(void **state)
{
    (void)state;
    toy s = toy_new(1, 1, 1, 18);
    toy_k(&s, 7, 0)[0] = 8.0f;
    toy_k(&s, 10, 0)[0] = 4.0f;
    kv_cache kv;
    char err[256];
    const char *set[] = {"obs-window", "4", "pool-kernel", "3", NULL};
    assert_int_equal(make_kv(&kv, &policy_snapkv, 10, &s, 16, 2, set, err), 0);
    prefill(&kv, &s, 16, 5);
    assert_int_equal(kv_len(&kv, 0, 0), 8);
    for (int p = 12; p < 16; p++) assert_true(ts_has_pos(&kv, 0, 0, p));
    assert_true(ts_has_pos(&kv, 0, 0, 7));
    check_slots(&kv, &s);
    kv_free(&kv);
    toy_free(&s);
}

/* GQA (§12): the group's scores are the mean over its query heads, so a key that only one
 * head of the group looks at still wins (kernel 1, base 2: keys 3 and 7 + window). */
static void test_snapkv_gqa_mean_over_the_group_selects_each_heads_key(void **state)
{
    (void)state;
    toy s = toy_new(1, 2, 4, 18);
    for (int t = 0; t < 18; t++) {
        memset(toy_q(&s, t, 1), 0, D * sizeof(float));
        toy_q(&s, t, 1)[1] = 1.0f; /* head 1 of group 0 looks along the second axis */
    }
    toy_k(&s, 7, 0)[0] = 8.0f;
    toy_k(&s, 3, 0)[1] = 6.0f;
    toy_k(&s, 9, 1)[0] = 8.0f; /* group 1: key 9 only */
    kv_cache kv;
    char err[256];
    const char *set[] = {"obs-window", "4", "pool-kernel", "1", NULL};
    assert_int_equal(make_kv(&kv, &policy_snapkv, 8, &s, 16, 2, set, err), 0);
    prefill(&kv, &s, 16, 16);
    const int want0[6] = {3, 7, 12, 13, 14, 15}, want1[6] = {0, 9, 12, 13, 14, 15};
    assert_int_equal(kv_len(&kv, 0, 0), 6);
    assert_int_equal(kv_len(&kv, 0, 1), 6);
    for (int j = 0; j < 6; j++) {
        assert_int_equal(kv_positions(&kv, 0, 0)[j], want0[j]);
        assert_int_equal(kv_positions(&kv, 0, 1)[j], want1[j]);
    }
    check_slots(&kv, &s);
    kv_free(&kv);
    toy_free(&s);
}

/* Identity (§1.2): when C ≥ N + max_new nothing is evicted, slots stay in order, every mode. */
static void test_snap_family_keeps_everything_when_budget_covers_all(void **state)
{
    (void)state;
    const policy_ops *ops[] = {&policy_snapkv, &policy_pyramidkv, &policy_ada_snapkv, &policy_ada_pyramidkv};
    const char *modes[] = {"reserve", "capped", "grow"};
    for (int o = 0; o < 4; o++)
        for (int m = 0; m < 3; m++) {
            toy s = toy_new(2, 2, 4, 48);
            for (int t = 0; t < 48; t++) toy_k(&s, t, t % 2)[0] = (float)(t % 5);
            kv_cache kv;
            char err[256];
            const char *set[] = {"prefill-only-decode", modes[m], NULL};
            assert_int_equal(make_kv(&kv, ops[o], 1.0, &s, 40, 8, set, err), 0);
            prefill(&kv, &s, 40, o % 2 ? 40 : 13);
            for (int t = 40; t < 47; t++) decode(&kv, &s, t);
            for (int l = 0; l < 2; l++)
                for (int g = 0; g < 2; g++) {
                    assert_int_equal(kv_len(&kv, l, g), 47);
                    for (int j = 0; j < 47; j++) assert_int_equal(kv_positions(&kv, l, g)[j], j);
                }
            assert_int_equal(kv.evictions, 0);
            check_slots(&kv, &s);
            kv_free(&kv);
            toy_free(&s);
        }
}

/* Ada (§6.2, §15.1.4): a concentrated head (one heavy key) and a flat head; exact mode splits
 * Σ_g B_g = H_kv·base unevenly, heads get different lengths, and the layer's arena stays the
 * uniform size: Σ_g (cap_g + 1) = H_kv·(C + 1). N = 32, w = 4, C = 16, max_new 4 → base 8. */
static void test_ada_snapkv_exact_split_sums_to_layer_budget_in_uniform_arena(void **state)
{
    (void)state;
    toy s = toy_new(1, 2, 2, 36);
    toy_k(&s, 5, 0)[0] = 10.0f;
    kv_cache kv;
    char err[256];
    const char *set[] = {"obs-window", "4", "pool-kernel", "3", NULL};
    assert_int_equal(make_kv(&kv, &policy_ada_snapkv, 16, &s, 32, 4, set, err), 0);
    assert_int_equal(kv.n_slots, 2 * (16 + 1));
    /* before the split head 0 holds the largest possible split, ceil(0.5·16 + 0.5·8) + 1 + w +
     * max_new = 21, head 1 the rest of the arena */
    assert_int_equal(kv.cap[0], 21);
    assert_int_equal(kv.cap[1], 34 - 22 - 1);
    prefill(&kv, &s, 32, 32);
    /* counts [3, 13] → B = [6, 10] (0.5·3 + 4 = 5.5 and 10.5; the remainder goes to head 0) */
    assert_int_equal(kv_len(&kv, 0, 0), 6 + 4);
    assert_int_equal(kv_len(&kv, 0, 1), 10 + 4);
    assert_int_equal(total_len(&kv, 0), 2 * 12);
    assert_int_equal(kv.cap[0] + kv.cap[1] + 2, 2 * (16 + 1));
    assert_true(ts_has_pos(&kv, 0, 0, 5));
    for (int g = 0; g < 2; g++)
        for (int p = 28; p < 32; p++) assert_true(ts_has_pos(&kv, 0, g, p));
    check_slots(&kv, &s);
    /* reserve: the decode appends fit every head, peak per layer ≤ H_kv·C */
    for (int t = 32; t < 35; t++) {
        decode(&kv, &s, t);
        assert_true(total_len(&kv, 0) <= 2 * 16);
        check_slots(&kv, &s);
    }
    assert_int_equal(kv.evictions, 2 * 32 - 24);
    kv_free(&kv);
    toy_free(&s);
}

/* Ada with a chunked prefill: live slots are compacted and moved between head regions at
 * every chunk; K/V/positions follow, capacities stay ≤ the arena, exact Σ holds at the end. */
static void test_ada_chunked_prefill_repartitions_arena_and_data_follows_slots(void **state)
{
    (void)state;
    const policy_ops *ops[] = {&policy_ada_snapkv, &policy_ada_pyramidkv};
    for (int o = 0; o < 2; o++)
        for (int chunk = 3; chunk <= 32; chunk += 29 / 3) {
            toy s = toy_new(2, 2, 4, 40);
            for (int t = 0; t < 40; t++) {
                toy_k(&s, t, 0)[0] = (float)((t * 7) % 5);
                toy_k(&s, t, 1)[0] = t % 9 == 0 ? 6.0f : 0.0f;
            }
            kv_cache kv;
            char err[256];
            const char *set[] = {"obs-window", "4", "pool-kernel", "3", "pyramid-schedule", "exact", NULL};
            if (o == 0) set[4] = NULL;
            assert_int_equal(make_kv(&kv, ops[o], 14, &s, 36, 4, set, err), 0);
            prefill(&kv, &s, 36, chunk);
            check_slots(&kv, &s);
            int sum = 0;
            for (int l = 0; l < 2; l++) {
                for (int g = 0; g < 2; g++)
                    for (int p = 32; p < 36; p++) assert_true(ts_has_pos(&kv, l, g, p));
                sum += total_len(&kv, l);
            }
            /* exact split and exact schedule: Σ over layers and heads = L·H_kv·(C − max_new) */
            assert_int_equal(sum, 2 * 2 * 10);
            /* every dropped prompt token is counted once as an eviction */
            assert_int_equal(kv.evictions, 2 * 2 * 36 - sum);
            for (int t = 36; t < 39; t++) {
                decode(&kv, &s, t);
                check_slots(&kv, &s);
            }
            kv_free(&kv);
            toy_free(&s);
        }
}

/* Ada's reference rounding (§6.2: rint of c_g(1−α) + floor(α·base) per head) can sum to more
 * than the layer's H_kv·base (three heads: 10.7, 10.7, 8.6 → 11 + 11 + 9 = 31 > 30), and the
 * arena holds exactly the uniform split: the capped re-compression must keep every layer's
 * regions inside its arena (check_slots: contiguous, Σ (cap + 1) = the allocation). Before the
 * fix, these runs laid the last head of a layer past its arena, over the next layer's. */
static void test_ada_reference_rounding_keeps_regions_inside_the_arena(void **state)
{
    (void)state;
    const char *alphas[] = {"0.1", "0.2", "0.3", "0.5"};
    const char *windows[] = {"3", "4"};
    int steps = 0;
    for (int a = 0; a < 4; a++)
        for (int wi = 0; wi < 2; wi++)
            for (int Hkv = 3; Hkv <= 4; Hkv++) {
                toy s = toy_new(2, Hkv, Hkv * 2, 90);
                uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(a * 8 + wi * 2 + Hkv);
                for (int t = 0; t < 90; t++)
                    for (int g = 0; g < Hkv; g++) {
                        r = r * 6364136223846793005ull + 1442695040888963407ull;
                        toy_k(&s, t, g)[0] = (float)(r >> 40) / (float)(1 << 24) * 3.0f;
                        toy_k(&s, t, g)[1] = (float)((r >> 20) & 0xfff) / 4096.0f;
                    }
                kv_cache kv;
                char err[256];
                const char *set[] = {"obs-window", windows[wi], "prefill-only-decode", "capped", "snap-recompress", "3",
                                     "ada-alloc", "reference", "ada-alpha", alphas[a], NULL};
                assert_int_equal(make_kv(&kv, &policy_ada_snapkv, 14, &s, 40, 48, set, err), 0);
                prefill(&kv, &s, 40, 40);
                check_slots(&kv, &s);
                for (int t = 40; t < 88; t++, steps++) {
                    decode(&kv, &s, t);
                    check_slots(&kv, &s);
                }
                kv_free(&kv);
                toy_free(&s);
            }
    assert_true(steps > 0);
}

/* Reserve mode (§7.6, default): after the prompt every head is at its target C − max_new and
 * appending max_new tokens never exceeds C; pyramid layers differ, their mean is C (exact). */
static void test_reserve_mode_peak_stays_within_capacity(void **state)
{
    (void)state;
    const policy_ops *ops[] = {&policy_snapkv, &policy_pyramidkv, &policy_ada_snapkv, &policy_ada_pyramidkv};
    for (int o = 0; o < 4; o++) {
        toy s = toy_new(3, 2, 4, 80);
        for (int t = 0; t < 80; t++)
            for (int g = 0; g < 2; g++) toy_k(&s, t, g)[0] = (float)((t * (g + 3)) % 7) * 0.5f;
        kv_cache kv;
        char err[256];
        const char *set[] = {"obs-window", "4", "pyramid-schedule", "exact", NULL};
        if (o == 0 || o == 2) set[2] = NULL;
        const int C = 30, max_new = 16, N = 64;
        assert_int_equal(make_kv(&kv, ops[o], C, &s, N, max_new, set, err), 0);
        assert_int_equal(kv.n_slots, (size_t)3 * 2 * (C + 1));
        prefill(&kv, &s, N, N);
        int all = 0;
        for (int l = 0; l < 3; l++) all += total_len(&kv, l);
        assert_int_equal(all, 3 * 2 * (C - max_new));
        for (int t = N; t < N + max_new; t++) {
            decode(&kv, &s, t);
            all = 0;
            for (int l = 0; l < 3; l++) all += total_len(&kv, l);
            assert_true(all <= 3 * 2 * C);
            check_slots(&kv, &s);
        }
        if (ops[o] == &policy_pyramidkv) assert_true(kv.cap[0] > kv.cap[kv_idx(&kv, 2, 0)]);
        kv_free(&kv);
        toy_free(&s);
    }
}

/* Capped mode (§7.6): prompt → C' = C − R; the cache grows by one per step and, the step it
 * reaches C, is re-compressed to C' from the ring queries: evictions only every R steps, the
 * last w positions and the heavy key always kept, |S| ≤ C after every hook. */
static void test_capped_mode_recompresses_every_R_steps_keeping_window(void **state)
{
    (void)state;
    const policy_ops *ops[] = {&policy_snapkv, &policy_ada_snapkv};
    for (int o = 0; o < 2; o++) {
        toy s = toy_new(1, 2, 2, 60);
        toy_k(&s, 7, 0)[0] = 8.0f;
        toy_k(&s, 3, 1)[0] = 8.0f;
        kv_cache kv;
        char err[256];
        const char *set[] = {"obs-window", "4", "pool-kernel", "3", "prefill-only-decode", "capped",
                             "snap-recompress", "4", NULL};
        assert_int_equal(make_kv(&kv, ops[o], 12, &s, 16, 40, set, err), 0);
        prefill(&kv, &s, 16, 16);
        assert_int_equal(total_len(&kv, 0), 2 * 8);
        int64_t ev = kv.evictions;
        for (int t = 16; t < 56; t++) {
            decode(&kv, &s, t);
            int steps = t - 15;
            for (int g = 0; g < 2; g++) {
                assert_true(kv_len(&kv, 0, g) <= kv.cap[g]);
                for (int p = t - 3; p <= t; p++) assert_true(ts_has_pos(&kv, 0, g, p));
            }
            assert_true(ts_has_pos(&kv, 0, 0, 7));
            assert_true(ts_has_pos(&kv, 0, 1, 3));
            if (steps % 4 == 0) {
                assert_true(kv.evictions > ev); /* re-compressed back to C' */
                assert_int_equal(total_len(&kv, 0), 2 * 8);
            } else {
                assert_true(kv.evictions == ev);
            }
            ev = kv.evictions;
            check_slots(&kv, &s);
        }
        kv_free(&kv);
        toy_free(&s);
    }
}

/* Reserve falls back to capped when C − max_new < w + 1 (§7.6): C = 10, max_new 8, w 4 → R
 * clamped to C/2 = 5, prompt target 5, cache never above 10. */
static void test_reserve_falls_back_to_capped_when_prompt_budget_too_small(void **state)
{
    (void)state;
    toy s = toy_new(1, 1, 1, 30);
    toy_k(&s, 2, 0)[0] = 8.0f;
    kv_cache kv;
    char err[256];
    const char *set[] = {"obs-window", "4", NULL};
    assert_int_equal(make_kv(&kv, &policy_snapkv, 10, &s, 20, 8, set, err), 0);
    assert_int_equal(kv.cap[0], 10);
    prefill(&kv, &s, 20, 20);
    assert_int_equal(kv_len(&kv, 0, 0), 5);
    for (int t = 20; t < 28; t++) {
        decode(&kv, &s, t);
        assert_true(kv_len(&kv, 0, 0) <= 10);
        check_slots(&kv, &s);
    }
    kv_free(&kv);
    toy_free(&s);
}

/* Grow mode (§7.6, opt-in): prompt → C, decode appends and never evicts (peak C + n_gen). */
static void test_grow_mode_never_evicts_in_decode(void **state)
{
    (void)state;
    toy s = toy_new(2, 1, 2, 40);
    kv_cache kv;
    char err[256];
    const char *set[] = {"obs-window", "4", "prefill-only-decode", "grow", NULL};
    assert_int_equal(make_kv(&kv, &policy_pyramidkv, 12, &s, 24, 10, set, err), 0);
    prefill(&kv, &s, 24, 24);
    int64_t ev = kv.evictions;
    int before = total_len(&kv, 0) + total_len(&kv, 1);
    assert_int_equal(before, 2 * 12);
    for (int t = 24; t < 33; t++) decode(&kv, &s, t);
    assert_int_equal(kv.evictions, ev);
    assert_int_equal(total_len(&kv, 0) + total_len(&kv, 1), before + 2 * 9);
    check_slots(&kv, &s);
    kv_free(&kv);
    toy_free(&s);
}

static void test_bad_parameters_are_one_line_errors_naming_the_flag(void **state)
{
    (void)state;
    toy s = toy_new(1, 1, 1, 4);
    kv_cache kv;
    char err[256];
    const char *even[] = {"snap-kernel", "4", NULL};
    assert_int_equal(make_kv(&kv, &policy_snapkv, 0.5, &s, 100, 10, even, err), -1);
    assert_non_null(strstr(err, "--snap-kernel"));
    const char *pool[] = {"snap-pool", "median", NULL};
    assert_int_equal(make_kv(&kv, &policy_snapkv, 0.5, &s, 100, 10, pool, err), -1);
    assert_non_null(strstr(err, "--snap-pool"));
    const char *alpha[] = {"ada-alpha", "1.5", NULL};
    assert_int_equal(make_kv(&kv, &policy_ada_snapkv, 0.5, &s, 100, 10, alpha, err), -1);
    assert_non_null(strstr(err, "--ada-alpha"));
    const char *beta[] = {"pyramid-beta", "0.5", NULL};
    assert_int_equal(make_kv(&kv, &policy_pyramidkv, 0.5, &s, 100, 10, beta, err), -1);
    assert_non_null(strstr(err, "--pyramid-beta"));
    /* flags of another family member are not accepted */
    const char *foreign[] = {"ada-alpha", "0.2", NULL};
    assert_int_equal(make_kv(&kv, &policy_pyramidkv, 0.5, &s, 100, 10, foreign, err), -1);
    assert_non_null(strstr(err, "--ada-alpha"));
    toy_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapkv_prefill_keeps_6_7_8_9_and_window_12_to_15),
        cmocka_unit_test(test_snapkv_chunked_prefill_keeps_window_and_heavy_token),
        cmocka_unit_test(test_snapkv_gqa_mean_over_the_group_selects_each_heads_key),
        cmocka_unit_test(test_snap_family_keeps_everything_when_budget_covers_all),
        cmocka_unit_test(test_ada_snapkv_exact_split_sums_to_layer_budget_in_uniform_arena),
        cmocka_unit_test(test_ada_chunked_prefill_repartitions_arena_and_data_follows_slots),
        cmocka_unit_test(test_ada_reference_rounding_keeps_regions_inside_the_arena),
        cmocka_unit_test(test_reserve_mode_peak_stays_within_capacity),
        cmocka_unit_test(test_capped_mode_recompresses_every_R_steps_keeping_window),
        cmocka_unit_test(test_reserve_falls_back_to_capped_when_prompt_budget_too_small),
        cmocka_unit_test(test_grow_mode_never_evicts_in_decode),
        cmocka_unit_test(test_bad_parameters_are_one_line_errors_naming_the_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
