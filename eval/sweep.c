/* sweep.c — `llm-run eval`: a policy × budget sweep over one data set with the model loaded
 * once (issue 5 "Tasks and sweeps"). Every (example, policy, budget) appends one JSON line to
 * OUT/results.jsonl; a rerun resumes; OUT/summary.{csv,md,png} are written at the end.
 *
 * Prompts longer than the model's context (news articles on a 512-token model): the documents
 * are cut to the largest word count whose prompt fits context - max_new + 1 tokens, the same
 * cut for every policy and budget, and the line records "truncated" and "doc_words_kept"
 * (--fit skip records a skipped line instead). Perplexity tasks cut the token stream into
 * windows of --window tokens (default: the context), each one an example fed from an empty cache. */
#include "eval/runner.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 64

typedef struct {
    int task;
    const char *data, *model, *out, *prompt_style;
    const char *policies[MAX_LIST];
    int n_policies;
    double budgets[MAX_LIST];
    int n_budgets;
    int limit, max_new, threads, prefill_chunk, window, fit_skip, no_plot, rescore;
    int rope_shifted, budget_ref_prompt;
    int shard_i, shard_n;
    uint64_t seed;
} eval_opts;

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void eval_usage(FILE *f)
{
    fprintf(f,
"usage: llm-run eval --task TASK --data FILE --out DIR [options]\n"
"\n"
"Runs every (example, policy, budget) of a sweep with the model loaded once. Each result is one\n"
"JSON line appended to DIR/results.jsonl (a rerun skips what is done); DIR/summary.csv,\n"
"summary.md and summary.png hold the policy x budget means with 95%% confidence intervals.\n"
"\n"
"  --task T             xsum | cnndm (ROUGE) | litm (best-subspan EM) | wikitext | tinystories\n"
"                       (perplexity, KL and top-1 agreement against the full cache)\n"
"  --data FILE          jsonl, jsonl.gz or text (../shared/data, see EVAL.md)\n"
"  --model DIR          model folder (default $LLM_MODEL, else ../shared/models/stories260K)\n"
"  --policies a,b,c     eviction policies (default full; see llm-run --list-policies)\n"
"  --budgets x,y,...    budgets: fractions (0 < x <= 1) of prompt + max new tokens (perplexity:\n"
"                       of the window), or token counts (x > 1) (default 1)\n"
"  --limit N            the first N examples (perplexity: N windows)\n"
"  --max-new-tokens N   generation length (default: the prompt style's, per task)\n"
"  --prompt-style S     buzz | helm | litm, or a JSON file (configs/prompts/; default buzz for\n"
"                       xsum/cnndm, litm for litm)\n"
"  --fit truncate|skip  prompts longer than the context: cut the documents (default), or skip\n"
"  --window N           perplexity: tokens per window (default: the model's context)\n"
"  --rope absolute|shifted, --prefill-chunk N, --budget-ref total|prompt   as for llm-run\n"
"  --shard i/n          run examples i, i+n, ... into DIR/shard-i-of-n/ (default from\n"
"                       SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT); merge: llm-run eval-merge DIR\n"
"  --no-plot            do not draw summary.png\n"
"  --rescore            recompute the metrics of DIR/results.jsonl from its outputs and --data\n"
"                       (after a metric changed), then rewrite the summaries; generates nothing\n"
"  -t, --threads N      CPU threads (default: all cores)\n"
"  --seed N             seed for randomised policies (default 0)\n");
}

static int bad(const char *fmt, const char *a)
{
    fprintf(stderr, "llm-run eval: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return 2;
}

static int parse_int_arg(const char *flag, const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "llm-run eval: %s: expected an integer in [%ld, %ld], got '%s'\n", flag, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Splits a comma list in place into items (at most MAX_LIST). */
static int split_list(char *s, const char **items, int *n)
{
    *n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        while (isspace((unsigned char)*tok)) tok++;
        if (!*tok) continue;
        if (*n == MAX_LIST) return -1;
        items[(*n)++] = tok;
    }
    return 0;
}

static int parse_shard(const char *s, int *i, int *n)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '/') return -1;
    long b = strtol(end + 1, &end, 10);
    if (*end || b < 1 || a < 0 || a >= b || b > 1000000) return -1;
    *i = (int)a;
    *n = (int)b;
    return 0;
}

