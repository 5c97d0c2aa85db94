/* Fuzz target: the policy preset reader (policy_preset_parse, used by --policy-config). On
 * success the parameters go through kv_init for a small model (2 layers, 2 KV heads of 4 query
 * heads, head_dim 8, 24 prompt + 8 new tokens), as llm-run does: every policy's parameter
 * checks see the fuzzed values, and a capacity must come out in [1, n_prompt + max_new]
 * unless init refuses with a one-line error. */
#include "fuzz/fuzz.h"
#include "eviction/eviction.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const policy_ops *ops = NULL;
    policy_params p;
    memset(&p, 0, sizeof p);
    p.budget = 1.0;
    char err[LLM_ERR_LEN] = "";
    if (policy_preset_parse((const char *)data, size, "fuzz/preset.json", &ops, &p, err,
                            sizeof err) != 0) {
        fuzz_check_err(err);
        return 0;
    }
    if (!ops) fuzz_fail("success without a policy", "");
    if (!(p.budget > 0)) fuzz_fail("accepted a budget <= 0", "");
    kv_cache kv;
    err[0] = '\0';
    const int n_prompt = 24, max_new = 8;
    if (kv_init(&kv, ops, &p, 2, 2, 4, 8, n_prompt, max_new, err, sizeof err) != 0) {
        fuzz_check_err(err);
        return 0;
    }
    for (int i = 0; i < kv.n_layers * kv.n_kv_heads; i++)
        if (kv.cap[i] < 1) fuzz_fail("capacity < 1", ops->name);
    kv_free(&kv);
    return 0;
}
