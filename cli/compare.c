/* compare.c — `llm-run compare -m MODEL --policies a,b --budgets x,y PROMPT_FILE`: one prompt, the
 * full cache first, then every (policy, budget); a table (or --json) of how each run's output
 * and next-token distributions differ from the full cache's: ROUGE-L and token agreement of the
 * generated text, teacher-forced KL(full ‖ policy) and top-1 agreement on the full cache's output
 * tokens, peak KV bytes, tokens/s. Every option of llm-run is accepted (the shared table); a
 * policy parameter applies to every listed policy that has it. */
#include "cli/cli.h"
#include "eval/sweep.h"
#include "kernels/kernels.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    eval_opts o;   /* policies, budgets, parameters (sweep_policy_params) */
    char pol[4096], bud[4096];
} cctx;

#define C ((cctx *)ctx)

static int split(char *s, const char **items, int *n)
{
    *n = 0;
    for (char *t = strtok(s, ","); t; t = strtok(NULL, ","))
        if (*t && *n < MAX_LIST) items[(*n)++] = t;
    return *n ? 0 : -1;
}

static int set_policies(void *ctx, const char *f, const char *v)
{
    snprintf(C->pol, sizeof C->pol, "%s", v);
    if (split(C->pol, C->o.policies, &C->o.n_policies) != 0) return cli_die("%s: expected comma-separated policies", f);
    for (int k = 0; k < C->o.n_policies; k++)
        if (!policy_find(C->o.policies[k])) return cli_die("%s: unknown policy '%s' (see --list-policies)", f, C->o.policies[k]);
    return 0;
}

static int set_budgets(void *ctx, const char *f, const char *v)
{
    snprintf(C->bud, sizeof C->bud, "%s", v);
    const char *it[MAX_LIST];
    int n;
    if (split(C->bud, it, &n) != 0) return cli_die("%s: expected comma-separated budgets", f);
    for (int k = 0; k < n; k++) {
        char *end;
        double b = strtod(it[k], &end);
        if (end == it[k] || *end || !(b > 0) || isinf(b)) return cli_die("%s: '%s' is not a number > 0", f, it[k]);
        C->o.budgets[k] = b;
    }
    C->o.n_budgets = n;
    return 0;
}

static const cli_opt TABLE[] = {
    {"--policies", NULL, "a,b,c", "policies to compare with the full cache (default: --policy, else h2o)", CLI_G_SUB, 1, set_policies},
    {"--budgets", NULL, "x,y", "budgets of each (default: --budget, else 0.5)", CLI_G_SUB, 1, set_budgets},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

static const char SYNOPSIS[] =
    "[options] --policies a,b --budgets x,y [PROMPT_FILE | -p TEXT]\n\n"
    "Generates from one prompt with the full cache, then with every (policy, budget), and prints\n"
    "how each differs from the full cache: ROUGE-L and token agreement of the output, KL(full || policy)\n"
    "and top-1 agreement teacher-forced on the full cache's output tokens (nats per token), peak KV\n"
    "and tokens/s. Greedy decoding.";

typedef struct {
    const char *policy;
    double budget;
    char *text;
    int n_gen;
    double rougeL, tok_agree, kl, top1, peak, full_peak, tok_s;
} row;

/* one run: generate, then teacher-force the full cache's tokens */
static int run_one(eval_model *m, const int *prompt, int n_prompt, int max_new, const eval_policy_cfg *pc,
                   const int *ftok, int fn, const char *ftext, const float *ref, float *save, row *rw, int **toks,
                   char *err, size_t errlen)
{
    eval_gen_result g;
    if (eval_generate(m, prompt, n_prompt, max_new, NULL, pc, &g, err, errlen) != 0) return -1;
    rw->text = g.text;
    rw->n_gen = g.n_gen;
    rw->peak = g.kv.peak_bytes;
    rw->full_peak = g.kv.full_peak_bytes;
    double ms = g.prefill_ms + g.decode_ms;
    rw->tok_s = ms > 0 ? (n_prompt + g.n_gen) / (ms / 1e3) : 0;
    if (toks) *toks = g.tokens;
    rw->kl = rw->top1 = rw->rougeL = rw->tok_agree = NAN;
    if (ftext) {
        rouge_scores rs;
        if (rouge_pair(ftext, g.text, ROUGE_IMPL_GOOGLE, 1, &rs, err, errlen) != 0) return -1;
        rw->rougeL = rs.rougeL.f;
        int same = 0, mx = fn > g.n_gen ? fn : g.n_gen;
        for (int i = 0; i < fn && i < g.n_gen; i++) same += ftok[i] == g.tokens[i];
        rw->tok_agree = mx ? (double)same / mx : 1;
    }
    if (!toks) free(g.tokens);
    if (fn > 0) {
        eval_ppl_result fr;
        if (eval_forced(m, prompt, n_prompt, ftok, fn, pc, ref, save, &fr, err, errlen) != 0) return -1;
        if (ref) {
            rw->kl = fr.kl_sum / fn;
            rw->top1 = (double)fr.agree / fn;
        }
    }
    return 0;
}

static void shorten(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 4 < n; s++) out[k++] = *s == '\n' || *s == '\t' ? ' ' : *s;
    if (*s) memcpy(out + (k > 3 ? k - 3 : k), "...", 4);
    else out[k] = '\0';
}

