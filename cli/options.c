/* options.c — the option table every model-running subcommand shares (run, eval, compare,
 * tokenize), its parser, the grouped --help it prints, and did-you-mean for unknown flags. */
#include "cli/cli.h"
#include "kernels/kernels.h"
#include "model/model.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20) *c = '?';   /* one line, whatever the user typed */
    fprintf(stderr, "llm-run: %s\n", msg);
    return 2;
}

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cli_int(const char *flag, const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) {
        cli_die("%s: not an integer: '%s'", flag, s);
        return -1;
    }
    if (v < lo || v > hi) {
        cli_die("%s: %ld is out of range [%ld, %ld]", flag, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int cli_float(const char *flag, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || isnan(v)) {
        cli_die("%s: not a number: '%s'", flag, s);
        return -1;
    }
    if (v < lo || v > hi) {
        cli_die("%s: %g is out of range [%g, %g]", flag, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------------- setters */

#define O ((run_options *)ctx)
#define SETTER(name) static int name(void *ctx, const char *f, const char *v)
#define TRY(x) do { if ((x) != 0) return 2; } while (0)

SETTER(set_model) { (void)f; O->model_dir = v; return 0; }
SETTER(set_prompt) { (void)f; O->prompt_text = v; return 0; }
SETTER(set_file) {
    (void)f;
    if (O->prompt_file) return cli_die("more than one prompt file ('%s' and '%s')", O->prompt_file, v);
    O->prompt_file = v;
    O->prompt_file_trim = 1;
    return 0;
}
SETTER(set_prompt_ids) { (void)f; O->prompt_ids = v; return 0; }
SETTER(set_force_ids) { (void)f; O->force_ids = v; return 0; }
SETTER(set_chat) { (void)f; (void)v; O->chat = 1; return 0; }
SETTER(set_system) { (void)f; O->system = v; return 0; }
SETTER(set_chat_template) {
    (void)f;
    if (strcmp(v, "chatml") && strcmp(v, "llama3") && strcmp(v, "llama2"))
        return cli_die("--chat-template: expected chatml, llama3 or llama2, got '%s'", v);
    O->chat_template = v;
    return 0;
}
SETTER(set_messages) { (void)f; O->messages = v; return 0; }
SETTER(set_no_parse_special) { (void)f; (void)v; O->no_parse_special = 1; return 0; }
SETTER(set_max_new) { TRY(cli_int(f, v, -1, 10000000, &O->max_new)); return 0; }
SETTER(set_ctx) { TRY(cli_int(f, v, 1, INT_MAX, &O->ctx_len)); return 0; }
SETTER(set_temp) { double d; TRY(cli_float(f, v, 0, 100, &d)); O->temp = (float)d; return 0; }
SETTER(set_top_p) { double d; TRY(cli_float(f, v, 0, 1, &d)); O->top_p = (float)d; return 0; }
SETTER(set_top_k) { TRY(cli_int(f, v, 0, INT_MAX, &O->top_k)); return 0; }
/* -s N: 0 .. 2^32 − 2; -1 (or 2^32 − 1, llama.cpp's LLAMA_DEFAULT_SEED) draws one from the
 * system's entropy, as llama.cpp does, and the run reports it so that -s N repeats the run. */
SETTER(set_seed)
{
    char *end;
    errno = 0;
    const long long s = strtoll(v, &end, 10);
    if (errno || end == v || *end) return cli_die("%s: not an integer: '%s'", f, v);
    if (s < -1 || s > 4294967295LL) return cli_die("%s: %lld is out of range [-1 (random), 4294967294]", f, s);
    O->seed_random = s == -1 || s == 4294967295LL;
    if (O->seed_random) {
        uint32_t r = 0;
        FILE *u = fopen("/dev/urandom", "rb");
        if (!u || fread(&r, sizeof r, 1, u) != 1) r = (uint32_t)time(NULL) ^ (uint32_t)getpid() * 2654435761u;
        if (u) fclose(u);
        O->seed = r == 4294967295u ? 0 : r;
    } else {
        O->seed = (uint64_t)s;
    }
    return 0;
}
SETTER(set_threads) { TRY(cli_int(f, v, 1, 1024, &O->threads)); return 0; }
SETTER(set_dtype) {
    (void)f;
    if (!strcmp(v, "auto")) O->dtype = -1;
    else if (!strcmp(v, "f32")) O->dtype = DT_F32;
    else if (!strcmp(v, "f16")) O->dtype = DT_F16;
    else if (!strcmp(v, "bf16")) O->dtype = DT_BF16;
    else if (!strcmp(v, "q8_0")) O->dtype = DT_Q8_0;
    else if (!strcmp(v, "q4_0")) O->dtype = DT_Q4_0;
    else return cli_die("--dtype: expected f32, f16, bf16, q8_0, q4_0 or auto, got '%s'", v);
    return 0;
}
SETTER(set_device) {
    /* llama.cpp's -dev names: none (the CPU), CUDA0 (the one GPU llm-run uses) */
    if (!strcmp(v, "none")) v = "cpu";
    else if (!strcmp(v, "CUDA0")) v = "cuda";
    if (strcmp(v, "auto") && strcmp(v, "cpu") && strcmp(v, "cuda"))
        return cli_die("%s: expected auto, cpu or cuda (llama.cpp's none, CUDA0), got '%s'", f, v);
    O->device = v;
    return 0;
}
SETTER(set_ngl) {
    int n;
    TRY(cli_int(f, v, -1, INT_MAX, &n));
    if (n == 0) {   /* llama.cpp's "no layer on the GPU": the CPU */
        O->device = "cpu";
        return 0;
    }
    fprintf(stderr, "llm-run: note: %s is llama.cpp's layer offload; llm-run runs the whole model on "
            "one device (--device cpu|cuda, default auto; -ngl 0 is --device cpu)\n", f);
    return 0;
}
SETTER(set_policy) {
    (void)f;
    if (!policy_find(v)) {
        const char *best = NULL;
        size_t bl = 0;
        for (const policy_ops *const *p = policy_all(); *p; p++) {   /* longest common prefix */
            size_t k = 0;
            while ((*p)->name[k] && v[k] == (*p)->name[k]) k++;
            if (k > bl) bl = k, best = (*p)->name;
        }
        if (best && bl >= 2) return cli_die("--policy: unknown policy '%s'; did you mean '%s'? (see --list-policies)", v, best);
        return cli_die("--policy: unknown policy '%s' (see --list-policies)", v);
    }
    O->policy = v;
    return 0;
}
SETTER(set_preset) { (void)f; O->preset = v; return 0; }
SETTER(set_budget) {
    double d;
    TRY(cli_float(f, v, -INFINITY, INFINITY, &d));
    if (!(d > 0) || isinf(d)) return cli_die("--budget: must be a finite number > 0 (got '%s')", v);
    if (d > 1 && d != floor(d))
        return cli_die("--budget: %s is neither a fraction in (0, 1] nor a whole number of tokens", v);
    O->pp.budget = d;
    O->budget_set = 1;
    return 0;
}
SETTER(set_budget_tokens) {
    int n;
    TRY(cli_int(f, v, 1, INT_MAX, &n));
    O->pp.budget_tokens = n;
    O->budget_set = 1;
    return 0;
}
SETTER(set_budget_ref) {
    (void)f;
    if (!strcmp(v, "prompt")) O->pp.budget_ref_prompt = 1;
    else if (!strcmp(v, "total")) O->pp.budget_ref_prompt = 0;
    else return cli_die("--budget-ref: expected total or prompt, got '%s'", v);
    O->budget_ref_set = 1;
    return 0;
}
SETTER(set_rope) {
    (void)f;
    if (!strcmp(v, "shifted")) O->pp.rope_shifted = 1;
    else if (!strcmp(v, "absolute")) O->pp.rope_shifted = 0;
    else return cli_die("--rope: expected absolute or shifted, got '%s'", v);
    O->rope_set = 1;
    return 0;
}
SETTER(set_chunk) { TRY(cli_int(f, v, 1, INT_MAX, &O->prefill_chunk)); return 0; }
SETTER(set_kv_limit) {
    double d;
    TRY(cli_float(f, v, -INFINITY, INFINITY, &d));
    if (!(d > 0) || isinf(d)) return cli_die("--kv-mem-limit: must be a finite number of GB > 0 (got '%s')", v);
    O->kv_mem_limit_gb = d;
    return 0;
}
SETTER(set_act_bits) { TRY(cli_int(f, v, 8, 16, &O->act_bits)); return O->act_bits == 8 || O->act_bits == 16 ? 0 : cli_die("--act-bits: expected 8 or 16, got '%s'", v); }
SETTER(set_kv_dtype) {
    (void)f;
    if (!strcmp(v, "auto")) O->kv_dtype = -1;
    else if (!strcmp(v, "f32")) O->kv_dtype = DT_F32;
    else if (!strcmp(v, "f16")) O->kv_dtype = DT_F16;
    else if (!strcmp(v, "bf16")) O->kv_dtype = DT_BF16;
    else return cli_die("--kv-dtype: expected f32, f16, bf16 or auto, got '%s'", v);
    return 0;
}
SETTER(set_json) { (void)f; (void)v; O->json = 1; return 0; }
SETTER(set_logits_out) { (void)f; O->logits_out = v; return 0; }
SETTER(set_verbose_prompt) { (void)f; (void)v; O->verbose_prompt = 1; return 0; }
SETTER(set_dump_kept) { (void)f; O->dump_kept = v; return 0; }
SETTER(set_dump_every) { TRY(cli_int(f, v, 1, INT_MAX, &O->dump_every)); return 0; }
SETTER(set_noop) { (void)ctx; (void)f; (void)v; return 0; }
SETTER(set_no_check) { (void)f; (void)v; O->no_check = 1; return 0; }
SETTER(set_ignore_eos) { (void)f; (void)v; O->ignore_eos = 1; return 0; }

/* Help texts fit 100 columns; "\n" starts a continuation line. */
const cli_opt cli_run_options[] = {
    {"--model", "-m", "PATH", "a .gguf file or a Hugging Face folder (config.json, *.safetensors, tokenizer)\n"
     "(default $LLM_MODEL, else ../shared/models/stories260K)", CLI_G_MODEL, 1, set_model},
    {"--prompt", "-p", "TEXT", "prompt text", CLI_G_MODEL, 1, set_prompt},
    {"--file", "-f", "FILE", "prompt file (one trailing newline dropped, as llama-cli does)\n"
     "(a positional PROMPT_FILE or - for stdin is taken byte for byte)", CLI_G_MODEL, 1, set_file},
    {"--prompt-ids", NULL, "IDS", "token ids as given, nothing prepended: 1,2,3 or @FILE (JSON array)", CLI_G_MODEL, 0, set_prompt_ids},
    {"--chat", NULL, NULL, "wrap the prompt in the model's chat template", CLI_G_MODEL, 1, set_chat},
    {"--system", NULL, "TEXT", "system prompt for --chat (default: the template's own, if any)", CLI_G_MODEL, 0, set_system},
    {"--chat-template", NULL, "NAME", "chatml, llama3 or llama2 instead of the model's template", CLI_G_MODEL, 0, set_chat_template},
    {"--messages", NULL, "FILE", "a conversation: JSON array of {\"role\", \"content\"} (system/user/assistant),\n"
     "rendered with the chat template and the assistant's turn to come", CLI_G_MODEL, 0, set_messages},
    {"--no-parse-special", NULL, NULL, "special tokens written in the prompt (<|im_start|>) stay text", CLI_G_MODEL, 0, set_no_parse_special},
    {"--dtype", NULL, "TYPE", "weight dtype in memory: auto (as in the file, default), f32, f16, bf16, or\n"
     "q8_0/q4_0 (quantized at load, row-wise blocks of 32; other row lengths stay as stored)", CLI_G_MODEL, 0, set_dtype},
    {"--act-bits", NULL, "8|16", "activations of the quantized (GGUF block) matmuls: 16-bit (default) or 8-bit\n"
     "as llama.cpp (its numbers, for speed comparisons); 8 also rounds BF16 prefill\n"
     "activations to bf16 as llama.cpp does (CPUs with AVX512-BF16)", CLI_G_MODEL, 0, set_act_bits},
    {"--max-new-tokens", "-n", "N", "tokens to generate (default 256; -1: up to the context); stops early at end of generation", CLI_G_GEN, 1, set_max_new},
    {"--ignore-eos", NULL, NULL, "do not stop at end-of-generation tokens (benchmarks)", CLI_G_GEN, 0, set_ignore_eos},
    {"--ctx-size", "-c", "N", "context: prompt + generated positions at most (default: the model's)", CLI_G_GEN, 0, set_ctx},
    {"--temp", "--temperature", "F", "temperature; 0 = greedy (default 0)", CLI_G_GEN, 1, set_temp},
    {"--top-p", NULL, "F", "nucleus sampling threshold (default 0.9; 1 = off)", CLI_G_GEN, 0, set_top_p},
    {"--top-k", NULL, "N", "keep the N most likely tokens (default 0 = off)", CLI_G_GEN, 0, set_top_k},
    {"--seed", "-s", "N", "sampling and random-policy seed, 0..4294967294 (default 0; -1: a random one, reported); draws as llama.cpp's", CLI_G_GEN, 0, set_seed},
    {"--threads", "-t", "N", "CPU threads (default: the physical cores)", CLI_G_GEN, 1, set_threads},
    {"--device", "-dev", "auto|cpu|cuda", "backend (default $LLM_DEVICE, else auto: the GPU when there is one\n"
     "and it runs the policy, else the CPU); cuda without a GPU is an error;\n"
     "llama.cpp's none and CUDA0 are cpu and cuda", CLI_G_GEN, 0, set_device},
    {"--n-gpu-layers", "-ngl", "N", "llama.cpp's offload: 0 is --device cpu; any other N is accepted (the\n"
     "whole model runs on one device: --device)", CLI_G_GEN, 0, set_ngl},
    {"--policy", NULL, "NAME", "KV-cache eviction policy (default full); see --list-policies", CLI_G_KV, 1, set_policy},
    {"--budget", NULL, "X", "0 < X <= 1: fraction of prompt + max new tokens; X > 1: tokens (default 1)", CLI_G_KV, 1, set_budget},
    {"--budget-tokens", NULL, "N", "capacity in tokens per (layer, KV head)", CLI_G_KV, 0, set_budget_tokens},
    {"--budget-ref", NULL, "total|prompt", "what a fractional budget is a fraction of (default total)", CLI_G_KV, 0, set_budget_ref},
    {"--policy-config", NULL, "FILE", "JSON preset {\"policy\": .., \"budget\": .., parameters} (configs/)", CLI_G_KV, 0, set_preset},
    {"--rope", NULL, "absolute|shifted", "keys at their positions (default), or rotated by their rank in the\n"
     "cache (StreamingLLM/BUZZ position rolling)", CLI_G_KV, 0, set_rope},
    {"--prefill-chunk", NULL, "N", "prefill N tokens at a time, evicting in between (with --rope shifted a\n"
     "budgeted run takes prompts longer than the model's context)", CLI_G_KV, 0, set_chunk},
    {"--kv-mem-limit", NULL, "GB", "cap on KV-cache memory (1 GB = 1e9 bytes): stops before allocating,\n"
     "suggesting a budget that fits", CLI_G_KV, 0, set_kv_limit},
    {"--kv-dtype", NULL, "TYPE", "element type of the cached K and V: f32, f16, bf16, or auto (default: f32 for\n"
     "F32 weights, else f16); budgets and KV bytes count its real size", CLI_G_KV, 0, set_kv_dtype},
    {"--json", NULL, NULL, "print one JSON object (text, tokens, timings, kv) instead of text", CLI_G_OUT, 1, set_json},
    {"--force-ids", NULL, "IDS", "teacher forcing: the generated tokens are these ids (1,2,3 or @FILE), for\n"
     "comparing backends on one sequence (with --logits-out)", CLI_G_OUT, 0, set_force_ids},
    {"--logits-out", NULL, "FILE", "float32 .npy [positions][vocab]: every prompt position and decode step", CLI_G_OUT, 0, set_logits_out},
    {"--verbose-prompt", NULL, NULL, "print the prompt's token ids and pieces on stderr", CLI_G_OUT, 0, set_verbose_prompt},
    {"--no-check", NULL, NULL, "skip the check that every weight is finite (one pass over the weights at load)", CLI_G_MODEL, 0, set_no_check},
    {"--dump-kept", NULL, "FILE", "append the prompt positions each layer and KV head keeps (after the prefill\n"
     "and every --dump-every decode steps) as JSON lines; scripts/plot_kept.py draws them", CLI_G_OUT, 0, set_dump_kept},
    {"--dump-every", NULL, "N", "decode steps between --dump-kept lines (default 16)", CLI_G_OUT, 0, set_dump_every},
    {"--no-display-prompt", NULL, NULL, "accepted (llama-cli habit): llm-run never echoes the prompt", CLI_G_OUT, 0, set_noop},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

#undef O

void run_options_init(run_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_new = 256;
    o->temp = 0.0f;
    o->top_p = 0.9f;
    o->threads = cpu_num_cores();
    o->pp.budget = 1.0;
    const char *dev = getenv("LLM_DEVICE");
    o->device = dev && *dev ? dev : "auto";
    o->dtype = -1;
    o->dump_every = 16;
    o->kv_dtype = -1;
    o->act_bits = 16;
    o->repeat_penalty = 1.0f;
    o->repeat_last_n = 64;
    o->typical_p = 1.0f;
    o->top_n_sigma = -1.0f;
    o->xtc_threshold = 0.1f;
    o->dynatemp_exp = 1.0f;
    o->mirostat_lr = 0.1f;
    o->mirostat_ent = 5.0f;
    o->dry_base = 1.75f;
    o->dry_allowed_length = 2;
    o->dry_last_n = 64;
    o->n_dry_breakers = -1;
    o->adaptive_target = -1.0f;
    o->adaptive_decay = 0.9f;
}

int cli_is_policy_param(const char *name)
{
    for (const policy_ops *const *p = policy_all(); *p; p++)
        for (const policy_param_def *d = (*p)->param_defs; d && d->name; d++)
            if (!strcmp(d->name, name) || (d->generic && !strcmp(d->generic, name))) return 1;
    return 0;
}

/* ---------------------------------------------------------------------- parsing */

static const cli_opt *find_opt(const cli_opt *t, const char *a)
{
    for (; t && t->name; t++)
        if (!strcmp(a, t->name) || (t->alias && !strcmp(a, t->alias))) return t;
    return NULL;
}

/* v is one of the '|'-separated values of list (which ends at ']' or its end) */
static int opt_value_listed(const char *list, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = list; n && *p && *p != ']';) {
        const char *e = strpbrk(p, "|]");
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !strncmp(p, v, n)) return 1;
        p += k + (e && *e == '|');
    }
    return 0;
}

static int unknown(const char *a, const cli_opt *extra)
{
    const char *s = cli_suggest(a, extra);
    if (s) return cli_die("unknown option '%s'; did you mean '%s%s'? (see --help)", a, s[0] == '-' ? "" : "--", s);
    return cli_die("unknown option '%s' (see --help)", a);
}

int cli_parse(int argc, char **argv, int first, run_options *o, const cli_opt *extra,
              void *extra_ctx, const char *prog, const char *synopsis)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "--help-all")) {
            cli_print_help(stdout, prog, synopsis, extra, !strcmp(a, "--help-all"));
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("llm-run %s\n", LLM_RUN_VERSION);
            return 1;
        }
        if (!strcmp(a, "--list-policies")) {
            cli_list_policies();
            return 1;
        }
        const cli_opt *t = find_opt(extra, a);
        void *ctx = extra_ctx;
        for (int k = 0; !t && cli_shared_tables[k]; k++) t = find_opt(cli_shared_tables[k], a), ctx = o;
        if (t) {
            const int optional = t->arg && t->arg[0] == '[';
            if (t->arg && !optional && i + 1 >= argc) return cli_die("%s: missing value", a);
            const char *v = t->arg && !optional ? argv[++i] : NULL;
            if (optional && i + 1 < argc && opt_value_listed(t->arg + 1, argv[i + 1])) v = argv[++i];
            int rc = t->set(ctx, a, v);
            if (rc) return rc;
            continue;
        }
        if (a[0] == '-' && a[1] == '-' && a[2] != '\0' && i + 1 < argc && o->n_pending < 2 * POLICY_MAX_SET) {
            /* a policy parameter (--sink 4, --buzz-s 5): checked once the policy is known */
            o->pending[o->n_pending++] = a + 2;
            o->pending[o->n_pending++] = argv[++i];
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') return unknown(a, extra);
        if (o->n_positional >= (int)(sizeof o->positional / sizeof o->positional[0]))
            return cli_die("too many arguments ('%s')", a);
        o->positional[o->n_positional++] = a;
    }
    return 0;
}

