/* `h2o`: Heavy-Hitter Oracle (Zhang et al., NeurIPS'23; POLICIES.md §3, §14 items 14-17).
 *
 * Per (layer, KV head) every slot keeps an fp32 score: the attention it has received, summed over
 * all queries since it entered the cache (prefill rows included) and over the G query heads of
 * the group (§12). The cache keeps the R most recent tokens, optional sinks (positions < n_sink)
 * and, in the rest of the capacity C, the heavy hitters (largest scores).
 *
 * Default (attend-first, §3.4): the new token is appended, attends over C + 1 entries, every slot
 * (the new one included) adds its probability mass, then the minimum-score slot outside the
 * protected sets is evicted. Variant --h2o-order evict-first (cold-compress, §3.4 / §14 item 34):
 * the victim is chosen before attention from the history up to t − 1 and is overwritten by the
 * new token (whose score restarts at 0).
 *
 * Scores: kv->score (moved with the slots by the cache). The prefill column sums are added to the
 * kept slots by kv_prefill (KV_STAT_PREFILL_COLSUM). */
#include "eviction/policy_common.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int n_sink;      /* positions < n_sink are never evicted (--h2o-sink) */
    int n_recent;    /* R: the R most recent positions are never evicted (--h2o-recent) */
    int mean;        /* --h2o-score mean: rank by score / number of queries that saw the slot */
    int evict_first; /* --h2o-order evict-first */
    /* prefill scratch (grown in on_prefill if a chunk is larger than the prompt) */
    int max_cand;
    float *score;       /* [max_cand] candidate scores */
    int32_t *pos;       /* [max_cand] candidate positions */
    int *heap;          /* [max_cand] top-k heap */
    unsigned char *sel; /* [max_cand] selected flags */
} h2o_state;

enum { H2O_SCORE_SUM, H2O_SCORE_MEAN };
enum { H2O_ATTEND_FIRST, H2O_EVICT_FIRST };

/* h2o_prefill_select: which of n prefill candidates to keep (§3.4 on_prefill).
 * score[n]: fp32 ranking score per candidate (accumulated attention: the live slot's score plus
 * the chunk's column sum; with --h2o-score mean, divided by the number of queries); pos[n]:
 * original positions, strictly ascending (candidates are in position order).
 * Protected: positions < n_sink and the n_recent last candidates; the remaining capacity
 * cap − |protected| goes to the heavy hitters: the top of the rest by score, ties → smaller
 * position (§1.6). Requires |protected| ≤ cap. heap, sel: scratch [n].
 * keep: out, ascending candidate indices. Returns the count, min(n, cap). */
int h2o_prefill_select(const float *score, const int32_t *pos, int n, int n_sink, int n_recent,
                       int cap, int *keep, int *heap, unsigned char *sel)
{
    if (n <= cap) return evict_keep_all(keep, n); /* everything fits */
    /* the protected sets: sinks and the recent window */
    int first_recent = n - n_recent < 0 ? 0 : n - n_recent, n_prot = 0;
    for (int j = 0; j < n; j++) {
        sel[j] = pos[j] < n_sink || j >= first_recent;
        n_prot += sel[j];
    }
    /* heavy hitters: the top cap − |protected| of the rest by score */
    return evict_select_top(score, pos, n, cap - n_prot, sel, heap, keep);
}

/* h2o_select_victim: the slot to evict among n live slots (§3.4 post_attn).
 * score[n]: accumulated attention (fp32); pos[n]: original positions (any slot order).
 * Protected: pos < n_sink and pos ≥ recent_from (the recent window). Ranking: score, or with
 * mean_upto ≥ 0 (--h2o-score mean) score / (mean_upto − pos + 1), the number of queries at
 * positions pos..mean_upto that attended to the slot. Argmin, ties → smaller position (§1.6).
 * Returns the slot, or -1 when every slot is protected. */
int h2o_select_victim(const float *score, const int32_t *pos, int n, int n_sink, int recent_from,
                      int mean_upto)
{
    int best = -1;
    float best_v = 0.0f;
    for (int j = 0; j < n; j++) {
        /* skip the protected slots */
        if (pos[j] < n_sink || pos[j] >= recent_from) continue;
        float v = mean_upto >= 0 ? score[j] / (float)(mean_upto - pos[j] + 1) : score[j];
        if (best < 0 || v < best_v || (v == best_v && pos[j] < pos[best])) {
            best = j;
            best_v = v;
        }
    }
    return best;
}

