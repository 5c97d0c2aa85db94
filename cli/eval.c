/* eval.c — the command line of `llm-run eval`: the option table every model-running command
 * shares (cli/options.c: --model, --dtype, --threads, --chat, --chat-template, --system,
 * --policy-config, --rope, --prefill-chunk, -n, --seed, --dump-kept, policy parameters such as
 * --sink 4 or --window 32, ...) plus eval's own, parsed into eval_opts (eval/sweep.h); the sweep
 * itself is eval_run (eval/sweep.c). A policy parameter applies to every selected policy that
 * has it; one that no selected policy has is an error (checked by eval_run). */
#include "cli/cli.h"
#include "eval/sweep.h"
#include "kernels/kernels.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    eval_opts *o;
    char pol[4096], bud[4096], dep[1024], len[1024];
    int no_chat, policies_set, budgets_set;
} ectx;

#define E ((ectx *)ctx)
#define SETTER(name) static int name(void *ctx, const char *f, const char *v)
#define TRY(x) do { if ((x) != 0) return 2; } while (0)

/* Splits a comma list in place (at most MAX_LIST items); -1 when there are too many or none. */
static int split(char *s, const char **items, int *n)
{
    *n = 0;
    for (char *t = strtok(s, ","); t; t = strtok(NULL, ",")) {
        while (*t == ' ') t++;
        if (!*t) continue;
        if (*n == MAX_LIST) return -1;
        items[(*n)++] = t;
    }
    return *n ? 0 : -1;
}

SETTER(set_task) {
    if ((E->o->task = eval_task_from_name(v)) < 0)
        return cli_die("%s: unknown task '%s' (xsum, cnndm, litm, wikitext, tinystories, passkey, niah)", f, v);
    return 0;
}
SETTER(set_data) { (void)f; E->o->data = v; return 0; }
SETTER(set_out) { (void)f; E->o->out = v; return 0; }
SETTER(set_style) { (void)f; E->o->prompt_style = v; return 0; }
SETTER(set_policies) {
    snprintf(E->pol, sizeof E->pol, "%s", v);
    eval_opts *o = E->o;
    if (split(E->pol, o->policies, &o->n_policies) != 0)
        return cli_die("%s: expected 1 to %d comma-separated names, got '%s'", f, MAX_LIST, v);
    int kept = 0;
    for (int k = 0; k < o->n_policies; k++) {
        if (!policy_find(o->policies[k])) return cli_die("%s: unknown policy '%s' (see llm-run --list-policies)", f, o->policies[k]);
        int dup = 0;
        for (int j = 0; j < kept; j++) dup |= !strcmp(o->policies[j], o->policies[k]);
        if (!dup) o->policies[kept++] = o->policies[k];
    }
    o->n_policies = kept;
    E->policies_set = 1;
    return 0;
}
SETTER(set_budgets) {
    snprintf(E->bud, sizeof E->bud, "%s", v);
    const char *it[MAX_LIST];
    int n;
    eval_opts *o = E->o;
    if (split(E->bud, it, &n) != 0) return cli_die("%s: expected 1 to %d comma-separated numbers, got '%s'", f, MAX_LIST, v);
    o->n_budgets = 0;
    for (int k = 0; k < n; k++) {
        char *end;
        double b = strtod(it[k], &end);
        if (end == it[k] || *end || !(b > 0) || isinf(b)) return cli_die("%s: '%s' is not a number > 0", f, it[k]);
        int dup = 0;
        for (int j = 0; j < o->n_budgets; j++) dup |= o->budgets[j] == b;
        if (!dup) o->budgets[o->n_budgets++] = b;
    }
    E->budgets_set = 1;
    return 0;
}
SETTER(set_limit) { TRY(cli_int(f, v, 1, INT_MAX, &E->o->limit)); return 0; }
SETTER(set_fit) {
    if (!strcmp(v, "skip")) E->o->fit_skip = 1;
    else if (!strcmp(v, "truncate")) E->o->fit_skip = 0;
    else return cli_die("%s: expected truncate or skip, got '%s'", f, v);
    return 0;
}
SETTER(set_ppl_window) { TRY(cli_int(f, v, 2, INT_MAX, &E->o->window)); return 0; }
SETTER(set_shard) {
    char *end;
    long a = strtol(v, &end, 10), b = -1;
    if (end != v && *end == '/') b = strtol(end + 1, &end, 10);
    if (*end || b < 1 || a < 0 || a >= b || b > 1000000) return cli_die("%s: expected i/n with 0 <= i < n, got '%s'", f, v);
    E->o->shard_i = (int)a;
    E->o->shard_n = (int)b;
    return 0;
}
SETTER(set_no_plot) { (void)f; (void)v; E->o->no_plot = 1; return 0; }
SETTER(set_no_prefill_fork) { (void)f; (void)v; E->o->no_prefill_fork = 1; return 0; }
SETTER(set_rescore) { (void)f; (void)v; E->o->rescore = 1; return 0; }
SETTER(set_no_chat) { (void)f; (void)v; E->no_chat = 1; return 0; }
SETTER(set_qpos) {
    if (!strcmp(v, "first")) E->o->question_first = 1;
    else if (!strcmp(v, "last")) E->o->question_first = 0;
    else return cli_die("%s: expected first or last, got '%s'", f, v);
    return 0;
}
SETTER(set_baseline) { (void)f; (void)v; E->o->baseline = 1; return 0; }
SETTER(set_depths) {
    snprintf(E->dep, sizeof E->dep, "%s", v);
    const char *it[MAX_LIST];
    int n;
    if (split(E->dep, it, &n) != 0) return cli_die("%s: expected comma-separated depths in [0, 1], got '%s'", f, v);
    for (int k = 0; k < n; k++) {
        char *end;
        double d = strtod(it[k], &end);
        if (end == it[k] || *end || !(d >= 0 && d <= 1)) return cli_die("%s: '%s' is not a depth in [0, 1]", f, it[k]);
        E->o->depths[k] = d;
    }
    E->o->n_depths = n;
    return 0;
}
SETTER(set_lengths) {
    snprintf(E->len, sizeof E->len, "%s", v);
    const char *it[MAX_LIST];
    int n;
    if (split(E->len, it, &n) != 0) return cli_die("%s: expected comma-separated token counts (1024 or 1k), got '%s'", f, v);
    for (int k = 0; k < n; k++) {
        char *end;
        double d = strtod(it[k], &end);
        if (*end == 'k' || *end == 'K') d *= 1024, end++;
        if (end == it[k] || *end || !(d >= 16 && d <= 1e7)) return cli_die("%s: '%s' is not a length of 16 tokens or more", f, it[k]);
        E->o->lengths[k] = (int)d;
    }
    E->o->n_lengths = n;
    return 0;
}
SETTER(set_samples) { TRY(cli_int(f, v, 1, 100000, &E->o->samples)); return 0; }
SETTER(set_margin) { double d; TRY(cli_float(f, v, 0, 1e9, &d)); E->o->margin = d; return 0; }
SETTER(set_bootstrap) { TRY(cli_int(f, v, 100, 10000000, &E->o->bootstrap)); return 0; }

