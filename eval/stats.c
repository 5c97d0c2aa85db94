/* stats.c — the statistics of the summaries: percentile bootstrap intervals (a policy's own
 * mean, and the paired difference policy − full on the same examples), the equivalence claims
 * against a margin, and the evidence check (full cache vs the no-context baseline). */
#include "eval/eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the interval of the mean of d[0..n) */
static void boot(const double *d, int n, int resamples, uint64_t seed, double *lo, double *hi)
{
    if (n <= 0) {
        *lo = *hi = NAN;
        return;
    }
    if (resamples <= 0) resamples = 2000;
    double mean = 0;
    int same = 1;
    for (int i = 0; i < n; i++) {
        mean += d[i];
        same &= d[i] == d[0];
    }
    mean /= n;
    if (n == 1 || same) {   /* every resample has this mean */
        *lo = *hi = same ? d[0] : mean;
        return;
    }
    double *m = malloc(sizeof *m * (size_t)resamples);
    if (!m) {
        *lo = *hi = NAN;
        return;
    }
    uint64_t s = seed ? seed : 0x5EED;
    for (int r = 0; r < resamples; r++) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += d[splitmix(&s) % (uint64_t)n];
        m[r] = sum / n;
    }
    qsort(m, (size_t)resamples, sizeof *m, cmp_double);
    /* percentiles 2.5 and 97.5 (nearest rank) */
    int a = (int)floor(0.025 * resamples), b = (int)ceil(0.975 * resamples) - 1;
    if (b >= resamples) b = resamples - 1;
    *lo = m[a];
    *hi = m[b];
    free(m);
}

void eval_bootstrap_mean(const double *x, int n, int resamples, uint64_t seed, double *lo, double *hi)
{
    boot(x, n, resamples, seed, lo, hi);
}

void eval_bootstrap_paired(const double *a, const double *b, int n, int resamples, uint64_t seed,
                           double *lo, double *hi)
{
    double *d = malloc(sizeof *d * (size_t)(n > 0 ? n : 1));
    if (!d) {
        *lo = *hi = NAN;
        return;
    }
    for (int i = 0; i < n; i++) d[i] = a[i] - b[i];
    boot(d, n, resamples, seed, lo, hi);
    free(d);
}

const char *eval_claim(double lo, double hi, double margin)
{
    if (isnan(lo) || isnan(hi)) return "no paired examples";
    if (lo >= -margin && hi <= margin) return "confirmed";
    if (hi < -margin || lo > margin) return "refuted";
    if (hi - lo > 2 * margin) return "not testable at this n";
    return "inconclusive";
}

int eval_evidence(double full_lo, double full_hi, double base_lo, double base_hi)
{
    (void)full_hi;
    (void)base_lo;
    return !isnan(full_lo) && !isnan(base_hi) && full_lo > base_hi;
}

const char *eval_primary_metric(const char *task, int *higher)
{
    *higher = 1;
    if (!strcmp(task, "xsum") || !strcmp(task, "cnndm")) return "rouge1";
    if (!strcmp(task, "litm")) return "em";
    if (!strcmp(task, "passkey") || !strcmp(task, "niah")) return "acc";
    *higher = 0;
    return "nll";
}
