/* `l2norm`: evict the key with the largest ℓ2 norm (Devoto et al. 2024, HashEvict's main
 * baseline; POLICIES.md §10.2).
 *
 * Keys with a low ℓ2 norm tend to receive high attention, so once the cache is full the incoming
 * token overwrites (evict-then-attend) the unprotected slot whose key norm is largest.
 * Protected: positions < --l2-sink and the --l2-recent positions before the new token. Prefill
 * with N > C keeps the sinks, the recent positions and the lowest-norm keys of the rest.
 *
 * Per-slot state: the key norm ‖k‖₂ (fp32) and a valid flag. The cache zeroes the state of a
 * slot when a token is written into it, so norms are computed from the stored key at the next
 * hook (the same arithmetic as at write time). No attention statistics. */
#include "eviction/policy_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    float norm;     /* ‖k‖₂ of the slot's key */
    uint32_t valid; /* norm computed */
} l2_slot;

typedef struct {
    int sink, recent;
    int max_cand;
    float *norm;       /* [max_cand] candidate norms (prefill) */
    int32_t *pos;      /* [max_cand] candidate positions */
    evict_rank *rank;  /* [max_cand] */
} l2_state;

/* ‖x‖₂ of x [d]: squares summed in double, i in order, rounded to fp32. */
float l2norm_norm(const float *x, int d)
{
    double s = 0.0;
    for (int i = 0; i < d; i++) s += (double)x[i] * x[i];
    return (float)sqrt(s);
}

/* The §10.2 victim: among slots j < n with pos[j] ≥ sink and pos[j] < t − recent, the largest
 * norm[j]. Ties: smaller position. Returns the slot index, or -1 when no slot is a candidate. */
int l2norm_victim(const int32_t *pos, const float *norm, int n, int sink, int recent, int t)
{
    int best = -1;
    for (int j = 0; j < n; j++) {
        if (evict_protected(pos[j], sink, recent, t)) continue;
        if (best < 0 || norm[j] > norm[best] || (norm[j] == norm[best] && pos[j] < pos[best]))
            best = j;
    }
    return best;
}

/* Prefill selection (§10.2): of n candidates (norm[n], distinct pos[n]) keep every one when
 * n ≤ cap; otherwise the protected ones (pos < sink or pos ≥ t_next − recent, t_next = the next
 * position) and, in the remaining capacity, the lowest norms (ties: smaller position).
 * rank: scratch [n]. keep: out, ascending candidate indices. Returns the count, min(n, cap).
 * Requires the protected count ≤ cap (C ≥ sink + recent). */
static int prefill_select(const float *norm, const int32_t *pos, int n, int sink, int recent,
                          int t_next, int cap, int *keep, evict_rank *rank)
{
    int n_keep = 0, n_rank = 0;
    if (n <= cap) return evict_keep_all(keep, n);
    /* the protected sets, then the rest ranked by norm */
    for (int j = 0; j < n; j++) {
        if (evict_protected(pos[j], sink, recent, t_next)) keep[n_keep++] = j;
        else rank[n_rank++] = (evict_rank){norm[j], pos[j], j};
    }
    return evict_keep_ranked(keep, n_keep, rank, n_rank, cap);
}

static const policy_param_def l2_params[] = {
    EVICT_PROTECT_PARAM_DEFS("l2"),
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static void l2_free(kv_cache *kv)
{
    l2_state *s = kv->pstate;
    if (!s) return;
    EVICT_FREE(s->norm, s->pos, s->rank, s);
    kv->pstate = NULL;
}

static int l2_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                   size_t errlen)
{
    int sink, recent;
    int cap = evict_protect_init(kv, p, "l2", n_prompt, max_new, &sink, &recent, err, errlen);
    if (cap < 0) return -1;
    l2_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->sink = sink, s->recent = recent;
    s->max_cand = evict_max_cand(cap, n_prompt);
    s->norm = malloc((size_t)s->max_cand * sizeof *s->norm);
    s->pos = malloc((size_t)s->max_cand * sizeof *s->pos);
    s->rank = malloc((size_t)s->max_cand * sizeof *s->rank);
    if (!s->norm || !s->pos || !s->rank) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "l2norm: out of memory for the prefill scratch");
    l2_free(kv);
    return -1;
}

/* The norm of slot j of (layer, g), computed from the stored key when the slot is fresh. */
static float slot_norm(const kv_cache *kv, int layer, int g, int j)
{
    l2_slot *e = (l2_slot *)kv_slot_state(kv, layer, g, j);
    if (!e->valid) {
        float kbuf[kv->head_dim];   /* a key of a 16-bit cache, widened */
        e->norm = l2norm_norm(kv_key_f32(kv, layer, g, j, kbuf), kv->head_dim);
        e->valid = 1;
    }
    return e->norm;
}

/* Decode: append while there is room; once full, the unprotected slot with the largest key norm
 * is overwritten by the new token. */
static int l2_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                       const float *v)
{
    l2_state *s = kv->pstate;
    int n = kv_len(kv, layer, g);
    if (n < kv->cap[kv_idx(kv, layer, g)]) return n;
    /* argmax norm over the candidates (ties: smaller position) */
    const int32_t *P = kv_positions(kv, layer, g);
    int best = -1;
    float best_norm = 0.0f;
    for (int j = 0; j < n; j++) {
        if (evict_protected(P[j], s->sink, s->recent, t)) continue;
        float nj = slot_norm(kv, layer, g, j);
        if (best < 0 || nj > best_norm || (nj == best_norm && P[j] < P[best])) best = j, best_norm = nj;
    }
    if (best < 0) best = evict_oldest_slot(P, n); /* unreachable with C ≥ sink + recent + 1 */
    kv->evictions++;
    return best;
}

/* Prefill: sinks + recent + lowest-norm keys of the live slots and the chunk. */
static int l2_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    l2_state *s = kv->pstate;
    const int d = kv->head_dim, hkv = kv->n_kv_heads, n_cand = n_live + c->n_new;
    const int32_t *P = kv_positions(kv, c->layer, g);
    /* candidate norms and positions: live slots, then the chunk's tokens */
    for (int j = 0; j < n_live; j++) s->norm[j] = slot_norm(kv, c->layer, g, j), s->pos[j] = P[j];
    for (int r = 0; r < c->n_new; r++) {
        s->norm[n_live + r] = l2norm_norm(c->k_new + ((size_t)r * hkv + g) * d, d);
        s->pos[n_live + r] = c->pos0 + r;
    }
    return prefill_select(s->norm, s->pos, n_cand, s->sink, s->recent, c->pos0 + c->n_new,
                          kv->cap[kv_idx(kv, c->layer, g)], keep, s->rank);
}

const policy_ops policy_l2norm = {
    .name = "l2norm",
    .paper = "Devoto et al. 2024 (baseline in HashEvict), POLICIES.md §10.2",
    .params = "--l2-sink 4 --l2-recent 10; evicts the largest key norm; C_min = sink + recent + 1",
    .param_defs = l2_params,
    .stats = 0,
    .slot_state_bytes = sizeof(l2_slot),
    .init = l2_init,
    .on_prefill = l2_on_prefill,
    .pre_attn = l2_pre_attn,
    .free_state = l2_free,
};
