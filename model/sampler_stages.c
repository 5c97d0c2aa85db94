/* model/sampler_stages.c — the stages of the sampler chain (model/sampler.c runs them in
 * sampler.order) over the candidate list s->buf[0..s->n): top-n-sigma, top-k, locally typical,
 * top-p, min-p, XTC, temperature and dynamic temperature, Mirostat 1 and 2.0, adaptive-p's
 * transform (DRY is sampler_dry.c, the penalties sampler.c). Each does what
 * llama.cpp's (src/llama-sampler.cpp) does, in the same float arithmetic, so that the candidates
 * left match tests/fixtures/sampler/llamacpp.txt; the sorts are partial where llama.cpp's are
 * (and typical's too, where llama.cpp sorts the whole vocabulary). */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the candidate list */

/* Larger logit first; equal logits by id (a total order: the sorts are deterministic). */
static int before(const sampler_cand *a, const sampler_cand *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}
static int cmp_cand(const void *a, const void *b)
{
    const sampler_cand *x = a, *y = b;
    return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

/* typical's order: smaller score (in .p) first, then smaller index (in .id) */
static int score_before(const sampler_cand *a, const sampler_cand *b)
{
    return a->p < b->p || (a->p == b->p && a->id < b->id);
}
static int cmp_score(const void *a, const void *b)
{
    const sampler_cand *x = a, *y = b;
    return score_before(x, y) ? -1 : score_before(y, x) ? 1 : 0;
}

/* The k first of c[0..n) (1 ≤ k ≤ n) become its k first in the order lt (a strict total
 * order), sorted by cmp (the same order): a quickselect (Hoare partitions around the median of
 * three until k is a boundary), then a sort of those k; the rest stay in any order. */
static void select_sorted(sampler_cand *c, int n, int k, int (*lt)(const sampler_cand *, const sampler_cand *),
                          int (*cmp)(const void *, const void *))
{
    int lo = 0, hi = n - 1;
    while (k < n && lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        const sampler_cand a = c[lo], b = c[mid], d = c[hi];
        const sampler_cand piv = lt(&a, &b) ? (lt(&b, &d) ? b : lt(&a, &d) ? d : a)
                                            : (lt(&a, &d) ? a : lt(&b, &d) ? d : b);
        int i = lo, j = hi;
        while (i <= j) {
            while (lt(&c[i], &piv)) i++;
            while (lt(&piv, &c[j])) j--;
            if (i <= j) {
                const sampler_cand t = c[i];
                c[i++] = c[j];
                c[j--] = t;
            }
        }
        if (k - 1 <= j) hi = j;
        else if (k - 1 >= i) lo = i;
        else break;
    }
    qsort(c, (size_t)k, sizeof *c, cmp);
}

/* The k first of the list (k ≤ n) become its k largest logits, in order; the whole list when
 * k = n (then s->sorted). */
static void sort_top(sampler *s, int k)
{
    if (s->sorted || k <= 0) return;
    select_sorted(s->buf, s->n, k, before, cmp_cand);
    if (k == s->n) s->sorted = 1;
}

/* llama_sampler_softmax_impl: p of each candidate from its logit (float sums, as llama.cpp). */
void sampler_softmax(sampler *s, int do_sort)
{
    sampler_cand *c = s->buf;
    if (do_sort) sort_top(s, s->n);
    float mx = c[0].logit, sum = 0.0f;
    if (!s->sorted)
        for (int i = 1; i < s->n; i++) mx = c[i].logit > mx ? c[i].logit : mx;
    for (int i = 0; i < s->n; i++) sum += c[i].p = expf(c[i].logit - mx);
    for (int i = 0; i < s->n; i++) c[i].p /= sum;
}

/* llama_sampler_temp_impl: divide by t; t ≤ 0 leaves only the first largest logit finite. */
void sampler_scale(sampler *s, float t)
{
    sampler_cand *c = s->buf;
    if (t > 0.0f) {
        for (int i = 0; i < s->n; i++) c[i].logit /= t;
        return;
    }
    int best = 0;
    for (int i = 1; i < s->n; i++)
        if (c[i].logit > c[best].logit) {
            c[best].logit = -INFINITY;
            best = i;
        } else {
            c[i].logit = -INFINITY;
        }
}

static void top_k(sampler *s, int k)
{
    if (k <= 0) return;
    if (k > s->n) k = s->n;
    sort_top(s, k);
    s->n = k;
    s->sorted = 1;
}

/* Locally typical sampling (Meister et al. 2023): the tokens whose surprise is closest to the
 * entropy, up to mass typical_p; the list leaves in that order (unsorted). llama.cpp sorts the
 * whole vocabulary twice (by logit, then by score): here the scores' 256, 4096, ... first are
 * selected until the mass is reached (bench/bench_sampler: 2.9 ms a step at 151936 ids on a Zen 3
 * core, where one full qsort of the row takes 21 ms). The sums run in index order, not
 * llama.cpp's sorted order: the last bits of the entropy may differ. */
static void typical(sampler *s)
{
    if (s->typical_p >= 1.0f) return;
    sampler_softmax(s, 0);
    sampler_cand *c = s->buf, *t = s->tmp;
    float entropy = 0.0f;
    for (int i = 0; i < s->n; i++) entropy += -c[i].p * logf(c[i].p);
    for (int i = 0; i < s->n; i++) t[i].p = fabsf(-logf(c[i].p) - entropy), t[i].id = i;
    float cum = 0.0f;
    int last = s->n, k = s->n > 1024 ? 256 : s->n;
    select_sorted(t, s->n, k, score_before, cmp_score);
    for (int i = 0; i < s->n; i++) {
        if (i == k) {   /* the mass is not reached in the k first: 16 times as many */
            const int k2 = k > s->n / 16 ? s->n : 16 * k;
            select_sorted(t + k, s->n - k, k2 - k, score_before, cmp_score);
            k = k2;
        }
        cum += c[t[i].id].p;
        if (cum > s->typical_p && (s->min_keep == 0 || i >= s->min_keep - 1)) {
            last = i + 1;
            break;
        }
    }
    for (int i = 0; i < last; i++) t[i] = c[t[i].id];
    memcpy(c, t, (size_t)last * sizeof *c);
    s->n = last;
    s->sorted = 0;
}

/* Nucleus (Holtzman et al. 2020): the most likely tokens up to mass top_p; an unsorted list of
 * more than 1024 tries its top 256 first, as llama.cpp does. */
static void top_p(sampler *s)
{
    if (s->top_p >= 1.0f) return;
    sampler_softmax(s, 0);
    int k = s->n;
    if (!s->sorted && s->n > 1024) k = 256;
    sort_top(s, k);
    float cum = 0.0f;
    int last = s->n;
    for (int i = 0; i < s->n; i++) {
        cum += s->buf[i].p;
        if (cum >= s->top_p && i + 1 >= s->min_keep) {
            last = i + 1;
            break;
        }
        if (!s->sorted && i == k - 1) sort_top(s, s->n);
    }
    s->n = last;
    s->sorted = 1;
}

/* min-p (Nguyen et al. 2024): p ≥ min_p · p_max, i.e. logit ≥ max + ln min_p; in place when the
 * list is unsorted and enough pass, else on the sorted list with the min_keep floor. */
static void min_p(sampler *s)
{
    if (s->min_p <= 0.0f || !s->n) return;
    sampler_cand *c = s->buf;
    if (!s->sorted) {
        float mx = -3.40282347e38f;
        for (int i = 0; i < s->n; i++) mx = c[i].logit > mx ? c[i].logit : mx;
        const float lim = mx + logf(s->min_p);
        int m = 0;
        for (int i = 0; i < s->n; i++) m += c[i].logit >= lim;
        if (m > 0 && m >= s->min_keep) {
            m = 0;
            for (int i = 0; i < s->n; i++)
                if (c[i].logit >= lim) c[m++] = c[i];
            s->n = m;
            return;
        }
        sort_top(s, s->n);
    }
    const float lim = c[0].logit + logf(s->min_p);
    int i = 1;
    for (; i < s->n; i++)
        if (c[i].logit < lim && i >= s->min_keep) break;
    s->n = i;
}

/* XTC, "exclude top choices" (llama.cpp's xtc): with probability xtc_probability, every token
 * with p ≥ xtc_threshold but the least likely of them leaves. */
static void xtc(sampler *s)
{
    if (s->xtc_probability <= 0.0f || s->xtc_threshold > 0.5f || s->n < 2) return;
    if (sampler_mt_float(&s->rng_xtc) > s->xtc_probability) return;   /* its own generator */
    sampler_softmax(s, 1);
    int last = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->buf[i].p >= s->xtc_threshold) last = i;
        else break;
    }
    if (s->n - last >= s->min_keep && last > 0) {
        memmove(s->buf, s->buf + last, (size_t)(s->n - last) * sizeof *s->buf);
        s->n -= last;
    }
}

