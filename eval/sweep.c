/* sweep.c — `llm-run eval`: a policy × budget sweep over one data set with the model loaded
 * once (issue 5 "Tasks and sweeps"). Every (example, policy, budget) appends one JSON line to
 * OUT/results.jsonl; a rerun resumes; OUT/summary.{csv,md,png} are written at the end.
 *
 * Prompts longer than the model's context (news articles on a 512-token model): the documents
 * are cut to the largest word count whose prompt fits context - max_new + 1 tokens, the same
 * cut for every policy and budget, and the line records "truncated" and "doc_words_kept"
 * (--fit skip records a skipped line instead). Perplexity tasks cut the token stream into
 * windows of --window tokens (default: the context), each one an example fed from an empty cache. */
#include "eval/sweep.h"
#include "eval/util.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

/* ---- progress on stderr: a bar on a terminal, plain lines otherwise */
typedef struct {
    int tty, total, done, done_at_start;
    double t0, last;
} progress;

static void fmt_eta(char *b, size_t n, double s)
{
    if (!(s >= 0) || s > 1e7) snprintf(b, n, "?");
    else if (s >= 3600) snprintf(b, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(b, n, "%.0fs", s);
}

static void progress_show(progress *p, const char *what, int force)
{
    double t = eval_now_s();
    if (!force && t - p->last < (p->tty ? 0.2 : 10.0)) return;
    p->last = t;
    int run = p->done - p->done_at_start;
    double rate = t > p->t0 && run > 0 ? run / (t - p->t0) : 0;
    char eta[32];
    fmt_eta(eta, sizeof eta, rate > 0 ? (p->total - p->done) / rate : -1);
    if (p->tty) {
        int width = 30, fill = p->total ? (int)((double)width * p->done / p->total) : width;
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r[%s] %d/%d %5.1f%% %.2f/s ETA %s %-28.28s", bar, p->done, p->total,
                p->total ? 100.0 * p->done / p->total : 100.0, rate, eta, what);
    } else {
        fprintf(stderr, "eval: %d/%d done (%.1f%%), %.2f/s, ETA %s, %s\n", p->done, p->total,
                p->total ? 100.0 * p->done / p->total : 100.0, rate, eta, what);
    }
}

/* One perplexity line: the window w under the policy pc, against the full cache's log-probs
 * ref, into j (n_tokens, metrics, kv, timings). Returns 0, or -1 with err set. */
static int ppl_line(eval_model *m, const work_item *w, const eval_policy_cfg *pc, const float *ref,
                    cJSON *j, char *err, size_t errlen)
{
    eval_ppl_result r;
    if (eval_ppl_stream(m, w->tokens, w->n_tokens, pc, ref, NULL, &r, err, errlen) != 0) return -1;
    cJSON_AddNumberToObject(j, "n_tokens", w->n_tokens);
    cJSON *mt = cJSON_AddObjectToObject(j, "metrics");
    double nll = r.nll_sum / r.n_pred;
    cJSON_AddNumberToObject(mt, "nll", nll);
    cJSON_AddNumberToObject(mt, "ppl", exp(nll));
    cJSON_AddNumberToObject(mt, "kl", r.kl_sum / r.n_pred);
    cJSON_AddNumberToObject(mt, "top1_agree", (double)r.agree / r.n_pred);
    sweep_add_kv(j, &r.kv);
    cJSON *tm = cJSON_AddObjectToObject(j, "timings");
    cJSON_AddNumberToObject(tm, "ms", r.ms);
    cJSON_AddNumberToObject(tm, "tok_s", r.ms > 0 ? r.n_pred / (r.ms / 1e3) : 0);
    return 0;
}

/* One generation line: the prompt of w (example ex) under the policy pc, into j (prompt and
 * output, task metrics, kv, timings). Returns 0, or -1 with err set. */
