/* The snap family's shared machinery (POLICIES.md §5-§7), internal to eviction/: the state of
 * snapkv, pyramidkv, ada_snapkv and ada_pyramidkv and the functions their files share.
 *   snap_score.c      scoring: candidates, the observation-window attention (§5.3, §12), the
 *                     query ring, pooling and top-k selection;
 *   snap_alloc.c      budget allocation: the uniform / pyramid (§7.3) per-layer targets, the
 *                     Ada-KV split over a layer's heads (§6.2) and the arena it re-partitions;
 *   policy_snapkv.c   the hooks (prefill, decode modes of §7.6) and the snapkv policy;
 *   policy_pyramidkv.c, policy_ada_snapkv.c, policy_ada_pyramidkv.c: their flags only.
 * eviction/eviction.h stays the directory's interface; only eviction/ and tests include this. */
#ifndef LLM_SNAP_INTERNAL_H
#define LLM_SNAP_INTERNAL_H

#include "eviction/eviction.h"

#include <stddef.h>
#include <stdint.h>

enum { SNAP_POOL_MAX, SNAP_POOL_AVG };
enum { SNAP_RESERVE, SNAP_CAPPED, SNAP_GROW };
enum { SNAP_SCHEDULE_CODE, SNAP_SCHEDULE_EXACT };
enum { SNAP_ALLOC_EXACT, SNAP_ALLOC_REFERENCE };
enum { SNAP_GQA_MEAN, SNAP_GQA_MAX };

/* Family bits for snap_init. */
#define SNAP_FAMILY_PYRAMID 1
#define SNAP_FAMILY_ADA 2

typedef struct {
    int pyramid, ada;      /* family bits */
    int w_flag;            /* --snap-window: rows kept in the query ring */
    int w;                 /* effective observation window (§5.2: max(1, P/2) when P ≤ w_obs) */
    int pool, kernel;      /* --snap-pool, --snap-kernel */
    int mode;              /* effective decode mode (after the reserve → capped fallback) */
    int slack;             /* cap − prompt target: max_new (reserve, grow) or R (capped) */
    double alpha;          /* --ada-alpha */
    int alloc, gqa;        /* --ada-alloc, --ada-gqa */
    int L, Hkv, H, G, d;
    int *layer_target;     /* [L] uniform prompt target per head P_ℓ = base_ℓ + w */
    int *target;           /* [L*Hkv] selection target per head (ada: B_g + w of the last split) */
    int *arena;            /* [L] ada: slots of the layer's arena T_ℓ */
    int *cap_max;          /* [L] ada: the largest capacity a head of the layer may get */
    int *keep_max;         /* [L] ada: the largest keep a split may give a head (B_max + w) */
    float *ring;           /* [L][w_flag][H][d] the last queries, row = position mod w_flag */
    int32_t *ring_pos;     /* [L][Hkv][w_flag] position held by each ring row (-1: none) */
    /* scratch, sized for max_cand candidates per head (grown in prefill, never in decode) */
    int max_cand;
    float *att;            /* [Hkv][max_cand] observation scores A_g */
    float *pooled;         /* [Hkv][max_cand] pooled prefix scores Â_g */
    float *row, *acc;      /* [max_cand] one softmax row; per-query-head accumulator */
    int *idx;              /* [Hkv*max_cand] sort scratch */
    int *keep;             /* [Hkv][max_cand] keep-lists (ada: the layer plan) */
    int *n_keep, *n_live_kept, *n_cand, *n_prefix, *counts, *budgets, *caps; /* [Hkv] */
    int plan_layer, plan_pos0; /* ada: the layer and chunk the plan belongs to (-1: none) */
} snap_state;

/* The candidates of one (layer, KV head), in position order: the live slots, then (prefill)
 * the chunk's tokens. */
typedef struct {
    const float *live_k;
    const int32_t *live_pos;
    int n_live;
    const float *new_k;  /* the chunk's key of this head for token 0; rows new_stride apart */
    size_t new_stride;
    int pos0, n;         /* position of chunk token 0; candidates in all */
} snap_cands;

/* ------------------------------------------------------------- snap_score.c: scoring (§5.3) */

/* Sorts the int indices a[0..n) so that a higher scores[a] comes first, then the lower index
 * (older token, §1.6; a flat head-major index orders score desc, head asc, pos asc). Heapsort,
 * no allocation. */