/* Temperature; with dynatemp_range > 0 llama.cpp's dynamic temperature: T ± range mapped from
 * the list's normalized entropy to the power dynatemp_exponent. */
static void temperature(sampler *s)
{
    if (s->dynatemp_range <= 0.0f) {
        sampler_scale(s, s->temperature);
        return;
    }
    const float lo = fmaxf(0.0f, s->temperature - s->dynatemp_range), hi = s->temperature + s->dynatemp_range;
    if (s->n <= 1) return;
    const float max_entropy = -logf(1.0f / (float)s->n);
    sampler_softmax(s, 1);
    float entropy = 0.0f;
    for (int i = 0; i < s->n; i++)
        if (s->buf[i].p > 0.0f) entropy -= s->buf[i].p * logf(s->buf[i].p);
    sampler_scale(s, lo + (hi - lo) * powf(entropy / max_entropy, s->dynatemp_exponent));
}

/* Top-nσ (Tang et al. 2024): logits below max − n·σ (over the finite ones) become −∞. */
static void top_n_sigma(sampler *s)
{
    if (s->top_n_sigma <= 0.0f || s->n <= 1) return;
    sampler_cand *c = s->buf;
    float mx = c[0].logit, sum = 0.0f, acc = 0.0f;
    size_t valid = 0;
    for (int i = 0; i < s->n; i++)
        if (c[i].logit != -INFINITY) {
            mx = c[i].logit > mx ? c[i].logit : mx;
            sum += c[i].logit;
            valid++;
        }
    const float mean = valid ? sum / (float)valid : 0.0f;
    for (int i = 0; i < s->n; i++)
        if (c[i].logit != -INFINITY) {
            const double d = (double)(c[i].logit - mean);
            acc = (float)((double)acc + d * d);
        }
    const float sd = valid ? (float)sqrt((double)(acc / (float)valid)) : 0.0f;
    for (int i = 0; i < s->n; i++)
        if (c[i].logit < mx - s->top_n_sigma * sd) c[i].logit = -INFINITY;
}

