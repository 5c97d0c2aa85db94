/* `ada_pyramidkv`: PyramidKV's per-layer budgets (§7.3) with Ada-KV's adaptive split over the
 * KV heads of each layer (§6.2): ada_allocate(…, base_ℓ, α) per layer (POLICIES.md §7). The
 * shared snap_* code, and the [DECISION] on physical variable capacities, are in
 * policy_snapkv.c. */
#include "eviction/eviction.h"

#include <stddef.h>

extern int snap_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, int family,
                     char *err, size_t errlen);
extern int snap_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep);
extern int snap_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                         const float *v);
extern void snap_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride);
extern void snap_free(kv_cache *kv);

static int ada_pyramidkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new,
                              char *err, size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, 1 | 2 /* SNAP_FAMILY_PYRAMID | SNAP_FAMILY_ADA */, err,
                     errlen);
}

static const policy_param_def ada_pyramidkv_params[] = {
    {"snap-window", "obs-window", PARAM_INT, "32", NULL,
     "observation window: the last N prompt tokens score the prefix and are always kept"},
    {"snap-pool", NULL, PARAM_ENUM, "max", "max|avg", "pooling of the prefix scores"},
    {"snap-kernel", "pool-kernel", PARAM_INT, "7", NULL, "pooling kernel (odd)"},
    {"prefill-only-decode", NULL, PARAM_ENUM, "reserve", "reserve|capped|grow",
     "decode: reserve max_new slots (peak C), re-compress every R steps (peak C), or grow (peak C + n_gen)"},
    {"snap-recompress", NULL, PARAM_INT, "32", NULL, "capped: slots freed by each re-compression (R)"},
    {"pyramid-beta", NULL, PARAM_FLOAT, "20", NULL, "top layer keeps base/beta prefix tokens (beta >= 1)"},
    {"pyramid-schedule", NULL, PARAM_ENUM, "code", "code|exact",
     "code: AdaKV's floored step (overshoots the total); exact: layer budgets sum to L*base"},
    {"ada-alpha", NULL, PARAM_FLOAT, "0.5", NULL, "safeguard: share of the layer budget split uniformly"},
    {"ada-alloc", NULL, PARAM_ENUM, "exact", "exact|reference",
     "exact: budgets sum to H_kv*base; reference: AdaKV's torch.round (sum may fall short)"},
    {"ada-gqa", NULL, PARAM_ENUM, "mean", "mean|max", "reduction of the scores over a KV group's query heads"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_ada_pyramidkv = {
    .name = "ada_pyramidkv",
    .paper = "Ada-KV (Feng et al. 2024) on PyramidKV budgets; POLICIES.md §6, §7",
    .params = "pyramidkv layer budgets split over KV heads by a global top-B (alpha 0.5); decode "
              "reserves max_new slots",
    .param_defs = ada_pyramidkv_params,
    .stats = 0,
    .init = ada_pyramidkv_init,
    .on_prefill = snap_on_prefill,
    .pre_attn = snap_pre_attn,
    .post_attn = snap_post_attn,
    .free_state = snap_free,
};
