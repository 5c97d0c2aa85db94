/* `subgen_stream`: SubGen's Algorithm 1 (Zandieh et al.; POLICIES.md §8.3) behind an exact
 * recent window: the attention output becomes an estimator.
 *
 * Per (layer, KV head g), shared by the G query heads of the group (query-independent, §12):
 *   W  the exact K/V of the last r tokens: the cache's slots (kv_len counts them, capacity r);
 *   D  key clusters i < m ≤ m_max: representative x_i [d], size n_i, t uniform samples S_i [t][d];
 *   M  s value-norm samples (k_j, v_j, ‖v_j‖²) drawn ∝ ‖v‖² by a weighted reservoir;
 *   μ  Σ ‖v‖² over all tokens inserted into the sketch.
 * A token enters the sketch when it leaves W (pre_attn overwrites the oldest window slot; prompt
 * tokens older than the window are inserted by on_prefill, in position order). The decode
 * attention (the .attend hook) is
 *   num = Σ_W e^{l_j − m*} v_j + Σ_{j∈M, w2_j>0} μ/(s·w2_j) e^{l_j − m*} v_j
 *   den = Σ_W e^{l_j − m*}     + Σ_i (n_i/t) Σ_{k∈S_i} e^{l(k) − m*},      out = num / den,
 * l = scale·⟨q, k⟩, m* the largest of all those logits. While the sketch is empty it is exactly
 * the engine's attention over W (the same kernel), so r ≥ N + max_new is bit-identical to `full`.
 *
 * Memory (units of one token's K+V = 2d numbers): r + s + ⌈m_max(t + 1)/2⌉ ≤ C. The window is
 * the cache (capacity r); the sketch lives in pstate and is counted in kv->sketch_bytes (issue 19).
 * Defaults (§8.3): r = ⌊C/4⌋, s = ⌊C/4⌋, t = 8, m_max = ⌊2(C − r − s)/(t + 1)⌋; δ per (ℓ, g) is the
 * covering radius of Gonzalez with m_max centers on the prompt keys that go into the sketch
 * (0 when they are fewer than m_max). When C ≥ N + max_new, r = C and the sketch is never used.
 * Randomness: the counter RNG of §1.6, U(seed; stream S|M, layer, g, pos, slot). */
#include "eviction/policy_common.h"
#include "eviction/kv_device.h"
#include "kernels/cuda/ss_sketch.h"
#include "kernels/kernels.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int r, s, t, m_max, d;
    int delta_auto;
    double delta_user;
    ss_head *head;   /* [n_layers*n_kv_heads] */
    float *rep;      /* [..][m_max][d] cluster representatives */
    int64_t *count;  /* [..][m_max] cluster sizes n_i */
    float *samp;     /* [..][m_max][t][d] cluster samples S_i */
    int32_t *samp_pos; /* [..][m_max][t] their positions */
    float *mk, *mv;  /* [..][s][d] value-norm samples: keys, values */
    double *mw2;     /* [..][s] their ‖v‖² */
    int32_t *mpos;   /* [..][s] their positions, -1 = empty */
    float *logits;   /* [n_kv_heads][r + m_max·t + s] attend scratch (one row per group) */
    size_t logits_stride;
    double *num;     /* [n_kv_heads][d] attend scratch (numerator) */
    /* prefill scratch: Gonzalez for δ */
    int max_cand;
    const float **rows; /* [max_cand] */
    double *dist;       /* [max_cand] */
} ss_state;

static float dotf(const float *a, const float *b, int d)
{
    float s = 0.0f;
    for (int i = 0; i < d; i++) s += a[i] * b[i];
    return s;
}

/* UpdateSoftmaxNormalizer's cluster choice (§8.3) for key x [d]: the nearest representative
 * (ℓ2, ties → lower index) if it lies within delta; otherwise a new cluster with representative
 * x while m < m_max; otherwise the nearest anyway (the m_max cap). reps [m_max][d] and
 * counts [m_max] are updated (the count of the chosen cluster grows by one), *m may grow.
 * *created: 1 when a cluster was opened. Returns the cluster index. */
