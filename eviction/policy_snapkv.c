/* `snapkv` (POLICIES.md §5) and the hooks shared by the whole snap family: `pyramidkv` (§7),
 * `ada_snapkv` (§6) and `ada_pyramidkv` (§6, §7), with the prefill-only decode phase of §7.6.
 * The other three policy files only declare their flags and call snap_init with their family
 * bits.
 *
 * The family in one paragraph: at the end of the prompt, the last w_obs prompt queries (the
 * observation window) attend to every candidate; a candidate's score is that attention averaged
 * over the window rows and over the query heads of its KV group; the prefix scores are smoothed
 * by a 1-D max (or avg) pool; each (layer, KV head) keeps its top-`base` prefix tokens plus the
 * window. pyramidkv gives lower layers a larger base (arithmetic schedule, §7.3); ada_* split a
 * layer's total over its KV heads by a global top-B (§6.2). The decode phase (§7.6) appends;
 * --prefill-only-decode picks how the peak stays within the budget:
 *   reserve (default): the prompt is compressed to C − max_new per head (the layer/head
 *            schedules applied to that prompt budget), so appending max_new tokens ends at C;
 *   capped:  the prompt is compressed to C' = C − R; a ring keeps the last w_obs queries per
 *            layer and, when a head reaches C, the same selection re-runs on the cache → C';
 *   grow:    the papers' behaviour: prompt → C, decode appends (peak C + n_gen, opt-in).
 *
 * The scoring (observation window, pooling, top-k) is in snap_score.c, the budget allocation
 * (uniform, pyramid §7.3, Ada-KV §6.2, with the [DECISION] on the ada arena) in snap_alloc.c;
 * the state and the functions they share in snap_internal.h. */
#include "eviction/policy_common.h"
#include "eviction/snap_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Decode re-compression of one head (capped mode, and the overflow guard): back to its target. */
static void recompress_head(kv_cache *kv, snap_state *s, int layer, int g, int end)
{
    snap_cands c = snap_live_cands(kv, layer, g);
    int *keep = s->keep + (size_t)g * s->max_cand;
    int n = snap_select_head(s, layer, g, &c, end, s->target[layer * s->Hkv + g], keep);
    if (n < c.n) kv_compact(kv, layer, g, keep, n);
}

/* ------------------------------------------------------------------ hooks */

/* Reads the flags, sizes the capacities (§1.2, §5.2, §7.3, §7.6) and allocates the ring and
 * scratch. family: SNAP_FAMILY_* bits. Returns 0, or -1 with err set. */
