/* perplexity.c — `llm-run perplexity -m MODEL -f FILE [-c 512] [--chunks N]`: llama-perplexity's
 * figure on the same file (its default protocol, eval/ppl_chunks.c): the text tokenized whole
 * (BOS when the model adds one, special tokens as text), cut into chunks of -c tokens, the second
 * half of each scored. Prints llama-perplexity's "[1]x,[2]y,..." running values and its "Final
 * estimate: PPL = X +/- Y" on stdout, progress on stderr; --json one object. Under a budget:
 * --policy P --budget B with --prefill-chunk N < -c (the policy evicts between prefill chunks;
 * without them it never runs, so that is refused). llama-perplexity's other modes (KL divergence,
 * HellaSwag, WinoGrande, multiple choice, --ppl-stride) are refused in one line. */
#include "cli/cli.h"
#include "eval/eval.h"
#include "eviction/eviction.h"
#include "kernels/kernels.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int chunks;   /* 0: all */
    cJSON *running;
    int json;
} ppl_opts;

#define P ((ppl_opts *)ctx)
static int set_chunks(void *ctx, const char *f, const char *v) { return cli_int(f, v, 1, INT_MAX, &P->chunks) ? 2 : 0; }
#define REFUSE(name, why) \
    static int name(void *ctx, const char *f, const char *v) { (void)ctx, (void)v; return cli_die("%s: " why, f); }
REFUSE(set_stride, "the strided perplexity (perplexity_v2) is not in llm-run; llm-run eval --task ppl scores a "
                   "stream under a budget")
REFUSE(set_kld, "KL divergence against a base model's logits is not in llm-run perplexity; llm-run compare and "
                "eval report KL(full || policy)")
REFUSE(set_bench, "HellaSwag, WinoGrande and multiple-choice scoring are not in llm-run")
#undef P

