/* `scissorhands`: persistence of importance (Liu et al. 2023), the cold-compress variant used as
 * HashEvict's baseline (POLICIES.md §10.1, default mode).
 *
 * Every slot keeps a ring of the last --sh-hist indicators I = [p̄(j) ≥ 1/|S|], one per decode
 * step since it entered the cache, where p̄ is the attention probability averaged over the G
 * query heads of the group (§12) and |S| the number of live slots at that step. Importance =
 * (ones in the ring) / max(1, recorded steps). Once the cache is full the incoming token
 * overwrites (evict-then-attend) the unprotected slot of least importance (history up to t − 1);
 * protected: positions < --sh-sink and the --sh-recent positions before the new token.
 *
 * Prompt: every kept prompt token gets one history entry [colsum_j / (N − j) ≥ 1/N] (mean
 * attention received over the prompt rows). kv_prefill accumulates the prefill column sums in
 * kv->score, so that entry is written lazily at the first decode hook from the score. With
 * N > C the prefill keeps the protected sets and the top of the rest by colsum_j / (N − j).
 *
 * Per-slot state: the ring (up to SH_MAX_HIST bits), the number of pushes and the ones count;
 * the cache moves it with its slot and zeroes it when a token is written into the slot. */
#include "eviction/policy_common.h"

#include <stdio.h>
#include <stdlib.h>

#define SH_WORDS 7
#define SH_MAX_HIST (SH_WORDS * 64) /* 448 bits ≥ the default 400 */

typedef struct {
    uint64_t ring[SH_WORDS]; /* indicator of push i at bit i mod hist */
    uint32_t n_push;         /* indicators pushed since the slot was written */
    uint32_t ones;           /* set bits among the last min(n_push, hist) */
} sh_slot;
/* the CUDA decode step keeps these bytes as 8 words (kernels/cuda/evict_modes.h EV_SH_WORDS) */
_Static_assert(sizeof(sh_slot) == 64 && SH_MAX_HIST == 448, "sh_slot layout shared with kernels/cuda");

typedef struct {
    int hist, sink, recent, G;
    int max_cand;
    evict_rank *rank; /* [max_cand] prefill scratch */
} sh_state;

/* Pushes indicator `bit` into a slot's ring of `hist` entries (the oldest falls out). */
static void ring_push(sh_slot *e, int hist, int bit)
{
    uint32_t i = e->n_push % (uint32_t)hist;
    uint64_t mask = 1ULL << (i % 64);
    int old = (e->ring[i / 64] & mask) != 0;
    if (bit) e->ring[i / 64] |= mask;
    else e->ring[i / 64] &= ~mask;
    e->ones += (uint32_t)bit - (uint32_t)old;
    e->n_push++;
}

/* 1 when slot a is less important than slot b: ones_a / rec_a < ones_b / rec_b with
 * rec = max(1, min(n_push, hist)), compared exactly in integers. */
static int less_important(const sh_slot *a, const sh_slot *b, int hist)
{
    uint64_t ra = a->n_push < (uint32_t)hist ? a->n_push : (uint32_t)hist;
    uint64_t rb = b->n_push < (uint32_t)hist ? b->n_push : (uint32_t)hist;
    if (!ra) ra = 1;
    if (!rb) rb = 1;
    return (uint64_t)a->ones * rb < (uint64_t)b->ones * ra;
}

/* Importance of a history: ones / max(1, min(n_push, hist)) (§10.1). */
double scissorhands_importance(uint32_t ones, uint32_t n_push, int hist)
{
    uint32_t rec = n_push < (uint32_t)hist ? n_push : (uint32_t)hist;
    return (double)ones / (rec ? rec : 1);
}

/* The importance of slot j of (layer, g) as stored (for tests and diagnostics). */
double scissorhands_slot_importance(const kv_cache *kv, int layer, int g, int j)
{
    const sh_slot *e = (const sh_slot *)kv_slot_state(kv, layer, g, j);
    const sh_state *s = kv->pstate;
    return scissorhands_importance(e->ones, e->n_push, s->hist);
}

/* Number of indicators recorded for slot j of (layer, g), capped at --sh-hist. */
int scissorhands_slot_records(const kv_cache *kv, int layer, int g, int j)
{
    const sh_slot *e = (const sh_slot *)kv_slot_state(kv, layer, g, j);
    const sh_state *s = kv->pstate;
    return e->n_push < (uint32_t)s->hist ? (int)e->n_push : s->hist;
}

static const policy_param_def sh_params[] = {
    {"sh-hist", NULL, PARAM_INT, "400", NULL, "history window in decode steps (1..448)"},
    EVICT_PROTECT_PARAM_DEFS("sh"),
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static void sh_free(kv_cache *kv)
{
    sh_state *s = kv->pstate;
    if (!s) return;
    free(s->rank);
    free(s);
    kv->pstate = NULL;
}

static int sh_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                   size_t errlen)
{
    int hist, sink, recent;
    if (policy_param_int(p, "sh-hist", 400, 1, SH_MAX_HIST, &hist, err, errlen)) return -1;
    int cap = evict_protect_init(kv, p, "sh", n_prompt, max_new, &sink, &recent, err, errlen);
    if (cap < 0) return -1;
    sh_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->hist = hist, s->sink = sink, s->recent = recent;
    s->G = kv->n_heads / kv->n_kv_heads;
    s->max_cand = evict_max_cand(cap, n_prompt);
    s->rank = malloc((size_t)s->max_cand * sizeof *s->rank);
    if (!s->rank) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "scissorhands: out of memory for the prefill scratch");
    sh_free(kv);
    return -1;
}

