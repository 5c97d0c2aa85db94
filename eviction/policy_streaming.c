/* `streaming`: StreamingLLM, attention sinks + a sliding window (POLICIES.md §2.3). Keeps the
 * positions [0, n_sink) and the C − n_sink most recent. Decode appends the new token
 * (attend-then-evict, §1.4) and then drops the oldest non-sink token. No statistics.
 *
 * The oldest non-sink slot is found in O(1): the first eviction happens once more than C ≥
 * n_sink + 1 tokens have been seen, and until then slots are in position order, so the sinks hold
 * slots [0, n_sink). Every eviction puts the newest token into the oldest window slot, so the
 * window slots [n_sink, C) form a ring whose oldest entry is n_sink + ring[l,g] (§1.3). */
#include "eviction/eviction.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int n_sink; /* positions [0, n_sink) are never evicted */
    int *ring;  /* [n_layers*n_kv_heads] oldest window slot, relative to n_sink */
} streaming_state;

/* streaming_prefill_select: which of n candidates to keep (§2.3).
 * Candidates are in position order; the first n_sinks of them are the sink tokens present
 * (positions < n_sink). Keeps those and fills the rest of the capacity cap with the most recent
 * candidates. Requires n_sinks < cap. keep: out, ascending candidate indices. Returns the count,
 * min(n, cap). */
int streaming_prefill_select(int n, int n_sinks, int cap, int *keep)
{
    /* everything fits: keep all */
    if (n <= cap) {
        for (int j = 0; j < n; j++) keep[j] = j;
        return n;
    }
    /* the sinks, then the cap − n_sinks most recent candidates */
    int m = 0;
    for (; m < n_sinks; m++) keep[m] = m;
    for (int j = n - (cap - n_sinks); j < n; j++) keep[m++] = j;
    return m;
}

static int streaming_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new,
                          char *err, size_t errlen)
{
    /* the capacity C from the budget; the sinks take part of it */
    int n_sink;
    if (policy_param_int(p, "sink", -1, 0, 1 << 24, &n_sink, err, errlen) != 0) return -1;
    /* sinks given: the capacity is at least sink + 1 (a window of one; POLICIES.md §1.2 raises a
     * smaller budget to that minimum, and the caller reports it) */
    int cap = kv_budget_capacity(p, n_prompt, max_new, n_sink >= 0 ? n_sink + 1 : 1);
    if (n_sink < 0) {
        /* default 4 sinks; [PROPOSAL §2.3] floor(C/2) when C ≤ 8 so a window remains */
        n_sink = cap <= 8 ? cap / 2 : 4;
    } else if (n_sink >= cap) {
        /* the whole run fits in the sinks (capacity capped at prompt + max new): all kept */
        n_sink = cap;
    }
    kv_set_uniform_capacity(kv, cap);
    int n = kv->n_layers * kv->n_kv_heads;
    streaming_state *s = calloc(1, sizeof *s);
    if (s) s->ring = calloc((size_t)n, sizeof *s->ring);
    if (!s || !s->ring) {
        free(s);
        snprintf(err, errlen, "policy streaming: out of memory");
        return -1;
    }
    s->n_sink = n_sink;
    kv->pstate = s;
    return 0;
}

static int streaming_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    streaming_state *s = kv->pstate;
    int idx = kv_idx(kv, c->layer, g), n = n_live + c->n_new;
    const int32_t *live_pos = kv_positions(kv, c->layer, g);
    /* count the sinks present: the leading candidates at positions < n_sink */
    int n_sinks = 0;
    while (n_sinks < n &&
           (n_sinks < n_live ? live_pos[n_sinks] : c->pos0 + (n_sinks - n_live)) < s->n_sink)
        n_sinks++;
    /* the gathered slots are in position order again: sinks first, oldest window slot next */
    s->ring[idx] = 0;
    return streaming_prefill_select(n, n_sinks, kv->cap[idx], keep);
}

static void streaming_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    streaming_state *s = kv->pstate;
    int idx = kv_idx(kv, layer, g), cap = kv->cap[idx];
    /* not full yet (the new token fits): nothing to do */
    if (kv->len[idx] <= cap) return;
    /* drop the oldest window slot; the new token (last slot) moves into it */
    kv_evict_swap_last(kv, layer, g, s->n_sink + s->ring[idx]);
    /* the next oldest is the following window slot of the ring */
    s->ring[idx] = (s->ring[idx] + 1) % (cap - s->n_sink);
}

static void streaming_free_state(kv_cache *kv)
{
    streaming_state *s = kv->pstate;
    free(s->ring);
    free(s);
    kv->pstate = NULL;
}

static const policy_param_def streaming_params[] = {
    {"sink", NULL, PARAM_INT, "4", NULL,
     "attention-sink tokens (positions 0..sink-1) always kept; auto: 4, or C/2 when C <= 8"},
    {NULL, NULL, PARAM_INT, NULL, NULL, NULL},
};

const policy_ops policy_streaming = {
    .name = "streaming",
    .paper = "StreamingLLM (Xiao et al. 2023), baseline in BUZZ/H2O/SubGen/Ada-KV (POLICIES.md §2.3)",
    .params = "--sink 4 (C/2 when C <= 8); window = C - sink",
    .param_defs = streaming_params,
    .stats = 0,
    .init = streaming_init,
    .on_prefill = streaming_on_prefill,
    .post_attn = streaming_post_attn,
    .free_state = streaming_free_state,
};
