/* model/sampler_dry.c — DRY, "Don't Repeat Yourself" (p-e-w, text-generation-webui; koboldcpp
 * PR 982 by pi6am; llama.cpp's llama_sampler_dry, src/llama-sampler.cpp, of the llama.cpp that
 * bench/llamacpp.sh builds), the chain's stage 'd': a token that would extend a sequence of the
 * last dry_last_n tokens already seen earlier in them, by n ≥ allowed_length tokens, has
 * multiplier · base^(n − allowed_length) taken from its logit. Sequence breakers (token
 * sequences: a head id and the ids that follow it) cut the repetition at the last one seen. The
 * steps and float arithmetic are llama.cpp's (tests/fixtures/sampler/llamacpp.txt). */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sampler_dry {
    float multiplier, base;
    int allowed_length, last_n;
    int *hist, n_hist;      /* ring of the last last_n accepted ids; n_hist accepted in all */
    int n_brk;              /* breakers, sorted by head: seq[off[i] .. off[i] + len[i]) */
    int *off, *len, *seq;
    int *rep;               /* [last_n] scratch: repeat counts */
    int *max_rep;           /* [vocab] scratch, all zero between calls: 1 + the longest repeat a token extends */
    int *touched;           /* [last_n] ids of max_rep set */
};

void sampler_dry_free(sampler *s)
{
    struct sampler_dry *d = s->dry;
    if (!d) return;
    free(d->hist);
    free(d->off);
    free(d->len);
    free(d->seq);
    free(d->rep);
    free(d->max_rep);
    free(d->touched);
    free(d);
    s->dry = NULL;
}

static const int *brk_seq;   /* qsort's view of the breakers being sorted */
static int cmp_brk(const void *a, const void *b)
{
    const int *x = a, *y = b;   /* {off, len} pairs */
    const int hx = brk_seq[x[0]], hy = brk_seq[y[0]];
    return hx != hy ? (hx < hy ? -1 : 1) : x[0] - y[0];
}

int sampler_set_dry(sampler *s, float multiplier, float base, int allowed_length, int last_n, const int *seq,
                    const int *len, int n_breakers)
{
    sampler_dry_free(s);
    if (multiplier == 0.0f || !(base >= 1.0f) || last_n <= 0) return 0;   /* llama.cpp: off */
    if (allowed_length < 0) return -1;
    size_t total = 0;
    for (int i = 0; i < n_breakers; i++) {
        if (len[i] < 1) return -1;
        for (int k = 0; k < len[i]; k++)
            if (seq[total + (size_t)k] < 0 || seq[total + (size_t)k] >= s->vocab) return -1;
        total += (size_t)len[i];
    }
    struct sampler_dry *d = calloc(1, sizeof *d);
    if (!d) return -1;
    s->dry = d;
    d->multiplier = multiplier;
    d->base = base;
    d->allowed_length = allowed_length;
    d->last_n = last_n;
    d->hist = malloc((size_t)last_n * sizeof *d->hist);
    d->rep = malloc((size_t)last_n * sizeof *d->rep);
    d->touched = malloc((size_t)last_n * sizeof *d->touched);
    d->max_rep = calloc((size_t)s->vocab, sizeof *d->max_rep);
    int *pairs = malloc((size_t)(n_breakers ? n_breakers : 1) * 2 * sizeof *pairs);
    d->off = malloc((size_t)(n_breakers ? n_breakers : 1) * sizeof *d->off);
    d->len = malloc((size_t)(n_breakers ? n_breakers : 1) * sizeof *d->len);
    d->seq = malloc((total ? total : 1) * sizeof *d->seq);
    if (!d->hist || !d->rep || !d->touched || !d->max_rep || !pairs || !d->off || !d->len || !d->seq) {
        free(pairs);
        sampler_dry_free(s);
        return -1;
    }
    if (total) memcpy(d->seq, seq, total * sizeof *seq);
    for (int i = 0, o = 0; i < n_breakers; o += len[i++]) pairs[2 * i] = o, pairs[2 * i + 1] = len[i];
    brk_seq = d->seq;
    qsort(pairs, (size_t)n_breakers, 2 * sizeof *pairs, cmp_brk);
    for (int i = 0; i < n_breakers; i++) d->off[i] = pairs[2 * i], d->len[i] = pairs[2 * i + 1];
    d->n_brk = n_breakers;
    free(pairs);
    return 0;
}