static int parse_opts(int argc, char **argv, eval_opts *o)
{
    memset(o, 0, sizeof *o);
    o->task = -1;
    o->threads = 0;
    o->shard_n = 1;
    static char pol_buf[4096], bud_buf[4096];
    const char *tid = getenv("SLURM_ARRAY_TASK_ID"), *tcount = getenv("SLURM_ARRAY_TASK_COUNT");
    if (tid && *tid && tcount && *tcount) {
        char sh[64];
        snprintf(sh, sizeof sh, "%s/%s", tid, tcount);
        if (parse_shard(sh, &o->shard_i, &o->shard_n) != 0)
            return bad("SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT: not a shard i/n with 0 <= i < n: '%s'", sh);
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            eval_usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--no-plot")) {
            o->no_plot = 1;
            continue;
        }
        if (!strcmp(a, "--rescore")) {
            o->rescore = 1;
            continue;
        }
        if (a[0] != '-') return bad("unexpected argument '%s' (see llm-run eval --help)", a);
        if (i + 1 >= argc) return bad("%s: missing value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--task")) {
            if ((o->task = eval_task_from_name(v)) < 0)
                return bad("--task: unknown task '%s' (xsum, cnndm, litm, wikitext, tinystories)", v);
        } else if (!strcmp(a, "--data")) o->data = v;
        else if (!strcmp(a, "--model") || !strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "--out")) o->out = v;
        else if (!strcmp(a, "--prompt-style")) o->prompt_style = v;
        else if (!strcmp(a, "--policies")) {
            snprintf(pol_buf, sizeof pol_buf, "%s", v);
            if (split_list(pol_buf, o->policies, &o->n_policies) != 0 || o->n_policies == 0)
                return bad("--policies: expected 1 to 64 comma-separated names, got '%s'", v);
            int kept = 0;
            for (int k = 0; k < o->n_policies; k++) {
                if (!policy_find(o->policies[k]))
                    return bad("--policies: unknown policy '%s' (see llm-run --list-policies)", o->policies[k]);
                int dup = 0;
                for (int j = 0; j < kept; j++) dup |= !strcmp(o->policies[j], o->policies[k]);
                if (!dup) o->policies[kept++] = o->policies[k];
            }
            o->n_policies = kept;
        } else if (!strcmp(a, "--budgets")) {
            snprintf(bud_buf, sizeof bud_buf, "%s", v);
            const char *items[MAX_LIST];
            if (split_list(bud_buf, items, &o->n_budgets) != 0 || o->n_budgets == 0)
                return bad("--budgets: expected 1 to 64 comma-separated numbers, got '%s'", v);
            for (int k = 0; k < o->n_budgets; k++) {
                char *end;
                double b = strtod(items[k], &end);
                if (end == items[k] || *end || !(b > 0) || isinf(b))
                    return bad("--budgets: '%s' is not a number > 0", items[k]);
                o->budgets[k] = b;
            }
            int kept = 0;
            for (int k = 0; k < o->n_budgets; k++) {
                int dup = 0;
                for (int j = 0; j < kept; j++) dup |= o->budgets[j] == o->budgets[k];
                if (!dup) o->budgets[kept++] = o->budgets[k];
            }
            o->n_budgets = kept;
        } else if (!strcmp(a, "--limit")) {
            if (parse_int_arg(a, v, 1, INT_MAX, &o->limit)) return 2;
        } else if (!strcmp(a, "--max-new-tokens") || !strcmp(a, "-n")) {
            if (parse_int_arg(a, v, 1, 1000000, &o->max_new)) return 2;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) {
            if (parse_int_arg(a, v, 1, 1024, &o->threads)) return 2;
        } else if (!strcmp(a, "--prefill-chunk")) {
            if (parse_int_arg(a, v, 1, INT_MAX, &o->prefill_chunk)) return 2;
        } else if (!strcmp(a, "--window")) {
            if (parse_int_arg(a, v, 2, INT_MAX, &o->window)) return 2;
        } else if (!strcmp(a, "--seed")) {
            int s;
            if (parse_int_arg(a, v, 0, INT_MAX, &s)) return 2;
            o->seed = (uint64_t)s;
        } else if (!strcmp(a, "--fit")) {
            if (!strcmp(v, "skip")) o->fit_skip = 1;
            else if (strcmp(v, "truncate")) return bad("--fit: expected truncate or skip, got '%s'", v);
        } else if (!strcmp(a, "--rope")) {
            if (!strcmp(v, "shifted")) o->rope_shifted = 1;
            else if (strcmp(v, "absolute")) return bad("--rope: expected absolute or shifted, got '%s'", v);
        } else if (!strcmp(a, "--budget-ref")) {
            if (!strcmp(v, "prompt")) o->budget_ref_prompt = 1;
            else if (strcmp(v, "total")) return bad("--budget-ref: expected total or prompt, got '%s'", v);
        } else if (!strcmp(a, "--shard")) {
            if (parse_shard(v, &o->shard_i, &o->shard_n) != 0)
                return bad("--shard: expected i/n with 0 <= i < n, got '%s'", v);
        } else {
            return bad("unknown option '%s' (see llm-run eval --help)", a);
        }
    }
    if (o->task < 0) return bad("--task is required (xsum, cnndm, litm, wikitext, tinystories)%s", "");
    if (!o->data) return bad("--data FILE is required%s", "");
    if (!o->out) return bad("--out DIR is required%s", "");
    if (!o->n_policies) {
        o->policies[0] = "full";
        o->n_policies = 1;
    }
    if (!o->n_budgets) {
        o->budgets[0] = 1.0;
        o->n_budgets = 1;
    }
    if (!o->model) {
        const char *env = getenv("LLM_MODEL");
        struct stat st;
        o->model = env && *env ? env
                   : stat("../shared/models/stories260K/config.json", &st) == 0 ? "../shared/models/stories260K"
                                                                                 : "models/stories260K";
    }
    if (!o->prompt_style) o->prompt_style = o->task == EVAL_TASK_LITM ? "litm" : "buzz";
    return 0;
}

