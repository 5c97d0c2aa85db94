/* sweep.c — `llm-run eval`: a policy × budget sweep over one data set with the model loaded
 * once (issue 5 "Tasks and sweeps"). Every (example, policy, budget) appends one JSON line to
 * OUT/results.jsonl; a rerun resumes; OUT/summary.{csv,md,png} are written at the end.
 *
 * Prompts longer than the model's context (news articles on a 512-token model): the documents
 * are cut to the largest word count whose prompt fits context - max_new + 1 tokens, the same
 * cut for every policy and budget, and the line records "truncated" and "doc_words_kept"
 * (--fit skip records a skipped line instead). Perplexity tasks cut the token stream into
 * windows of --ppl-window tokens (default: the context), each one an example fed from an empty
 * cache (one token per step, or --prefill-chunk tokens at a time), with per-1k-token segments.
 * passkey/niah prompts are generated per (depth, length, sample). --baseline adds a no-context
 * row per example (closedbook for litm). The full cache's line is computed once per example
 * and copied to its other budgets (full ignores the budget). */
#include "eval/sweep.h"
#include "eval/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
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

/* One perplexity line: the window w under the policy pc (or, r given, the full cache's run
 * already made), against the full cache's log-probs ref, into j (n_tokens, metrics, per_1k,
 * kv, timings). Returns 0, or -1 with err set. */
static int ppl_line(eval_model *m, const work_item *w, const eval_policy_cfg *pc, const float *ref,
                    const eval_ppl_result *full, const eval_ppl_segments *full_seg, cJSON *j,
                    char *err, size_t errlen)
{
    eval_ppl_result r;
    eval_ppl_segments seg;
    if (full) {
        r = *full;
        r.kl_sum = 0;
        r.agree = r.n_pred;
        seg = *full_seg;
        for (int k = 0; k < seg.n_seg; k++) {
            seg.kl[k] = 0;
            seg.agree[k] = seg.n[k];
        }
    } else if (eval_ppl_stream_seg(m, w->tokens, w->n_tokens, pc, ref, NULL, &r, &seg, err, errlen) != 0) {
        return -1;
    }
    cJSON_AddNumberToObject(j, "n_tokens", w->n_tokens);
    if (pc->prefill_chunk > 1) cJSON_AddNumberToObject(j, "prefill_chunk", pc->prefill_chunk);
    cJSON *mt = cJSON_AddObjectToObject(j, "metrics");
    double nll = r.nll_sum / r.n_pred;
    cJSON_AddNumberToObject(mt, "nll", nll);
    cJSON_AddNumberToObject(mt, "ppl", exp(nll));
    cJSON_AddNumberToObject(mt, "kl", r.kl_sum / r.n_pred);
    cJSON_AddNumberToObject(mt, "top1_agree", (double)r.agree / r.n_pred);
    cJSON *segs = cJSON_AddArrayToObject(j, "per_1k");
    for (int k = 0; k < seg.n_seg; k++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "from", k * EVAL_PPL_SEG);
        cJSON_AddNumberToObject(e, "n", seg.n[k]);
        cJSON_AddNumberToObject(e, "nll", seg.nll[k] / seg.n[k]);
        cJSON_AddNumberToObject(e, "kl", seg.kl[k] / seg.n[k]);
        cJSON_AddNumberToObject(e, "top1_agree", (double)seg.agree[k] / seg.n[k]);
        cJSON_AddItemToArray(segs, e);
    }
    sweep_add_kv(j, &r.kv);
    cJSON *tm = cJSON_AddObjectToObject(j, "timings");
    cJSON_AddNumberToObject(tm, "ms", r.ms);
    cJSON_AddNumberToObject(tm, "tok_s", r.ms > 0 ? r.n_pred / (r.ms / 1e3) : 0);
    return 0;
}

/* One generation line: the prompt of w (example ex, NULL for passkey/niah) under the policy pc,
 * into j (prompt and output, task metrics, spans, kv, timings). Returns 0, or -1 with err set. */