static const cli_opt PPL_OPTS[] = {
    {"--chunks", NULL, "N", "score the first N chunks (default: all the text holds)", CLI_G_SUB, 1, set_chunks},
    {"--ppl-stride", NULL, "N", "(refused: llama-perplexity's strided mode)", CLI_G_SUB, 0, set_stride},
    {"--kl-divergence", NULL, NULL, "(refused)", CLI_G_SUB, 0, set_kld},
    {"--kl-divergence-base", NULL, "FILE", "(refused)", CLI_G_SUB, 0, set_kld},
    {"--hellaswag", NULL, NULL, "(refused)", CLI_G_SUB, 0, set_bench},
    {"--winogrande", NULL, NULL, "(refused)", CLI_G_SUB, 0, set_bench},
    {"--multiple-choice", NULL, NULL, "(refused)", CLI_G_SUB, 0, set_bench},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

static const char SYNOPSIS[] =
    "-m MODEL -f FILE [-c 512] [--chunks N] [-t N] [--json]\n\n"
    "llama-perplexity's perplexity of a text file (e.g. wiki.test.raw): the text tokenized whole,\n"
    "cut into chunks of -c tokens (default 512), each run from an empty cache with BOS first when\n"
    "the model adds one, the second half of each chunk scored. Prints the running value after each\n"
    "chunk ([1]x,[2]y,...) and 'Final estimate: PPL = X +/- Y', as llama-perplexity does. Under a\n"
    "budget: --policy P --budget B --prefill-chunk N (N < -c; the policy evicts between chunks).";

static void on_chunk(void *ud, int c, int n, double ppl, double s)
{
    ppl_opts *p = ud;
    if (p->json) {
        cJSON_AddItemToArray(p->running, cJSON_CreateNumber(ppl));
        fprintf(stderr, "\rperplexity: chunk %d of %d, %.4f (%.0f s, ~%.0f s left)", c + 1, n, ppl, s,
                s / (c + 1) * (n - c - 1));
        return;
    }
    printf("[%d]%.4lf,", c + 1, ppl);
    fflush(stdout);
}

int cli_perplexity_main(int argc, char **argv)
{
    run_options r;
    ppl_opts p = {0};
    run_options_init(&r);
    int rc = cli_parse(argc, argv, 1, &r, PPL_OPTS, &p, "llm-run perplexity", SYNOPSIS);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = cli_llama_finish(&r)) != 0) return rc;
    if ((rc = run_options_finish(&r)) != 0) return rc;
    const char *file = r.n_positional ? r.positional[0] : r.prompt_file;
    if (r.n_positional > 1 || (r.n_positional && r.prompt_file) || r.prompt_text || r.messages)
        return cli_die("perplexity: give the text as one file (-f FILE or FILE)");
    if (!file) return cli_die("perplexity: no text (-f FILE, e.g. wiki.test.raw)");
    if (r.chat || r.system || r.chat_template) return cli_die("perplexity: scores the raw text (no --chat, --system)");
    if (r.temp > 0 || r.min_p > 0 || r.sampler_flag || r.repeat_penalty != 1.0f || r.frequency_penalty != 0.0f ||
        r.presence_penalty != 0.0f || r.n_reverse || r.special)
        return cli_die("perplexity: scores the text's own tokens; the sampling and stop options do not apply");
    const int n_ctx = r.ctx_len > 0 ? r.ctx_len : 512;
    const policy_ops *ops = policy_find(r.policy);
    if (strcmp(ops->name, "full") && !(r.prefill_chunk > 0 && r.prefill_chunk < n_ctx))
        return cli_die("perplexity: --policy %s evicts only between prefill chunks; add --prefill-chunk N (N < -c %d)",
                       ops->name, n_ctx);
    p.json = r.json;
    char err[LLM_ERR_LEN] = "";
    size_t len = 0;
    char *text = cli_read_file(file, &len);
    if (!text) return 1;
    if (r.prompt_file_trim && !r.n_positional && len && text[len - 1] == '\n') text[--len] = '\0';
    int *ids = NULL, n = 0, status = 1;
    eval_model *m = NULL;
    cpu_quant_act_bits(r.act_bits);
    eval_model_opts mo = {.resident = 1};
    cli_model_opts(&r, &mo);
    if (!(m = eval_model_open(r.model_dir, &mo, err, sizeof err))) goto fail;
    if (n_ctx > eval_model_context(m)) {
        snprintf(err, sizeof err, "perplexity: -c %d is longer than the model's context of %d", n_ctx, eval_model_context(m));
        goto fail;
    }
    /* llama.cpp's common_tokenize(text, add_special = true, parse_special = false) */
    const double t0 = cli_now_s();
    eval_prompt_in in = {.text = text, .text_len = len, .parse_special = 0};
    if (eval_encode(m, &in, &ids, &n, err, sizeof err) != 0) goto fail;
    if (n < 2 * n_ctx) {
        snprintf(err, sizeof err, "perplexity: the text is %d tokens; a context of %d needs at least %d (2 chunks)", n,
                 n_ctx, 2 * n_ctx);
        goto fail;
    }
    const int n_chunks = p.chunks > 0 && p.chunks < n / n_ctx ? p.chunks : n / n_ctx;
    fprintf(stderr, "perplexity: %d tokens (tokenized in %.1f s); %d chunks of n_ctx=%d, policy %s\n", n,
            cli_now_s() - t0, n_chunks, n_ctx, ops->name);
    eval_policy_cfg pc = {.ops = ops, .budget = r.budget_set ? r.pp.budget : 1, .params = &r.pp,
                          .rope_shifted = r.pp.rope_shifted, .budget_ref_prompt = r.pp.budget_ref_prompt,
                          .prefill_chunk = r.prefill_chunk, .seed = r.seed, .kv_dtype = r.kv_dtype};
    eval_ppl_chunks_result res;
    if (r.json) p.running = cJSON_CreateArray();
    if (eval_ppl_chunks(m, ids, n, n_ctx, p.chunks, &pc, on_chunk, &p, &res, err, sizeof err) != 0) {
        if (!r.json) printf("\n");
        goto fail;
    }
    if (r.json) {
        fprintf(stderr, "\n");
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "ppl", res.ppl);
        cJSON_AddNumberToObject(j, "ppl_err", res.ppl_err);
        cJSON_AddNumberToObject(j, "nll_mean", res.nll_mean);
        cJSON_AddNumberToObject(j, "n_ctx", n_ctx);
        cJSON_AddNumberToObject(j, "n_chunks", res.n_chunks);
        cJSON_AddNumberToObject(j, "n_tokens", n);
        cJSON_AddNumberToObject(j, "tokens_scored", res.count);
        cJSON_AddItemToObject(j, "running_ppl", p.running);
        p.running = NULL;
        cJSON_AddStringToObject(j, "policy", ops->name);
        cJSON_AddNumberToObject(j, "budget", pc.budget);
        cJSON_AddNumberToObject(j, "prefill_chunk", r.prefill_chunk);
        cJSON_AddNumberToObject(j, "seconds", res.seconds);
        char *s = cJSON_PrintUnformatted(j);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
    } else {
        printf("\nFinal estimate: PPL = %.4lf +/- %.5lf\n", res.ppl, res.ppl_err);
        fprintf(stderr, "perplexity: %d tokens scored in %.1f s (%.1f tokens/s through the model)\n", res.count,
                res.seconds, res.seconds > 0 ? (double)res.n_chunks * n_ctx / res.seconds : 0.0);
    }
    status = fflush(stdout) == 0 ? 0 : 1;
    if (status) cli_die("stdout: write failed");
    goto done;
fail:
    fprintf(stderr, "llm-run: %s\n", err);
    status = 1;
done:
    cJSON_Delete(p.running);
    free(ids);
    free(text);
    eval_model_free(m);
    return status;
}