static const cli_opt EVAL_TABLE[] = {
    {"--task", NULL, "T", "xsum | cnndm (ROUGE) | litm (best-subspan EM) | passkey | niah (accuracy) |\n"
     "wikitext | tinystories (perplexity, KL and top-1 agreement against the full cache)", CLI_G_SUB, 1, set_task},
    {"--data", NULL, "FILE", "jsonl, jsonl.gz or text (../shared/data, EVAL.md); niah: the haystack text\n"
     "(default ../shared/data/wikitext/...joined_nn.txt); passkey: none", CLI_G_SUB, 1, set_data},
    {"--out", NULL, "DIR", "results folder: results.jsonl, run.json, summary.csv/md/png (locked while running)", CLI_G_SUB, 1, set_out},
    {"--policies", NULL, "a,b,c", "eviction policies (default full, or --policy)", CLI_G_SUB, 1, set_policies},
    {"--budgets", NULL, "x,y", "fractions (0 < x <= 1) of prompt + max new tokens (perplexity: of the window), or\n"
     "token counts (x > 1) (default 1, or --budget)", CLI_G_SUB, 1, set_budgets},
    {"--limit", NULL, "N", "the first N examples (perplexity: windows; passkey: prompts), split among shards", CLI_G_SUB, 1, set_limit},
    {"--prompt-style", NULL, "S", "chat | buzz | helm | litm, or a JSON file (configs/prompts/; default chat with a\n"
     "chat template, else buzz, litm for litm)", CLI_G_SUB, 0, set_style},
    {"--no-chat", NULL, NULL, "raw prompts even when the model has a chat template (default: the chat\n"
     "template when the model has one; --chat requires it)", CLI_G_SUB, 0, set_no_chat},
    {"--question-position", NULL, "first|last", "the instruction / question before or after the context (default\n"
     "last; recorded in every line and run.json)", CLI_G_SUB, 1, set_qpos},
    {"--baseline", "--closedbook", NULL, "add the no-context row: closedbook (litm: the question alone), nocontext\n"
     "(xsum/cnndm: an empty article; passkey/niah: the haystack without the needle)", CLI_G_SUB, 1, set_baseline},
    {"--fit", NULL, "truncate|skip", "prompts longer than the context: cut the documents (default), or skip", CLI_G_SUB, 0, set_fit},
    {"--ppl-window", NULL, "N", "perplexity: tokens per window (default: the model's context)", CLI_G_SUB, 0, set_ppl_window},
    {"--depths", NULL, "d,...", "passkey/niah: needle depths in [0, 1] (default 0,0.25,0.5,0.75,1)", CLI_G_SUB, 0, set_depths},
    {"--lengths", NULL, "L,...", "passkey/niah: prompt tokens at most, e.g. 1k,2k (default 1024,2048)", CLI_G_SUB, 0, set_lengths},
    {"--samples", NULL, "N", "passkey/niah: prompts per depth x length cell (default 4; keys from --seed)", CLI_G_SUB, 0, set_samples},
    {"--shard", NULL, "i/n", "run examples i, i+n, ... into DIR/shard-i-of-n/ (default from\n"
     "SLURM_ARRAY_TASK_ID/COUNT); merge with llm-run eval-merge DIR", CLI_G_SUB, 0, set_shard},
    {"--margin", NULL, "M", "equivalence margin of the summary's claims, in the metric's units (default 0.01\n"
     "ROUGE-1 or NLL, 0.02 EM or accuracy)", CLI_G_SUB, 0, set_margin},
    {"--bootstrap", NULL, "N", "bootstrap resamples of the summary's intervals (default 2000)", CLI_G_SUB, 0, set_bootstrap},
    {"--no-plot", NULL, NULL, "do not draw summary.png", CLI_G_SUB, 0, set_no_plot},
    {"--no-prefill-fork", NULL, NULL, "compute every run's prefill (by default a whole-prompt prefill that does not depend on the policy is computed once per example and replayed into the other policies' caches: same results)", CLI_G_SUB, 0, set_no_prefill_fork},
    {"--rescore", NULL, NULL, "recompute the metrics of DIR/results.jsonl from its outputs and --data", CLI_G_SUB, 0, set_rescore},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

static const char SYNOPSIS[] =
    "--task TASK [--data FILE] --out DIR [options]\n\n"
    "Runs every (example, policy, budget) of a sweep with the model loaded once. Each result is one\n"
    "JSON line appended to DIR/results.jsonl (a rerun skips what is done); DIR/summary.csv,\n"
    "summary.md and summary.png hold the means with 95% intervals, the paired difference with the\n"
    "full cache, the equivalence claims and the evidence check. Every option of llm-run is accepted;\n"
    "policy parameters (--sink 4, --window 32, ...) apply to every selected policy that has them.";

/* path as given when it exists, else the same path next to the executable's folder */
static const char *beside_exe(const char *rel, char *buf, size_t n)
{
    struct stat st;
    if (stat(rel, &st) == 0) return rel;
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return rel;
    exe[k] = '\0';
    char *sl = strrchr(exe, '/');
    if (sl) *sl = '\0';
    snprintf(buf, n, "%s/%s", exe, rel);
    return stat(buf, &st) == 0 ? buf : rel;
}

int cli_eval_main(int argc, char **argv)
{
    static eval_opts o;
    static ectx c;
    static char model_buf[PATH_MAX + 64], data_buf[PATH_MAX + 64];
    eval_opts_init(&o);
    memset(&c, 0, sizeof c);
    c.o = &o;
    run_options r;
    run_options_init(&r);
    r.max_new = -1;
    r.dump_every = 16;
    const char *tid = getenv("SLURM_ARRAY_TASK_ID"), *tcount = getenv("SLURM_ARRAY_TASK_COUNT");
    if (tid && *tid && tcount && *tcount) {
        char sh[64];
        snprintf(sh, sizeof sh, "%s/%s", tid, tcount);
        if (set_shard(&c, "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT", sh) != 0) return 2;
    }
    int rc = cli_parse(argc, argv, 1, &r, EVAL_TABLE, &c, "llm-run eval", SYNOPSIS);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = cli_llama_finish(&r)) != 0) return rc;   /* -ctk/-ctv, -e, -sys */
    if (r.seed_random) return cli_die("eval: --seed -1 (a random seed) would make the sweep unrepeatable; give a number");
    for (int k = 0; k < r.n_pending; k += 2)   /* --NAME VALUE that is no policy's parameter */
        if (!cli_is_policy_param(r.pending[k])) {
            char flag[300];
            snprintf(flag, sizeof flag, "--%s", r.pending[k]);
            const char *sg = cli_suggest(flag, EVAL_TABLE);
            if (sg) return cli_die("unknown option '%s'; did you mean '%s%s'? (see --help)", flag, sg[0] == '-' ? "" : "--", sg);
            return cli_die("unknown option '%s' (see --help)", flag);
        }
    /* what eval does not use: an error, not a silent no-op */
    if (r.n_positional) return cli_die("eval: unexpected argument '%s' (see llm-run eval --help)", r.positional[0]);
    const struct { int on; const char *flag, *why; } unused[] = {
        {r.prompt_text != NULL, "-p", "the prompts come from --data"},
        {r.prompt_file != NULL, "-f", "the prompts come from --data"},
        {r.prompt_ids != NULL, "--prompt-ids", "the prompts come from --data"},
        {r.messages != NULL, "--messages", "the prompts come from --data"},
        {r.logits_out != NULL, "--logits-out", "see --dump-kept and the per-line metrics"},
        {r.json, "--json", "results go to OUT/results.jsonl"},
        {r.temp > 0 || r.top_k > 0, "--temp/--top-k", "eval decodes greedily"},
        {r.ctx_len > 0, "-c", "prompts are fitted to the model's context"},
        {r.kv_mem_limit_gb > 0, "--kv-mem-limit", "budgets are set with --budgets"},
        {r.pp.budget_tokens > 0, "--budget-tokens", "give token budgets as --budgets N (N > 1)"},
        {!strcmp(r.device, "cuda"), "--device cuda", "eval runs on the CPU"},
        {r.chat_template_text != NULL, "--chat-template-file", "name the family with --chat-template: run.json records it"},
    };
    for (size_t k = 0; k < sizeof unused / sizeof unused[0]; k++)
        if (unused[k].on) return cli_die("eval: %s is not used by eval (%s)", unused[k].flag, unused[k].why);
    if (cli_llama_unused(&r, "eval")) return 2;
    if (o.task < 0) return cli_die("eval: --task is required (xsum, cnndm, litm, wikitext, tinystories, passkey, niah)");
    if (!o.out) return cli_die("eval: --out DIR is required");
    if (o.task == EVAL_TASK_NIAH && !o.data)
        o.data = beside_exe("../shared/data/wikitext/wikitext-2-raw-v1.test.joined_nn.txt", data_buf, sizeof data_buf);
    if (o.task == EVAL_TASK_PASSKEY) {
        if (o.data) return cli_die("eval: --data: passkey prompts are generated (no data file)");
        o.data = "(generated)";
    }
    if (!o.data) return cli_die("eval: --data FILE is required");
    /* the shared options */
    const char *env = getenv("LLM_MODEL");
    o.model = r.model_dir ? r.model_dir : env && *env ? env
            : beside_exe("../shared/models/stories260K", model_buf, sizeof model_buf);
    o.threads = r.threads;
    o.dtype = r.dtype;
    o.kv_dtype = r.kv_dtype;
    cli_model_opts(&r, &o.open);
    o.act_bits = r.act_bits;
    cpu_quant_act_bits(r.act_bits);
    o.seed = r.seed;
    o.prefill_chunk = r.prefill_chunk;
    o.max_new = r.max_new > 0 ? r.max_new : 0;
    o.system = r.system;
    o.chat_template = r.chat_template;
    if (c.no_chat && (r.chat || r.chat_template || r.system)) return cli_die("eval: --no-chat with --chat/--chat-template/--system");
    o.chat = c.no_chat ? 0 : r.chat || r.chat_template || r.system ? 1 : -1;
    o.dump_kept = r.dump_kept;
    o.dump_every = r.dump_every > 0 ? r.dump_every : 16;
    o.preset = r.preset;
    const policy_ops *pops = NULL;
    if (r.preset) {
        policy_params pp;
        char err[LLM_ERR_LEN];
        memset(&pp, 0, sizeof pp);
        if (policy_preset_load(r.preset, &pops, &pp, err, sizeof err) != 0) return cli_die("%s", err);
        if (!r.rope_set) r.pp.rope_shifted = pp.rope_shifted;
        if (!r.budget_ref_set) r.pp.budget_ref_prompt = pp.budget_ref_prompt;
        if (!r.budget_set && pp.budget > 0) r.pp.budget = pp.budget, r.budget_set = 1;
    }
    o.rope_shifted = r.pp.rope_shifted;
    o.budget_ref_prompt = r.pp.budget_ref_prompt;
    if (!c.policies_set) {
        o.policies[0] = r.policy ? r.policy : pops ? pops->name : "full";
        o.n_policies = 1;
    } else if (r.policy) {
        return cli_die("eval: --policy %s with --policies: give the list with --policies", r.policy);
    }
    if (!c.budgets_set) {
        o.budgets[0] = r.budget_set ? r.pp.budget : 1.0;
        o.n_budgets = 1;
    }
    for (int k = 0; k + 1 < r.n_pending && o.n_params < MAX_PARAMS; k += 2) {
        o.param_name[o.n_params] = r.pending[k];
        o.param_value[o.n_params++] = r.pending[k + 1];
    }
    return eval_run(&o);
}
