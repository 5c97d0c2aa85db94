/* `buzz_logn`: BUZZ eviction plus log-n attention scaling (POLICIES.md §4.9, BUZZ §3.5).
 *
 * The eviction is exactly `buzz` (policy_buzz.c, reused through its non-static hooks). In
 * addition the engine multiplies the 1/sqrt(d) logit scale of every attention call over n keys
 * by λ = log(n)/log(base) = log_base n (base 512 by default): softmax(λ·q·kᵀ/sqrt(d)).
 * n = the number of keys of the call: |S|+1 in decode, the call's keys in prefill (N when the
 * prompt is prefilled as one call). No clamping: λ < 1 below 512 keys, λ = 0 for n = 1.
 */
#include "eviction/eviction.h"

#include <math.h>
#include <stdio.h>

/* From policy_buzz.c. */
extern const policy_param_def buzz_logn_param_defs[];
int buzz_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
              size_t errlen);
int buzz_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep);
void buzz_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride);
void buzz_free_state(kv_cache *kv);
void buzz_set_aux(kv_cache *kv, double v);
double buzz_aux(const kv_cache *kv);

/* λ = log(n)/log(base) for an attention call over n ≥ 1 keys (§4.9); base > 1. n < 1 → 0
 * ([DECISION]: an empty call has no logits to scale; never happens in the engine). */
float buzz_logn_factor(int n, double base)
{
    if (n < 1) return 0.0f;
    return (float)(log((double)n) / log(base));
}

/* buzz's parameters, then --logn-base (> 1) and --logn-mode (only "call"). */
static int buzz_logn_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new,
                          char *err, size_t errlen)
{
    double base;
    int mode;
    if (policy_param_float(p, "logn-base", 512.0, -INFINITY, INFINITY, &base, err, errlen) ||
        policy_param_enum(p, "logn-mode", "call", 0, &mode, err, errlen))
        return -1;
    if (!(base > 1.0) || isinf(base)) {
        snprintf(err, errlen, "--logn-base: must be a finite number > 1, got %g", base);
        return -1;
    }
    if (buzz_init(kv, p, n_prompt, max_new, err, errlen) != 0) return -1;
    buzz_set_aux(kv, base);
    return 0;
}

/* The engine's hook: factor on 1/sqrt(d) for a call over n_keys keys. */
static float buzz_logn_scale(const kv_cache *kv, int n_keys)
{
    return buzz_logn_factor(n_keys, buzz_aux(kv));
}

const policy_ops policy_buzz_logn = {
    .name = "buzz_logn",
    .paper = "BUZZ (Zhao et al.) §3.5, eq. 7-8: buzz + log_512(n) logit scaling",
    .params = "buzz's parameters + --logn-base 512 --logn-mode call (n = keys of the call)",
    .param_defs = buzz_logn_param_defs,
    .stats = KV_STAT_PREFILL_COLSUM | KV_STAT_DECODE_PROBS,
    .init = buzz_logn_init,
    .on_prefill = buzz_on_prefill,
    .post_attn = buzz_post_attn,
    .logit_scale = buzz_logn_scale,
    .free_state = buzz_free_state,
};