int snap_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, int family, char *err,
              size_t errlen)
{
    snap_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->pyramid = (family & SNAP_FAMILY_PYRAMID) != 0;
    s->ada = (family & SNAP_FAMILY_ADA) != 0;
    s->L = kv->n_layers;
    s->Hkv = kv->n_kv_heads;
    s->H = kv->n_heads;
    s->G = kv->n_heads / kv->n_kv_heads;
    s->d = kv->head_dim;
    s->plan_layer = -1;
    /* flags */
    int mode, R, schedule = SNAP_SCHEDULE_CODE;
    double beta = 20.0;
    if (policy_param_int(p, "snap-window", 32, 1, 1 << 20, &s->w_flag, err, errlen) ||
        policy_param_enum(p, "snap-pool", "max|avg", SNAP_POOL_MAX, &s->pool, err, errlen) ||
        policy_param_int(p, "snap-kernel", 7, 1, 1 << 20, &s->kernel, err, errlen) ||
        policy_param_enum(p, "prefill-only-decode", "reserve|capped|grow", SNAP_RESERVE, &mode, err, errlen) ||
        policy_param_int(p, "snap-recompress", 32, 1, 1 << 30, &R, err, errlen))
        return -1;
    if (s->kernel % 2 == 0) {
        snprintf(err, errlen, "--snap-kernel: must be odd (got %d)", s->kernel);
        return -1;
    }
    if (s->pyramid &&
        (policy_param_float(p, "pyramid-beta", 20.0, 1.0, 1e9, &beta, err, errlen) ||
         policy_param_enum(p, "pyramid-schedule", "code|exact", SNAP_SCHEDULE_CODE, &schedule, err, errlen)))
        return -1;
    if (s->ada &&
        (policy_param_float(p, "ada-alpha", 0.5, 0.0, 1.0, &s->alpha, err, errlen) ||
         policy_param_enum(p, "ada-alloc", "exact|reference", SNAP_ALLOC_EXACT, &s->alloc, err, errlen) ||
         policy_param_enum(p, "ada-gqa", "mean|max", SNAP_GQA_MEAN, &s->gqa, err, errlen)))
        return -1;

    /* capacity C per head (C_min = window + 1) and the prompt target P per mode (§7.6) */
    int C = kv_budget_capacity(p, n_prompt, max_new, s->w_flag + 1), P;
    if (max_new < 0) max_new = 0;
    if (C >= n_prompt + max_new) {
        /* nothing can be evicted: reserve sizing keeps the prompt whole and the cache at C */
        mode = SNAP_RESERVE;
    } else if (mode == SNAP_RESERVE && C - max_new < s->w_flag + 1) {
        /* the prompt budget would not hold the window + 1: fall back to capped */
        mode = SNAP_CAPPED;
    }
    if (mode == SNAP_CAPPED) {
        /* [DECISION] R is clamped to C/2 so that C' = C − R keeps at least half the cache (at
         * the smallest C = 33, R = 32 would leave one token) */
        if (R > C / 2) R = C / 2 > 0 ? C / 2 : 1;
        P = C - R;
        s->slack = R;
    } else if (mode == SNAP_GROW) {
        P = C;
        s->slack = max_new;
    } else {
        P = C - max_new;
        s->slack = max_new;
    }
    s->mode = mode;
    /* effective window (§5.2: P ≤ w_obs → max(1, P/2)) and the per-layer prompt targets */
    s->w = P > s->w_flag ? s->w_flag : (P / 2 > 1 ? P / 2 : 1);
    int max_cap = snap_size_layers(kv, s, P, n_prompt, max_new, beta, schedule);
    if (max_cap < 0) goto oom;
    /* the query ring and the scratch (decode needs at most max_cap + 1 candidates per head) */
    s->ring = calloc((size_t)s->L * s->w_flag * s->H * s->d, sizeof(float));
    s->ring_pos = malloc((size_t)s->L * s->Hkv * s->w_flag * sizeof(int32_t));
    s->n_keep = calloc((size_t)s->Hkv * 6, sizeof(int));
    if (!s->ring || !s->ring_pos || !s->n_keep || snap_ensure_scratch(s, evict_max_cand(max_cap, n_prompt)))
        goto oom;
    for (size_t i = 0; i < (size_t)s->L * s->Hkv * s->w_flag; i++) s->ring_pos[i] = -1;
    s->n_live_kept = s->n_keep + s->Hkv;
    s->n_cand = s->n_keep + 2 * s->Hkv;
    s->n_prefix = s->n_keep + 3 * s->Hkv;
    s->counts = s->n_keep + 4 * s->Hkv;
    s->budgets = s->n_keep + 5 * s->Hkv;
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory for the policy state", kv->ops->name);
    return -1;
}

void snap_free(kv_cache *kv)
{
    snap_state *s = kv->pstate;
    if (!s) return;
    EVICT_FREE(s->layer_target, s->target, s->arena, s->cap_max, s->keep_max, s->caps, s->ring,
               s->ring_pos, s->att, s->pooled, s->row, s->acc, s->idx, s->keep, s->n_keep, s);
    kv->pstate = NULL;
}

/* on_prefill (§5.3, §6.2, §7.3): compress (layer, g) to its prompt target, with the window
 * ending at the chunk's end; after the last prompt chunk ada layers are split, after an
 * earlier chunk (--prefill-chunk) their heads select uniformly. Records the group's last
 * queries in the ring first. Returns the keep count, or -1 (out of memory). */
