/* The table of eviction policies: one file per policy, registered here by name
 * (POLICIES.md §0). */
#include "eviction/eviction.h"

#include <string.h>

extern const policy_ops policy_full;

static const policy_ops *const all_policies[] = {
    &policy_full,
    NULL,
};

const policy_ops *const *policy_all(void) { return all_policies; }

const policy_ops *policy_find(const char *name)
{
    for (int i = 0; all_policies[i]; i++)
        if (strcmp(all_policies[i]->name, name) == 0) return all_policies[i];
    return NULL;
}
