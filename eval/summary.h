/* summary.h — private to summary.c and summary_extra.c: the per (policy, budget) groups read
 * from OUT/results.jsonl. */
#ifndef LLM_EVAL_SUMMARY_H
#define LLM_EVAL_SUMMARY_H

#include "eval/eval.h"

#include <stdio.h>

#define MAX_METRICS 32
#define SUM_MAX_SEG 64

typedef struct { double sum, sum2; int n; } acc;

/* One line's primary metric, with what pairs and groups it. */
typedef struct {
    char id[80];
    double v;
    double depth;
    int length;
} sample;

typedef struct {
    char policy[64];
    double budget;
    int order;                 /* first appearance of the policy */
    int n, skipped;
    acc m[MAX_METRICS];
    acc kv_peak, kv_avg, tok_s;
    sample *s;                 /* the primary metric of every line */
    int ns, caps;
    acc seg[SUM_MAX_SEG][3];   /* per_1k: nll, kl, top1_agree over windows */
    int n_seg;
    /* computed */
    double boot_lo, boot_hi, d_mean, d_lo, d_hi;
    int n_paired;
    const char *claim;
} group;

typedef struct {
    char task[32];
    const char *primary;       /* "rouge1", "em", "acc", "nll" */
    int higher;                /* higher is better */
    double margin;
    int resamples;
    group *g;
    int n_groups;
    /* evidence: the full cache vs the no-context baseline */
    const char *evidence;      /* "yes", "no", "n/a" */
    char evidence_text[600];
} summary;

double sum_mean(const acc *a);
/* Bootstrap intervals, paired differences with full and the claims of every group, and the
 * evidence check (summary_extra.c). */
void sum_compute(summary *s);
/* The markdown sections after the main table: evidence, claims legend, the passkey grid, the
 * per-1k table; and DIR/cells.csv (passkey/niah) and DIR/per_1k.csv (perplexity). */
int sum_write_extra(const summary *s, FILE *md, const char *dir, char *err, size_t errlen);

#endif
