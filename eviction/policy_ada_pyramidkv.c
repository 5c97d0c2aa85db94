/* `ada_pyramidkv`: PyramidKV's per-layer budgets (§7.3) with Ada-KV's adaptive split over the
 * KV heads of each layer (§6.2): ada_allocate(…, base_ℓ, α) per layer (POLICIES.md §7). The
 * shared snap_* code is declared in eviction/snap_internal.h; the [DECISION] on physical
 * variable capacities is at the top of snap_alloc.c. */
#include "eviction/snap_internal.h"

static int ada_pyramidkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new,
                              char *err, size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, SNAP_FAMILY_PYRAMID | SNAP_FAMILY_ADA, err, errlen);
}

static const policy_param_def ada_pyramidkv_params[] = {
    SNAP_PARAM_DEFS,
    SNAP_PYRAMID_PARAM_DEFS,
    SNAP_ADA_PARAM_DEFS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_ada_pyramidkv = {
    .name = "ada_pyramidkv",
    .paper = "Ada-KV (Feng et al. 2024) on PyramidKV budgets; POLICIES.md §6, §7",
    .params = "pyramidkv layer budgets split over KV heads by a global top-B (alpha 0.5); decode "
              "reserves max_new slots",
    .param_defs = ada_pyramidkv_params,
    .init = ada_pyramidkv_init,
    SNAP_HOOKS,
};