/* mkdir -p */
static int mkdirs(const char *path, char *err, size_t errlen)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; ; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "%.400s: cannot create directory: %s", p, strerror(errno));
                return -1;
            }
            *s = c;
            if (!c) break;
        }
    }
    return 0;
}

/* OUT/run.json: the settings a results file depends on. A rerun with other settings into the
 * same folder is refused (policies, budgets, --limit and --shard may change). */
static int check_run_config(const char *dir, const eval_opts *o, const char *style, int max_new,
                            char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/run.json", dir);
    /* data and model as given (relative paths stay valid in another checkout) */
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddStringToObject(cfg, "task", eval_task_name(o->task));
    cJSON_AddStringToObject(cfg, "data", o->data);
    cJSON_AddStringToObject(cfg, "model", o->model);
    if (eval_task_is_ppl(o->task)) {
        cJSON_AddNumberToObject(cfg, "window", o->window);
    } else {
        cJSON_AddStringToObject(cfg, "prompt_style", style);
        cJSON_AddNumberToObject(cfg, "max_new_tokens", max_new);
        cJSON_AddStringToObject(cfg, "fit", o->fit_skip ? "skip" : "truncate");
        cJSON_AddNumberToObject(cfg, "prefill_chunk", o->prefill_chunk);
    }
    cJSON_AddStringToObject(cfg, "rope", o->rope_shifted ? "shifted" : "absolute");
    cJSON_AddStringToObject(cfg, "budget_ref", o->budget_ref_prompt ? "prompt" : "total");
    cJSON_AddNumberToObject(cfg, "seed", (double)o->seed);
    int rc = 0;
    FILE *f = fopen(path, "rb");
    if (f) {
        char buf[8192];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        cJSON *old = cJSON_Parse(buf);
        if (!old || !cJSON_Compare(old, cfg, 1)) {
            const cJSON *it;
            const char *what = "?";
            cJSON_ArrayForEach(it, cfg) {
                const cJSON *ov = old ? cJSON_GetObjectItemCaseSensitive(old, it->string) : NULL;
                if (!ov || !cJSON_Compare(ov, it, 1)) {
                    what = it->string;
                    break;
                }
            }
            snprintf(err, errlen, "%.300s: this folder holds results of another configuration (%s differs); use another --out",
                     path, what);
            rc = -1;
        }
        cJSON_Delete(old);
    } else {
        char *s = cJSON_Print(cfg);
        f = fopen(path, "wb");
        if (!f || !s || fprintf(f, "%s\n", s) < 0 || fclose(f) != 0) {
            snprintf(err, errlen, "%.400s: cannot write: %s", path, strerror(errno));
            rc = -1;
        }
        free(s);
    }
    cJSON_Delete(cfg);
    return rc;
}