void snap_rank_sort(int *a, int n, const float *scores);

/* 1-D pooling of prefix scores (§5.3): out[j] = max (pool 0) or mean with zero padding
 * (pool 1, torch avg_pool1d count_include_pad, SnapKV's code) of x[j−r .. j+r], r = kernel/2,
 * clipped to [0, n). x, out: [n] f32, distinct. kernel: odd ≥ 1. */
void snap_pool(const float *x, int n, int kernel, int pool, float *out);

/* Keep-list from pooled prefix scores (§5.3): the top-`budget` of pooled[0..n_prefix) (ties:
 * lower index = older token) in ascending order, then the window n_prefix..n_cand−1.
 * idx: scratch [n_prefix] ints; keep: [n_cand]. Returns the count
 * min(budget, n_prefix) + n_cand − n_prefix. budget < 0 counts as 0. */
int snap_topk_keep(const float *pooled, int n_prefix, int n_cand, int budget, int *idx, int *keep);

/* SnapKV selection of one head (§5.3): pools scores[0..n_prefix) (kernel, pool as snap_pool)
 * into pooled [n_prefix], then snap_topk_keep. scores: [n_cand] f32 (window entries ignored).
 * idx: [n_prefix]; keep: [n_cand]. Returns the keep count. */
int snap_select(const float *scores, int n_prefix, int n_cand, int budget, int pool, int kernel,
                float *pooled, int *idx, int *keep);

/* Candidates of (layer, g): its live slots only (decode re-compression). */
snap_cands snap_live_cands(const kv_cache *kv, int layer, int g);

/* Candidates of KV head g for a prefill chunk: its first n_live live slots, then the chunk's
 * tokens (--rope shifted: the keys as the attention saw them). */
snap_cands snap_chunk_cands(const kv_cache *kv, const kv_prefill_chunk *ch, int g, int n_live);

/* Candidates at positions < end − w (the prefix; the rest is the observation window). */
int snap_prefix_len(const snap_state *s, const snap_cands *c, int end);

/* Observation-window scores of KV head g (§5.3, §12): A[j] = GQA mean (or max, --ada-gqa) over
 * the group's query heads of the mean over the window rows (positions end−w .. end−1, queries
 * from the ring) of the causal softmax of q·k_j/sqrt(d) over the candidates at positions ≤ the
 * row's position (the full row). A: [c->n]. Rows whose query is not in the ring are skipped;
 * with none, A is all zero. */
void snap_obs_scores(snap_state *s, int layer, int g, const snap_cands *c, int end, float *A);

/* Copies the group's queries of position p (q: [G][d]) into ring row p mod w_flag. */
void snap_ring_put(snap_state *s, int layer, int g, int p, const float *q);

/* Grows the scratch to n candidates per head (prefill only; decode never needs more than the
 * size set in init). Returns 0 or -1 (out of memory). */
int snap_ensure_scratch(snap_state *s, int n);

/* One head: the keep-list (candidate indices) of the candidates c, window ending at `end`,
 * for a total of `target` entries (window included). Scores are computed only when something
 * must go. keep: [c->n]. Returns the count. */
int snap_select_head(snap_state *s, int layer, int g, const snap_cands *c, int end, int target, int *keep);

/* ------------------------------------------------- snap_alloc.c: budget allocation (§6, §7) */

/* Ada-KV head budgets of one layer (§6.2). scores: [n_heads][stride] pooled prefix scores Â_g,
 * head g valid for j < n[g]; total: B = H_kv·base (window excluded); alpha: safeguard in [0, 1];
 * mode: 0 exact (largest remainder, Σ B_g = B), 1 reference (AdaKV code:
 * round_half_even(c_g(1−α) + floor(α·base)), base = B / H_kv, Σ may be < B).
 * counts[g]: entries of head g in the global top-B (ties: score desc, head asc, pos asc);
 * budgets[g]: B_g, clamped to n[g]. idx: scratch [n_heads*stride] ints. Returns Σ B_g. */
int snap_ada_allocate(const float *scores, int stride, const int *n, int n_heads, int total,
                      double alpha, int mode, int *idx, int *counts, int *budgets);