static int gen_line(eval_model *m, const eval_opts *o, const eval_prompt_style *ps, const eval_example *ex,
                    const work_item *w, const eval_policy_cfg *pc, cJSON *j, char *err, size_t errlen)
{
    eval_gen_result r;
    if (eval_generate(m, w->tokens, w->n_tokens, o->max_new, ps->stop, pc, &r, err, errlen) != 0) return -1;
    cJSON_AddStringToObject(j, "prompt_style", ps->name);
    cJSON_AddNumberToObject(j, "n_prompt_tokens", r.n_prompt);
    cJSON_AddBoolToObject(j, "truncated", w->truncated);
    if (w->truncated) cJSON_AddNumberToObject(j, "doc_words_kept", w->words_kept);
    if (ex->gold_index >= 0) cJSON_AddNumberToObject(j, "gold_index", ex->gold_index);
    cJSON_AddNumberToObject(j, "n_generated_tokens", r.n_gen);
    cJSON_AddStringToObject(j, "stop", r.stop);
    cJSON_AddStringToObject(j, "output", r.text);
    cJSON *mt = cJSON_AddObjectToObject(j, "metrics");
    int mrc = sweep_gen_metrics(mt, o->task, ex, r.text, err, errlen);
    free(r.text);
    if (mrc) return -1;
    sweep_add_kv(j, &r.kv);
    cJSON *tm = cJSON_AddObjectToObject(j, "timings");
    double ms = r.prefill_ms + r.decode_ms;
    cJSON_AddNumberToObject(tm, "prefill_ms", r.prefill_ms);
    cJSON_AddNumberToObject(tm, "decode_ms", r.decode_ms);
    cJSON_AddNumberToObject(tm, "tok_s", ms > 0 ? (r.n_prompt + r.n_gen) / (ms / 1e3) : 0);
    return 0;
}