/* A work item: one example of the sweep (a generation prompt, or a perplexity window). */
typedef struct {
    char id[80];
    int idx;                 /* index among the examples (before sharding) */
    int src;                 /* index into the loaded examples (generation) */
    int *tokens;             /* prompt or window tokens */
    int n_tokens;
    int truncated, words_kept, skip;
    char skip_reason[160];
} work_item;

static int count_words(const char *s)
{
    int n = 0;
    while (s && *s) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        n++;
        while (*s && !isspace((unsigned char)*s)) s++;
    }
    return n;
}

/* Renders and tokenizes ex with every document cut to the largest word count whose prompt fits
 * limit tokens (binary search; the cut is recorded). */
static int fit_prompt(eval_model *m, const eval_prompt_style *ps, eval_task task, const eval_example *ex,
                      int limit, int fit_skip, work_item *w, char *err, size_t errlen)
{
    int trunc;
    char *text = eval_prompt_render(ps, task, ex, -1, &trunc);
    if (!text) {
        snprintf(err, errlen, "prompt style %s: no template for task %s", ps->name, eval_task_name(task));
        return -1;
    }
    int *ids, n;
    int rc = eval_tokenize(m, text, ps->bos, &ids, &n, err, errlen);
    free(text);
    if (rc) return -1;
    if (n <= limit) {
        w->tokens = ids;
        w->n_tokens = n;
        return 0;
    }
    free(ids);
    if (fit_skip) {
        w->skip = 1;
        snprintf(w->skip_reason, sizeof w->skip_reason, "prompt of %d tokens exceeds %d (context - max_new + 1)", n, limit);
        return 0;
    }
    int hi = count_words(ex->document);
    for (int k = 0; k < ex->n_docs; k++) {
        int c = count_words(ex->docs[k].text);
        if (c > hi) hi = c;
    }
    int lo = 0, best = -1;
    int *best_ids = NULL, best_n = 0;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        text = eval_prompt_render(ps, task, ex, mid, &trunc);
        if (!text) {
            snprintf(err, errlen, "out of memory");
            free(best_ids);
            return -1;
        }
        rc = eval_tokenize(m, text, ps->bos, &ids, &n, err, errlen);
        free(text);
        if (rc) {
            free(best_ids);
            return -1;
        }
        if (n <= limit) {
            free(best_ids);
            best_ids = ids;
            best_n = n;
            best = mid;
            lo = mid + 1;
        } else {
            free(ids);
            hi = mid - 1;
        }
    }
    if (best < 0) {
        w->skip = 1;
        snprintf(w->skip_reason, sizeof w->skip_reason, "prompt exceeds %d tokens even without its documents", limit);
        return 0;
    }
    w->tokens = best_ids;
    w->n_tokens = best_n;
    w->truncated = 1;
    w->words_kept = best;
    return 0;
}

/* Perplexity windows: every row tokenized with BOS (empty rows contribute nothing), the rows
 * concatenated into one stream (BUZZ never resets the cache between rows), cut into windows of
 * `window` tokens; a last window shorter than 16 tokens is dropped. */
static int ppl_windows(eval_model *m, const eval_example *ex, int n_ex, int window, int limit,
                       work_item **items, int *n_items, char *err, size_t errlen)
{
    size_t cap = 4096, n = 0;
    int *stream = malloc(cap * sizeof *stream);
    if (!stream) goto oom;
    size_t need = limit > 0 ? (size_t)limit * window : (size_t)-1;
    for (int i = 0; i < n_ex && n < need; i++) {
        if (!ex[i].document || !ex[i].document[0]) continue;
        int *ids, k;
        if (eval_tokenize(m, ex[i].document, 1, &ids, &k, err, errlen) != 0) {
            free(stream);
            return -1;
        }
        if (n + (size_t)k > cap) {
            while (n + (size_t)k > cap) cap *= 2;
            int *ns = realloc(stream, cap * sizeof *ns);
            if (!ns) {
                free(ids);
                goto oom;
            }
            stream = ns;
        }
        memcpy(stream + n, ids, (size_t)k * sizeof *ids);
        n += (size_t)k;
        free(ids);
    }
    int nw = 0;
    work_item *v = calloc(n / (size_t)window + 2, sizeof *v);
    if (!v) goto oom;
    for (size_t off = 0; off < n && (limit <= 0 || nw < limit); off += (size_t)window) {
        size_t len = n - off < (size_t)window ? n - off : (size_t)window;
        if (len < 16) break;
        work_item *w = &v[nw];
        snprintf(w->id, sizeof w->id, "w%d", nw);
        w->idx = nw;
        w->n_tokens = (int)len;
        w->tokens = malloc(len * sizeof *w->tokens);
        if (!w->tokens) {
            for (int j = 0; j < nw; j++) free(v[j].tokens);
            free(v);
            goto oom;
        }
        memcpy(w->tokens, stream + off, len * sizeof *w->tokens);
        nw++;
    }
    free(stream);
    *items = v;
    *n_items = nw;
    return 0;
oom:
    free(stream);
    snprintf(err, errlen, "out of memory");
    return -1;
}

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
    double t = now_s();
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

