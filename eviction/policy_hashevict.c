/* `hashevict`: SimHash (LSH) pre-attention eviction (HashEvict, POLICIES.md §9).
 *
 * Per layer a random projection R_ℓ [c][d] ~ N(0,1) (counter RNG + Box–Muller, §1.6) hashes
 * post-RoPE keys and queries to c-bit codes, bit b = [(R_ℓ x)_b ≥ 0] packed LSB first. Once the
 * cache is full, the incoming token overwrites (evict-then-attend) the unprotected slot whose key
 * code is farthest in Hamming distance from the current query codes (summed over the G query
 * heads of the group; --hash-probe key uses the incoming key's code instead). Protected: the
 * first --hash-sink positions and the --hash-recent positions before the new token.
 *
 * Per-slot state (moved with its slot by the cache): the key's code and, for --hash-accum mean,
 * the summed distance and the number of rule evaluations since insertion. The cache zeroes a
 * slot's state when a token is written into it, so codes are computed lazily from the stored
 * key (valid flag) at the next hook; the mean accumulators of the simulated prompt are stashed in
 * pstate by on_prefill and applied to the gathered slots at the next hook. */
#include "eviction/policy_common.h"
#include "eviction/kv_device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROBE_QUERY, PROBE_KEY };
enum { ACCUM_NONE, ACCUM_MEAN };
enum { PREFILL_SIMULATE, PREFILL_RECENT_GLOBAL };

#define HE_STREAM_PROJ 0x484153485052ULL /* "HASHPR": the projection matrices */

typedef struct {
    uint64_t code;  /* c-bit SimHash of the slot's key (valid when valid != 0) */
    uint64_t acc;   /* --hash-accum mean: Σ Hamming distances at the rule evaluations so far */
    uint32_t age;   /* number of those evaluations */
    uint32_t valid; /* code computed (a freshly written slot has zeroed state) */
} he_slot;

/* the CUDA decode step keeps these bytes as 3 words (kernels/cuda/evict_modes.h EV_HASH_WORDS) */
_Static_assert(sizeof(he_slot) == 24, "he_slot layout shared with kernels/cuda");
typedef struct {
    uint64_t acc;
    uint32_t age;
} he_acc;

typedef struct {
    int bits, sink, recent, probe, accum, prefill, G;
    float *R;             /* [n_layers][bits][head_dim] projections */
    uint64_t *qcodes;     /* [G] codes of the group's queries (decode/replay step) */
    /* prefill scratch */
    int max_cand;
    int *set;             /* [max_cap] candidate indices held by the simulated cache */
    he_slot *cand;        /* [max_cand] state of each candidate */
    int32_t *cand_pos;    /* [max_cand] position of each candidate */
    uint64_t *sortbuf;    /* [max_cand] (pos << 32 | index) keys for recent_global */
    he_slot **members;    /* [max_cand] states of the members of one rule evaluation */
    int32_t *member_pos;  /* [max_cand] their positions */
    /* mean accumulators of the kept prompt candidates, applied at the next hook */
    he_acc *stash;        /* [n_layers*n_kv_heads][max_cap] (NULL unless mean + simulate) */
    int *stash_n;         /* [n_layers*n_kv_heads]: pending entries, 0 = none */
    int max_cap;
} he_state;

/* Fills R [bits][d] (fp32) for `layer` with N(0,1) draws: Box–Muller on the counter RNG,
 * z = sqrt(-2 ln(1 - u1)) cos(2π u2), u1 = U(seed; proj, layer, 0, b, 2i), u2 = U(.., 2i + 1)
 * for entry (b, i). Shared by all KV heads of the layer (§9.2). */
void hashevict_projection(uint64_t seed, int layer, int bits, int d, float *R)
{
    const double two_pi = 6.283185307179586476925286766559;
    for (int b = 0; b < bits; b++)
        for (int i = 0; i < d; i++) {
            double u1 = evict_rng_u01(seed, HE_STREAM_PROJ, layer, 0, b, 2 * (int64_t)i);
            double u2 = evict_rng_u01(seed, HE_STREAM_PROJ, layer, 0, b, 2 * (int64_t)i + 1);
            R[(size_t)b * d + i] = (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(two_pi * u2));
        }
}