int snap_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    snap_state *s = kv->pstate;
    const int layer = c->layer, end = c->pos0 + c->n_new, final = end >= kv->prompt_tokens;
    /* remember the queries of the chunk's last w_flag rows: this group's, or every group's
     * when head 0 of an ada layer plans the whole layer */
    int all = s->ada && g == 0;
    for (int h = all ? 0 : g; h < (all ? s->Hkv : g + 1); h++)
        for (int r = c->n_new > s->w_flag ? c->n_new - s->w_flag : 0; r < c->n_new; r++)
            snap_ring_put(s, layer, h, c->pos0 + r, c->q_new + ((size_t)r * s->H + (size_t)h * s->G) * s->d);
    /* scratch for this chunk's candidates (ada: every head's, before the plan is made) */
    int most = n_live;
    if (all)
        for (int h = 0; h < s->Hkv; h++)
            if (kv_len(kv, layer, h) > most) most = kv_len(kv, layer, h);
    if ((!s->ada || all) && snap_ensure_scratch(s, most + c->n_new + 1) != 0) return -1;
    if (s->ada) return snap_ada_on_prefill(kv, s, c, g, n_live, keep, final);
    /* uniform heads: select within the prompt target after every chunk ([DECISION] not the
     * capacity between chunks: the peak of a chunked prefill stays that of a single pass, also
     * when the pyramid code schedule overshoots the uniform total) */
    snap_cands cands = snap_chunk_cands(kv, c, g, n_live);
    return snap_select_head(s, layer, g, &cands, end, s->target[layer * s->Hkv + g], keep);
}

/* pre_attn: records the group's query of position t in the ring and appends. A head with no
 * room left (only when decoding past max_new in reserve/grow mode, or with an unfinished
 * prompt) is re-compressed first, window ending at t. */
int snap_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k, const float *v)
{
    snap_state *s = kv->pstate;
    snap_ring_put(s, layer, g, t, q);
    if (s->ada && g == 0) {
        /* ada: the layer is re-split before any of its heads appends */
        for (int h = 0; h < s->Hkv; h++)
            if (kv_len(kv, layer, h) >= kv->cap[kv_idx(kv, layer, h)]) {
                snap_recompress_layer(kv, s, layer, t);
                break;
            }
    }
    if (kv_len(kv, layer, g) >= kv->cap[kv_idx(kv, layer, g)]) recompress_head(kv, s, layer, g, t);
    return kv_len(kv, layer, g);
}

/* post_attn (capped mode, §7.6): a head that reached its capacity is re-compressed to its
 * target C' = C − R from the ring queries (window ending at t, included); ada re-splits its
 * whole layer. Other modes never evict here. */
void snap_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    snap_state *s = kv->pstate;
    if (s->mode != SNAP_CAPPED) return;
    if (s->ada) {
        for (int h = 0; h < s->Hkv; h++)
            if (kv_len(kv, layer, h) >= kv->cap[kv_idx(kv, layer, h)]) {
                snap_recompress_layer(kv, s, layer, t + 1);
                return;
            }
        return;
    }
    if (kv_len(kv, layer, g) >= kv->cap[kv_idx(kv, layer, g)]) recompress_head(kv, s, layer, g, t + 1);
}

static int snapkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                       size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, 0, err, errlen);
}

static const policy_param_def snapkv_params[] = {
    SNAP_PARAM_DEFS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_snapkv = {
    .name = "snapkv",
    .paper = "SnapKV (Li et al. 2024), baseline in Ada-KV §4.1; POLICIES.md §5, §7.6",
    .params = "top-(C − 32) prompt tokens by max-pooled (7) observation-window attention + the last 32 "
              "prompt tokens; decode reserves max_new slots",
    .param_defs = snapkv_params,
    .init = snapkv_init,
    SNAP_HOOKS,
};
