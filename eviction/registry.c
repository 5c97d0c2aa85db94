/* The table of eviction policies: one file per policy, registered here by name
 * (POLICIES.md §0). Entries are weak references, so a policy file that is not built simply
 * does not appear. */
#include "eviction/eviction.h"

#include <string.h>

#define POLICIES(X)                                                                            \
    X(full) X(local) X(streaming) X(h2o) X(buzz) X(buzz_logn) X(snapkv) X(pyramidkv)           \
    X(ada_snapkv) X(ada_pyramidkv) X(subgen) X(subgen_stream) X(hashevict) X(scissorhands)     \
    X(tova) X(l2norm) X(random)

#define DECLARE(name) extern const policy_ops policy_##name __attribute__((weak));
POLICIES(DECLARE)

static const policy_ops *all_policies[64];

const policy_ops *const *policy_all(void)
{
    if (!all_policies[0]) {
        int n = 0;
#define ADD(name) if (&policy_##name) all_policies[n++] = &policy_##name;
        POLICIES(ADD)
        all_policies[n] = NULL;
    }
    return (const policy_ops *const *)all_policies;
}

const policy_ops *policy_find(const char *name)
{
    const policy_ops *const *all = policy_all();
    for (int i = 0; all[i]; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}