int subgen_stream_assign(float *reps, int64_t *counts, int *m, int m_max, int d, double delta,
                         const float *x, int *created)
{
    /* the nearest representative */
    int best = -1;
    double best_d2 = 0.0;
    for (int i = 0; i < *m; i++) {
        double e = evict_dist2(reps + (size_t)i * d, x, d);
        if (best < 0 || e < best_d2) best = i, best_d2 = e;
    }
    *created = 0;
    /* within δ (or no room for a new cluster): join it */
    if (best >= 0 && (sqrt(best_d2) <= delta || *m >= m_max)) {
        counts[best]++;
        return best;
    }
    /* open a cluster represented by x */
    best = (*m)++;
    memcpy(reps + (size_t)best * d, x, (size_t)d * sizeof(float));
    counts[best] = 1;
    *created = 1;
    return best;
}

/* Inserts the token (k, v) [d] at position pos into the sketch of (layer, g) (§8.3 insert). */
static void sketch_insert(kv_cache *kv, ss_state *s, int layer, int g, const float *k,
                          const float *v, int32_t pos)
{
    const int idx = kv_idx(kv, layer, g), d = s->d, t = s->t;
    ss_head *h = &s->head[idx];
    float *rep = s->rep + (size_t)idx * s->m_max * d;
    int64_t *count = s->count + (size_t)idx * s->m_max;
    /* δ of a sketch first fed during decode: no prompt keys, so 0 (§8.3) */
    if (!h->delta_set) h->delta = 0.0, h->delta_set = 1;
    /* UpdateSoftmaxNormalizer: cluster, then each of the t samples is a reservoir */
    int created;
    int i = subgen_stream_assign(rep, count, &h->m, s->m_max, d, h->delta, k, &created);
    float *S = s->samp + ((size_t)idx * s->m_max + i) * t * d;
    int32_t *Spos = s->samp_pos + ((size_t)idx * s->m_max + i) * t;
    for (int j = 0; j < t; j++)
        if (created || evict_rng_u01(kv->params.seed, SS_STREAM_S, layer, g, pos, j) < 1.0 / (double)count[i]) {
            memcpy(S + (size_t)j * d, k, (size_t)d * sizeof(float));
            Spos[j] = pos;
        }
    /* UpdateMatrixProduct: each of the s samples takes the token with p = w2 / (μ + w2) */
    double w2 = 0.0;
    for (int e = 0; e < d; e++) w2 += (double)v[e] * v[e];
    double p = h->mu + w2 == 0.0 ? 1.0 : w2 / (h->mu + w2);
    for (int j = 0; j < s->s; j++)
        if (evict_rng_u01(kv->params.seed, SS_STREAM_M, layer, g, pos, j) < p) {
            size_t o = ((size_t)idx * s->s + j) * d;
            memcpy(s->mk + o, k, (size_t)d * sizeof(float));
            memcpy(s->mv + o, v, (size_t)d * sizeof(float));
            s->mw2[(size_t)idx * s->s + j] = w2;
            s->mpos[(size_t)idx * s->s + j] = pos;
        }
    /* μ grows after the draws */
    h->mu += w2;
    h->n_ins++;
}

/* The estimator's sums for one query q [d] of group g in `layer` (§8.3 attend), with the logits
 * l = scale·⟨q, k⟩ shifted by `shift`: num [d] = Σ_W e^{l−shift} v + Σ_M μ/(s·w2) e^{l−shift} v
 * (entries with w2 = 0 skipped), *den = Σ_W e^{l−shift} + Σ_i (n_i/t) Σ_{S_i} e^{l−shift}.
 * With shift = 0 their expectations over the sketch's randomness are the exact sums over all
 * tokens seen (§15.3). */
