/* `subgen`: SubGen's experimental system (Zandieh et al., §3.2; POLICIES.md §8.2): keep the r
 * most recent tokens plus k representatives of the older keys chosen by greedy k-center
 * (Gonzalez '85), applied once to the prompt.
 *
 * Distances are ℓ2 between keys as stored (post-RoPE), per KV head (query-independent, so GQA
 * needs nothing, §12). The first center is the oldest candidate (position 0, also the attention
 * sink). Decode follows §7.6:
 *   reserve (default): compress the prompt to C' = C − max_new and append during decode, so the
 *            peak is C. [DECISION] When C − max_new < 2 (no room for one center and one recent
 *            token) fall back to the capped scheme with C' = max(1, ⌊C/2⌋): append until the
 *            cache holds C + 1 tokens, then re-run the same selection back to C' (R = C − C').
 *   capped:  compress the prompt to C' = C − R (--subgen-recompress R, 32) and re-run the
 *            selection over the live slots back to C' whenever they exceed C (§7.6 capped; no query
 *            ring is needed, k-center is query-independent).
 *   grow:    compress the prompt to C and append without eviction (the paper's behaviour;
 *            allocated and peak = C + max_new).
 * r = ⌊C'/2⌋ (--subgen-recent, clamped to C' − 1), k = C' − r.
 * No per-slot state, no attention statistics; slots stay in position order (stable compaction). */
#include "eviction/policy_common.h"
#include "eviction/kv_device.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DECODE_RESERVE, DECODE_CAPPED, DECODE_GROW };

typedef struct {
    int recent;     /* --subgen-recent, or -1: ⌊C'/2⌋ */
    int target;     /* C': tokens kept by a compression */
    int capped;     /* capped mode (or reserve's capped fallback): decode re-compresses */
    int max_cand;
    const float **rows; /* [max_cand] key of each candidate */
    double *dist;       /* [max_cand] Gonzalez distances */
    int *centers;       /* [max_cand] */
    int *keep;          /* [max_cand] decode re-compression keep-list */
} sg_state;

/* The §8.2 selection over n candidates in position order (keys X[i] [d]): all of them when
 * n ≤ target; otherwise the `recent` last ones plus target − recent greedy k-center
 * representatives of the others, the first center being candidate 0.
 * recent: < target (clamped to target − 1). keep: out, ascending candidate indices;
 * centers, dist: scratch [n]. Returns the count, min(n, target). */
int subgen_select(const float *const *X, int n, int d, int target, int recent, int *keep,
                  int *centers, double *dist)
{
    if (n <= target) return evict_keep_all(keep, n);
    if (recent > target - 1) recent = target - 1;
    if (recent < 0) recent = 0;
    /* k-center over the non-recent candidates, then the recent window */
    int n_old = n - recent;
    int k = subgen_gonzalez(X, n_old, d, target - recent, 0, centers, NULL, dist);
    evict_sort_ints(centers, k);
    for (int i = 0; i < k; i++) keep[i] = centers[i];
    for (int j = n_old; j < n; j++) keep[k + j - n_old] = j;
    return k + recent;
}