/* Grows the prefill scratch to n candidates. Returns 0 or -1 (out of memory). */
static int reserve_scratch(h2o_state *s, int n)
{
    if (n <= s->max_cand) return 0;
    int ok = 1;
    EVICT_GROW(s->score, n, ok);
    EVICT_GROW(s->pos, n, ok);
    EVICT_GROW(s->heap, n, ok);
    EVICT_GROW(s->sel, n, ok);
    if (!ok) return -1;
    s->max_cand = n;
    return 0;
}

static void h2o_free_state(kv_cache *kv)
{
    h2o_state *s = kv->pstate;
    EVICT_FREE(s->score, s->pos, s->heap, s->sel, s);
    kv->pstate = NULL;
}

static int h2o_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                    size_t errlen)
{
    /* parameters (§16): recent -1 = auto (C − floor(C/2)) */
    int n_sink, n_recent, mean, order;
    if (policy_param_int(p, "h2o-sink", 0, 0, 1 << 24, &n_sink, err, errlen) != 0 ||
        policy_param_int(p, "h2o-recent", -1, 0, 1 << 24, &n_recent, err, errlen) != 0 ||
        policy_param_enum(p, "h2o-score", "sum|mean", H2O_SCORE_SUM, &mean, err, errlen) != 0 ||
        policy_param_enum(p, "h2o-order", "attend-first|evict-first", H2O_ATTEND_FIRST, &order, err,
                          errlen) != 0)
        return -1;
    int evict_first = order == H2O_EVICT_FIRST;
    /* attend-first protects the new token through the recent window (§14 item 14) */
    if (!evict_first && n_recent == 0) {
        snprintf(err, errlen, "--h2o-recent: must be >= 1 with --h2o-order attend-first "
                              "(the window protects the new token)");
        return -1;
    }
    /* [DECISION] C_min (§1.2): the smallest capacity at which the protected sets leave one
     * evictable slot. attend-first sees C + 1 entries with R (new token included) + sinks
     * protected: sink + R ≤ C. evict-first chooses among C entries with the R most recent
     * existing ones (t − R .. t − 1, as cold-compress) + sinks protected: sink + R + 1 ≤ C. With
     * auto R = C − floor(C/2) that is C ≥ 2·sink resp. C ≥ 2·sink + 2. A budget below C_min
     * raises the capacity (like the C_min of hashevict/l2norm), it is not an error. */
    int c_min;
    if (n_recent >= 0) c_min = n_sink + n_recent + evict_first;
    else c_min = evict_first ? 2 * n_sink + 2 : 2 * n_sink;
    if (c_min < 1) c_min = 1;
    int cap = kv_budget_capacity(p, n_prompt, max_new, c_min);
    if (n_recent < 0) n_recent = cap - cap / 2;
    kv_set_uniform_capacity(kv, cap);
    /* private state and the prefill scratch (candidates: up to cap + the whole prompt) */
    h2o_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->n_sink = n_sink;
    s->n_recent = n_recent;
    s->mean = mean == H2O_SCORE_MEAN;
    s->evict_first = evict_first;
    if (reserve_scratch(s, cap + (n_prompt > 0 ? n_prompt : 1)) != 0) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "policy h2o: out of memory");
    return -1;
}

static int h2o_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    h2o_state *s = kv->pstate;
    int idx = kv_idx(kv, c->layer, g), n = n_live + c->n_new;
    if (reserve_scratch(s, n) != 0) return -1;
    const float *live_score = kv_scores(kv, c->layer, g);
    const int32_t *live_pos = kv_positions(kv, c->layer, g);
    const float *colsum = c->colsum ? c->colsum + (size_t)g * c->cand_stride : NULL;
    /* the last query row of this chunk: with mean, a candidate was seen by last − pos + 1 rows */
    int last = c->pos0 + c->n_new - 1;
    /* candidate positions and scores: score so far (live) + this chunk's column sum */
    for (int j = 0; j < n; j++) {
        s->pos[j] = j < n_live ? live_pos[j] : c->pos0 + (j - n_live);
        float sc = (j < n_live ? live_score[j] : 0.0f) + (colsum ? colsum[j] : 0.0f);
        /* [DECISION] --h2o-score mean ranks the prompt by the mean too (as scissorhands §10.1) */
        s->score[j] = s->mean ? sc / (float)(last - s->pos[j] + 1) : sc;
    }
    /* sinks + the R most recent + heavy hitters (scores of dropped tokens are discarded) */
    return h2o_prefill_select(s->score, s->pos, n, s->n_sink, s->n_recent, kv->cap[idx], keep,
                              s->heap, s->sel);
}