/* Mirostat (Basu et al. 2021, m = 100) and Mirostat 2.0: a top-k estimated from the Zipf
 * exponent of the top m, or the tokens of surprise ≤ mu; then p over what is left. */
void sampler_mirostat(sampler *s)
{
    sampler_softmax(s, 0);
    if (s->mirostat == 1) {
        const int m = 100;
        sort_top(s, s->n < m ? s->n : m);
        float sum_ti_bi = 0.0f, sum_ti_sq = 0.0f;
        for (int i = 0; i < m - 1 && i < s->n - 1; i++) {
            const float t = logf((float)(i + 2) / (float)(i + 1));
            const float b = logf(s->buf[i].p / s->buf[i + 1].p);
            sum_ti_bi += t * b;
            sum_ti_sq += t * t;
        }
        const float s_hat = sum_ti_bi / sum_ti_sq, eps = s_hat - 1.0f;
        const float k = powf((eps * powf(2.0f, s->mirostat_mu)) / (1.0f - powf((float)s->vocab, -eps)), 1.0f / s_hat);
        /* llama.cpp's max(int(k), 1) on x86: NaN and k ≥ 2^31 convert to INT_MIN, so 1 */
        top_k(s, k >= 1.0f && k < 2147483648.0f ? (int)k : 1);
    } else {
        int m = 0, best = 0;
        for (int i = 0; i < s->n; i++) {
            if (before(&s->buf[i], &s->buf[best])) best = i;
            if (!(-log2f(s->buf[i].p) > s->mirostat_mu)) s->tmp[m++] = s->buf[i];
        }
        if (m == 0) s->tmp[m++] = s->buf[best];
        memcpy(s->buf, s->tmp, (size_t)m * sizeof *s->buf);
        s->n = m;
        s->sorted = 0;
        sort_top(s, m);   /* llama.cpp's list is sorted here (its draw goes in list order) */
    }
    sampler_softmax(s, 0);
}

/* adaptive-p (llama.cpp's llama_sampler_adaptive_p_apply, PR 17927): p kept for the EMA, then
 * each finite logit becomes 5 − 10·d²/(1 + d), d = |p − target'| / 0.3, with target' = 2·target
 * − the EMA of the p taken (clamped to [0, 1]); p again from those. */
void sampler_adaptive(sampler *s)
{
    const float INV_WIDTH = 1.0f / 0.3f, PEAK = 5.0f, SHARPNESS = 10.0f;
    sampler_softmax(s, 0);
    for (int i = 0; i < s->n; i++) s->adaptive_p[i] = s->buf[i].p;
    const float target = fminf(fmaxf(s->adaptive_target, 0.0f), 1.0f);
    float adapted = s->adaptive_weight == 0.0f ? target : 2.0f * target - s->adaptive_sum / s->adaptive_weight;
    adapted = fminf(fmaxf(adapted, 0.0f), 1.0f);
    for (int i = 0; i < s->n; i++) {
        if (s->buf[i].logit == -INFINITY) continue;
        const float d = fabsf((s->buf[i].p - adapted) * INV_WIDTH);
        s->buf[i].logit = PEAK - SHARPNESS * d * d / (1.0f + d);
    }
    s->sorted = 0;
    sampler_softmax(s, 0);
}

void sampler_stage(sampler *s, char stage)
{
    switch (stage) {
    case 's': top_n_sigma(s); break;
    case 'k': top_k(s, s->top_k); break;
    case 'y': typical(s); break;
    case 'p': top_p(s); break;
    case 'm': min_p(s); break;
    case 'x': xtc(s); break;
    case 't': temperature(s); break;
    default: break;   /* 'e', 'd', 'a' (penalties, DRY, adaptive-p) are sampler.c's */
    }
}
