/* Sampler: greedy, temperature, top-k and top-p (nucleus), seeded and reproducible. */
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
    s->buf = malloc((size_t)vocab * sizeof *s->buf);
    return s->buf ? 0 : -1;
}

void sampler_free(sampler *s)
{
    free(s->buf);
    s->buf = NULL;
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
    double total = 0.0;
    for (int i = 0; i < m; i++) total += s->buf[i].p;
    double r = rand_f32(&s->rng_state) * total, cum = 0.0;
    for (int i = 0; i < m; i++) {
        cum += s->buf[i].p;
        if (r < cum) return s->buf[i].id;
    }
    return s->buf[m - 1].id;
}
