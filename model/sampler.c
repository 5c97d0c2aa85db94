/* Sampler: llama.cpp's sampler chain (common/sampling.cpp, src/llama-sampler.cpp of the llama.cpp
 * that bench/llamacpp.sh builds): the stages of sampler.order in turn over a candidate list —
 * penalties, DRY (sampler_dry.c), top-n-sigma, top-k, locally typical, top-p, min-p, XTC,
 * temperature (with dynamic temperature) — then a draw; or temperature then Mirostat (1 or
 * 2.0), which replaces the chain as in llama.cpp. Each stage does what llama.cpp's does, in the same float arithmetic, so that
 * the candidates left match tests/fixtures/sampler/llamacpp.txt (scripts/make_sampler_fixtures.sh);
 * and the draws are its own (sampler_rng.c): the same seed picks the same token from the same
 * candidates. Greedy (temperature 0) takes the
 * argmax after the penalties without building the list when no stage could drop that token. */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sampler_init(sampler *s, int vocab, float temperature, float top_p, int top_k, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->temperature = temperature;
    s->top_p = top_p;
    s->top_k = top_k;
    sampler_mt_seed(&s->rng, (uint32_t)seed);
    sampler_mt_seed(&s->rng_xtc, (uint32_t)seed);
    s->vocab = vocab;
    s->repeat = 1.0f;
    s->typical_p = 1.0f;
    s->top_n_sigma = -1.0f;
    s->xtc_threshold = 0.1f;
    s->dynatemp_exponent = 1.0f;
    s->mirostat_tau = 5.0f;
    s->mirostat_eta = 0.1f;
    s->mirostat_mu = 2.0f * s->mirostat_tau;
    strcpy(s->order, SAMPLER_ORDER_DEFAULT);
    s->buf = malloc((size_t)vocab * sizeof *s->buf);
    s->tmp = malloc((size_t)vocab * sizeof *s->tmp);
    return s->buf && s->tmp ? 0 : -1;
}

int sampler_set_order(sampler *s, const char *order)
{
    const size_t n = strlen(order);
    if (n >= sizeof s->order) return -1;
    for (size_t i = 0; i < n; i++)
        if (!strchr(SAMPLER_STAGES, order[i])) return -1;
    memcpy(s->order, order, n + 1);
    return 0;
}

int sampler_set_adaptive(sampler *s, float target, float decay)
{
    decay = decay < 0.0f ? 0.0f : decay > 0.99f ? 0.99f : decay;
    s->adaptive_target = target;
    s->adaptive_decay = decay;
    s->adaptive_sum = target / (1.0f - decay);
    s->adaptive_weight = 1.0f / (1.0f - decay);
    if (!s->adaptive_p) s->adaptive_p = malloc((size_t)s->vocab * sizeof *s->adaptive_p);
    return s->adaptive_p ? 0 : -1;
}

int sampler_set_mirostat(sampler *s, int version, float tau, float eta)
{
    if (version < 0 || version > 2) return -1;
    s->mirostat = version;
    s->mirostat_tau = tau;
    s->mirostat_eta = eta;
    s->mirostat_mu = 2.0f * tau;
    return 0;
}

int sampler_set_logit_bias(sampler *s, const int *ids, const float *bias, int n)
{
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->vocab) return -1;
    free(s->bias_id);
    free(s->bias);
    s->n_bias = 0;
    s->bias_id = malloc((size_t)(n ? n : 1) * sizeof *s->bias_id);
    s->bias = malloc((size_t)(n ? n : 1) * sizeof *s->bias);
    if (!s->bias_id || !s->bias) return -1;
    memcpy(s->bias_id, ids, (size_t)n * sizeof *ids);
    memcpy(s->bias, bias, (size_t)n * sizeof *bias);
    s->n_bias = n;
    return 0;
}

