/* `full`: keep everything (POLICIES.md §2.1). Capacity N + max_new; the budget is ignored.
 * The upper bound in every paper and the reference for the identity property. */
#include "eviction/eviction.h"

static int full_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new,
                     char *err, size_t errlen)
{
    int cap = n_prompt + max_new;
    if (cap < 1) cap = 1;
    kv_set_uniform_capacity(kv, cap);
    return 0;
}

const policy_ops policy_full = {
    .name = "full",
    .paper = "all papers (upper bound)",
    .params = "none; capacity = prompt + max new tokens",
    .stats = 0,
    .init = full_init,
};
