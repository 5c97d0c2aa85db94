/* `tova`: Token Omission Via Attention (Oren et al. 2024, "Transformers are multi-state RNNs";
 * POLICIES.md §10.3, §12). Layer-wise: once the cache is full, after attention the probabilities
 * of the current query are averaged over *all* query heads of the layer and the slot with the
 * lowest average is evicted from S ∪ {t} (the new token may itself be evicted), the same slot in
 * every KV head. No sink or window protection.
 *
 * Every KV head of a layer therefore holds the same positions in the same slot order: prefill
 * gives every head the same keep-list and each eviction is the same swap-with-last in every head.
 * Decode uses the post_attn_layer hook (probabilities of all heads). Prefill [PROPOSAL §10.3]:
 * keep the top-C by the head-averaged attention of the chunk's last query row, computed here
 * from q_new and the candidate keys as the attention saw them (kv_cand_key; logit scale
 * 1/sqrt(head_dim)). */
#include "eviction/policy_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int max_cand;       /* size of the scratch arrays (≥ cap + 1) */
    float *avg;         /* [max_cand] head-averaged attention per candidate / live slot */
    float *logit;       /* [max_cand] one head's logits (prefill) */
    int32_t *pos;       /* [max_cand] candidate positions (prefill) */
    int *heap;          /* [max_cand] top-k heap (prefill) */
    unsigned char *sel; /* [max_cand] selected flags (prefill) */
    int *keep;          /* [max_cand] the layer's prefill keep-list, chosen at g = 0 */
    int n_keep;
    int warned;         /* the missing-layer-hook warning was printed */
} tova_state;

/* tova_prefill_select: keep the top-cap of n candidates by score (§10.3 prefill).
 * score[n]: head-averaged last-row attention; pos[n]: original positions (ties → smaller
 * position, §1.6). heap, sel: scratch [n]. keep: out, ascending candidate indices. Returns the
 * count, min(n, cap). */
int tova_prefill_select(const float *score, const int32_t *pos, int n, int cap, int *keep,
                        int *heap, unsigned char *sel)
{
    if (n <= cap) return evict_keep_all(keep, n); /* everything fits */
    memset(sel, 0, (size_t)n);
    return evict_select_top(score, pos, n, cap, sel, heap, keep);
}

/* tova_select_victim: the slot to evict among n live slots (§10.3 decode).
 * score[n]: the current query's attention averaged over all heads of the layer; pos[n]: original
 * positions. Argmin, ties → smaller position (§1.6). Returns the slot (-1 when n = 0). */
int tova_select_victim(const float *score, const int32_t *pos, int n)
{
    int best = -1;
    for (int j = 0; j < n; j++)
        if (best < 0 || score[j] < score[best] || (score[j] == score[best] && pos[j] < pos[best]))
            best = j;
    return best;
}

/* Grows the scratch arrays to n entries. Returns 0 or -1 (out of memory). */
static int reserve_scratch(tova_state *s, int n)
{
    if (n <= s->max_cand) return 0;
    int ok = 1;
    EVICT_GROW(s->avg, n, ok);
    EVICT_GROW(s->logit, n, ok);
    EVICT_GROW(s->pos, n, ok);
    EVICT_GROW(s->heap, n, ok);
    EVICT_GROW(s->sel, n, ok);
    EVICT_GROW(s->keep, n, ok);
    if (!ok) return -1;
    s->max_cand = n;
    return 0;
}

static void tova_free_state(kv_cache *kv)
{
    tova_state *s = kv->pstate;
    EVICT_FREE(s->avg, s->logit, s->pos, s->heap, s->sel, s->keep, s);
    kv->pstate = NULL;
}

static int tova_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                     size_t errlen)
{
    /* one capacity C for every (layer, head): the sets are shared by the heads of a layer */
    int cap = kv_budget_capacity(p, n_prompt, max_new, 1);
    kv_set_uniform_capacity(kv, cap);
    /* scratch for prefill (up to cap + the whole prompt) and decode (cap + 1) */
    tova_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    if (reserve_scratch(s, cap + (n_prompt > 0 ? n_prompt : 1)) != 0) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "policy tova: out of memory");
    return -1;
}

/* Fills s->avg[0..n) with the attention of the chunk's last query row, averaged over all query
 * heads of the layer, and s->pos with the candidates' positions. Called before any head of the
 * layer is gathered, so every head's live slots are still the candidates 0..n_live−1. */