/* SimHash code of x [d] under R [bits][d], bits ≤ 64: bit b (LSB first) = [(R x)_b ≥ 0]
 * (sgn(0) → 1, §9.2). The dot products are summed in fp32, i = 0..d-1 in order. */
uint64_t hashevict_code(const float *R, int bits, int d, const float *x)
{
    uint64_t code = 0;
    for (int b = 0; b < bits; b++) {
        const float *r = R + (size_t)b * d;
        float s = 0.0f;
        for (int i = 0; i < d; i++) s += r[i] * x[i];
        if (s >= 0.0f) code |= 1ULL << b;
    }
    return code;
}

/* Hamming distance of a key code to the probe codes, summed over the n_q probes (§12: GQA sum). */
static uint32_t probe_dist(uint64_t code, const uint64_t *probes, int n_q)
{
    uint32_t d = 0;
    for (int h = 0; h < n_q; h++) d += (uint32_t)__builtin_popcountll(code ^ probes[h]);
    return d;
}

/* The §9.3 victim: among slots j < n with pos[j] ≥ sink and pos[j] < t − recent, the one whose
 * code is farthest from the probe codes (Σ_h popcount(codes[j] ^ qcodes[h]) over n_q probes).
 * Ties: smaller position. Returns the slot index, or -1 when no slot is a candidate. */
int hashevict_victim(const int32_t *pos, const uint64_t *codes, int n, const uint64_t *qcodes,
                     int n_q, int sink, int recent, int t)
{
    int best = -1;
    uint32_t best_d = 0;
    for (int j = 0; j < n; j++) {
        if (evict_protected(pos[j], sink, recent, t)) continue;
        uint32_t d = probe_dist(codes[j], qcodes, n_q);
        if (best < 0 || d > best_d || (d == best_d && pos[j] < pos[best])) best = j, best_d = d;
    }
    return best;
}

/* --hash-accum mean victim: the candidate (as in hashevict_victim) with the largest mean
 * distance acc[j] / age[j] (age 0 counts as mean 0), compared exactly in integers. Ties: smaller
 * position. Returns the slot index or -1. */
int hashevict_victim_mean(const int32_t *pos, const uint64_t *acc, const uint32_t *age, int n,
                          int sink, int recent, int t)
{
    int best = -1;
    for (int j = 0; j < n; j++) {
        if (evict_protected(pos[j], sink, recent, t)) continue;
        if (best < 0) {
            best = j;
            continue;
        }
        /* acc_j/age_j vs acc_b/age_b, with an empty history as mean 0 */
        uint64_t lhs = age[j] ? acc[j] * (age[best] ? age[best] : 1) : 0;
        uint64_t rhs = age[best] ? acc[best] * (age[j] ? age[j] : 1) : 0;
        if (lhs > rhs || (lhs == rhs && pos[j] < pos[best])) best = j;
    }
    return best;
}