int eval_main(int argc, char **argv)
{
    eval_opts o;
    int rc = sweep_parse_opts(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    char err[LLM_ERR_LEN] = "";
    int status = 1;
    eval_example *ex = NULL;
    int n_ex = 0, n_items = 0;
    work_item *items = NULL;
    eval_model *m = NULL;
    eval_prompt_style ps;
    memset(&ps, 0, sizeof ps);
    eval_results res;
    memset(&res, 0, sizeof res);
    res.fd = -1;
    float *ref = NULL;
    char outdir[PATH_MAX];
    if (o.shard_n > 1) snprintf(outdir, sizeof outdir, "%s/shard-%d-of-%d", o.out, o.shard_i, o.shard_n);
    else snprintf(outdir, sizeof outdir, "%s", o.out);
    int ppl = eval_task_is_ppl(o.task);
    if (o.rescore) {
        if (sweep_rescore(&o, outdir, err, sizeof err) != 0 || eval_write_summary(outdir, err, sizeof err) != 0) goto fail;
        if (!o.no_plot) eval_plot_summary(outdir);
        status = 0;
        goto done;
    }

    if (!ppl) {
        if (eval_prompt_load(o.prompt_style, &ps, err, sizeof err) != 0) goto fail;
        if (!ps.tmpl[o.task]) {
            snprintf(err, sizeof err, "--prompt-style %s: no template for task %s", ps.name, eval_task_name(o.task));
            goto fail;
        }
        if (!o.max_new) o.max_new = ps.max_new[o.task] ? ps.max_new[o.task] : 64;
    }
    if (eval_load_examples(o.task, o.data, &ex, &n_ex, err, sizeof err) != 0) goto fail;
    m = eval_model_load(o.model, o.threads, err, sizeof err);
    if (!m) goto fail;
    int ctx = eval_model_context(m);
    if (ppl) {
        if (!o.window) o.window = ctx;
        if (o.window > ctx && !o.rope_shifted) {
            snprintf(err, sizeof err, "--window %d: longer than the model's context of %d (%s/config.json)", o.window, ctx, o.model);
            status = 2;
            goto fail;
        }
        if (sweep_ppl_windows(m, ex, n_ex, o.window, o.limit, &items, &n_items, err, sizeof err) != 0) goto fail;
        if (n_items == 0) {
            snprintf(err, sizeof err, "%s: no window of at least 16 tokens", o.data);
            goto fail;
        }
    } else {
        if (o.max_new >= ctx) {
            snprintf(err, sizeof err, "--max-new-tokens %d: leaves no room for a prompt in the context of %d", o.max_new, ctx);
            status = 2;
            goto fail;
        }
        n_items = o.limit > 0 && o.limit < n_ex ? o.limit : n_ex;
        items = calloc((size_t)n_items, sizeof *items);
        if (!items) goto oom;
        for (int i = 0; i < n_items; i++) {
            snprintf(items[i].id, sizeof items[i].id, "%s", ex[i].id);
            items[i].idx = i;
            items[i].src = i;
        }
    }
    if (eval_mkdirs(outdir, err, sizeof err) != 0) goto fail;
    if (sweep_check_run_config(outdir, &o, ps.name, o.max_new, err, sizeof err) != 0) goto fail;
    if (eval_results_open(&res, outdir, err, sizeof err) != 0) goto fail;
    if (res.n_torn) fprintf(stderr, "llm-run eval: %s: cut a torn last line (the example in flight when the last run stopped)\n", res.path);

    /* the work of this shard, and what is already done */
    int per = o.n_policies * o.n_budgets;
    progress pg = {.tty = isatty(2), .t0 = eval_now_s()};
    for (int i = 0; i < n_items; i++) {
        if (i % o.shard_n != o.shard_i) continue;
        pg.total += per;
        for (int a = 0; a < o.n_policies; a++)
            for (int b = 0; b < o.n_budgets; b++) {
                char key[512];
                eval_result_key(key, sizeof key, items[i].id, o.policies[a], o.budgets[b]);
                pg.done += eval_results_done(&res, key);
            }
    }
    pg.done_at_start = pg.done;
    fprintf(stderr, "llm-run eval: %s, %d examples%s, %d policies x %d budgets: %d runs, %d already done -> %s\n",
            eval_task_name(o.task), n_items, o.shard_n > 1 ? " (before sharding)" : "", o.n_policies,
            o.n_budgets, pg.total, pg.done, res.path);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int vocab = eval_model_vocab(m);
    int limit_tokens = ctx - o.max_new + 1;
    for (int i = 0; i < n_items && !g_stop; i++) {
        if (i % o.shard_n != o.shard_i) continue;
        work_item *w = &items[i];
        char keys[MAX_LIST][MAX_LIST][256];
        int pending = 0;
        for (int a = 0; a < o.n_policies; a++)
            for (int b = 0; b < o.n_budgets; b++) {
                eval_result_key(keys[a][b], sizeof keys[a][b], w->id, o.policies[a], o.budgets[b]);
                pending += !eval_results_done(&res, keys[a][b]);
            }
        if (!pending) continue;
        eval_policy_cfg pc = {.budget = 1.0, .rope_shifted = o.rope_shifted,
                              .budget_ref_prompt = o.budget_ref_prompt,
                              .prefill_chunk = o.prefill_chunk, .seed = o.seed, .kv_dtype = -1};
        if (ppl) {
            /* the full cache on this window, once: the reference of KL and agreement */
            free(ref);
            ref = malloc((size_t)(w->n_tokens - 1) * vocab * sizeof *ref);
            if (!ref) goto oom;
            eval_ppl_result fr;
            pc.ops = policy_find("full");
            if (eval_ppl_stream(m, w->tokens, w->n_tokens, &pc, NULL, ref, &fr, err, sizeof err) != 0) goto fail;
        } else if (!w->tokens && !w->skip) {
            if (sweep_fit_prompt(m, &ps, o.task, &ex[w->src], limit_tokens, o.fit_skip, w, err, sizeof err) != 0) goto fail;
        }
        for (int a = 0; a < o.n_policies && !g_stop; a++)
            for (int b = 0; b < o.n_budgets && !g_stop; b++) {
                if (eval_results_done(&res, keys[a][b])) continue;
                char what[128];
                snprintf(what, sizeof what, "%s %s@%g", w->id, o.policies[a], o.budgets[b]);
                progress_show(&pg, what, 0);
                pc.ops = policy_find(o.policies[a]);
                pc.budget = o.budgets[b];
                cJSON *j = sweep_line_head(&o, w, o.policies[a], o.budgets[b]);
                if (w->skip) {
                    cJSON_AddStringToObject(j, "skipped", w->skip_reason);
                } else if (ppl ? ppl_line(m, w, &pc, ref, j, err, sizeof err)
                               : gen_line(m, &o, &ps, &ex[w->src], w, &pc, j, err, sizeof err)) {
                    cJSON_Delete(j);
                    goto fail;
                }
                if (sweep_emit(&res, j, keys[a][b]) != 0) goto fail_quiet;
                pg.done++;
            }
        free(w->tokens);
        w->tokens = NULL;
        progress_show(&pg, w->id, !pg.tty);
    }
    progress_show(&pg, g_stop ? "interrupted" : "done", 1);
    if (pg.tty) fputc('\n', stderr);
    eval_results_close(&res);
    if (eval_write_summary(outdir, err, sizeof err) != 0) goto fail;
    if (!o.no_plot) eval_plot_summary(outdir);
    fprintf(stderr, "llm-run eval: wrote %s/results.jsonl, summary.csv, summary.md\n", outdir);
    status = g_stop ? 130 : 0;
    goto done;
oom:
    snprintf(err, sizeof err, "out of memory");
fail:
    fprintf(stderr, "llm-run eval: %s\n", err);
    if (status == 0) status = 1;
    goto done;
fail_quiet:
    status = 1;
done:
    free(ref);
    eval_results_close(&res);
    for (int i = 0; i < n_items; i++) free(items[i].tokens);
    free(items);
    eval_examples_free(ex, n_ex);
    eval_model_free(m);
    eval_prompt_free(&ps);
    return status;
}