static int gen_line(eval_model *m, const eval_opts *o, const eval_prompt_style *ps, const eval_example *ex,
                    const work_item *w, const eval_policy_cfg *pc, cJSON *j, char *err, size_t errlen)
{
    eval_gen_result r;
    if (eval_generate(m, w->tokens, w->n_tokens, o->max_new, ps->stop, pc, &r, err, errlen) != 0) return -1;
    free(r.tokens);
    const char *chat = o->chat == 1 ? eval_model_chat_name(m) : NULL;
    cJSON_AddStringToObject(j, "prompt_style", ps->name);
    cJSON_AddStringToObject(j, "chat", chat ? chat : "none");
    cJSON_AddNumberToObject(j, "n_prompt_tokens", r.n_prompt);
    if (eval_task_is_synthetic(o->task)) {
        cJSON_AddStringToObject(j, "key", w->key);
        cJSON_AddNumberToObject(j, "haystack_units", w->words_kept);
    } else {
        cJSON_AddBoolToObject(j, "truncated", w->truncated);
        if (w->truncated) cJSON_AddNumberToObject(j, "doc_words_kept", w->words_kept);
    }
    if (ex && ex->gold_index >= 0) cJSON_AddNumberToObject(j, "gold_index", ex->gold_index);
    sweep_add_spans(j, &w->spans);
    cJSON_AddNumberToObject(j, "n_generated_tokens", r.n_gen);
    cJSON_AddStringToObject(j, "stop", r.stop);
    cJSON_AddStringToObject(j, "output", r.text);
    cJSON *mt = cJSON_AddObjectToObject(j, "metrics");
    int mrc = 0;
    if (eval_task_is_synthetic(o->task)) sweep_passkey_metrics(mt, w->key, r.text);
    else mrc = sweep_gen_metrics(mt, o->task, ex, r.text, err, errlen);
    free(r.text);
    if (mrc) return -1;
    sweep_add_kv(j, &r.kv);
    cJSON *tm = cJSON_AddObjectToObject(j, "timings");
    /* a replayed prefill: prefill_ms is the replay's; tok_s counts the prefill at the time it
     * took to compute (prefill_computed_ms), so it is the speed of the run on its own */
    double ms = (r.prefill_forked ? r.prefill_computed_ms : r.prefill_ms) + r.decode_ms;
    cJSON_AddNumberToObject(tm, "prefill_ms", r.prefill_ms);
    cJSON_AddNumberToObject(tm, "decode_ms", r.decode_ms);
    cJSON_AddNumberToObject(tm, "tok_s", ms > 0 ? (r.n_prompt + r.n_gen) / (ms / 1e3) : 0);
    if (r.prefill_forked) {
        cJSON_AddBoolToObject(tm, "prefill_forked", 1);
        cJSON_AddNumberToObject(tm, "prefill_computed_ms", r.prefill_computed_ms);
    }
    return 0;
}

/* Every --NAME VALUE must belong to a selected policy, and every policy's parameters must be
 * valid (a small kv_init each). 0, or -1 with err set. */
static int check_policies(eval_model *m, const eval_opts *o, char *err, size_t errlen)
{
    for (int k = 0; k < o->n_params; k++) {
        int any = 0;
        for (int a = 0; a < o->n_policies && !any; a++)
            for (const policy_param_def *d = policy_find(o->policies[a])->param_defs; d && d->name; d++)
                any |= !strcmp(d->name, o->param_name[k]) || (d->generic && !strcmp(d->generic, o->param_name[k]));
        if (!any) {
            snprintf(err, errlen, "--%s: none of the selected policies has this parameter (see llm-run --list-policies)",
                     o->param_name[k]);
            return -1;
        }
    }
    for (int a = 0; a < o->n_policies; a++) {
        policy_params pp;
        if (sweep_policy_params(o, policy_find(o->policies[a]), &pp, err, errlen) != 0) return -1;
        /* the largest cache a run of this sweep can have: values parse, nothing else is known */
        eval_policy_cfg pc = {.ops = policy_find(o->policies[a]), .budget = 1, .rope_shifted = o->rope_shifted,
                              .params = &pp, .kv_dtype = o->kv_dtype};
        kv_cache kv;
        int ctx = eval_model_context(m);
        int n = ctx < 4096 ? ctx : 4096;
        if (eval_kv_init(m, &kv, &pc, n > 32 ? n - 16 : n, 16, err, errlen) != 0) return -1;
        kv_free(&kv);
    }
    return 0;
}

/* The niah haystack: the whole --data file as text. */
static char *read_text(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%.400s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0, k;
    char *b = malloc(cap);
    while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) snprintf(err, errlen, "%.400s: out of memory", path);
    else b[n] = '\0';
    if (b && n == 0) {
        snprintf(err, errlen, "%.400s: empty", path);
        free(b);
        return NULL;
    }
    return b;
}