int sampler_set_penalties(sampler *s, float repeat, float frequency, float presence, int last_n)
{
    if (last_n < 1 || !(repeat > 0)) return -1;
    if (repeat == 1.0f && frequency == 0.0f && presence == 0.0f) return 0;   /* off */
    free(s->hist);
    free(s->count);
    s->hist = malloc((size_t)last_n * sizeof *s->hist);
    s->count = calloc((size_t)s->vocab, sizeof *s->count);
    if (!s->hist || !s->count) return -1;
    s->repeat = repeat;
    s->frequency = frequency;
    s->presence = presence;
    s->last_n = last_n;
    s->n_hist = 0;
    return 0;
}

static int penalties_on(const sampler *s) { return s->last_n > 0 && s->hist; }
static int stage_in(const sampler *s, char c) { return s->mirostat == 0 && strchr(s->order, c) != NULL; }
static int adaptive_on(const sampler *s) { return stage_in(s, 'a') && s->adaptive_p && s->adaptive_target >= 0.0f; }

/* 1 when temperature 0 is the argmax after the penalties: no stage can drop that token (typical,
 * XTC and dynamic temperature can, DRY changes logits; the others always keep the largest logit) and the chain has
 * its temperature stage (without it llama.cpp samples at the logits' own scale). */
static int greedy(const sampler *s)
{
    if (s->temperature > 0.0f) return 0;
    if (s->mirostat) return 1;   /* temperature 0 leaves one finite logit to Mirostat */
    return stage_in(s, 't') && !(s->dry && stage_in(s, 'd')) && s->dynatemp_range <= 0.0f &&
           !(stage_in(s, 'y') && s->typical_p < 1.0f) &&
           !(stage_in(s, 'x') && s->xtc_probability > 0.0f && s->xtc_threshold <= 0.5f);
}

int sampler_needs_logits(const sampler *s)
{
    return !greedy(s) || s->n_bias > 0 || (penalties_on(s) && stage_in(s, 'e'));
}

void sampler_accept(sampler *s, int id)
{
    if (id < 0 || id >= s->vocab) return;
    if (s->dry) sampler_dry_accept(s, id);
    if (penalties_on(s)) s->hist[s->n_hist++ % s->last_n] = id;
}

void sampler_free(sampler *s)
{
    free(s->buf);
    free(s->tmp);
    free(s->hist);
    free(s->count);
    free(s->bias_id);
    free(s->bias);
    free(s->adaptive_p);
    s->adaptive_p = NULL;
    sampler_dry_free(s);
    s->buf = s->tmp = NULL;
    s->hist = s->count = s->bias_id = NULL;
    s->bias = NULL;
    s->n_bias = 0;
}

/* llama.cpp's llama_sampler_penalties_apply over the window of accepted ids: on logits[] by id
 * (c NULL), or on the candidate list c[0..n) (each candidate's logit, found by its id). */
static float penalized(const sampler *s, float l, int k)
{
    l = l <= 0.0f ? l * s->repeat : l / s->repeat;
    return l - ((float)k * s->frequency + s->presence);   /* llama.cpp's order of operations */
}
static void apply_penalties(sampler *s, float *logits, sampler_cand *c, int n)
{
    const int nw = s->n_hist < s->last_n ? s->n_hist : s->last_n;
    for (int i = 0; i < nw; i++) s->count[s->hist[i]]++;
    if (c) {
        for (int i = 0; i < n; i++)
            if (s->count[c[i].id]) c[i].logit = penalized(s, c[i].logit, s->count[c[i].id]);
        for (int i = 0; i < nw; i++) s->count[s->hist[i]] = 0;
        return;
    }
    for (int i = 0; i < nw; i++) {
        const int id = s->hist[i], k = s->count[id];
        if (k == 0) continue;   /* already applied (a repeated id) */
        logits[id] = penalized(s, logits[id], k);
        s->count[id] = 0;
    }
}

