/* `ada_snapkv`: Ada-KV's adaptive head budgets on SnapKV (POLICIES.md §6; Feng et al.,
 * "Ada-KV", with AdaKV's code for the lost formulas). Per layer the total H_kv·base is split
 * over the KV heads by one global top-B of their pooled observation scores, softened by α
 * (B_g = (1−α)·c_g + α·base, exact or reference rounding), and each head keeps its top-B_g
 * plus the window: heads have different lengths. The per-head capacities are physical: each
 * layer owns the uniform arena and it is re-partitioned once the split is known (see the
 * [DECISION] at the top of snap_alloc.c; the shared snap_* code: eviction/snap_internal.h). */
#include "eviction/snap_internal.h"

static int ada_snapkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                           size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, SNAP_FAMILY_ADA, err, errlen);
}

static const policy_param_def ada_snapkv_params[] = {
    SNAP_PARAM_DEFS,
    SNAP_ADA_PARAM_DEFS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_ada_snapkv = {
    .name = "ada_snapkv",
    .paper = "Ada-KV (Feng et al. 2024) §3, Alg. 1 on SnapKV; POLICIES.md §6",
    .params = "snapkv with the layer budget split over KV heads by a global top-B (alpha 0.5); decode "
              "reserves max_new slots",
    .param_defs = ada_snapkv_params,
    .init = ada_snapkv_init,
    SNAP_HOOKS,
};
