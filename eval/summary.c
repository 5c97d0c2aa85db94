/* summary.c — OUT/summary.csv and OUT/summary.md from OUT/results.jsonl: per (policy, budget)
 * the mean of every metric over the examples with a 95% confidence interval (Student t,
 * mean ± t·sd/√n), for the task's primary metric also the 95% bootstrap interval, the paired
 * bootstrap interval of (policy − full) and the equivalence claim, the evidence check (full vs
 * the no-context baseline), the KV memory relative to the full cache and tokens/s
 * (summary_extra.c: the statistics and the extra sections). */
#include "eval/summary.h"
#include "eval/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>

double eval_t95(int df)
{
    static const double t[31] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
                                 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093,
                                 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045,
                                 2.042};
    if (df < 1) return NAN;
    if (df <= 30) return t[df];
    /* Cornish-Fisher expansion around the normal quantile (error < 1e-4 for df > 30) */
    double z = 1.959963985, d = df;
    return z + (z * z * z + z) / (4 * d) + (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

static void acc_add(acc *a, double x)
{
    a->sum += x;
    a->sum2 += x * x;
    a->n++;
}
static double acc_mean(const acc *a) { return a->n ? a->sum / a->n : NAN; }
double sum_mean(const acc *a) { return acc_mean(a); }
/* half-width of the 95% CI of the mean (NAN for n < 2) */
static double acc_ci(const acc *a)
{
    if (a->n < 2) return NAN;
    double m = a->sum / a->n;
    double var = (a->sum2 - a->n * m * m) / (a->n - 1);
    if (var < 0) var = 0;
    return eval_t95(a->n - 1) * sqrt(var / a->n);
}


static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->order != y->order) return x->order - y->order;
    return (x->budget > y->budget) - (x->budget < y->budget);
}

static void fmt_num(char *b, size_t n, double v)
{
    if (isnan(v)) { if (n) b[0] = 0; }
    else snprintf(b, n, "%.6g", v);
}

int eval_write_summary(const char *dir, char *err, size_t errlen)
{
    return eval_write_summary_ex(dir, NULL, err, errlen);
}

static int add_sample(group *gr, const cJSON *o, double v)
{
    if (gr->ns == gr->caps) {
        int nc = gr->caps ? 2 * gr->caps : 64;
        sample *ns = realloc(gr->s, sizeof *ns * (size_t)nc);
        if (!ns) return -1;
        gr->s = ns;
        gr->caps = nc;
    }
    sample *x = &gr->s[gr->ns++];
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    snprintf(x->id, sizeof x->id, "%s", cJSON_IsString(id) ? id->valuestring : "");
    x->v = v;
    x->depth = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "depth"));
    const cJSON *len = cJSON_GetObjectItemCaseSensitive(o, "length");
    x->length = cJSON_IsNumber(len) ? (int)len->valuedouble : 0;
    return 0;
}