void subgen_stream_sums(const kv_cache *kv, int layer, int g, const float *q, float scale,
                        double shift, double *num, double *den)
{
    const ss_state *s = kv->pstate;
    const int idx = kv_idx(kv, layer, g), d = kv->head_dim, n = kv_len(kv, layer, g);
    const ss_head *h = &s->head[idx];
    const float *K = kv_keys_f32(kv, layer, g, n), *V = kv_values_f32(kv, layer, g, n);
    for (int e = 0; e < d; e++) num[e] = 0.0;
    double D = 0.0;
    /* the exact window */
    for (int j = 0; j < n; j++) {
        double w = exp((double)(dotf(q, K + (size_t)j * d, d) * scale) - shift);
        D += w;
        for (int e = 0; e < d; e++) num[e] += w * V[(size_t)j * d + e];
    }
    /* the partition function of the sketch: clusters' samples, weight n_i / t */
    for (int i = 0; i < h->m; i++) {
        const float *S = s->samp + ((size_t)idx * s->m_max + i) * s->t * d;
        double sum = 0.0;
        for (int j = 0; j < s->t; j++) sum += exp((double)(dotf(q, S + (size_t)j * d, d) * scale) - shift);
        D += (double)s->count[(size_t)idx * s->m_max + i] / s->t * sum;
    }
    /* the numerator of the sketch: value-norm samples, weight μ / (s·w2) */
    if (h->n_ins > 0)
        for (int j = 0; j < s->s; j++) {
            size_t o = (size_t)idx * s->s + j;
            if (s->mpos[o] < 0 || s->mw2[o] <= 0.0) continue;
            double w = h->mu / (s->s * s->mw2[o]) *
                       exp((double)(dotf(q, s->mk + o * d, d) * scale) - shift);
            for (int e = 0; e < d; e++) num[e] += w * s->mv[o * d + e];
        }
    *den = D;
}

/* Sketch summary of (layer, g): clusters, tokens inserted (= Σ n_i), μ and δ. */
void subgen_stream_info(const kv_cache *kv, int layer, int g, int *m, int64_t *n_inserted,
                        double *mu, double *delta)
{
    const ss_state *s = kv->pstate;
    const ss_head *h = &s->head[kv_idx(kv, layer, g)];
    *m = h->m, *n_inserted = h->n_ins, *mu = h->mu, *delta = h->delta;
}

/* Position of the token held by value-norm sample j < s of (layer, g); -1 when empty. */
int subgen_stream_m_pos(const kv_cache *kv, int layer, int g, int j)
{
    const ss_state *s = kv->pstate;
    return s->mpos[(size_t)kv_idx(kv, layer, g) * s->s + j];
}

/* Position of sample j < t of cluster i < m of (layer, g); its representative in rep [d] and
 * its size in *count (either may be NULL). */
int subgen_stream_cluster(const kv_cache *kv, int layer, int g, int i, int j, float *rep,
                          int64_t *count)
{
    const ss_state *s = kv->pstate;
    size_t c = (size_t)kv_idx(kv, layer, g) * s->m_max + i;
    if (rep) memcpy(rep, s->rep + c * s->d, (size_t)s->d * sizeof(float));
    if (count) *count = s->count[c];
    return s->samp_pos[c * s->t + j];
}

