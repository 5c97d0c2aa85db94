/* Sampler: llama.cpp's repetition penalties, then greedy, or temperature with top-k, top-p
 * (nucleus) and min-p; seeded and reproducible. */
#include "model/model.h"

#include <math.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 bits. */
static float rand_f32(uint64_t *s) { return (float)(splitmix64(s) >> 40) / 16777216.0f; }

int sampler_init(sampler *s, int vocab, float temperature, float top_p, int top_k, uint64_t seed)
{
    s->temperature = temperature;
    s->top_p = top_p;
    s->top_k = top_k;
    s->rng_state = seed;
    s->vocab = vocab;
    s->min_p = 0.0f;
    s->repeat = 1.0f;
    s->frequency = s->presence = 0.0f;
    s->last_n = 0;
    s->hist = s->count = NULL;
    s->n_hist = 0;
    s->buf = malloc((size_t)vocab * sizeof *s->buf);
    return s->buf ? 0 : -1;
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

int sampler_needs_logits(const sampler *s) { return s->temperature > 0.0f || penalties_on(s); }

void sampler_accept(sampler *s, int id)
{
    if (!penalties_on(s) || id < 0 || id >= s->vocab) return;
    s->hist[s->n_hist++ % s->last_n] = id;
}

/* llama.cpp's llama_sampler_penalties_apply over the window of accepted ids. */
static void apply_penalties(sampler *s, float *logits)
{
    const int n = s->n_hist < s->last_n ? s->n_hist : s->last_n;
    for (int i = 0; i < n; i++) s->count[s->hist[i]]++;
    for (int i = 0; i < n; i++) {
        const int id = s->hist[i], c = s->count[id];
        if (c == 0) continue;   /* already applied (a repeated id) */
        float l = logits[id];
        l = l <= 0.0f ? l * s->repeat : l / s->repeat;
        logits[id] = l - ((float)c * s->frequency + s->presence);   /* llama.cpp's order of operations */
        s->count[id] = 0;
    }
}

void sampler_free(sampler *s)
{
    free(s->buf);
    free(s->hist);
    free(s->count);
    s->buf = NULL;
    s->hist = s->count = NULL;
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

static int cmp_desc(const void *a, const void *b)
{
    const struct { float p; int id; } *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id - y->id;
}

int sampler_sample(sampler *s, float *logits)
{
    int n = s->vocab;
    if (penalties_on(s)) apply_penalties(s, logits);
    if (s->temperature <= 0.0f) return argmax(logits, n);
    /* softmax at temperature */
    float mx = logits[argmax(logits, n)];
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        logits[i] = expf((logits[i] - mx) / s->temperature);
        sum += logits[i];
    }
    for (int i = 0; i < n; i++) {
        s->buf[i].p = (float)(logits[i] / sum);
        s->buf[i].id = i;
    }
    int m = n;
    if ((s->top_k > 0 && s->top_k < n) || (s->top_p > 0.0f && s->top_p < 1.0f)) {
        qsort(s->buf, (size_t)n, sizeof *s->buf, cmp_desc);
        if (s->top_k > 0 && s->top_k < m) m = s->top_k;
        if (s->top_p > 0.0f && s->top_p < 1.0f) {
            double cum = 0.0;
            for (int i = 0; i < m; i++) {
                cum += s->buf[i].p;
                if (cum >= s->top_p) {
                    m = i + 1;
                    break;
                }
            }
        }
    }
    if (s->min_p > 0.0f) {   /* p_max: the first after the sort, else the largest */
        float pmax = 0.0f;
        for (int i = 0; i < m; i++) pmax = s->buf[i].p > pmax ? s->buf[i].p : pmax;
        int k = 0;
        for (int i = 0; i < m; i++)
            if (s->buf[i].p >= s->min_p * pmax) s->buf[k++] = s->buf[i];
        m = k;   /* ≥ 1: p_max itself passes (min_p ≤ 1) */
    }
    double total = 0.0;
    for (int i = 0; i < m; i++) total += s->buf[i].p;
    double r = rand_f32(&s->rng_state) * total, cum = 0.0;
    for (int i = 0; i < m; i++) {
        cum += s->buf[i].p;
        if (r < cum) return s->buf[i].id;
    }
    return s->buf[m - 1].id;
}