void sampler_dry_accept(sampler *s, int id)
{
    struct sampler_dry *d = s->dry;
    d->hist[d->n_hist++ % d->last_n] = id;
}

/* the i-th accepted id from the end (0: the last) */
static int rat(const struct sampler_dry *d, int i) { return d->hist[(d->n_hist - 1 - i) % d->last_n]; }

/* the first breaker whose head is id, or n_brk */
static int brk_first(const struct sampler_dry *d, int id)
{
    int lo = 0, hi = d->n_brk;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (d->seq[d->off[mid]] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void sampler_dry_apply(sampler *s)
{
    struct sampler_dry *d = s->dry;
    const int n = d->n_hist < d->last_n ? d->n_hist : d->last_n;   /* llama.cpp's last_n_repeat */
    if (n <= d->allowed_length) return;
    /* 1: the last breaker seen limits the repetition */
    int rep_limit = n;
    for (int i = 0; i < n; i++) {
        const int tok = rat(d, i);
        int longest = -1;
        for (int b = brk_first(d, tok); b < d->n_brk && d->seq[d->off[b]] == tok; b++) {
            const int tail = d->len[b] - 1;
            if (tail > longest && tail <= i) {
                int match = 1;
                for (int o = 0; o < tail && match; o++) match = d->seq[d->off[b] + 1 + o] == rat(d, i - o - 1);
                if (match) longest = tail;
            }
        }
        if (longest >= 0) {
            rep_limit = i - longest;
            break;
        }
    }
    if (rep_limit < d->allowed_length) return;
    /* 2: the Z-algorithm over the reversed window: rep[last − k] = how many of the last tokens
     * also end k tokens earlier */
    const int last = n - 1;
    int rt = 0, lt = 0;
    memset(d->rep, 0, (size_t)n * sizeof *d->rep);
    for (int k = 1; k < n; k++) {
        if (k > rt) {
            int m = 0;
            while (m + k < n && rat(d, m) == rat(d, m + k)) m++;
            d->rep[last - k] = m < rep_limit ? m : rep_limit;
            if (m > 0) lt = k, rt = k + m - 1;
        } else {
            const int p = k - lt, right = rt - k + 1;
            if (d->rep[last - p] < right) {
                d->rep[last - k] = d->rep[last - p] < rep_limit ? d->rep[last - p] : rep_limit;
            } else {
                int i = rt + 1;
                while (i < n && rat(d, i) == rat(d, i - k)) i++;
                d->rep[last - k] = i - k < rep_limit ? i - k : rep_limit;
                lt = k, rt = i - 1;
            }
        }
    }
    /* 3: the token after each repeat would extend it */
    int n_touched = 0;
    for (int i = 0; i < n - 1; i++) {
        const int len = d->rep[i];
        if (len < d->allowed_length) continue;
        const int tok = rat(d, n - 2 - i);
        if (!d->max_rep[tok]) d->touched[n_touched++] = tok;
        if (d->max_rep[tok] < len + 1) d->max_rep[tok] = len + 1;
    }
    /* 4: the penalties, never on a single-token breaker */
    const float FLOAT_MAX_LOG = 88.7228391f;
    int max_exp = 0;
    if (d->base > 1.000001f) max_exp = (int)(FLOAT_MAX_LOG / logf(d->base));
    if (n_touched)
        for (int i = 0; i < s->n; i++) {
            const int id = s->buf[i].id;
            if (!d->max_rep[id]) continue;
            int single = 0;
            for (int b = brk_first(d, id); b < d->n_brk && d->seq[d->off[b]] == id && !single; b++) single = d->len[b] == 1;
            if (single) continue;
            int e = d->max_rep[id] - 1 - d->allowed_length;
            if (max_exp > 0 && e > max_exp) e = max_exp;
            s->buf[i].logit -= (float)((double)d->multiplier * pow((double)d->base, (double)e));
        }
    for (int i = 0; i < n_touched; i++) d->max_rep[d->touched[i]] = 0;
    s->sorted = 0;
}