int eval_write_summary_ex(const char *dir, const eval_summary_opts *so, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    char **lines;
    int n_lines;
    if (eval_read_lines(path, &lines, &n_lines, err, errlen) != 0) return -1;
    char metrics[MAX_METRICS][48];
    int n_metrics = 0, n_groups = 0, cap = 16, n_pol = 0, rc = -1;
    char pols[256][64];
    char task[32] = "";
    summary sm;
    memset(&sm, 0, sizeof sm);
    group *g = calloc((size_t)cap, sizeof *g);
    if (!g) goto oom;
    for (int i = 0; i < n_lines; i++) {
        cJSON *o = cJSON_Parse(lines[i]);
        const cJSON *pol = cJSON_GetObjectItemCaseSensitive(o, "policy");
        const cJSON *bud = cJSON_GetObjectItemCaseSensitive(o, "budget");
        if (!cJSON_IsString(pol) || !cJSON_IsNumber(bud)) {
            cJSON_Delete(o);
            continue;
        }
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(o, "task");
        if (cJSON_IsString(tk) && !task[0]) {
            snprintf(task, sizeof task, "%s", tk->valuestring);
            sm.primary = eval_primary_metric(task, &sm.higher);
        }
        int order = -1;
        for (int k = 0; k < n_pol; k++)
            if (!strcmp(pols[k], pol->valuestring)) order = k;
        if (order < 0 && n_pol < 256) {
            snprintf(pols[n_pol], sizeof pols[0], "%s", pol->valuestring);
            order = n_pol++;
        }
        group *gr = NULL;
        for (int k = 0; k < n_groups; k++)
            if (!strcmp(g[k].policy, pol->valuestring) && g[k].budget == bud->valuedouble) gr = &g[k];
        if (!gr) {
            if (n_groups == cap) {
                group *ng = realloc(g, (size_t)(cap *= 2) * sizeof *ng);
                if (!ng) {
                    cJSON_Delete(o);
                    goto oom;
                }
                g = ng;
            }
            gr = &g[n_groups++];
            memset(gr, 0, sizeof *gr);
            snprintf(gr->policy, sizeof gr->policy, "%s", pol->valuestring);
            gr->budget = bud->valuedouble;
            gr->order = order;
        }
        if (cJSON_GetObjectItemCaseSensitive(o, "skipped")) {
            gr->skipped++;
            cJSON_Delete(o);
            continue;
        }
        gr->n++;
        const cJSON *mt = cJSON_GetObjectItemCaseSensitive(o, "metrics"), *it;
        cJSON_ArrayForEach(it, mt) {
            if (!cJSON_IsNumber(it)) continue;
            int k = 0;
            while (k < n_metrics && strcmp(metrics[k], it->string)) k++;
            if (k == n_metrics) {
                if (n_metrics == MAX_METRICS) continue;
                snprintf(metrics[n_metrics++], sizeof metrics[0], "%s", it->string);
            }
            acc_add(&gr->m[k], it->valuedouble);
        }
        const cJSON *pv = sm.primary ? cJSON_GetObjectItemCaseSensitive(mt, sm.primary) : NULL;
        if (cJSON_IsNumber(pv) && add_sample(gr, o, pv->valuedouble) != 0) {
            cJSON_Delete(o);
            goto oom;
        }
        const cJSON *seg;
        int sk = 0;
        cJSON_ArrayForEach(seg, cJSON_GetObjectItemCaseSensitive(o, "per_1k")) {
            if (sk >= SUM_MAX_SEG) break;
            static const char *const SEGM[3] = {"nll", "kl", "top1_agree"};
            for (int q = 0; q < 3; q++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(seg, SEGM[q]);
                if (cJSON_IsNumber(v)) acc_add(&gr->seg[sk][q], v->valuedouble);
            }
            if (++sk > gr->n_seg) gr->n_seg = sk;
        }
        const cJSON *kv = cJSON_GetObjectItemCaseSensitive(o, "kv");
        double pk = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(kv, "peak_bytes"));
        double av = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(kv, "avg_bytes"));
        double fp = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(kv, "full_peak_bytes"));
        double fa = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(kv, "full_avg_bytes"));
        if (fp > 0) acc_add(&gr->kv_peak, pk / fp);
        if (fa > 0) acc_add(&gr->kv_avg, av / fa);
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(o, "timings");
        double ts = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(tm, "tok_s"));
        if (!isnan(ts)) acc_add(&gr->tok_s, ts);
        cJSON_Delete(o);
    }
    if (n_groups > 1) qsort(g, (size_t)n_groups, sizeof *g, cmp_group);   /* g is NULL with no lines */
    snprintf(sm.task, sizeof sm.task, "%s", task);
    if (!sm.primary) sm.primary = eval_primary_metric(task, &sm.higher);
    sm.resamples = so && so->resamples > 0 ? so->resamples : 2000;
    sm.margin = so && so->margin >= 0 ? so->margin
              : !strcmp(sm.primary, "em") || !strcmp(sm.primary, "acc") ? 0.02 : 0.01;
    sm.g = g;
    sm.n_groups = n_groups;
    sum_compute(&sm);
    int i_nll = -1, i_ppl = -1;
    for (int k = 0; k < n_metrics; k++) {
        if (!strcmp(metrics[k], "nll")) i_nll = k;
        if (!strcmp(metrics[k], "ppl")) i_ppl = k;
    }

    /* summary.csv */
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        goto done;
    }
    fprintf(f, "task,policy,budget,n,skipped");
    for (int k = 0; k < n_metrics; k++) {
        if (k == i_ppl && i_nll >= 0) fprintf(f, ",ppl,ppl_ci95_lo,ppl_ci95_hi");
        else fprintf(f, ",%s_mean,%s_ci95", metrics[k], metrics[k]);
    }
    fprintf(f, ",%s_boot_lo,%s_boot_hi,delta_vs_full,delta_lo,delta_hi,n_paired,claim_margin,claim,evidence",
            sm.primary, sm.primary);
    fprintf(f, ",kv_peak_rel,kv_avg_rel,tok_s\n");
    for (int i = 0; i < n_groups; i++) {
        group *gr = &g[i];
        char a[48], b[48], c[48];
        fprintf(f, "%s,%s,%.6g,%d,%d", task, gr->policy, gr->budget, gr->n, gr->skipped);
        for (int k = 0; k < n_metrics; k++) {
            if (k == i_ppl && i_nll >= 0) {
                /* perplexity of the mean NLL, its CI from the NLL's */
                double mn = acc_mean(&gr->m[i_nll]), ci = acc_ci(&gr->m[i_nll]);
                fmt_num(a, sizeof a, exp(mn));
                fmt_num(b, sizeof b, exp(mn - ci));
                fmt_num(c, sizeof c, exp(mn + ci));
                fprintf(f, ",%s,%s,%s", a, b, c);
            } else {
                fmt_num(a, sizeof a, acc_mean(&gr->m[k]));
                fmt_num(b, sizeof b, acc_ci(&gr->m[k]));
                fprintf(f, ",%s,%s", a, b);
            }
        }
        fmt_num(a, sizeof a, gr->boot_lo);
        fmt_num(b, sizeof b, gr->boot_hi);
        fprintf(f, ",%s,%s", a, b);
        fmt_num(a, sizeof a, gr->d_mean);
        fmt_num(b, sizeof b, gr->d_lo);
        fmt_num(c, sizeof c, gr->d_hi);
        fprintf(f, ",%s,%s,%s,%d,%g,%s,%s", a, b, c, gr->n_paired, sm.margin, gr->claim ? gr->claim : "",
                sm.evidence ? sm.evidence : "n/a");
        fmt_num(a, sizeof a, acc_mean(&gr->kv_peak));
        fmt_num(b, sizeof b, acc_mean(&gr->kv_avg));
        fmt_num(c, sizeof c, acc_mean(&gr->tok_s));
        fprintf(f, ",%s,%s,%s\n", a, b, c);
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        goto done;
    }

    /* summary.md */
    snprintf(path, sizeof path, "%s/summary.md", dir);
    f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        goto done;
    }
    fprintf(f, "# %s: policy x budget (%d result lines)\n\n", task[0] ? task : "sweep", n_lines);
    {
        /* the settings of the run (run.json), one line */
        char rp[4200];
        snprintf(rp, sizeof rp, "%s/run.json", dir);
        cJSON *rj = eval_read_json(rp, NULL);
        char *line = rj ? cJSON_PrintUnformatted(rj) : NULL;
        if (line) fprintf(f, "Settings (run.json): `%s`\n\n", line);
        free(line);
        cJSON_Delete(rj);
    }
    fprintf(f, "Mean over examples ± half-width of the 95%% confidence interval (Student t). ");
    if (i_nll >= 0)
        fprintf(f, "ppl = exp(mean NLL), interval from the NLL's; kl = KL(full || policy) in nats per token; "
                   "top1_agree = share of positions whose argmax equals the full cache's. ");
    fprintf(f, "KV = live KV bytes relative to the full cache on the same run (peak, time average); "
               "tok/s = tokens processed per second (a prefill shared across policies counts at the time it took to compute). For %s: boot = 95%% percentile bootstrap interval "
               "(%d resamples, seeded); Δ full = mean of (policy − full) over the same examples with its "
               "paired bootstrap interval; ≈ full = the claim \"within ±%g of full\" (below).\n\n",
            sm.primary, sm.resamples, sm.margin);
    fprintf(f, "**Evidence check:** %s\n\n", sm.evidence_text);
    fprintf(f, "| policy | budget | n |");
    for (int k = 0; k < n_metrics; k++) fprintf(f, " %s |", metrics[k]);
    fprintf(f, " %s boot | Δ full [95%%] | ≈ full ±%g |", sm.primary, sm.margin);
    fprintf(f, " KV peak | KV avg | tok/s |\n|---|---|---|");
    for (int k = 0; k < n_metrics + 6; k++) fprintf(f, "---|");
    fputc('\n', f);
    for (int i = 0; i < n_groups; i++) {
        group *gr = &g[i];
        fprintf(f, "| %s | %g | %d%s |", gr->policy, gr->budget, gr->n,
                gr->skipped ? " (+skipped)" : "");
        for (int k = 0; k < n_metrics; k++) {
            if (k == i_ppl && i_nll >= 0) {
                double mn = acc_mean(&gr->m[i_nll]), ci = acc_ci(&gr->m[i_nll]);
                if (isnan(ci)) fprintf(f, " %.4g |", exp(mn));
                else fprintf(f, " %.4g [%.4g, %.4g] |", exp(mn), exp(mn - ci), exp(mn + ci));
            } else {
                double mn = acc_mean(&gr->m[k]), ci = acc_ci(&gr->m[k]);
                if (isnan(ci)) fprintf(f, " %.4g |", mn);
                else fprintf(f, " %.4g ± %.2g |", mn, ci);
            }
        }
        if (isnan(gr->boot_lo)) fprintf(f, " |");
        else fprintf(f, " [%.4g, %.4g] |", gr->boot_lo, gr->boot_hi);
        if (isnan(gr->d_lo)) fprintf(f, " |");
        else fprintf(f, " %+.4g [%+.4g, %+.4g] (n=%d) |", gr->d_mean, gr->d_lo, gr->d_hi, gr->n_paired);
        fprintf(f, " %s |", gr->claim ? gr->claim : "");
        fprintf(f, " %.3f | %.3f | %.0f |\n", acc_mean(&gr->kv_peak), acc_mean(&gr->kv_avg),
                acc_mean(&gr->tok_s));
    }
    if (sum_write_extra(&sm, f, dir, err, errlen) != 0) {
        fclose(f);
        goto done;
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        goto done;
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
done:
    for (int i = 0; i < n_lines; i++) free(lines[i]);
    free(lines);
    for (int i = 0; g && i < n_groups; i++) free(g[i].s);
    free(g);
    return rc;
}

int eval_plot_summary(const char *dir)
{
    char exe[PATH_MAX] = "", script[PATH_MAX + 64];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = '\0';
        char *sl = strrchr(exe, '/');
        if (sl) *sl = '\0';
    }
    snprintf(script, sizeof script, "%s/scripts/plot_sweep.py", exe);
    if (access(script, R_OK) != 0) snprintf(script, sizeof script, "scripts/plot_sweep.py");
    if (strchr(dir, '\'') || strchr(script, '\'')) {
        fprintf(stderr, "llm-run: warning: %s/summary.png not drawn (a quote in the path)\n", dir);
        return -1;
    }
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' >&2", script, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "llm-run: warning: %s/summary.png not drawn (%s failed; it needs python3 and matplotlib, see scripts/setup.sh)\n",
                dir, script);
        return -1;
    }
    return 0;
}