static const policy_param_def sg_params[] = {
    {"subgen-recent", "window", PARAM_INT, "C'/2", NULL,
     "recent tokens kept exactly (C' = tokens kept after compression); k = C' - r centers"},
    {"prefill-only-decode", NULL, PARAM_ENUM, "reserve", "reserve|capped|grow",
     "reserve: prompt -> C - max_new, peak <= C; capped: prompt -> C - R, re-compress when "
     "full; grow: prompt -> C, append (peak C + new)"},
    {"subgen-recompress", NULL, PARAM_INT, "32", NULL,
     "capped: slots freed by each re-compression R (C' = C - R, at least 1 token kept)"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static void sg_free(kv_cache *kv)
{
    sg_state *s = kv->pstate;
    if (!s) return;
    EVICT_FREE(s->rows, s->dist, s->centers, s->keep, s);
    kv->pstate = NULL;
}

static int sg_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                   size_t errlen)
{
    int recent, mode, R;
    if (policy_param_int(p, "subgen-recent", -1, 0, 1 << 30, &recent, err, errlen) ||
        policy_param_enum(p, "prefill-only-decode", "reserve|capped|grow", DECODE_RESERVE, &mode,
                          err, errlen) ||
        policy_param_int(p, "subgen-recompress", 32, 1, 1 << 30, &R, err, errlen))
        return -1;
    /* [DECISION] C_min = 2: one center and one recent token */
    int C = kv_budget_capacity(p, n_prompt, max_new, 2);
    if (recent >= C) {
        snprintf(err, errlen, "--subgen-recent: %d must be below the capacity C = %d", recent, C);
        return -1;
    }
    /* the compression target and the physical capacity (§7.6) */
    int target, cap, capped = 0;
    if (mode == DECODE_GROW) {
        target = C;
        cap = C + (max_new > 0 ? max_new : 0);
    } else if (mode == DECODE_CAPPED) {
        /* [DECISION] R ≥ C would leave nothing: keep at least one token */
        target = C - R >= 1 ? C - R : 1;
        cap = C;
        capped = 1;
    } else {
        target = C - (max_new > 0 ? max_new : 0);
        if (target < 2) { /* capped fallback (see the header) */
            target = C / 2 > 1 ? C / 2 : 1;
            capped = 1;
        }
        cap = C;
    }
    kv_set_uniform_capacity(kv, cap);
    sg_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->recent = recent;
    s->target = target;
    s->capped = capped;
    s->max_cand = evict_max_cand(cap, n_prompt);
    s->rows = malloc((size_t)s->max_cand * sizeof *s->rows);
    s->dist = malloc((size_t)s->max_cand * sizeof *s->dist);
    s->centers = malloc((size_t)s->max_cand * sizeof *s->centers);
    s->keep = malloc((size_t)s->max_cand * sizeof *s->keep);
    if (!s->rows || !s->dist || !s->centers || !s->keep) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "subgen: out of memory for the k-center scratch");
    sg_free(kv);
    return -1;
}

/* r for a compression to `target` tokens: --subgen-recent or ⌊target/2⌋, below target. */
static int recent_for(const sg_state *s, int target)
{
    int r = s->recent >= 0 ? s->recent : target / 2;
    return r > target - 1 ? target - 1 : r;
}

/* Prefill: compress the live slots + the chunk (in position order) to the target. */
static int sg_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    sg_state *s = kv->pstate;
    const int d = kv->head_dim, hkv = kv->n_kv_heads, n_cand = n_live + c->n_new;
    /* candidate keys: live slots, then the chunk's tokens */
    const float *K = kv_keys_f32(kv, c->layer, g, n_live);
    for (int j = 0; j < n_live; j++) s->rows[j] = K + (size_t)j * d;
    for (int r = 0; r < c->n_new; r++) s->rows[n_live + r] = c->k_new + ((size_t)r * hkv + g) * d;
    return subgen_select(s->rows, n_cand, d, s->target, recent_for(s, s->target), keep,
                         s->centers, s->dist);
}

/* Decode, after attention: when the cache went past its capacity (the capped fallback, or a run
 * longer than max_new), re-run the selection over the live slots back to the target. */
static void sg_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    sg_state *s = kv->pstate;
    int n = kv_len(kv, layer, g), d = kv->head_dim;
    if (n <= kv->cap[kv_idx(kv, layer, g)]) return;
    const float *K = kv_keys_f32(kv, layer, g, n);
    for (int j = 0; j < n; j++) s->rows[j] = K + (size_t)j * d;
    int n_keep = subgen_select(s->rows, n, d, s->target, recent_for(s, s->target), s->keep,
                               s->centers, s->dist);
    kv_compact(kv, layer, g, s->keep, n_keep);
}

int subgen_device_capped(const kv_cache *kv, int *target, int *recent)
{
    const sg_state *s = kv->pstate;
    /* subgen's own hook identifies it (as kv_device.c's is_snap), not its name */
    if (!kv->ops || kv->ops->post_attn != sg_post_attn || !s || !s->capped) return -1;
    if (target) *target = s->target;
    if (recent) *recent = recent_for(s, s->target);
    return 0;
}

const policy_ops policy_subgen = {
    .name = "subgen",
    .paper = "SubGen (Zandieh et al.) §3.2 experiments: recent + greedy k-center, POLICIES.md §8.2",
    .params = "--subgen-recent C'/2 (k = C' - r) --prefill-only-decode reserve|capped|grow "
              "(reserve: C' = C - max_new so the peak is C; capped: C' = C - R, --subgen-recompress "
              "32; grow: C' = C, peak C + max_new)",
    .param_defs = sg_params,
    .stats = 0,
    .reads_rows = 1,
    .init = sg_init,
    .on_prefill = sg_on_prefill,
    .post_attn = sg_post_attn,
    .free_state = sg_free,
};