static void add_kv(cJSON *j, const eval_kv_stats *kv)
{
    cJSON *k = cJSON_AddObjectToObject(j, "kv");
    cJSON_AddNumberToObject(k, "capacity", kv->capacity);
    cJSON_AddNumberToObject(k, "peak_bytes", kv->peak_bytes);
    cJSON_AddNumberToObject(k, "avg_bytes", kv->avg_bytes);
    cJSON_AddNumberToObject(k, "full_peak_bytes", kv->full_peak_bytes);
    cJSON_AddNumberToObject(k, "full_avg_bytes", kv->full_avg_bytes);
    cJSON_AddNumberToObject(k, "evictions", (double)kv->evictions);
}

/* Lowercased, stripped copy (BUZZ's commented-out scorer: strip().lower() equality). */
static char *strip_lower(const char *s)
{
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    char *d = malloc(n + 1);
    if (!d) return NULL;
    for (size_t i = 0; i < n; i++) d[i] = (char)tolower((unsigned char)s[i]);
    d[n] = '\0';
    return d;
}

/* The task metrics of one generated text. */
static int gen_metrics(cJSON *mt, eval_task task, const eval_example *ex, const char *out,
                       char *err, size_t errlen)
{
    if (task == EVAL_TASK_LITM) {
        cJSON_AddNumberToObject(mt, "em", em_best_subspan(out, (const char *const *)ex->answers, ex->n_answers));
        char *a = strip_lower(out), *b = strip_lower(ex->answers[0]);
        if (!a || !b) {
            free(a);
            free(b);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        cJSON_AddNumberToObject(mt, "em_strict", !strcmp(a, b));
        free(a);
        free(b);
        return 0;
    }
    rouge_scores g, p;
    if (rouge_pair(ex->reference, out, ROUGE_IMPL_GOOGLE, 1, &g, err, errlen) != 0) return -1;
    cJSON_AddNumberToObject(mt, "rouge1", g.rouge1.f);
    cJSON_AddNumberToObject(mt, "rouge2", g.rouge2.f);
    cJSON_AddNumberToObject(mt, "rougeL", g.rougeL.f);
    cJSON_AddNumberToObject(mt, "rougeLsum", g.rougeLsum.f);
    /* pltrdy raises on an empty hypothesis (zero sentences); the papers' loops would crash: score 0 */
    char perr[256] = "";
    if (rouge_pair(ex->reference, out, ROUGE_IMPL_PLTRDY, 0, &p, perr, sizeof perr) != 0) memset(&p, 0, sizeof p);
    cJSON_AddNumberToObject(mt, "pltrdy_rouge1", p.rouge1.f);
    cJSON_AddNumberToObject(mt, "pltrdy_rouge2", p.rouge2.f);
    cJSON_AddNumberToObject(mt, "pltrdy_rougeL", p.rougeL.f);
    return 0;
}

static cJSON *line_head(const eval_opts *o, const work_item *w, const char *policy, double budget)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "task", eval_task_name(o->task));
    cJSON_AddStringToObject(j, "id", w->id);
    cJSON_AddNumberToObject(j, "idx", w->idx);
    cJSON_AddStringToObject(j, "policy", policy);
    cJSON_AddNumberToObject(j, "budget", budget);
    cJSON_AddStringToObject(j, "rope", o->rope_shifted ? "shifted" : "absolute");
    return j;
}

/* Appends j as a line; 0, or -1 after printing the error. */
static int emit(eval_results *res, cJSON *j, const char *key)
{
    char err[LLM_ERR_LEN];
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) {
        fprintf(stderr, "llm-run eval: out of memory\n");
        return -1;
    }
    int rc = eval_results_append(res, key, s, err, sizeof err);
    free(s);
    if (rc) fprintf(stderr, "%sllm-run eval: %s\n", isatty(2) ? "\n" : "", err);
    return rc;
}