/* PyramidKV per-layer prefix budgets (§7.3, AdaKV `pyram_mode`): base = C − w_obs tokens per
 * head on average, n_prefix = N − w_obs, beta = --pyramid-beta, L layers; exact 0 (code:
 * floored step, Σ overshoots L·base) or 1 (Σ out = L·base). out: [L]. */
void snap_pyramid_schedule(int base, int n_prefix, int L, double beta, int exact, int *out);

/* Re-partitions the arena of `layer` among its KV heads: head g gets cap[g] slots (+1 spare),
 * live slots move with their data. Requires Σ (cap[g] + 1) = the arena's slots and
 * len[g] ≤ cap[g]. */
void snap_relayout(kv_cache *kv, int layer, const int *cap);

/* The per-layer targets and capacities for a prompt target P per head (window included):
 * uniform P, or the pyramid schedule of P − w (beta, schedule: --pyramid-*), plus s->slack;
 * ada layers get their arena, cap_max and keep_max. Allocates the per-layer arrays of s.
 * Returns the largest capacity of a head, or -1 (out of memory). */
int snap_size_layers(kv_cache *kv, snap_state *s, int P, int n_prompt, int max_new, double beta,
                     int schedule);

/* Ada prefill of KV head g (§6.2): at g = 0 the whole layer is planned, split and laid out;
 * every head then returns its part of the plan in keep. Returns the keep count. */
int snap_ada_on_prefill(kv_cache *kv, snap_state *s, const kv_prefill_chunk *c, int g, int n_live,
                        int *keep, int final);

/* Decode re-compression of a whole ada layer, window ending at `end`: new split, compaction,
 * new layout. */
void snap_recompress_layer(kv_cache *kv, snap_state *s, int layer, int end);

/* ------------------------------------------------------ policy_snapkv.c: the family's hooks */

int snap_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, int family, char *err,
              size_t errlen);
int snap_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep);
int snap_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k, const float *v);
void snap_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride);
void snap_free(kv_cache *kv);

/* The flags of the family, as rows of a policy_param_def table: every member's, pyramid's and
 * ada's (each policy file ends its table with {NULL}). */
#define SNAP_PARAM_DEFS                                                                            \
    {"snap-window", "obs-window", PARAM_INT, "32", NULL,                                           \
     "observation window: the last N prompt tokens score the prefix and are always kept"},         \
    {"snap-pool", NULL, PARAM_ENUM, "max", "max|avg", "pooling of the prefix scores"},              \
    {"snap-kernel", "pool-kernel", PARAM_INT, "7", NULL, "pooling kernel (odd)"},                   \
    {"prefill-only-decode", NULL, PARAM_ENUM, "reserve", "reserve|capped|grow",                    \
     "decode: reserve max_new slots (peak C), re-compress every R steps (peak C), or grow (peak C + n_gen)"}, \
    {"snap-recompress", NULL, PARAM_INT, "32", NULL, "capped: slots freed by each re-compression (R)"}
#define SNAP_PYRAMID_PARAM_DEFS                                                                    \
    {"pyramid-beta", NULL, PARAM_FLOAT, "20", NULL, "top layer keeps base/beta prefix tokens (beta >= 1)"}, \
    {"pyramid-schedule", NULL, PARAM_ENUM, "code", "code|exact",                                   \
     "code: AdaKV's floored step (overshoots the total); exact: layer budgets sum to L*base"}
#define SNAP_ADA_PARAM_DEFS                                                                        \
    {"ada-alpha", NULL, PARAM_FLOAT, "0.5", NULL, "safeguard: share of the layer budget split uniformly"}, \
    {"ada-alloc", NULL, PARAM_ENUM, "exact", "exact|reference",                                    \
     "exact: budgets sum to H_kv*base; reference: AdaKV's torch.round (sum may fall short)"},       \
    {"ada-gqa", NULL, PARAM_ENUM, "mean", "mean|max", "reduction of the scores over a KV group's query heads"}

/* The hooks of every member's policy_ops (after .init). */
#define SNAP_HOOKS                                                                                 \
    .stats = 0, .reads_rows = 1, .on_prefill = snap_on_prefill, .pre_attn = snap_pre_attn,           \
    .post_attn = snap_post_attn, .free_state = snap_free

#endif