/* Gives every prompt token of (layer, g) without history its prefill entry
 * [colsum_j / (N − j) ≥ 1/N], colsum_j = kv->score (the prefill column sums, summed over the
 * group's heads by the engine and over the chunks by kv_prefill). */
static void prompt_history(kv_cache *kv, const sh_state *s, int layer, int g)
{
    const int n = kv_len(kv, layer, g), N = kv->prompt_tokens;
    const int32_t *P = kv_positions(kv, layer, g);
    const float *score = kv_scores(kv, layer, g);
    for (int j = 0; j < n; j++) {
        sh_slot *e = (sh_slot *)kv_slot_state(kv, layer, g, j);
        if (e->n_push || P[j] >= N) continue;
        /* GQA: the summed column over G heads, divided by G, is the group's mean (§12) */
        double mean = (double)score[j] / s->G / (double)(N - P[j]);
        ring_push(e, s->hist, mean >= 1.0 / N);
    }
}

void scissorhands_prompt_history_all(kv_cache *kv)
{
    const sh_state *s = kv->pstate;
    if (!s) return;
    for (int l = 0; l < kv->n_layers; l++)
        for (int g = 0; g < kv->n_kv_heads; g++) prompt_history(kv, s, l, g);
}

/* Decode, before attention: append while there is room; once full, the least important
 * unprotected slot (ties: smaller position) is overwritten by the new token. */
static int sh_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                       const float *v)
{
    sh_state *s = kv->pstate;
    int n = kv_len(kv, layer, g);
    prompt_history(kv, s, layer, g);
    if (n < kv->cap[kv_idx(kv, layer, g)]) return n;
    /* argmin importance over the candidates */
    const int32_t *P = kv_positions(kv, layer, g);
    int best = -1;
    const sh_slot *best_e = NULL;
    for (int j = 0; j < n; j++) {
        if (evict_protected(P[j], s->sink, s->recent, t)) continue;
        const sh_slot *e = (const sh_slot *)kv_slot_state(kv, layer, g, j);
        if (best < 0 || less_important(e, best_e, s->hist) ||
            (!less_important(best_e, e, s->hist) && P[j] < P[best]))
            best = j, best_e = e;
    }
    if (best < 0) best = evict_oldest_slot(P, n); /* unreachable with C ≥ sink + recent + 1 */
    kv->evictions++;
    return best;
}

/* Decode, after attention: every live slot (the new token included) pushes
 * [mean_h p_h(j) ≥ 1/|S|]. */
static void sh_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    sh_state *s = kv->pstate;
    if (!probs) return;
    int n = kv_len(kv, layer, g);
    prompt_history(kv, s, layer, g);
    const float thr = 1.0f / (float)n;
    for (int j = 0; j < n; j++) {
        /* [DECISION] GQA mean in fp32: Σ_h p_h(j) (heads in order) / G */
        float sum = 0.0f;
        for (int h = 0; h < s->G; h++) sum += probs[(size_t)h * stride + j];
        ring_push((sh_slot *)kv_slot_state(kv, layer, g, j), s->hist, sum / (float)s->G >= thr);
    }
}

/* Prefill: keep everything that fits; otherwise the protected sets plus the top of the rest by
 * mean attention received, (score + colsum) / (rows that saw it). */
static int sh_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    sh_state *s = kv->pstate;
    const int n_cand = n_live + c->n_new, cap = kv->cap[kv_idx(kv, c->layer, g)];
    const int t_next = c->pos0 + c->n_new;
    if (n_cand <= cap) return evict_keep_all(keep, n_cand);
    const int32_t *P = kv_positions(kv, c->layer, g);
    const float *score = kv_scores(kv, c->layer, g);
    const float *colsum = c->colsum ? c->colsum + (size_t)g * c->cand_stride : NULL;
    /* the protected sets, then the others ranked by mean attention received (descending) */
    int n_keep = 0, n_rank = 0;
    for (int j = 0; j < n_cand; j++) {
        int32_t pos = j < n_live ? P[j] : c->pos0 + (j - n_live);
        if (evict_protected(pos, s->sink, s->recent, t_next)) {
            keep[n_keep++] = j;
            continue;
        }
        /* [DECISION] chunked prefill: the sum over all prompt rows so far (kv->score of a live
         * slot + this chunk's column) over the rows that saw the token */
        double sum = (colsum ? colsum[j] : 0.0f) + (j < n_live && score ? score[j] : 0.0f);
        s->rank[n_rank++] = (evict_rank){-sum / (double)(t_next - pos), pos, j};
    }
    return evict_keep_ranked(keep, n_keep, s->rank, n_rank, cap);
}

const policy_ops policy_scissorhands = {
    .name = "scissorhands",
    .paper = "Liu et al. 2023, cold-compress variant (baseline in HashEvict), POLICIES.md §10.1",
    .params = "--sh-hist 400 --sh-sink 4 --sh-recent 10; evict-then-attend, one eviction per "
              "step; C_min = sink + recent + 1 (--sh-batched is not implemented)",
    .param_defs = sh_params,
    .stats = KV_STAT_DECODE_PROBS | KV_STAT_PREFILL_COLSUM,
    .slot_state_bytes = sizeof(sh_slot),
    .init = sh_init,
    .on_prefill = sh_on_prefill,
    .pre_attn = sh_pre_attn,
    .post_attn = sh_post_attn,
    .free_state = sh_free,
};