static const policy_param_def he_params[] = {
    {"hash-bits", "lsh-bits", PARAM_INT, "16", NULL, "code length c in bits (1..64)"},
    EVICT_PROTECT_PARAM_DEFS("hash"),
    {"hash-probe", NULL, PARAM_ENUM, "query", "query|key",
     "hash the current query (paper) or the incoming key (authors' code)"},
    {"hash-accum", NULL, PARAM_ENUM, "none", "none|mean",
     "score of the current step only, or the mean distance since insertion"},
    {"hash-prefill", NULL, PARAM_ENUM, "simulate", "simulate|recent_global",
     "prompt > C: replay the rule over the prompt, or keep first sink + last C-sink"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static void he_free(kv_cache *kv)
{
    he_state *s = kv->pstate;
    if (!s) return;
    EVICT_FREE(s->R, s->qcodes, s->set, s->cand, s->cand_pos, s->sortbuf, s->members, s->member_pos,
               s->stash, s->stash_n, s);
    kv->pstate = NULL;
}

static int he_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                   size_t errlen)
{
    int bits, sink, recent, probe, accum, prefill, cap;
    if (policy_param_int(p, "hash-bits", 16, 1, 64, &bits, err, errlen) ||
        (cap = evict_protect_init(kv, p, "hash", n_prompt, max_new, &sink, &recent, err, errlen)) < 0 ||
        policy_param_enum(p, "hash-probe", "query|key", PROBE_QUERY, &probe, err, errlen) ||
        policy_param_enum(p, "hash-accum", "none|mean", ACCUM_NONE, &accum, err, errlen) ||
        policy_param_enum(p, "hash-prefill", "simulate|recent_global", PREFILL_SIMULATE, &prefill,
                          err, errlen))
        return -1;
    int n = kv->n_layers * kv->n_kv_heads, d = kv->head_dim;

    he_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->bits = bits, s->sink = sink, s->recent = recent;
    s->probe = probe, s->accum = accum, s->prefill = prefill;
    s->G = kv->n_heads / kv->n_kv_heads;
    s->max_cap = cap;
    s->max_cand = evict_max_cand(cap, n_prompt);
    s->R = malloc((size_t)kv->n_layers * bits * d * sizeof *s->R);
    s->qcodes = malloc((size_t)s->G * sizeof *s->qcodes);
    s->set = malloc((size_t)(cap + 1) * sizeof *s->set);
    s->cand = malloc((size_t)s->max_cand * sizeof *s->cand);
    s->cand_pos = malloc((size_t)s->max_cand * sizeof *s->cand_pos);
    s->sortbuf = malloc((size_t)s->max_cand * sizeof *s->sortbuf);
    s->members = malloc((size_t)s->max_cand * sizeof *s->members);
    s->member_pos = malloc((size_t)s->max_cand * sizeof *s->member_pos);
    s->stash_n = calloc((size_t)n, sizeof *s->stash_n);
    if (!s->R || !s->qcodes || !s->set || !s->cand || !s->cand_pos || !s->sortbuf ||
        !s->members || !s->member_pos || !s->stash_n)
        goto oom;
    if (accum == ACCUM_MEAN && prefill == PREFILL_SIMULATE) {
        s->stash = malloc((size_t)n * cap * sizeof *s->stash);
        if (!s->stash) goto oom;
    }
    /* one projection per layer, shared by its heads (§9.2) */
    for (int l = 0; l < kv->n_layers; l++)
        hashevict_projection(p->seed, l, bits, d, s->R + (size_t)l * bits * d);
    return 0;
oom:
    snprintf(err, errlen, "hashevict: out of memory for the projections and scratch");
    he_free(kv);
    return -1;
}

static he_slot *slot_state(const kv_cache *kv, int layer, int g, int j)
{
    return (he_slot *)kv_slot_state(kv, layer, g, j);
}

/* Brings the slot state of (layer, g) up to date: applies the stashed prefill accumulators and
 * computes the codes of slots written since the last hook. */
static void refresh_slots(kv_cache *kv, he_state *s, int layer, int g)
{
    int idx = kv_idx(kv, layer, g), n = kv->len[idx], d = kv->head_dim;
    const float *R = s->R + (size_t)layer * s->bits * d;
    float kbuf[d];   /* a key of a 16-bit cache, widened */
    /* stashed accumulators of the simulated prompt: slot i holds keep[i] */
    if (s->stash && s->stash_n[idx]) {
        const he_acc *st = s->stash + (size_t)idx * s->max_cap;
        for (int i = 0; i < s->stash_n[idx] && i < n; i++) {
            he_slot *e = slot_state(kv, layer, g, i);
            e->acc = st[i].acc;
            e->age = st[i].age;
        }
        s->stash_n[idx] = 0;
    }
    /* codes of freshly written slots */
    for (int j = 0; j < n; j++) {
        he_slot *e = slot_state(kv, layer, g, j);
        if (!e->valid) {
            e->code = hashevict_code(R, s->bits, d, kv_key_f32(kv, layer, g, j, kbuf));
            e->valid = 1;
        }
    }
}

void hashevict_refresh_all(kv_cache *kv)
{
    he_state *s = kv->pstate;
    if (!s) return;
    for (int l = 0; l < kv->n_layers; l++)
        for (int g = 0; g < kv->n_kv_heads; g++) refresh_slots(kv, s, l, g);
}

const float *hashevict_device_proj(const kv_cache *kv, int *bits)
{
    const he_state *s = kv->pstate;
    if (!s) return NULL;
    *bits = s->bits;
    return s->R;
}

/* Probe codes of one step: the G query codes (probe query) or the incoming key's (probe key).
 * q: [G] rows of stride q_stride; k: [d]. Returns the number of probes. */
static int probe_codes(he_state *s, const float *R, int d, const float *q, size_t q_stride,
                       const float *k)
{
    if (s->probe == PROBE_KEY) {
        s->qcodes[0] = hashevict_code(R, s->bits, d, k);
        return 1;
    }
    for (int h = 0; h < s->G; h++) s->qcodes[h] = hashevict_code(R, s->bits, d, q + h * q_stride);
    return s->G;
}

/* One rule evaluation over n members (states st[i] at positions pos[i]) for the token at t:
 * accumulates the mean statistics and returns the victim member (or -1). */
static int rule_victim(he_state *s, he_slot *const *st, const int32_t *pos, int n, int n_q, int t)
{
    int best = -1;
    uint64_t best_acc = 0;
    uint32_t best_age = 0, best_d = 0;
    for (int i = 0; i < n; i++) {
        uint32_t d = probe_dist(st[i]->code, s->qcodes, n_q);
        /* --hash-accum mean: every member's distance joins its running mean */
        if (s->accum == ACCUM_MEAN) st[i]->acc += d, st[i]->age++;
        if (evict_protected(pos[i], s->sink, s->recent, t)) continue;
        if (s->accum == ACCUM_NONE) {
            if (best < 0 || d > best_d || (d == best_d && pos[i] < pos[best])) best = i, best_d = d;
        } else {
            uint64_t lhs = st[i]->acc * (best < 0 ? 1 : best_age), rhs = best_acc * st[i]->age;
            if (best < 0 || lhs > rhs || (lhs == rhs && pos[i] < pos[best]))
                best = i, best_acc = st[i]->acc, best_age = st[i]->age;
        }
    }
    return best;
}

/* Decode (§9.3): append while there is room; once full, the farthest unprotected slot is the
 * victim the new token overwrites. */
static int he_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                       const float *v)
{
    he_state *s = kv->pstate;
    int idx = kv_idx(kv, layer, g), n = kv->len[idx], d = kv->head_dim;
    refresh_slots(kv, s, layer, g);
    if (n < kv->cap[idx]) return n;
    /* probe codes of this step */
    const float *R = s->R + (size_t)layer * s->bits * d;
    int n_q = probe_codes(s, R, d, q, (size_t)d, k);
    /* the rule over the live slots ([DECISION] the mean statistics advance only at rule
     * evaluations, i.e. while the cache is full — the same in the prefill replay) */
    for (int j = 0; j < n; j++) s->members[j] = slot_state(kv, layer, g, j);
    int victim = rule_victim(s, s->members, kv_positions(kv, layer, g), n, n_q, t);
    /* unreachable with C ≥ sink + recent + 1 */
    if (victim < 0) victim = evict_oldest_slot(kv_positions(kv, layer, g), n);
    kv->evictions++;
    return victim;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* --hash-prefill recent_global (cold-compress without a prompt compressor): the candidates at
 * positions < sink plus the most recent ones, C in all. */
static int keep_recent_global(he_state *s, int n_cand, int cap, int *keep)
{
    int n_sink = 0, n = 0;
    for (int j = 0; j < n_cand; j++)
        if (s->cand_pos[j] < s->sink) n_sink++;
    /* the most recent cap − n_sink non-sink candidates: sort by position */
    for (int j = 0; j < n_cand; j++)
        if (s->cand_pos[j] >= s->sink) s->sortbuf[n++] = ((uint64_t)(uint32_t)s->cand_pos[j] << 32) | (uint32_t)j;
    qsort(s->sortbuf, (size_t)n, sizeof *s->sortbuf, cmp_u64);
    int n_keep = 0;
    for (int j = 0; j < n_cand; j++)
        if (s->cand_pos[j] < s->sink) keep[n_keep++] = j;
    int first = n - (cap - n_sink) > 0 ? n - (cap - n_sink) : 0;
    for (int i = first; i < n; i++) keep[n_keep++] = (int)(s->sortbuf[i] & 0xffffffffu);
    evict_sort_ints(keep, n_keep);
    return n_keep;
}

/* Prefill (§9.4): with room for every candidate keep them all; otherwise simulate the decode
 * rule (fill with the first C candidates, then each later prompt token's query codes choose the
 * victim it replaces) or keep first-sink + most recent (recent_global). */
static int he_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    he_state *s = kv->pstate;
    const int layer = c->layer, idx = kv_idx(kv, layer, g), d = kv->head_dim;
    const int hkv = kv->n_kv_heads, cap = kv->cap[idx], n_cand = n_live + c->n_new;
    const float *R = s->R + (size_t)layer * s->bits * d;
    refresh_slots(kv, s, layer, g);
    /* candidate states and positions: live slots, then the chunk's tokens */
    const int32_t *P = kv_positions(kv, layer, g);
    for (int j = 0; j < n_live; j++) s->cand[j] = *slot_state(kv, layer, g, j), s->cand_pos[j] = P[j];
    for (int r = 0; r < c->n_new; r++) {
        he_slot *e = &s->cand[n_live + r];
        e->code = hashevict_code(R, s->bits, d, c->k_new + ((size_t)r * hkv + g) * d);
        e->acc = 0, e->age = 0, e->valid = 1;
        s->cand_pos[n_live + r] = c->pos0 + r;
    }
    int n_keep;
    if (n_cand <= cap) {
        n_keep = evict_keep_all(keep, n_cand); /* everything fits */
    } else if (s->prefill == PREFILL_RECENT_GLOBAL) {
        n_keep = keep_recent_global(s, n_cand, cap, keep);
    } else {
        /* fill the simulated cache with the first C candidates */
        int n_set = cap;
        for (int i = 0; i < n_set; i++) s->set[i] = i;
        he_slot **st = s->members;
        int32_t *set_pos = s->member_pos;
        for (int j = cap; j < n_cand; j++) {
            /* token j (a chunk token, since n_live ≤ C) probes with its own query or key */
            int r = j - n_live;
            const float *qr = c->q_new + ((size_t)r * kv->n_heads + (size_t)g * s->G) * d;
            int n_q = probe_codes(s, R, d, qr, (size_t)d, c->k_new + ((size_t)r * hkv + g) * d);
            for (int i = 0; i < n_set; i++) st[i] = &s->cand[s->set[i]], set_pos[i] = s->cand_pos[s->set[i]];
            int v = rule_victim(s, st, set_pos, n_set, n_q, s->cand_pos[j]);
            if (v < 0) v = evict_oldest_slot(set_pos, n_set); /* unreachable with C ≥ sink + recent + 1 */
            /* the prompt token replaces the victim */
            s->set[v] = j;
        }
        for (int i = 0; i < n_set; i++) keep[i] = s->set[i];
        evict_sort_ints(keep, n_set);
        n_keep = n_set;
    }
    /* stash the mean accumulators of the kept candidates: slot i will hold keep[i] */
    if (s->stash) {
        he_acc *st = s->stash + (size_t)idx * s->max_cap;
        for (int i = 0; i < n_keep; i++) st[i].acc = s->cand[keep[i]].acc, st[i].age = s->cand[keep[i]].age;
        s->stash_n[idx] = n_keep;
    }
    return n_keep;
}

const policy_ops policy_hashevict = {
    .name = "hashevict",
    .paper = "HashEvict (LSH pre-attention eviction), POLICIES.md §9",
    .params = "--hash-bits 16 --hash-sink 4 --hash-recent 10 --hash-probe query|key "
              "--hash-accum none|mean --hash-prefill simulate|recent_global "
              "(--hash-prefill stream is not implemented); C_min = sink + recent + 1",
    .param_defs = he_params,
    .stats = 0,
    .slot_state_bytes = sizeof(he_slot),
    .init = he_init,
    .on_prefill = he_on_prefill,
    .pre_attn = he_pre_attn,
    .free_state = he_free,
};
