/* `random`: evict a uniformly random unprotected token (sanity baseline, POLICIES.md §10.4).
 *
 * Protected: positions < --rnd-sink and the --rnd-recent positions before the new token. Once
 * the cache is full the incoming token overwrites (evict-then-attend) a uniformly chosen
 * candidate. Randomness is the counter RNG of §1.6 keyed by (seed, layer, head, position):
 * [DECISION] every candidate j draws u_j = U(seed; stream, layer, g, t, pos_j) and the smallest
 * u_j is the victim (ties: smaller position). That is uniform over the candidates and, unlike
 * "pick index ⌊u·n⌋", independent of the slot layout. Prefill with N > C keeps the protected
 * sets and a uniform random subset of the rest: the smallest u_j = U(seed; prefill stream,
 * layer, g, next position, pos_j). No per-slot state, no statistics. */
#include "eviction/policy_common.h"

#include <stdio.h>
#include <stdlib.h>

#define RND_STREAM_DECODE 0x524e44444543ULL  /* "RNDDEC" */
#define RND_STREAM_PREFILL 0x524e44505245ULL /* "RNDPRE" */

typedef struct {
    int sink, recent;
    int max_cand;
    evict_rank *rank; /* [max_cand] prefill scratch */
} rnd_state;

/* The §10.4 victim for the token at position t in (layer, g): among slots j < n with
 * pos[j] ≥ sink and pos[j] < t − recent, the smallest u_j = U(seed; decode, layer, g, t, pos[j]),
 * ties → smaller position. Returns the slot index, or -1 when no slot is a candidate. */
int random_victim(uint64_t seed, int layer, int g, int t, const int32_t *pos, int n, int sink,
                  int recent)
{
    int best = -1;
    double best_u = 0.0;
    for (int j = 0; j < n; j++) {
        if (evict_protected(pos[j], sink, recent, t)) continue;
        double u = evict_rng_u01(seed, RND_STREAM_DECODE, layer, g, t, pos[j]);
        if (best < 0 || u < best_u || (u == best_u && pos[j] < pos[best])) best = j, best_u = u;
    }
    return best;
}

static const policy_param_def rnd_params[] = {
    EVICT_PROTECT_PARAM_DEFS("rnd"),
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static void rnd_free(kv_cache *kv)
{
    rnd_state *s = kv->pstate;
    if (!s) return;
    free(s->rank);
    free(s);
    kv->pstate = NULL;
}

static int rnd_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                    size_t errlen)
{
    int sink, recent;
    int cap = evict_protect_init(kv, p, "rnd", n_prompt, max_new, &sink, &recent, err, errlen);
    if (cap < 0) return -1;
    rnd_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->sink = sink, s->recent = recent;
    s->max_cand = evict_max_cand(cap, n_prompt);
    s->rank = malloc((size_t)s->max_cand * sizeof *s->rank);
    if (!s->rank) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "random: out of memory for the prefill scratch");
    rnd_free(kv);
    return -1;
}

/* Decode: append while there is room; once full, a random unprotected slot is overwritten. */
static int rnd_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                        const float *v)
{
    rnd_state *s = kv->pstate;
    int n = kv_len(kv, layer, g);
    if (n < kv->cap[kv_idx(kv, layer, g)]) return n;
    const int32_t *P = kv_positions(kv, layer, g);
    int victim = random_victim(kv->params.seed, layer, g, t, P, n, s->sink, s->recent);
    if (victim < 0) victim = evict_oldest_slot(P, n); /* unreachable with C ≥ sink + recent + 1 */
    kv->evictions++;
    return victim;
}

/* Prefill: keep everything that fits; otherwise the protected sets plus a uniform random subset
 * of the other candidates. */
static int rnd_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    rnd_state *s = kv->pstate;
    const int n_cand = n_live + c->n_new, cap = kv->cap[kv_idx(kv, c->layer, g)];
    const int t_next = c->pos0 + c->n_new;
    const int32_t *P = kv_positions(kv, c->layer, g);
    if (n_cand <= cap) return evict_keep_all(keep, n_cand);
    /* the protected sets, then the others ranked by a random key */
    int n_keep = 0, n_rank = 0;
    for (int j = 0; j < n_cand; j++) {
        int32_t pos = j < n_live ? P[j] : c->pos0 + (j - n_live);
        if (evict_protected(pos, s->sink, s->recent, t_next)) keep[n_keep++] = j;
        else {
            double u = evict_rng_u01(kv->params.seed, RND_STREAM_PREFILL, c->layer, g, t_next, pos);
            s->rank[n_rank++] = (evict_rank){u, pos, j};
        }
    }
    return evict_keep_ranked(keep, n_keep, s->rank, n_rank, cap);
}

const policy_ops policy_random = {
    .name = "random",
    .paper = "sanity baseline, POLICIES.md §10.4",
    .params = "--rnd-sink 4 --rnd-recent 10 (--seed); uniform victim; C_min = sink + recent + 1",
    .param_defs = rnd_params,
    .stats = 0,
    .init = rnd_init,
    .on_prefill = rnd_on_prefill,
    .pre_attn = rnd_pre_attn,
    .free_state = rnd_free,
};
