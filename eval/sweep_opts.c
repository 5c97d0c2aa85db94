/* sweep_opts.c — the command line of `llm-run eval` (eval_opts, --help) and its record
 * OUT/run.json, which keeps a rerun from mixing results of other settings into a folder. */
#include "eval/sweep.h"
#include "eval/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int sweep_parse_opts(int argc, char **argv, eval_opts *o)
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

/* OUT/run.json: the settings a results file depends on. A rerun with other settings into the
 * same folder is refused (policies, budgets, --limit and --shard may change). */
int sweep_check_run_config(const char *dir, const eval_opts *o, const char *style, int max_new,
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
    int rc = 0, exists;
    cJSON *old = eval_read_json(path, &exists);
    if (exists) {
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
        FILE *f = fopen(path, "wb");
        if (!f || !s || fprintf(f, "%s\n", s) < 0 || fclose(f) != 0) {
            snprintf(err, errlen, "%.400s: cannot write: %s", path, strerror(errno));
            rc = -1;
        }
        free(s);
    }
    cJSON_Delete(cfg);
    return rc;
}