/* --rescore: the metrics of every generation line of DIR/results.jsonl recomputed from its
 * "output" and the example of the same id in --data; the file is replaced atomically. */
static int rescore(const eval_opts *o, const char *dir, char *err, size_t errlen)
{
    eval_example *ex = NULL;
    int n_ex = 0, rc = -1, n_lines = 0, n_done = 0;
    char **lines = NULL;
    char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
    FILE *f = NULL;
    if (eval_task_is_ppl(o->task)) {
        snprintf(err, errlen, "--rescore: %s is a perplexity task (its metrics need the model; rerun it)", eval_task_name(o->task));
        return -1;
    }
    if (eval_load_examples(o->task, o->data, &ex, &n_ex, err, errlen) != 0) return -1;
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    snprintf(tmp, sizeof tmp, "%s/.results.jsonl.rescore.tmp", dir);
    if (eval_read_lines(path, &lines, &n_lines, err, errlen) != 0) goto done;
    f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%.400s: cannot write: %s", tmp, strerror(errno));
        goto done;
    }
    for (int i = 0; i < n_lines; i++) {
        cJSON *j = cJSON_Parse(lines[i]);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(j, "output");
        const cJSON *task = cJSON_GetObjectItemCaseSensitive(j, "task");
        if (cJSON_IsString(id) && cJSON_IsString(out) && cJSON_IsString(task) &&
            !strcmp(task->valuestring, eval_task_name(o->task))) {
            int k = 0;
            while (k < n_ex && strcmp(ex[k].id, id->valuestring)) k++;
            if (k == n_ex) {
                snprintf(err, errlen, "%.200s: line %d: id '%.60s' is not in %.200s", path, i + 1, id->valuestring, o->data);
                cJSON_Delete(j);
                goto done;
            }
            cJSON *mt = cJSON_CreateObject();
            if (gen_metrics(mt, o->task, &ex[k], out->valuestring, err, errlen) != 0) {
                cJSON_Delete(mt);
                cJSON_Delete(j);
                goto done;
            }
            cJSON_ReplaceItemInObjectCaseSensitive(j, "metrics", mt);
            n_done++;
        }
        char *s = j ? cJSON_PrintUnformatted(j) : NULL;
        cJSON_Delete(j);
        int bad = !s || fprintf(f, "%s\n", s) < 0;
        free(s);
        if (bad) {
            snprintf(err, errlen, "%.400s: write failed: %s", tmp, strerror(errno));
            goto done;
        }
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
        f = NULL;
        snprintf(err, errlen, "%.400s: write failed: %s", tmp, strerror(errno));
        goto done;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%.400s: cannot replace: %s", path, strerror(errno));
        goto done;
    }
    fprintf(stderr, "llm-run eval: rescored %d of %d lines in %s\n", n_done, n_lines, path);
    rc = 0;
done:
    if (f) {
        fclose(f);
        unlink(tmp);
    }
    for (int i = 0; i < n_lines; i++) free(lines[i]);
    free(lines);
    eval_examples_free(ex, n_ex);
    return rc;
}