/* The lowest index of the largest of x[0..n) (n ≥ 1), exactly as `best = 0; for i: if (x[i] >
 * x[best]) best = i` (NaNs never win, except x[0] which then wins). 16 lanes each keep their first
 * value above x[0], which the compiler vectorizes (the plain loop, one compare chained on the
 * last, was 1% of a Qwen2.5-0.5B token at 2 threads in perf, 151936 logits, while the other
 * thread waited); then the lanes by value, ties to the lower index. */
static int argmax(const float *x, int n)
{
    enum { L = 16 };
    float m[L];
    int id[L], i = 0;
    for (int j = 0; j < L; j++) m[j] = x[0], id[j] = 0;
    for (; i + L <= n; i += L)
        for (int j = 0; j < L; j++)
            if (x[i + j] > m[j]) {
                m[j] = x[i + j];
                id[j] = i + j;
            }
    float bm = m[0];
    int best = id[0];
    for (int j = 1; j < L; j++)
        if (m[j] > bm || (m[j] == bm && id[j] < best)) bm = m[j], best = id[j];
    for (; i < n; i++)
        if (x[i] > bm) bm = x[i], best = i;
    return best;
}

/* The chain over logits; want_p: the softmax at the end (sampler_filter's contract), which the
 * plain draw does not need (it computes its own weights from the logits). */
static int filter(sampler *s, const float *logits, int want_p)
{
    sampler_cand *c = s->buf;
    s->n = s->vocab;
    s->sorted = 0;
    for (int i = 0; i < s->n; i++) c[i].logit = logits[i], c[i].p = 0.0f, c[i].id = i;
    for (int i = 0; i < s->n_bias; i++) c[s->bias_id[i]].logit += s->bias[i];   /* llama.cpp's logit_bias, first */
    if (s->mirostat) {
        sampler_scale(s, s->temperature);
        sampler_mirostat(s);
        return s->n;
    }
    for (const char *o = s->order; *o; o++) {
        if (*o == 'e') {
            if (penalties_on(s)) apply_penalties(s, NULL, c, s->n);
        } else if (*o == 'd') {
            if (s->dry) sampler_dry_apply(s);
        } else {
            sampler_stage(s, *o);
        }
    }
    if (adaptive_on(s)) sampler_adaptive(s);   /* llama.cpp puts it last, where the draw is */
    else if (want_p) sampler_softmax(s, 0);     /* −∞ logits: p 0 */
    return s->n;
}

int sampler_filter(sampler *s, const float *logits) { return filter(s, logits, 1); }

int sampler_commit(sampler *s, int k)
{
    if (s->mirostat)   /* mu follows the surprise of the token taken (llama.cpp's update) */
        s->mirostat_mu -= s->mirostat_eta * (-log2f(s->buf[k].p) - s->mirostat_tau);
    if (adaptive_on(s)) {   /* the EMA of the p taken, before the transform */
        s->adaptive_sum = s->adaptive_p[k] + s->adaptive_decay * s->adaptive_sum;
        s->adaptive_weight = 1.0f + s->adaptive_decay * s->adaptive_weight;
    }
    return s->buf[k].id;
}

int sampler_sample(sampler *s, float *logits)
{
    if (greedy(s)) {
        for (int i = 0; i < s->n_bias; i++) logits[s->bias_id[i]] += s->bias[i];
        if (penalties_on(s) && stage_in(s, 'e')) apply_penalties(s, logits, NULL, 0);
        return argmax(logits, s->vocab);
    }
    /* llama.cpp's last sampler draws: Mirostat and adaptive-p from the candidates' p, dist from
     * their logits (sampler_rng.c) */
    const int by_p = s->mirostat || stage_in(s, 'a');
    filter(s, logits, by_p);
    int k = by_p ? sampler_draw_discrete(s) : sampler_draw_dist(s);
    while (k > 0 && s->buf[k].logit == -INFINITY) k--;   /* never a −∞ candidate (a zero draw) */
    return sampler_commit(s, k);
}