static const char *default_model_dir(void)
{
    const char *env = getenv("LLM_MODEL");
    if (env && *env) return env;
    struct stat st;
    if (stat("../shared/models/stories260K/config.json", &st) == 0) return "../shared/models/stories260K";
    return "models/stories260K";
}

int run_options_finish(run_options *o)
{
    if (cli_llama_finish(o)) return 2;
    if (o->system && !o->chat) return cli_die("--system needs --chat");
    if (o->chat_template && !o->chat && !o->messages) o->chat = 1;   /* naming a template means using it */
    /* the policy: preset first, then the command line on top */
    const policy_ops *ops = o->policy ? policy_find(o->policy) : NULL;
    if (o->preset) {
        char err[LLM_ERR_LEN];
        policy_params cli = o->pp;
        const policy_ops *pops = ops;
        if (policy_preset_load(o->preset, &pops, &o->pp, err, sizeof err) != 0) return cli_die("%s", err);
        if (o->budget_set) {
            o->pp.budget = cli.budget;
            o->pp.budget_tokens = cli.budget_tokens;
        }
        if (o->budget_ref_set) o->pp.budget_ref_prompt = cli.budget_ref_prompt;
        if (o->rope_set) o->pp.rope_shifted = cli.rope_shifted;
        if (!ops) ops = pops;
    }
    if (!ops) {
        ops = policy_find("full");
        if (o->budget_set && (o->pp.budget < 1 || o->pp.budget_tokens))
            fprintf(stderr, "llm-run: note: --budget without --policy keeps every token (policy full); "
                    "add e.g. --policy buzz\n");
    }
    o->policy = ops->name;
    for (int k = 0; k < o->n_pending; k += 2) {
        char err[LLM_ERR_LEN];
        int known = 0;
        for (const policy_param_def *d = ops->param_defs; d && d->name; d++)
            if (!strcmp(d->name, o->pending[k]) || (d->generic && !strcmp(d->generic, o->pending[k]))) known = 1;
        if (!known) {
            /* not a parameter of this policy: an unknown option unless another policy has it */
            int other = 0;
            for (const policy_ops *const *p = policy_all(); *p; p++)
                for (const policy_param_def *d = (*p)->param_defs; d && d->name; d++)
                    if (!strcmp(d->name, o->pending[k]) || (d->generic && !strcmp(d->generic, o->pending[k])))
                        other = 1;
            if (!other) {
                char flag[300];
                snprintf(flag, sizeof flag, "--%s", o->pending[k]);
                return unknown(flag, NULL);
            }
        }
        if (policy_params_set(&o->pp, ops, o->pending[k], o->pending[k + 1], err, sizeof err) != 0)
            return cli_die("%s", err);
    }
    if (!o->model_dir) o->model_dir = default_model_dir();
    return 0;
}

/* ------------------------------------------------------------------ prompt files */

#define PROMPT_MAX ((size_t)1 << 30)

char *cli_read_file(const char *path, size_t *len)
{
    struct stat pre;
    *len = 0;
    if (strcmp(path, "-") && stat(path, &pre) == 0 && !S_ISREG(pre.st_mode)) {   /* a FIFO would block fopen */
        cli_die("%s: not a regular file (a pipe: give - and redirect it to stdin)", path);
        return NULL;
    }
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        cli_die("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (f != stdin && (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))) {   /* a FIFO could hang: use - */
        fclose(f);
        cli_die("%s: not a regular file", path);
        return NULL;
    }
    size_t cap = 4096, n = 0, r;
    char *buf = malloc(cap);
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n > PROMPT_MAX) break;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf || bad || n > PROMPT_MAX) {
        cli_die("%s: cannot read%s", path, !buf ? " (out of memory)" : n > PROMPT_MAX ? " (over 1 GiB)" : "");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
