/* `local`: a sliding window over the C most recent tokens (POLICIES.md §2.2; "Local" in H2O,
 * "local window" in BUZZ). No statistics. Prefill keeps positions [N−C, N); decode appends the
 * new token (attend-then-evict, §1.4) and then drops the oldest one.
 *
 * The oldest slot is found in O(1): after prefill the slots are in position order (keep-lists are
 * ascending), and every eviction puts the newest token into the slot of the oldest, so the slots
 * form a ring whose oldest entry is at ring[l,g] (§1.3 "in-place replace"). */
#include "eviction/eviction.h"

#include <stdio.h>
#include <stdlib.h>

/* pstate: the slot of the oldest token per (layer, KV head). */
typedef struct {
    int *ring; /* [n_layers*n_kv_heads] */
} local_state;

/* local_prefill_select: keep the most recent cap of n candidates (§2.2).
 * Candidates are in position order, so that is the index range [n − cap, n).
 * keep: out, ascending candidate indices. Returns the count, min(n, cap). */
int local_prefill_select(int n, int cap, int *keep)
{
    int first = n > cap ? n - cap : 0;
    for (int j = first; j < n; j++) keep[j - first] = j;
    return n - first;
}

static int local_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                      size_t errlen)
{
    /* one capacity for every (layer, head): the window C */
    int cap = kv_budget_capacity(p, n_prompt, max_new, 1);
    kv_set_uniform_capacity(kv, cap);
    int n = kv->n_layers * kv->n_kv_heads;
    /* the ring pointers (all 0: slot 0 is the oldest until the first eviction) */
    local_state *s = calloc(1, sizeof *s);
    if (s) s->ring = calloc((size_t)n, sizeof *s->ring);
    if (!s || !s->ring) {
        free(s);
        snprintf(err, errlen, "policy local: out of memory");
        return -1;
    }
    kv->pstate = s;
    return 0;
}

static int local_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    local_state *s = kv->pstate;
    int idx = kv_idx(kv, c->layer, g);
    /* the gathered slots are in position order again: the oldest is slot 0 */
    s->ring[idx] = 0;
    return local_prefill_select(n_live + c->n_new, kv->cap[idx], keep);
}

static void local_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    local_state *s = kv->pstate;
    int idx = kv_idx(kv, layer, g), cap = kv->cap[idx];
    /* not full yet (the new token fits): nothing to do */
    if (kv->len[idx] <= cap) return;
    /* drop the oldest slot; the new token (last slot) moves into it and becomes the newest */
    kv_evict_swap_last(kv, layer, g, s->ring[idx]);
    /* the next oldest is the following slot of the ring */
    s->ring[idx] = (s->ring[idx] + 1) % cap;
}

static void local_free_state(kv_cache *kv)
{
    local_state *s = kv->pstate;
    free(s->ring);
    free(s);
    kv->pstate = NULL;
}

const policy_ops policy_local = {
    .name = "local",
    .paper = "H2O §5 / BUZZ §4 baseline: sliding window (POLICIES.md §2.2)",
    .params = "none; window = C (the budget)",
    .param_defs = NULL,
    .stats = 0,
    .init = local_init,
    .on_prefill = local_on_prefill,
    .post_attn = local_post_attn,
    .free_state = local_free_state,
};
