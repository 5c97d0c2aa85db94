/* summary_extra.c — the statistics of a summary (bootstrap intervals, paired differences with
 * the full cache, equivalence claims, the evidence check) and its extra sections: the passkey
 * depth × length grid (DIR/cells.csv) and the per-1k-token perplexity table (DIR/per_1k.csv). */
#include "eval/summary.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv(const char *s, double b)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    char num[32];
    snprintf(num, sizeof num, "|%.6g", b);
    for (const char *p = num; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

static int cmp_sample(const void *a, const void *b)
{
    return strcmp(((const sample *)a)->id, ((const sample *)b)->id);
}

static int is_baseline(const group *g) { return !strcmp(g->policy, "closedbook") || !strcmp(g->policy, "nocontext"); }

void sum_compute(summary *s)
{
    group *base = NULL, *full_any = NULL;
    for (int i = 0; i < s->n_groups; i++) {
        group *g = &s->g[i];
        if (g->ns > 1) qsort(g->s, (size_t)g->ns, sizeof *g->s, cmp_sample);   /* order-free: pairs by id; g->s is NULL when every line was skipped */
        double *x = malloc(sizeof *x * (size_t)(g->ns ? g->ns : 1));
        for (int k = 0; x && k < g->ns; k++) x[k] = g->s[k].v;
        g->boot_lo = g->boot_hi = g->d_mean = g->d_lo = g->d_hi = NAN;
        if (x) eval_bootstrap_mean(x, g->ns, s->resamples, fnv(g->policy, g->budget), &g->boot_lo, &g->boot_hi);
        free(x);
        if (!base && is_baseline(g)) base = g;
        if (!full_any && !strcmp(g->policy, "full")) full_any = g;
    }
    for (int i = 0; i < s->n_groups; i++) {
        group *g = &s->g[i];
        if (!strcmp(g->policy, "full")) { g->claim = "(reference)"; continue; }
        if (is_baseline(g)) { g->claim = "(baseline)"; continue; }
        group *f = NULL;
        for (int k = 0; k < s->n_groups; k++)
            if (!strcmp(s->g[k].policy, "full") && s->g[k].budget == g->budget) f = &s->g[k];
        if (!f) f = full_any;
        if (!f) { g->claim = "no full-cache rows"; continue; }
        double *a = malloc(sizeof *a * (size_t)(g->ns + 1)), *b = malloc(sizeof *b * (size_t)(g->ns + 1));
        int n = 0, j = 0;
        for (int k = 0; a && b && k < g->ns; k++) {   /* both sorted by id */
            while (j < f->ns && strcmp(f->s[j].id, g->s[k].id) < 0) j++;
            if (j < f->ns && !strcmp(f->s[j].id, g->s[k].id)) {
                a[n] = g->s[k].v;
                b[n++] = f->s[j].v;
            }
        }
        g->n_paired = n;
        if (n > 0) {
            double d = 0;
            for (int k = 0; k < n; k++) d += a[k] - b[k];
            g->d_mean = d / n;
            eval_bootstrap_paired(a, b, n, s->resamples, fnv(g->policy, g->budget) ^ 0xD1FFull, &g->d_lo, &g->d_hi);
        }
        /* one pair makes a zero-width interval: no claim can rest on it. Nor can n pairs that
         * do not differ at all (the same answers), whose bootstrap interval is [0, 0]
         * too: with none of n examples seen to differ, the share that
         * differs may still be 3/n (rule of three, 95%), so for a metric in [0, 1] "within the
         * margin" needs 3/n <= margin (n >= 300 at ±0.01). */
        int same = n >= 2 && a[0] == b[0];   /* no example differs at all */
        for (int k = 1; same && k < n; k++) same = a[k] == b[k];
        if (n < 2 || (same && 3.0 / n > s->margin)) g->claim = "not testable at this n";
        else g->claim = eval_claim(g->d_lo, g->d_hi, s->margin);
        free(a);
        free(b);
    }
    /* evidence: does the full cache beat the no-context baseline? */
    char *t = s->evidence_text;
    size_t tl = sizeof s->evidence_text;
    if (!strcmp(s->primary, "nll")) {
        s->evidence = "n/a";
        snprintf(t, tl, "not applicable (perplexity, KL and top-1 agreement are measured against the full cache on the same text).");
        return;
    }
    if (!full_any || full_any->ns == 0) {
        s->evidence = "n/a";
        snprintf(t, tl, "n/a: no full-cache rows to compare with a baseline.");
        return;
    }
    double blo, bhi, bm;
    const char *bname;
    int synthetic = !strcmp(s->primary, "acc");
    if (base && base->ns > 0) {
        blo = base->boot_lo, bhi = base->boot_hi;
        double sum = 0;
        for (int k = 0; k < base->ns; k++) sum += base->s[k].v;
        bm = sum / base->ns;
        bname = base->policy;
    } else if (synthetic) {
        blo = bhi = bm = 1e-4;   /* a random guess contains the 5 digits with p ~ 1e-5 per position */
        bname = "chance";
    } else {
        s->evidence = "n/a";
        snprintf(t, tl, "n/a: no baseline row (run with --baseline: %s), so it is not shown that %s responds to the context.",
                 !strcmp(s->task, "litm") ? "the closed-book question" : "the prompt with an empty document", s->primary);
        return;
    }
    if (full_any->ns < 2 || (base && base->ns < 2)) {
        s->evidence = "n/a";
        snprintf(t, tl, "not testable at this n: %d full-cache and %d baseline examples (at least 2 each are needed "
                 "for an interval).", full_any->ns, base ? base->ns : 0);
        return;
    }
    double fm = 0;
    for (int k = 0; k < full_any->ns; k++) fm += full_any->s[k].v;
    fm /= full_any->ns;
    int ok = eval_evidence(full_any->boot_lo, full_any->boot_hi, blo, bhi);
    s->evidence = ok ? "yes" : "no";
    if (!ok)   /* a task the model does not solve from the context says nothing about the cache */
        for (int i = 0; i < s->n_groups; i++) {
            group *g = &s->g[i];
            if (strcmp(g->policy, "full") && !is_baseline(g)) g->claim = "no claim (task not evidence)";
        }
    snprintf(t, tl, "full %s %.4g [%.4g, %.4g] (n=%d) vs %s %.4g [%.4g, %.4g] (95%% bootstrap): %s", s->primary, fm,
             full_any->boot_lo, full_any->boot_hi, full_any->ns, bname, bm, blo, bhi,
             ok ? "the intervals do not overlap: the task is context-sensitive for this model and counts as evidence."
                : "**NOT context-sensitive for this model**: the full cache does not beat the baseline with "
                  "non-overlapping intervals, so differences between policies here are not evidence about the cache.");
}

static int write_cells(const summary *s, FILE *md, const char *dir, char *err, size_t errlen)
{
    double depths[64];
    int lengths[64], nd = 0, nl = 0;
    for (int i = 0; i < s->n_groups; i++)
        for (int k = 0; k < s->g[i].ns; k++) {
            const sample *x = &s->g[i].s[k];
            int fd = 0, fl = 0;
            for (int q = 0; q < nd; q++) fd |= depths[q] == x->depth;
            for (int q = 0; q < nl; q++) fl |= lengths[q] == x->length;
            if (!fd && nd < 64) depths[nd++] = x->depth;
            if (!fl && nl < 64) lengths[nl++] = x->length;
        }
    for (int a = 0; a < nd; a++)   /* ascending */
        for (int b = a + 1; b < nd; b++)
            if (depths[b] < depths[a]) { double t = depths[a]; depths[a] = depths[b]; depths[b] = t; }
    for (int a = 0; a < nl; a++)
        for (int b = a + 1; b < nl; b++)
            if (lengths[b] < lengths[a]) { int t = lengths[a]; lengths[a] = lengths[b]; lengths[b] = t; }
    char path[4200];
    snprintf(path, sizeof path, "%s/cells.csv", dir);
    FILE *c = fopen(path, "w");
    if (!c) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    fprintf(c, "policy,budget,depth,length,n,acc\n");
    fprintf(md, "\n## Accuracy per depth x length\n\nShare of prompts whose output contains the key "
                "(depth: where the needle sits, 0 = start of the haystack; length: prompt tokens at most).\n");
    for (int i = 0; i < s->n_groups; i++) {
        const group *g = &s->g[i];
        fprintf(md, "\n**%s @ %g**\n\n| depth |", g->policy, g->budget);
        for (int l = 0; l < nl; l++) fprintf(md, " %d |", lengths[l]);
        fprintf(md, "\n|---|");
        for (int l = 0; l < nl; l++) fprintf(md, "---|");
        fputc('\n', md);
        for (int d = 0; d < nd; d++) {
            fprintf(md, "| %g |", depths[d]);
            for (int l = 0; l < nl; l++) {
                int n = 0;
                double sum = 0;
                for (int k = 0; k < g->ns; k++)
                    if (g->s[k].depth == depths[d] && g->s[k].length == lengths[l]) n++, sum += g->s[k].v;
                if (n) {
                    fprintf(md, " %.2f (%d) |", sum / n, n);
                    fprintf(c, "%s,%g,%g,%d,%d,%.6g\n", g->policy, g->budget, depths[d], lengths[l], n, sum / n);
                } else {
                    fprintf(md, " |");
                }
            }
            fputc('\n', md);
        }
    }
    if (fclose(c) != 0) {
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return 0;
}

static int write_segments(const summary *s, FILE *md, const char *dir, char *err, size_t errlen)
{
    int n_seg = 0;
    for (int i = 0; i < s->n_groups; i++)
        if (s->g[i].n_seg > n_seg) n_seg = s->g[i].n_seg;
    if (n_seg < 1) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/per_1k.csv", dir);
    FILE *c = fopen(path, "w");
    if (!c) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    fprintf(c, "policy,budget,from,n_windows,nll,ppl,kl,top1_agree\n");
    fprintf(md, "\n## Per 1k tokens of stream\n\nMean over windows of each %d-token segment of the stream "
                "(tokens from the segment's start): ppl | KL(full ‖ policy) | top-1 agreement.\n\n| policy | budget |",
            EVAL_PPL_SEG);
    for (int k = 0; k < n_seg; k++) fprintf(md, " %d- |", k * EVAL_PPL_SEG);
    fprintf(md, "\n|---|---|");
    for (int k = 0; k < n_seg; k++) fprintf(md, "---|");
    fputc('\n', md);
    for (int i = 0; i < s->n_groups; i++) {
        const group *g = &s->g[i];
        fprintf(md, "| %s | %g |", g->policy, g->budget);
        for (int k = 0; k < n_seg; k++) {
            if (k >= g->n_seg || g->seg[k][0].n == 0) {
                fprintf(md, " |");
                continue;
            }
            double nll = sum_mean(&g->seg[k][0]), kl = sum_mean(&g->seg[k][1]), ag = sum_mean(&g->seg[k][2]);
            fprintf(md, " %.3f / %.4f / %.3f |", exp(nll), kl, ag);
            fprintf(c, "%s,%g,%d,%d,%.6g,%.6g,%.6g,%.6g\n", g->policy, g->budget, k * EVAL_PPL_SEG, g->seg[k][0].n,
                    nll, exp(nll), kl, ag);
        }
        fputc('\n', md);
    }
    if (fclose(c) != 0) {
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return 0;
}

int sum_write_extra(const summary *s, FILE *md, const char *dir, char *err, size_t errlen)
{
    fprintf(md, "\nClaims (\"≈ full ±%g\", on %s, from the paired 95%% bootstrap interval of policy − full): "
                "**confirmed** = the interval lies within ±%g; **refuted** = it lies entirely outside; "
                "**not testable at this n** = it is wider than the margin band (2 × %g), so even a policy "
                "identical in expectation could not be confirmed with this many examples, or no example "
                "differs from full (the same answers) and n < 3 / margin (rule of three: the "
                "share that differs may still be 3/n); **inconclusive** otherwise; **no claim** where the "
                "evidence check fails. `--margin` sets the margin.\n", s->margin, s->primary, s->margin, s->margin);
    if (!strcmp(s->primary, "acc") && write_cells(s, md, dir, err, errlen) != 0) return -1;
    return write_segments(s, md, dir, err, errlen);
}
