/* `pyramidkv`: SnapKV selection with a layer-dependent budget (POLICIES.md §7; PyramidKV, Cai
 * et al. 2024, as implemented in AdaKV's `pyram_mode`). Lower layers keep more: base_ℓ falls
 * arithmetically from max_b = 2·base − floor(base/β) to min_b (§7.3, --pyramid-schedule code:
 * floored step, Σ_ℓ base_ℓ overshoots L·base by up to L(L−1)/2 tokens per head; exact: Σ =
 * L·base). Within a layer every KV head has the same capacity. The selection (snap_score.c),
 * the schedule (snap_alloc.c) and the decode phase (policy_snapkv.c) are shared snap_*
 * code (eviction/snap_internal.h). */
#include "eviction/snap_internal.h"

static int pyramidkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                          size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, SNAP_FAMILY_PYRAMID, err, errlen);
}

static const policy_param_def pyramidkv_params[] = {
    SNAP_PARAM_DEFS,
    SNAP_PYRAMID_PARAM_DEFS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_pyramidkv = {
    .name = "pyramidkv",
    .paper = "PyramidKV (Cai et al. 2024), baseline in Ada-KV; POLICIES.md §7",
    .params = "snapkv with an arithmetic per-layer budget (beta 20, lower layers more); decode reserves "
              "max_new slots",
    .param_defs = pyramidkv_params,
    .init = pyramidkv_init,
    SNAP_HOOKS,
};