int cli_compare_main(int argc, char **argv)
{
    static cctx c;
    memset(&c, 0, sizeof c);
    eval_opts_init(&c.o);
    run_options r;
    run_options_init(&r);
    int rc = cli_parse(argc, argv, 1, &r, TABLE, &c, "llm-run compare", SYNOPSIS);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = cli_llama_finish(&r)) != 0) return rc;   /* -ctk/-ctv, -e, -sys */
    for (int k = 0; k < r.n_pending; k += 2) {
        if (!cli_is_policy_param(r.pending[k])) return cli_die("unknown option '--%s' (see --help)", r.pending[k]);
        c.o.param_name[c.o.n_params] = r.pending[k];
        c.o.param_value[c.o.n_params++] = r.pending[k + 1];
    }
    c.o.preset = r.preset;
    if (!c.o.n_policies) {
        c.o.policies[0] = r.policy ? r.policy : "h2o";
        c.o.n_policies = 1;
    }
    if (!c.o.n_budgets) {
        c.o.budgets[0] = r.budget_set ? r.pp.budget : 0.5;
        c.o.n_budgets = 1;
    }
    if (r.n_positional > 1 || (r.n_positional && (r.prompt_file || r.prompt_text)))
        return cli_die("compare: give one prompt (-p, -f or PROMPT_FILE)");
    if (r.temp > 0) return cli_die("compare: decodes greedily (--temp 0)");
    if (cli_llama_unused(&r, "compare")) return 2;
    if (r.seed_random)   /* the random policy's seed: reported so that -s N repeats the table */
        fprintf(stderr, "llm-run: seed %llu (drawn for -s -1; -s %llu repeats this run)\n", (unsigned long long)r.seed,
                (unsigned long long)r.seed);
    const char *pf = r.n_positional ? r.positional[0] : r.prompt_file;
    char err[LLM_ERR_LEN] = "";
    char *prompt = NULL;
    size_t plen = 0;
    chat_message *msgs = NULL;
    int n_msgs = 0, *tokens = NULL, *ftok = NULL, n_prompt = 0, status = 1;
    float *ref = NULL;
    row *rows = NULL;
    int n_rows = 0;
    eval_model *m = NULL;
    if (r.prompt_text) prompt = strdup(r.prompt_text), plen = strlen(r.prompt_text);
    else if (pf) prompt = cli_read_file(pf, &plen);
    else if (!r.messages) return cli_die("compare: no prompt (-p TEXT, -f FILE, PROMPT_FILE or --messages)");
    else prompt = strdup("");
    if (!prompt) return 1;
    if (r.prompt_file_trim && !r.n_positional && plen && prompt[plen - 1] == '\n') prompt[--plen] = '\0';
    const char *env = getenv("LLM_MODEL");
    const char *model = r.model_dir ? r.model_dir : env && *env ? env : "../shared/models/stories260K";
    cpu_quant_act_bits(r.act_bits);
    eval_model_opts mo = {.resident = 1};
    cli_model_opts(&r, &mo);
    if (!(m = eval_model_open(model, &mo, err, sizeof err))) goto fail;
    if (r.messages && chat_messages_load(r.messages, &msgs, &n_msgs, err, sizeof err) != 0) goto fail;
    eval_prompt_in in = {.text = prompt, .text_len = plen, .parse_special = !r.no_parse_special,
                         .chat = r.chat || r.chat_template, .system = r.system, .messages = msgs,
                         .n_messages = n_msgs, .chat_template = r.chat_template};
    if (eval_encode(m, &in, &tokens, &n_prompt, err, sizeof err) != 0) goto fail;
    int ctx = eval_model_context(m);
    if (n_prompt < 1 || n_prompt > ctx) {
        snprintf(err, sizeof err, "the prompt is %d tokens (the context is %d)", n_prompt, ctx);
        goto fail;
    }
    int max_new = r.max_new >= 0 && r.max_new < ctx - n_prompt + 1 ? r.max_new : ctx - n_prompt + 1;   /* -n -1: the context */
    n_rows = 1 + c.o.n_policies * c.o.n_budgets;
    int vocab = eval_model_vocab(m);
    if (!(rows = calloc((size_t)n_rows, sizeof *rows))) goto oom;
    eval_policy_cfg pc = {.ops = policy_find("full"), .budget = 1, .rope_shifted = r.pp.rope_shifted,
                          .budget_ref_prompt = r.pp.budget_ref_prompt, .prefill_chunk = r.prefill_chunk, .seed = r.seed,
                          .kv_dtype = r.kv_dtype};
    rows[0].policy = "full";
    rows[0].budget = 1;
    /* the full cache: its output, then its distributions on its own output (the reference) */
    if (run_one(m, tokens, n_prompt, max_new, &pc, NULL, 0, NULL, NULL, NULL, &rows[0], &ftok, err, sizeof err) != 0) goto fail;
    int fn = rows[0].n_gen;
    if (fn > 0) {
        if (!(ref = malloc(sizeof *ref * (size_t)fn * vocab))) goto oom;
        eval_ppl_result fr;
        if (eval_forced(m, tokens, n_prompt, ftok, fn, &pc, NULL, ref, &fr, err, sizeof err) != 0) goto fail;
    }
    rows[0].rougeL = rows[0].tok_agree = 1;
    rows[0].kl = fn ? 0 : NAN;
    rows[0].top1 = fn ? 1 : NAN;
    int k = 1;
    for (int a = 0; a < c.o.n_policies; a++) {
        policy_params pp;
        const policy_ops *ops = policy_find(c.o.policies[a]);
        if (sweep_policy_params(&c.o, ops, &pp, err, sizeof err) != 0) goto fail;
        for (int b = 0; b < c.o.n_budgets; b++, k++) {
            pc.ops = ops;
            pc.params = &pp;
            pc.budget = c.o.budgets[b];
            rows[k].policy = c.o.policies[a];
            rows[k].budget = c.o.budgets[b];
            if (run_one(m, tokens, n_prompt, max_new, &pc, ftok, fn, rows[0].text, ref, NULL, &rows[k], NULL, err, sizeof err) != 0)
                goto fail;
        }
    }
    if (r.json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "n_prompt_tokens", n_prompt);
        cJSON_AddNumberToObject(j, "max_new_tokens", max_new);
        cJSON *arr = cJSON_AddArrayToObject(j, "runs");
        for (int i = 0; i < n_rows; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "policy", rows[i].policy);
            cJSON_AddNumberToObject(e, "budget", rows[i].budget);
            cJSON_AddStringToObject(e, "text", rows[i].text);
            cJSON_AddNumberToObject(e, "n_generated_tokens", rows[i].n_gen);
            const char *nm[] = {"rougeL", "token_agree", "kl", "top1_agree"};
            double vv[] = {rows[i].rougeL, rows[i].tok_agree, rows[i].kl, rows[i].top1};
            for (int q = 0; q < 4; q++)
                cJSON_AddItemToObject(e, nm[q], isnan(vv[q]) ? cJSON_CreateNull() : cJSON_CreateNumber(vv[q]));
            cJSON_AddNumberToObject(e, "kv_peak_bytes", rows[i].peak);
            cJSON_AddNumberToObject(e, "kv_peak_rel", rows[i].full_peak > 0 ? rows[i].peak / rows[i].full_peak : 0);
            cJSON_AddNumberToObject(e, "tok_s", rows[i].tok_s);
            cJSON_AddItemToArray(arr, e);
        }
        char *s = cJSON_PrintUnformatted(j);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
    } else {
        printf("prompt: %d tokens; up to %d new tokens, greedy; vs full: ROUGE-L and token agreement of the output,\n"
               "KL(full || policy) in nats/token and top-1 agreement teacher-forced on full's %d output tokens\n\n",
               n_prompt, max_new, fn);
        printf("%-14s %7s %10s %6s %8s %8s %8s %9s %7s  %s\n", "policy", "budget", "KV peak", "xfull", "tok/s",
               "ROUGE-L", "tok agr", "KL", "top-1", "output");
        for (int i = 0; i < n_rows; i++) {
            char sh[48];
            shorten(rows[i].text, sh, sizeof sh);
            printf("%-14s %7g %8.1fKi %6.3f %8.1f %8.3f %8.3f %9.5f %7.3f  %s\n", rows[i].policy, rows[i].budget,
                   rows[i].peak / 1024, rows[i].full_peak > 0 ? rows[i].peak / rows[i].full_peak : 0, rows[i].tok_s,
                   rows[i].rougeL, rows[i].tok_agree, rows[i].kl, rows[i].top1, sh);
        }
    }
    status = fflush(stdout) == 0 ? 0 : 1;
    goto done;
oom:
    snprintf(err, sizeof err, "out of memory");
fail:
    fprintf(stderr, "llm-run compare: %s\n", err);
done:
    for (int i = 0; rows && i < n_rows; i++) free(rows[i].text);
    free(rows);
    free(ref);
    free(ftok);
    free(tokens);
    free(prompt);
    chat_messages_free(msgs, n_msgs);
    eval_model_free(m);
    return status;
}