static const policy_param_def ss_params[] = {
    {"ss-recent", "window", PARAM_INT, "C/4", NULL, "exact recent window r (the cache slots)"},
    {"ss-s", NULL, PARAM_INT, "C/4", NULL, "value-norm samples s (numerator)"},
    {"ss-t", NULL, PARAM_INT, "8", NULL, "samples per key cluster t (denominator)"},
    {"ss-mmax", NULL, PARAM_INT, "2(C-r-s)/(t+1)", NULL, "maximum number of key clusters"},
    {"ss-delta", NULL, PARAM_FLOAT, "auto", NULL,
     "cluster radius; auto: Gonzalez covering radius of the prompt keys in the sketch"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

int subgen_stream_device_sketch(const kv_cache *kv, ss_sketch *out)
{
    const ss_state *s = kv->pstate;
    if (!kv->ops || strcmp(kv->ops->name, "subgen_stream") != 0 || !s) return -1;
    out->r = s->r, out->s = s->s, out->t = s->t, out->m_max = s->m_max, out->d = s->d;
    out->n = kv->n_layers * kv->n_kv_heads;
    out->head = s->head, out->rep = s->rep, out->count = s->count, out->samp = s->samp;
    out->samp_pos = s->samp_pos, out->mk = s->mk, out->mv = s->mv, out->mw2 = s->mw2, out->mpos = s->mpos;
    return 0;
}

static void ss_free(kv_cache *kv)
{
    ss_state *s = kv->pstate;
    if (!s) return;
    EVICT_FREE(s->head, s->rep, s->count, s->samp, s->samp_pos, s->mk, s->mv, s->mw2, s->mpos,
               s->logits, s->num, s->rows, s->dist, s);
    kv->pstate = NULL;
}

/* 1 when the user set NAME to "auto" (the last setting wins, as in policy_param_*). */
static int param_is_auto(const policy_params *p, const char *name)
{
    for (int i = p->n_set - 1; i >= 0; i--)
        if (strcmp(p->set[i].name, name) == 0) return strcmp(p->set[i].value, "auto") == 0;
    return 1;
}

static int ss_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                   size_t errlen)
{
    int r, s_, t, m_max;
    double delta = 0.0;
    if (policy_param_int(p, "ss-recent", -1, 1, 1 << 30, &r, err, errlen) ||
        policy_param_int(p, "ss-s", -1, 1, 1 << 30, &s_, err, errlen) ||
        policy_param_int(p, "ss-t", 8, 1, 1 << 20, &t, err, errlen) ||
        policy_param_int(p, "ss-mmax", -1, 1, 1 << 30, &m_max, err, errlen))
        return -1;
    /* [DECISION] --rope shifted rotates keys by their rank in the cache; sketched keys have no
     * rank, so the estimator is defined for absolute positions only */
    if (p->rope_shifted) {
        snprintf(err, errlen, "--rope shifted: subgen_stream needs --rope absolute (its sketch "
                 "keys have no cache rank)");
        return -1;
    }
    int delta_auto = param_is_auto(p, "ss-delta");
    if (!delta_auto && policy_param_float(p, "ss-delta", 0.0, 0.0, 1e30, &delta, err, errlen))
        return -1;
    /* [DECISION] C_min = 10: the smallest C whose defaults (r = s = 2, t = 8) leave one cluster */
    int C = kv_budget_capacity(p, n_prompt, max_new, 10);
    if ((int64_t)C >= (int64_t)n_prompt + max_new) {
        /* everything fits: the window is the whole cache, the sketch stays empty (identity) */
        r = C, s_ = 0, t = 0, m_max = 0;
    } else {
        /* the §8.3 defaults and the memory bound r + s + ⌈m_max(t+1)/2⌉ ≤ C */
        if (r < 0) r = C / 4 > 1 ? C / 4 : 1;
        if (s_ < 0) s_ = C / 4 > 1 ? C / 4 : 1;
        if (m_max < 0) m_max = (int)(2 * ((int64_t)C - r - s_) / (t + 1));
        if (m_max < 1) {
            snprintf(err, errlen, "--ss-mmax: C = %d with r = %d, s = %d, t = %d leaves no room for "
                     "a key cluster (lower --ss-recent/--ss-s/--ss-t or raise --budget)", C, r, s_, t);
            return -1;
        }
        int64_t mem = (int64_t)r + s_ + ((int64_t)m_max * (t + 1) + 1) / 2;
        if (mem > C) {
            snprintf(err, errlen, "--ss-recent/--ss-s/--ss-t/--ss-mmax: r + s + ceil(m(t+1)/2) = "
                     "%lld token slots exceed the capacity C = %d", (long long)mem, C);
            return -1;
        }
    }
    const int n = kv->n_layers * kv->n_kv_heads, d = kv->head_dim;
    for (int i = 0; i < n; i++) kv->cap[i] = r;
    ss_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->r = r, s->s = s_, s->t = t, s->m_max = m_max, s->d = d;
    s->delta_auto = delta_auto, s->delta_user = delta;
    size_t nm = (size_t)n * m_max, ns = (size_t)n * s_;
    s->head = calloc((size_t)n, sizeof *s->head);
    s->rep = malloc((nm ? nm : 1) * d * sizeof *s->rep);
    s->count = calloc(nm ? nm : 1, sizeof *s->count);
    s->samp = malloc((nm ? nm : 1) * t * d * sizeof *s->samp + 1);
    s->samp_pos = malloc((nm ? nm : 1) * t * sizeof *s->samp_pos + 1);
    s->mk = malloc((ns ? ns : 1) * d * sizeof *s->mk);
    s->mv = malloc((ns ? ns : 1) * d * sizeof *s->mv);
    s->mw2 = calloc(ns ? ns : 1, sizeof *s->mw2);
    s->mpos = malloc((ns ? ns : 1) * sizeof *s->mpos);
    s->logits_stride = (size_t)r + 1 + (size_t)m_max * t + s_;
    s->logits = malloc((size_t)kv->n_kv_heads * s->logits_stride * sizeof *s->logits);
    s->num = malloc((size_t)kv->n_kv_heads * d * sizeof *s->num);
    s->max_cand = r + 1 + (n_prompt > 0 ? n_prompt : 1);
    s->rows = malloc((size_t)s->max_cand * sizeof *s->rows);
    s->dist = malloc((size_t)s->max_cand * sizeof *s->dist);
    if (!s->head || !s->rep || !s->count || !s->samp || !s->samp_pos || !s->mk || !s->mv ||
        !s->mw2 || !s->mpos || !s->logits || !s->num || !s->rows || !s->dist)
        goto oom;
    for (size_t i = 0; i < ns; i++) s->mpos[i] = -1;
    /* the sketch is part of the cache's memory (issue 19): centres, counts, samples and their
     * positions, the value-norm samples (k, v, weight, position) */
    kv->sketch_bytes = nm * d * sizeof *s->rep + nm * sizeof *s->count + nm * t * d * sizeof *s->samp +
                       nm * t * sizeof *s->samp_pos + ns * d * (sizeof *s->mk + sizeof *s->mv) +
                       ns * (sizeof *s->mw2 + sizeof *s->mpos);
    for (int i = 0; i < n; i++)
        if (!delta_auto) s->head[i].delta = delta, s->head[i].delta_set = 1;
    return 0;
oom:
    snprintf(err, errlen, "subgen_stream: out of memory for the sketch (%d layers x %d heads)",
             kv->n_layers, kv->n_kv_heads);
    ss_free(kv);
    return -1;
}

/* Prefill: keep the last r candidates (in position order) as the window; the older ones go into
 * the sketch in position order. */
static int ss_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    ss_state *s = kv->pstate;
    const int layer = c->layer, d = kv->head_dim, hkv = kv->n_kv_heads;
    const int n_cand = n_live + c->n_new, n_out = n_cand > s->r ? n_cand - s->r : 0;
    const float *K = kv_keys_f32(kv, layer, g, n_live), *V = kv_values_f32(kv, layer, g, n_live);
    const int32_t *P = kv_positions(kv, layer, g);
    ss_head *h = &s->head[kv_idx(kv, layer, g)];
    /* the keys that leave the window: live slots (in position order during prefill), then the
     * chunk's oldest tokens */
    for (int j = 0; j < n_out; j++)
        s->rows[j] = j < n_live ? K + (size_t)j * d : c->k_new + ((size_t)(j - n_live) * hkv + g) * d;
    /* δ (auto): Gonzalez radius with m_max centers over the keys of the first insertion.
     * [DECISION] with --prefill-chunk that is the first chunk that overflows the window. */
    if (n_out > 0 && !h->delta_set) {
        subgen_gonzalez(s->rows, n_out, d, s->m_max, 0, NULL, &h->delta, s->dist);
        h->delta_set = 1;
    }
    /* insert them in position order */
    for (int j = 0; j < n_out; j++) {
        if (j < n_live)
            sketch_insert(kv, s, layer, g, K + (size_t)j * d, V + (size_t)j * d, P[j]);
        else {
            size_t o = ((size_t)(j - n_live) * hkv + g) * d;
            sketch_insert(kv, s, layer, g, c->k_new + o, c->v_new + o, c->pos0 + (j - n_live));
        }
    }
    /* the window: the last r candidates */
    for (int j = n_out; j < n_cand; j++) keep[j - n_out] = j;
    return n_cand - n_out;
}

