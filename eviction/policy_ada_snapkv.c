/* `ada_snapkv`: Ada-KV's adaptive head budgets on SnapKV (POLICIES.md §6; Feng et al.,
 * "Ada-KV", with AdaKV's code for the lost formulas). Per layer the total H_kv·base is split
 * over the KV heads by one global top-B of their pooled observation scores, softened by α
 * (B_g = (1−α)·c_g + α·base, exact or reference rounding), and each head keeps its top-B_g
 * plus the window: heads have different lengths. The per-head capacities are physical: each
 * layer owns the uniform arena and it is re-partitioned once the split is known (see the
 * [DECISION] at the top of policy_snapkv.c, which holds the shared snap_* code). */
#include "eviction/eviction.h"

#include <stddef.h>

extern int snap_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, int family,
                     char *err, size_t errlen);
extern int snap_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep);
extern int snap_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                         const float *v);
extern void snap_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride);
extern void snap_free(kv_cache *kv);

static int ada_snapkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                           size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, 2 /* SNAP_FAMILY_ADA */, err, errlen);
}

static const policy_param_def ada_snapkv_params[] = {
    {"snap-window", "obs-window", PARAM_INT, "32", NULL,
     "observation window: the last N prompt tokens score the prefix and are always kept"},
    {"snap-pool", NULL, PARAM_ENUM, "max", "max|avg", "pooling of the prefix scores"},
    {"snap-kernel", "pool-kernel", PARAM_INT, "7", NULL, "pooling kernel (odd)"},
    {"prefill-only-decode", NULL, PARAM_ENUM, "reserve", "reserve|capped|grow",
     "decode: reserve max_new slots (peak C), re-compress every R steps (peak C), or grow (peak C + n_gen)"},
    {"snap-recompress", NULL, PARAM_INT, "32", NULL, "capped: slots freed by each re-compression (R)"},
    {"ada-alpha", NULL, PARAM_FLOAT, "0.5", NULL, "safeguard: share of the layer budget split uniformly"},
    {"ada-alloc", NULL, PARAM_ENUM, "exact", "exact|reference",
     "exact: budgets sum to H_kv*base; reference: AdaKV's torch.round (sum may fall short)"},
    {"ada-gqa", NULL, PARAM_ENUM, "mean", "mean|max", "reduction of the scores over a KV group's query heads"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_ada_snapkv = {
    .name = "ada_snapkv",
    .paper = "Ada-KV (Feng et al. 2024) §3, Alg. 1 on SnapKV; POLICIES.md §6",
    .params = "snapkv with the layer budget split over KV heads by a global top-B (alpha 0.5); decode "
              "reserves max_new slots",
    .param_defs = ada_snapkv_params,
    .stats = 0,
    .init = ada_snapkv_init,
    .on_prefill = snap_on_prefill,
    .pre_attn = snap_pre_attn,
    .post_attn = snap_post_attn,
    .free_state = snap_free,
};