int eval_run(eval_opts *op)
{
    eval_opts o = *op;
    char err[LLM_ERR_LEN] = "";
    int status = 1, lock_fd = -1;
    eval_example *ex = NULL;
    int n_ex = 0, n_items = 0;
    work_item *items = NULL, bw;
    memset(&bw, 0, sizeof bw);
    eval_model *m = NULL;
    eval_prompt_style ps;
    memset(&ps, 0, sizeof ps);
    eval_results res;
    memset(&res, 0, sizeof res);
    res.fd = -1;
    float *ref = NULL;
    char *hay = NULL;
    cJSON *full_line = NULL;
    FILE *dumpf = NULL;
    prefill_record *fork = NULL;
    const char **ids = NULL;
    eval_summary_opts so = {.margin = o.margin, .resamples = o.bootstrap};
    char outdir[PATH_MAX];
    if (o.shard_n > 1) snprintf(outdir, sizeof outdir, "%s/shard-%d-of-%d", o.out, o.shard_i, o.shard_n);
    else snprintf(outdir, sizeof outdir, "%s", o.out);
    int ppl = eval_task_is_ppl(o.task), syn = eval_task_is_synthetic(o.task);
    if (o.rescore) {
        if (sweep_rescore(&o, outdir, err, sizeof err) != 0 || eval_write_summary_ex(outdir, &so, err, sizeof err) != 0) goto fail;
        if (!o.no_plot) eval_plot_summary(outdir);
        status = 0;
        goto done;
    }
    if (ppl && o.baseline) {
        snprintf(err, sizeof err, "--baseline: %s is a perplexity task (compared with the full cache, no baseline)", eval_task_name(o.task));
        status = 2;
        goto fail;
    }
    eval_model_opts mo = o.open;
    mo.threads = o.threads, mo.dtype = o.dtype, mo.resident = 1, mo.allow_no_tokenizer = 0;
    if (!(m = eval_model_open(o.model, &mo, err, sizeof err))) goto fail;
    if (!ppl) {
        if (o.chat < 0) o.chat = eval_model_has_chat_template(m);
        if (o.chat == 1 && eval_model_chat(m, o.chat_template, err, sizeof err) != 0) goto fail;
        if (!o.prompt_style) o.prompt_style = o.chat == 1 ? "chat" : o.task == EVAL_TASK_LITM ? "litm" : "buzz";
        if (syn) {
            snprintf(ps.name, sizeof ps.name, "%s", eval_task_name(o.task));
            ps.bos = eval_model_add_bos(m);
            if (!o.max_new) o.max_new = 16;
        } else {
            if (eval_prompt_load(o.prompt_style, &ps, err, sizeof err) != 0) goto fail;
            if (!ps.tmpl[o.task]) {
                snprintf(err, sizeof err, "--prompt-style %s: no template for task %s", ps.name, eval_task_name(o.task));
                goto fail;
            }
            if (!o.max_new) o.max_new = ps.max_new[o.task] ? ps.max_new[o.task] : 64;
        }
    }
    if (check_policies(m, &o, err, sizeof err) != 0) {
        status = 2;
        goto fail;
    }
    if (o.task == EVAL_TASK_NIAH) {
        if (!(hay = read_text(o.data, err, sizeof err))) goto fail;
    } else if (!syn && eval_load_examples(o.task, o.data, &ex, &n_ex, err, sizeof err) != 0) {
        goto fail;
    }
    int ctx = eval_model_context(m);
    if (ppl) {
        if (!o.window) o.window = ctx;
        if (o.window > ctx && !o.rope_shifted) {
            snprintf(err, sizeof err, "--ppl-window %d: longer than the model's context of %d (%s); use --rope shifted", o.window, ctx, o.model);
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
        if (syn) {
            for (int k = 0; k < o.n_lengths; k++)
                if (o.lengths[k] > ctx - o.max_new + 1) {
                    snprintf(err, sizeof err, "--lengths %d: longer than the context of %d less %d new tokens", o.lengths[k], ctx, o.max_new);
                    status = 2;
                    goto fail;
                }
            if (sweep_passkey_items(&o, &items, &n_items, err, sizeof err) != 0) goto fail;
            if (o.limit > 0 && o.limit < n_items) n_items = o.limit;
        } else {
            n_items = o.limit > 0 && o.limit < n_ex ? o.limit : n_ex;
            items = calloc((size_t)n_items, sizeof *items);
            if (!items) goto oom;
            for (int i = 0; i < n_items; i++) {
                snprintf(items[i].id, sizeof items[i].id, "%s", ex[i].id);
                items[i].idx = i;
                items[i].src = i;
            }
        }
    }
    if (eval_mkdirs(outdir, err, sizeof err) != 0) goto fail;
    if ((lock_fd = sweep_lock_dir(outdir, err, sizeof err)) < 0) goto fail;
    const char *chat_name = o.chat == 1 ? eval_model_chat_name(m) : NULL;
    if (sweep_check_run_config(outdir, &o, ps.name, o.max_new, chat_name, err, sizeof err) != 0) goto fail;
    if (eval_results_open(&res, outdir, err, sizeof err) != 0) goto fail;
    if (res.n_torn) fprintf(stderr, "llm-run eval: %s: cut a torn last line (the example in flight when the last run stopped)\n", res.path);
    if (o.dump_kept && !(dumpf = fopen(o.dump_kept, "a"))) {
        snprintf(err, sizeof err, "--dump-kept %.400s: cannot open: %s", o.dump_kept, strerror(errno));
        goto fail;
    }

    /* the work of this shard, and what is already done */
    const char *base = sweep_baseline_name(o.task);
    int per = o.n_policies * o.n_budgets + (o.baseline ? 1 : 0), n_mine = 0;
    progress pg = {.tty = isatty(2), .t0 = eval_now_s()};
    if (!(ids = calloc((size_t)n_items + 1, sizeof *ids))) goto oom;
    for (int i = 0; i < n_items; i++) {
        if (i % o.shard_n != o.shard_i) continue;
        ids[n_mine++] = items[i].id;
        pg.total += per;
        for (int a = 0; a < o.n_policies; a++)
            for (int b = 0; b < o.n_budgets; b++) {
                char key[512];
                eval_result_key(key, sizeof key, items[i].id, o.policies[a], o.budgets[b]);
                pg.done += eval_results_done(&res, key);
            }
        if (o.baseline) {
            char key[512];
            eval_result_key(key, sizeof key, items[i].id, base, 1);
            pg.done += eval_results_done(&res, key);
        }
    }
    if (sweep_write_expected(outdir, ids, n_mine, &o, err, sizeof err) != 0) goto fail;
    pg.done_at_start = pg.done;
    fprintf(stderr, "llm-run eval: %s, %d examples%s, %d policies x %d budgets%s: %d runs, %d already done -> %s\n",
            eval_task_name(o.task), n_items, o.shard_n > 1 ? " (before sharding)" : "", o.n_policies,
            o.n_budgets, o.baseline ? " + baseline" : "", pg.total, pg.done, res.path);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int vocab = eval_model_vocab(m);
    int limit_tokens = ctx - o.max_new + 1;
    policy_params pps[MAX_LIST];
    for (int a = 0; a < o.n_policies; a++)
        if (sweep_policy_params(&o, policy_find(o.policies[a]), &pps[a], err, sizeof err) != 0) goto fail;
    for (int i = 0; i < n_items && !g_stop; i++) {
        if (i % o.shard_n != o.shard_i) continue;
        work_item *w = &items[i];
        char keys[MAX_LIST][MAX_LIST][256], bkey[256];
        int pending = 0;
        for (int a = 0; a < o.n_policies; a++)
            for (int b = 0; b < o.n_budgets; b++) {
                eval_result_key(keys[a][b], sizeof keys[a][b], w->id, o.policies[a], o.budgets[b]);
                pending += !eval_results_done(&res, keys[a][b]);
            }
        eval_result_key(bkey, sizeof bkey, w->id, base, 1);
        int base_pending = o.baseline && !eval_results_done(&res, bkey);
        if (!pending && !base_pending) continue;
        const eval_example *e = syn ? NULL : &ex[w->src];
        eval_policy_cfg pc = {.budget = 1.0, .rope_shifted = o.rope_shifted,
                              .budget_ref_prompt = o.budget_ref_prompt,
                              .prefill_chunk = o.prefill_chunk, .seed = o.seed, .kv_dtype = o.kv_dtype};
        /* the example's prefill, computed by its first forkable run and replayed by the others
         * (model.h gen_params.fork; --no-prefill-fork computes every one) */
        prefill_record_free(fork);
        fork = NULL;
        eval_ppl_result fr;
        eval_ppl_segments fseg;
        if (ppl) {
            /* the full cache on this window, once: the reference of KL and agreement */
            free(ref);
            ref = malloc((size_t)(w->n_tokens - 1) * vocab * sizeof *ref);
            if (!ref) goto oom;
            pc.ops = policy_find("full");
            if (eval_ppl_stream_seg(m, w->tokens, w->n_tokens, &pc, NULL, ref, &fr, &fseg, err, sizeof err) != 0) goto fail;
        } else if (!w->tokens && !w->skip) {
            if ((syn ? sweep_passkey_fit(m, &o, hay, 0, limit_tokens, w, err, sizeof err)
                     : sweep_fit_prompt(m, &o, &ps, e, 0, limit_tokens, w, err, sizeof err)) != 0) goto fail;
        }
        cJSON_Delete(full_line);
        full_line = NULL;
        for (int a = 0; a <= o.n_policies && !g_stop; a++)
            for (int b = 0; b < o.n_budgets && !g_stop; b++) {
                int is_base = a == o.n_policies;
                if (is_base && (!base_pending || b > 0)) continue;
                const char *pname = is_base ? base : o.policies[a];
                double budget = is_base ? 1 : o.budgets[b];
                const char *key = is_base ? bkey : keys[a][b];
                if (eval_results_done(&res, key)) continue;
                char what[128];
                snprintf(what, sizeof what, "%s %s@%g", w->id, pname, budget);
                progress_show(&pg, what, 0);
                pc.ops = policy_find(is_base ? "full" : pname);
                pc.params = is_base ? NULL : &pps[a];
                pc.fork = is_base || o.no_prefill_fork ? NULL : &fork;
                pc.budget = budget;
                work_item *rw = w;
                if (is_base) {   /* the no-context prompt */
                    memset(&bw, 0, sizeof bw);
                    memcpy(bw.id, w->id, sizeof bw.id);
                    bw.idx = w->idx;
                    bw.depth = w->depth;
                    bw.length = w->length;
                    bw.sample = w->sample;
                    if ((syn ? sweep_passkey_fit(m, &o, hay, 1, limit_tokens, &bw, err, sizeof err)
                             : sweep_fit_prompt(m, &o, &ps, e, 1, limit_tokens, &bw, err, sizeof err)) != 0) goto fail;
                    rw = &bw;
                }
                cJSON *j = sweep_line_head(&o, rw, pname, budget);
                int full = !is_base && !strcmp(pname, "full");
                if (rw->skip) {
                    cJSON_AddStringToObject(j, "skipped", rw->skip_reason);
                } else if (full && full_line) {   /* full keeps everything at any budget */
                    cJSON_Delete(j);
                    j = cJSON_Duplicate(full_line, 1);
                    cJSON_ReplaceItemInObjectCaseSensitive(j, "budget", cJSON_CreateNumber(budget));
                } else {
                    cJSON *head = NULL;
                    eval_dump dump = {.f = dumpf, .every = o.dump_every > 0 ? o.dump_every : 16};
                    if (dumpf && !ppl) {
                        head = cJSON_Duplicate(j, 1);
                        if (e && e->gold_index >= 0) cJSON_AddNumberToObject(head, "gold_index", e->gold_index);
                        sweep_add_spans(head, &rw->spans);
                        dump.head = head;
                        pc.dump = &dump;
                    }
                    int lrc = ppl ? ppl_line(m, w, &pc, ref, full ? &fr : NULL, &fseg, j, err, sizeof err)
                                  : gen_line(m, &o, &ps, e, rw, &pc, j, err, sizeof err);
                    pc.dump = NULL;
                    cJSON_Delete(head);
                    if (lrc) {
                        cJSON_Delete(j);
                        goto fail;
                    }
                    if (full) full_line = cJSON_Duplicate(j, 1);
                }
                if (is_base) {
                    free(bw.tokens);
                    bw.tokens = NULL;
                }
                if (sweep_emit(&res, j, key) != 0) goto fail_quiet;
                pg.done++;
            }
        free(w->tokens);
        w->tokens = NULL;
        prefill_record_free(fork);
        fork = NULL;
        progress_show(&pg, w->id, !pg.tty);
    }
    progress_show(&pg, g_stop ? "interrupted" : "done", 1);
    if (pg.tty) fputc('\n', stderr);
    eval_results_close(&res);
    if (eval_write_summary_ex(outdir, &so, err, sizeof err) != 0) goto fail;
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
    prefill_record_free(fork);
    if (dumpf) fclose(dumpf);
    cJSON_Delete(full_line);
    free(ref);
    free(hay);
    free(ids);
    free(bw.tokens);
    eval_results_close(&res);
    for (int i = 0; i < n_items; i++) free(items[i].tokens);
    free(items);
    eval_examples_free(ex, n_ex);
    eval_model_free(m);
    eval_prompt_free(&ps);
    if (lock_fd >= 0) close(lock_fd);
    return status;
}