/* Decode: append while the window has room; otherwise its oldest token moves into the sketch
 * and the new token takes its slot. */
static int ss_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                       const float *v)
{
    ss_state *s = kv->pstate;
    int n = kv_len(kv, layer, g), d = kv->head_dim;
    if (n < kv->cap[kv_idx(kv, layer, g)]) return n;
    /* the oldest window slot */
    const int32_t *P = kv_positions(kv, layer, g);
    int old = 0;
    for (int j = 1; j < n; j++)
        if (P[j] < P[old]) old = j;
    float kb[d], vb[d];   /* the slot's K/V widened when the cache is 16-bit */
    sketch_insert(kv, s, layer, g, kv_key_f32(kv, layer, g, old, kb), kv_value_f32(kv, layer, g, old, vb),
                  P[old]);
    kv->evictions++;
    return old;
}

/* Decode attention of the G query heads q [G][d] of group g (§8.3 attend) → out [G][d]. */
static void ss_attend(kv_cache *kv, int layer, int g, const float *q, float scale, float *out)
{
    ss_state *s = kv->pstate;
    const int idx = kv_idx(kv, layer, g), d = kv->head_dim, G = kv->n_heads / kv->n_kv_heads;
    const int n = kv_len(kv, layer, g);
    const ss_head *h = &s->head[idx];
    float *lg = s->logits + (size_t)g * s->logits_stride;
    /* an empty sketch: exactly the engine's attention over the window (the cache's rows as
     * stored, in its dtype) */
    if (h->n_ins == 0) {
        for (int hh = 0; hh < G; hh++)
            attn_decode_head(q + (size_t)hh * d, kv_key_data(kv, layer, g), kv->kv_dtype,
                             kv_value_data(kv, layer, g), kv->kv_dtype, n, d, scale, lg,
                             out + (size_t)hh * d);
        return;
    }
    const float *K = kv_keys_f32(kv, layer, g, n);
    double *num = s->num + (size_t)g * d, den;
    for (int hh = 0; hh < G; hh++) {
        const float *qh = q + (size_t)hh * d;
        /* m*: the largest logit over the window, the cluster samples and the M keys */
        float mx = -INFINITY;
        for (int j = 0; j < n; j++) mx = fmaxf(mx, dotf(qh, K + (size_t)j * d, d) * scale);
        for (int i = 0; i < h->m; i++) {
            const float *S = s->samp + ((size_t)idx * s->m_max + i) * s->t * d;
            for (int j = 0; j < s->t; j++) mx = fmaxf(mx, dotf(qh, S + (size_t)j * d, d) * scale);
        }
        for (int j = 0; j < s->s; j++) {
            size_t o = (size_t)idx * s->s + j;
            if (s->mpos[o] >= 0) mx = fmaxf(mx, dotf(qh, s->mk + o * d, d) * scale);
        }
        /* the two estimators, then their ratio */
        subgen_stream_sums(kv, layer, g, qh, scale, (double)mx, num, &den);
        for (int e = 0; e < d; e++) out[(size_t)hh * d + e] = (float)(num[e] / den);
    }
}

const policy_ops policy_subgen_stream = {
    .name = "subgen_stream",
    .paper = "SubGen (Zandieh et al.) Algorithm 1 + exact recent window, POLICIES.md §8.3",
    .params = "--ss-recent C/4 --ss-s C/4 --ss-t 8 --ss-mmax 2(C-r-s)/(t+1) --ss-delta auto; "
              "window = cache slots (capacity r), sketch in policy state; r + s + "
              "ceil(m(t+1)/2) <= C; --rope absolute only",
    .param_defs = ss_params,
    .stats = 0,
    .reads_rows = 1,
    .init = ss_init,
    .on_prefill = ss_on_prefill,
    .pre_attn = ss_pre_attn,
    .attend = ss_attend,
    .attend_exact_when_fits = 1,
    .free_state = ss_free,
};
