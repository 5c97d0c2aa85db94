/* `pyramidkv`: SnapKV selection with a layer-dependent budget (POLICIES.md §7; PyramidKV, Cai
 * et al. 2024, as implemented in AdaKV's `pyram_mode`). Lower layers keep more: base_ℓ falls
 * arithmetically from max_b = 2·base − floor(base/β) to min_b (§7.3, --pyramid-schedule code:
 * floored step, Σ_ℓ base_ℓ overshoots L·base by up to L(L−1)/2 tokens per head; exact: Σ =
 * L·base). Within a layer every KV head has the same capacity. The selection, decode phase and
 * ring live in policy_snapkv.c (snap_*). */
#include "eviction/eviction.h"

#include <stddef.h>

extern int snap_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, int family,
                     char *err, size_t errlen);
extern int snap_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep);
extern int snap_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                         const float *v);
extern void snap_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride);
extern void snap_free(kv_cache *kv);

static int pyramidkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                          size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, 1 /* SNAP_FAMILY_PYRAMID */, err, errlen);
}

static const policy_param_def pyramidkv_params[] = {
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
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_pyramidkv = {
    .name = "pyramidkv",
    .paper = "PyramidKV (Cai et al. 2024), baseline in Ada-KV; POLICIES.md §7",
    .params = "snapkv with an arithmetic per-layer budget (beta 20, lower layers more); decode reserves "
              "max_new slots",
    .param_defs = pyramidkv_params,
    .stats = 0,
    .init = pyramidkv_init,
    .on_prefill = snap_on_prefill,
    .pre_attn = snap_pre_attn,
    .post_attn = snap_post_attn,
    .free_state = snap_free,
};