static void last_row_attention(kv_cache *kv, tova_state *s, const kv_prefill_chunk *c, int n_live)
{
    const int H = kv->n_heads, Hkv = kv->n_kv_heads, G = H / Hkv, d = kv->head_dim;
    const int n = n_live + c->n_new;
    const float scale = 1.0f / sqrtf((float)d);
    const int32_t *live_pos = kv_positions(kv, c->layer, 0);
    float kbuf[d];   /* a live key of a 16-bit cache, widened */
    for (int j = 0; j < n; j++) {
        s->pos[j] = j < n_live ? live_pos[j] : c->pos0 + (j - n_live);
        s->avg[j] = 0.0f;
    }
    for (int h = 0; h < H; h++) {
        int g = h / G;
        const float *q = c->q_new + ((size_t)(c->n_new - 1) * H + h) * d;
        /* logits of the last row over all candidates (causal: it sees every one) */
        float mx = -INFINITY;
        for (int j = 0; j < n; j++) {
            const float *k = kv_cand_key_f32(kv, c, g, n_live, j, kbuf); /* rotated by rank when shifted */
            float dot = 0.0f;
            for (int i = 0; i < d; i++) dot += q[i] * k[i];
            s->logit[j] = dot * scale;
            if (s->logit[j] > mx) mx = s->logit[j];
        }
        /* softmax, added to the head average */
        float sum = 0.0f;
        for (int j = 0; j < n; j++) {
            s->logit[j] = expf(s->logit[j] - mx);
            sum += s->logit[j];
        }
        for (int j = 0; j < n; j++) s->avg[j] += s->logit[j] / sum / (float)H;
    }
}

static int tova_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    tova_state *s = kv->pstate;
    int n = n_live + c->n_new, cap = kv->cap[kv_idx(kv, c->layer, g)];
    /* everything fits: keep all */
    if (n <= cap) {
        for (int j = 0; j < n; j++) keep[j] = j;
        return n;
    }
    /* the first head of the layer chooses for all: head-averaged last-row attention, top-C */
    if (g == 0) {
        if (reserve_scratch(s, n) != 0) return -1;
        last_row_attention(kv, s, c, n_live);
        s->n_keep = tova_prefill_select(s->avg, s->pos, n, cap, s->keep, s->heap, s->sel);
    }
    /* every head keeps the same candidates (same n_live in every head, layer-wise sets) */
    memcpy(keep, s->keep, (size_t)s->n_keep * sizeof *keep);
    return s->n_keep;
}

static int tova_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                         const float *v)
{
    tova_state *s = kv->pstate;
    int idx = kv_idx(kv, layer, g), n = kv->len[idx];
    /* normal case: append (post_attn_layer brings the layer back to C after attention) */
    if (n <= kv->cap[idx]) return n;
    /* the engine did not call post_attn_layer after the previous step: stay inside the region by
     * overwriting the spare slot (the previous new token), and say so once */
    if (!s->warned) {
        fprintf(stderr, "policy tova: the engine does not call post_attn_layer; "
                        "the cache degrades to the first C tokens + the newest\n");
        s->warned = 1;
    }
    kv->evictions++;
    return kv->cap[idx];
}

static void tova_post_attn_layer(kv_cache *kv, int layer, int t, const float *probs, int stride)
{
    tova_state *s = kv->pstate;
    const int H = kv->n_heads, n = kv_len(kv, layer, 0);
    /* not over capacity (or no statistics): nothing to do */
    if (!probs || n <= kv->cap[kv_idx(kv, layer, 0)]) return;
    /* the current query's attention averaged over all heads of the layer, per slot */
    for (int j = 0; j < n; j++) {
        float sum = 0.0f;
        for (int h = 0; h < H; h++) sum += probs[(size_t)h * stride + j];
        s->avg[j] = sum / (float)H;
    }
    /* the argmin over S ∪ {t} (the new token may lose), evicted from every KV head */
    int victim = tova_select_victim(s->avg, kv_positions(kv, layer, 0), n);
    for (int g = 0; g < kv->n_kv_heads; g++) kv_evict_swap_last(kv, layer, g, victim);
}

const policy_ops policy_tova = {
    .name = "tova",
    .paper = "TOVA (Oren et al. 2024, Transformers are multi-state RNNs) (POLICIES.md §10.3)",
    .params = "none; C tokens per layer, same positions in every head",
    .param_defs = NULL,
    .stats = KV_STAT_DECODE_PROBS,
    .init = tova_init,
    .on_prefill = tova_on_prefill,
    .pre_attn = tova_pre_attn,
    .post_attn_layer = tova_post_attn_layer,
    .free_state = tova_free_state,
};