int eval_main(int argc, char **argv)
{
    eval_opts o;
    int rc = parse_opts(argc, argv, &o);
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
        if (rescore(&o, outdir, err, sizeof err) != 0 || eval_write_summary(outdir, err, sizeof err) != 0) goto fail;
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
        if (ppl_windows(m, ex, n_ex, o.window, o.limit, &items, &n_items, err, sizeof err) != 0) goto fail;
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
    if (mkdirs(outdir, err, sizeof err) != 0) goto fail;
    if (check_run_config(outdir, &o, ps.name, o.max_new, err, sizeof err) != 0) goto fail;
    if (eval_results_open(&res, outdir, err, sizeof err) != 0) goto fail;
    if (res.n_torn) fprintf(stderr, "llm-run eval: %s: cut a torn last line (the example in flight when the last run stopped)\n", res.path);

    /* the work of this shard, and what is already done */
    int per = o.n_policies * o.n_budgets;
    progress pg = {.tty = isatty(2), .t0 = now_s()};
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
                              .prefill_chunk = o.prefill_chunk, .seed = o.seed};
        if (ppl) {
            /* the full cache on this window, once: the reference of KL and agreement */
            free(ref);
            ref = malloc((size_t)(w->n_tokens - 1) * vocab * sizeof *ref);
            if (!ref) goto oom;
            eval_ppl_result fr;
            pc.ops = policy_find("full");
            if (eval_ppl_stream(m, w->tokens, w->n_tokens, &pc, NULL, ref, &fr, err, sizeof err) != 0) goto fail;
        } else if (!w->tokens && !w->skip) {
            if (fit_prompt(m, &ps, o.task, &ex[w->src], limit_tokens, o.fit_skip, w, err, sizeof err) != 0) goto fail;
        }
        for (int a = 0; a < o.n_policies && !g_stop; a++)
            for (int b = 0; b < o.n_budgets && !g_stop; b++) {
                if (eval_results_done(&res, keys[a][b])) continue;
                char what[128];
                snprintf(what, sizeof what, "%s %s@%g", w->id, o.policies[a], o.budgets[b]);
                progress_show(&pg, what, 0);
                pc.ops = policy_find(o.policies[a]);
                pc.budget = o.budgets[b];
                cJSON *j = line_head(&o, w, o.policies[a], o.budgets[b]);
                if (w->skip) {
                    cJSON_AddStringToObject(j, "skipped", w->skip_reason);
                } else if (ppl) {
                    eval_ppl_result r;
                    if (eval_ppl_stream(m, w->tokens, w->n_tokens, &pc, ref, NULL, &r, err, sizeof err) != 0) {
                        cJSON_Delete(j);
                        goto fail;
                    }
                    cJSON_AddNumberToObject(j, "n_tokens", w->n_tokens);
                    cJSON *mt = cJSON_AddObjectToObject(j, "metrics");
                    double nll = r.nll_sum / r.n_pred;
                    cJSON_AddNumberToObject(mt, "nll", nll);
                    cJSON_AddNumberToObject(mt, "ppl", exp(nll));
                    cJSON_AddNumberToObject(mt, "kl", r.kl_sum / r.n_pred);
                    cJSON_AddNumberToObject(mt, "top1_agree", (double)r.agree / r.n_pred);
                    add_kv(j, &r.kv);
                    cJSON *tm = cJSON_AddObjectToObject(j, "timings");
                    cJSON_AddNumberToObject(tm, "ms", r.ms);
                    cJSON_AddNumberToObject(tm, "tok_s", r.ms > 0 ? r.n_pred / (r.ms / 1e3) : 0);
                } else {
                    eval_gen_result r;
                    if (eval_generate(m, w->tokens, w->n_tokens, o.max_new, ps.stop, &pc, &r, err, sizeof err) != 0) {
                        cJSON_Delete(j);
                        goto fail;
                    }
                    cJSON_AddStringToObject(j, "prompt_style", ps.name);
                    cJSON_AddNumberToObject(j, "n_prompt_tokens", r.n_prompt);
                    cJSON_AddBoolToObject(j, "truncated", w->truncated);
                    if (w->truncated) cJSON_AddNumberToObject(j, "doc_words_kept", w->words_kept);
                    if (ex[w->src].gold_index >= 0) cJSON_AddNumberToObject(j, "gold_index", ex[w->src].gold_index);
                    cJSON_AddNumberToObject(j, "n_generated_tokens", r.n_gen);
                    cJSON_AddStringToObject(j, "stop", r.stop);
                    cJSON_AddStringToObject(j, "output", r.text);
                    cJSON *mt = cJSON_AddObjectToObject(j, "metrics");
                    int mrc = gen_metrics(mt, o.task, &ex[w->src], r.text, err, sizeof err);
                    free(r.text);
                    if (mrc) {
                        cJSON_Delete(j);
                        goto fail;
                    }
                    add_kv(j, &r.kv);
                    cJSON *tm = cJSON_AddObjectToObject(j, "timings");
                    double ms = r.prefill_ms + r.decode_ms;
                    cJSON_AddNumberToObject(tm, "prefill_ms", r.prefill_ms);
                    cJSON_AddNumberToObject(tm, "decode_ms", r.decode_ms);
                    cJSON_AddNumberToObject(tm, "tok_s", ms > 0 ? (r.n_prompt + r.n_gen) / (ms / 1e3) : 0);
                }
                if (emit(&res, j, keys[a][b]) != 0) goto fail_quiet;
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