static int h2o_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                        const float *v)
{
    h2o_state *s = kv->pstate;
    int idx = kv_idx(kv, layer, g), n = kv->len[idx];
    /* attend-first, or room left: append */
    if (!s->evict_first || n < kv->cap[idx]) return n;
    /* evict-first: the victim from the history up to t − 1, protecting sinks and t − R .. t − 1 */
    int victim = h2o_select_victim(kv_scores(kv, layer, g), kv_positions(kv, layer, g), n,
                                   s->n_sink, t - s->n_recent, s->mean ? t - 1 : -1);
    if (victim < 0) return n;
    /* the new token overwrites it (kv_write zeroes its score); count the eviction */
    kv->evictions++;
    return victim;
}

/* Slots per block of the score accumulation in h2o_post_attn. */
#define H2O_BLK 256

static void h2o_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    h2o_state *s = kv->pstate;
    int idx = kv_idx(kv, layer, g), n = kv->len[idx];
    int G = kv->n_heads / kv->n_kv_heads;
    float *score = kv_scores(kv, layer, g);
    /* accumulate the group's probabilities, the new token's self-attention included:
     * score[j] += (p_0[j] + p_1[j] + ... + p_{G-1}[j]), summed in head order. Blocks of
     * H2O_BLK slots with the head loop outside the slot loop, so the compiler vectorizes
     * over j (the same additions in the same order as one slot at a time). */
    if (probs)
        for (int j0 = 0; j0 < n; j0 += H2O_BLK) {
            int m = n - j0 < H2O_BLK ? n - j0 : H2O_BLK;
            float sum[H2O_BLK];
            const float *p = probs + j0;
            for (int j = 0; j < m; j++) sum[j] = p[j];
            for (int h = 1; h < G; h++) {
                const float *ph = p + (size_t)h * stride;
                for (int j = 0; j < m; j++) sum[j] += ph[j];
            }
            float *sc = score + j0;
            for (int j = 0; j < m; j++) sc[j] += sum[j];
        }
    /* attend-first: back to capacity by evicting the minimum outside sinks and t − R + 1 .. t */
    if (s->evict_first || n <= kv->cap[idx]) return;
    int victim = h2o_select_victim(score, kv_positions(kv, layer, g), n, s->n_sink,
                                   t - s->n_recent + 1, s->mean ? t : -1);
    if (victim >= 0) kv_evict_swap_last(kv, layer, g, victim);
}

static const policy_param_def h2o_params[] = {
    {"h2o-recent", "window", PARAM_INT, "C-C/2", NULL,
     "R most recent tokens always kept (new token included); heavy hitters = C - sink - R"},
    {"h2o-score", NULL, PARAM_ENUM, "sum", "sum|mean",
     "rank by summed attention, or by its mean over the queries that saw the token"},
    {"h2o-sink", "sink", PARAM_INT, "0", NULL, "positions 0..sink-1 always kept"},
    {"h2o-order", NULL, PARAM_ENUM, "attend-first", "attend-first|evict-first",
     "evict after attention (H2O), or before it from the history up to t-1 (cold-compress)"},
    {NULL, NULL, PARAM_INT, NULL, NULL, NULL},
};

const policy_ops policy_h2o = {
    .name = "h2o",
    .paper = "H2O (Zhang et al., NeurIPS'23) Alg. 1-2, FMInference/H2O (POLICIES.md §3)",
    .params = "--h2o-recent C-C/2 --h2o-score sum|mean (sum) --h2o-sink 0 "
              "--h2o-order attend-first|evict-first (attend-first)",
    .param_defs = h2o_params,
    .stats = KV_STAT_DECODE_PROBS | KV_STAT_PREFILL_COLSUM,
    .init = h2o_init,
    .on_prefill = h2o_on_prefill,
    .pre_attn = h2o_pre_attn,
    .post_attn = h2o_post_attn,
    .free_state = h2o_free_state,
};
