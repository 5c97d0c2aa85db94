/* llm-run: run a LLaMA-family Hugging Face model folder with a budgeted, policy-driven KV cache.
 *
 *   llm-run [options] [PROMPT_FILE | -]
 *
 * Flow: parse the command line → load model (config.json, safetensors) and tokenizer → encode
 * the prompt (BOS + text) → size the KV cache from the policy and budget → prefill → decode
 * loop (sample, stream text) → report (stderr summary, or one JSON object with --json). */
#include "eval/eval.h"
#include "eviction/eviction.h"
#include "eviction/kv_device.h"
#include "model/cuda/cuda_engine.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
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

#define LLM_RUN_VERSION "0.1.0"

typedef struct {
    const char *model_dir;
    const char *prompt_text;   /* -p */
    const char *prompt_file;   /* positional, "-" = stdin */
    int max_new;
    float temp, top_p;
    int top_k;
    uint64_t seed;
    int threads;
    int chat;
    const char *system;
    const char *policy;        /* NULL: from the preset, else "full" */
    const char *preset;        /* --policy-config FILE */
    policy_params pp;
    int budget_set, budget_ref_set, rope_set;
    int n_pending;             /* policy parameters, resolved once the policy is known */
    const char *pending[2 * POLICY_MAX_SET];
    int json;
    const char *logits_out;
    int prefill_chunk;         /* 0: the whole prompt in one pass */
    const char *device;        /* --device auto|cpu|cuda (model/device.c) */
    double kv_mem_limit_gb;    /* --kv-mem-limit GB (0: none) */
    int dtype;                 /* --dtype: -1 auto (the file's), else a dtype_t */
} options;

static volatile sig_atomic_t g_interrupted = 0;
static void on_sigint(int sig) { (void)sig; g_interrupted = 1; }

static void usage(FILE *f)
{
    fprintf(f,
"usage: llm-run [options] [PROMPT_FILE | -]\n"
"\n"
"Runs a LLaMA-family Hugging Face model folder (config.json, *.safetensors, tokenizer.model)\n"
"and generates text, sending every layer's KV-cache writes through an eviction policy.\n"
"The prompt comes from -p TEXT, PROMPT_FILE, or standard input (-).\n"
"Scoring: llm-run score rouge|em|self-bleu ... (see llm-run score --help).\n"
"Sweeps: llm-run eval --task T --data FILE --policies a,b --budgets x,y --out DIR, and\n"
"llm-run eval-merge DIR... (see llm-run eval --help).\n"
"\n"
"model and prompt:\n"
"  -m, --model DIR          model folder (default: $LLM_MODEL, else ../shared/models/stories260K,\n"
"                           else models/stories260K)\n"
"  -p, --prompt TEXT        prompt text (\"\" = BOS only)\n"
"      --chat               wrap the prompt in the Llama-2 chat template\n"
"      --system TEXT        system prompt for --chat\n"
"generation:\n"
"  -n, --max-new-tokens N   tokens to generate (default 256); stops early at EOS (or BOS)\n"
"      --temp F             temperature; 0 = greedy (default 0)\n"
"      --top-p F            nucleus sampling threshold (default 0.9; 1 = off)\n"
"      --top-k N            keep the N most likely tokens (default 0 = off)\n"
"      --seed N             sampling seed (default 0)\n"
"  -t, --threads N          CPU threads (default: all cores)\n"
"      --device auto|cpu|cuda  backend (default $LLM_DEVICE, else auto: the GPU when there is\n"
"                           one and it runs the policy, else the CPU); cuda without a GPU is an error\n"
"      --dtype f32|f16|bf16|auto  weight dtype in memory (default auto: as in the file; bf16\n"
"                           halves the bytes an F32 model reads per token)\n"
"KV cache:\n"
"      --policy NAME        eviction policy (default full); see --list-policies\n"
"      --budget X           0 < X <= 1: fraction of prompt + max new tokens; X > 1: tokens\n"
"                           (default 1)\n"
"      --budget-tokens N    capacity in tokens per (layer, KV head)\n"
"      --budget-ref total|prompt  what a fractional budget is a fraction of (default total)\n"
"      --policy-config FILE JSON preset {\"policy\": .., \"budget\": .., parameters} (configs/)\n"
"      --rope absolute|shifted  keys at their positions (default), or rotated by their rank in\n"
"                           the cache (StreamingLLM/BUZZ position rolling)\n"
"      --prefill-chunk N    prefill N tokens at a time, evicting in between (with --rope shifted a\n"
"                           budgeted run can take prompts longer than the model's context)\n"
"      --PARAM VALUE        a parameter of the policy (--sink, --window, --stride, --threshold,\n"
"                           --obs-window, --pool-kernel, --lsh-bits, or the policy's own flags)\n"
"      --kv-mem-limit GB    cap on KV-cache memory (1 GB = 1e9 bytes); a cache that does not\n"
"                           fit stops before allocation with a budget that fits\n"
"      --list-policies      print the policies and their parameters, then exit\n"
"output:\n"
"      --json               print one JSON object (text, tokens, timings, kv) instead of text\n"
"      --logits-out FILE    write float32 .npy [positions][vocab]: every prompt position and\n"
"                           every decode step\n"
"  -h, --help               this help\n"
"      --version            print the version\n"
"\n"
"stdout carries the generated text only; a summary goes to stderr.\n"
"example: llm-run -m ../shared/models/stories260K -p \"Once upon a time\" -n 200\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int die(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "llm-run: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 2;
}

static int parse_int(const char *flag, const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) {
        fprintf(stderr, "llm-run: %s: not an integer: '%s'\n", flag, s);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "llm-run: %s: %ld is out of range [%ld, %ld]\n", flag, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_float(const char *flag, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || isnan(v)) {
        fprintf(stderr, "llm-run: %s: not a number: '%s'\n", flag, s);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "llm-run: %s: %g is out of range [%g, %g]\n", flag, v, lo, hi);
        return -1;
    }
    *out = v;
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

static void list_policies(void)
{
    const policy_ops *const *all = policy_all();
    for (int i = 0; all[i]; i++) {
        printf("%-14s %s\n", all[i]->name, all[i]->paper);
        if (all[i]->params && *all[i]->params) printf("%14s %s\n", "", all[i]->params);
        for (const policy_param_def *d = all[i]->param_defs; d && d->name; d++) {
            char flag[128];
            snprintf(flag, sizeof flag, "--%s%s%s%s", d->name, d->generic ? " (--" : "",
                     d->generic ? d->generic : "", d->generic ? ")" : "");
            printf("%14s   %-34s %s (default %s%s%s)\n", "", flag, d->help ? d->help : "",
                   d->def ? d->def : "-", d->choices ? "; one of " : "", d->choices ? d->choices : "");
        }
    }
}

/* Returns 0 to run, 1 to exit 0 (help/version), 2 on a bad command line. */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->max_new = 256;
    o->temp = 0.0f;
    o->top_p = 0.9f;
    o->threads = cpu_num_cores();
    o->pp.budget = 1.0;
    o->device = getenv("LLM_DEVICE") && *getenv("LLM_DEVICE") ? getenv("LLM_DEVICE") : "auto";
    o->dtype = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEED_VALUE()                                                                           \
    do {                                                                                       \
        if (i + 1 >= argc) return die("%s: missing value%s", a, "");                           \
    } while (0)
        double d;
        int v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--version")) {
            printf("llm-run %s\n", LLM_RUN_VERSION);
            return 1;
        } else if (!strcmp(a, "--list-policies")) {
            list_policies();
            return 1;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            NEED_VALUE();
            o->model_dir = argv[++i];
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            NEED_VALUE();
            o->prompt_text = argv[++i];
        } else if (!strcmp(a, "-n") || !strcmp(a, "--max-new-tokens")) {
            NEED_VALUE();
            if (parse_int(a, argv[++i], 0, 10000000, &o->max_new)) return 2;
        } else if (!strcmp(a, "--temp")) {
            NEED_VALUE();
            if (parse_float(a, argv[++i], 0, 100, &d)) return 2;
            o->temp = (float)d;
        } else if (!strcmp(a, "--top-p")) {
            NEED_VALUE();
            if (parse_float(a, argv[++i], 0, 1, &d)) return 2;
            o->top_p = (float)d;
        } else if (!strcmp(a, "--top-k")) {
            NEED_VALUE();
            if (parse_int(a, argv[++i], 0, INT_MAX, &o->top_k)) return 2;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            if (parse_int(a, argv[++i], 0, INT_MAX, &v)) return 2;
            o->seed = (uint64_t)v;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            NEED_VALUE();
            if (parse_int(a, argv[++i], 1, 1024, &o->threads)) return 2;
        } else if (!strcmp(a, "--dtype")) {
            NEED_VALUE();
            const char *d = argv[++i];
            if (!strcmp(d, "f32")) o->dtype = DT_F32;
            else if (!strcmp(d, "f16")) o->dtype = DT_F16;
            else if (!strcmp(d, "bf16")) o->dtype = DT_BF16;
            else if (!strcmp(d, "auto")) o->dtype = -1;
            else return die("--dtype: expected f32, f16, bf16 or auto, got '%s'%s", d, "");
        } else if (!strcmp(a, "--chat")) {
            o->chat = 1;
        } else if (!strcmp(a, "--system")) {
            NEED_VALUE();
            o->system = argv[++i];
        } else if (!strcmp(a, "--policy")) {
            NEED_VALUE();
            o->policy = argv[++i];
            if (!policy_find(o->policy))
                return die("--policy: unknown policy '%s' (see --list-policies)%s", o->policy, "");
        } else if (!strcmp(a, "--policy-config")) {
            NEED_VALUE();
            o->preset = argv[++i];
        } else if (!strcmp(a, "--budget-tokens")) {
            NEED_VALUE();
            if (parse_int(a, argv[++i], 1, INT_MAX, &v)) return 2;
            o->pp.budget_tokens = v;
            o->budget_set = 1;
        } else if (!strcmp(a, "--rope")) {
            NEED_VALUE();
            const char *r = argv[++i];
            if (!strcmp(r, "shifted")) o->pp.rope_shifted = 1;
            else if (!strcmp(r, "absolute")) o->pp.rope_shifted = 0;
            else return die("--rope: expected absolute or shifted, got '%s'%s", r, "");
            o->rope_set = 1;
        } else if (!strcmp(a, "--prefill-chunk")) {
            NEED_VALUE();
            if (parse_int(a, argv[++i], 1, INT_MAX, &o->prefill_chunk)) return 2;
        } else if (!strcmp(a, "--budget")) {
            NEED_VALUE();
            if (parse_float(a, argv[++i], -INFINITY, INFINITY, &d)) return 2;
            if (!(d > 0) || isinf(d)) return die("--budget: must be a finite number > 0 (got '%s')%s", argv[i], "");
            o->pp.budget = d;
            o->budget_set = 1;
        } else if (!strcmp(a, "--budget-ref")) {
            NEED_VALUE();
            const char *r = argv[++i];
            if (!strcmp(r, "prompt")) o->pp.budget_ref_prompt = 1;
            else if (!strcmp(r, "total")) o->pp.budget_ref_prompt = 0;
            else return die("--budget-ref: expected total or prompt, got '%s'%s", r, "");
            o->budget_ref_set = 1;
        } else if (!strcmp(a, "--device")) {
            NEED_VALUE();
            o->device = argv[++i];
            if (strcmp(o->device, "auto") && strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
                return die("--device: expected auto, cpu or cuda, got '%s'%s", o->device, "");
        } else if (!strcmp(a, "--kv-mem-limit")) {
            NEED_VALUE();
            if (parse_float(a, argv[++i], -INFINITY, INFINITY, &d)) return 2;
            if (!(d > 0) || isinf(d)) return die("--kv-mem-limit: must be a finite number of GB > 0 (got '%s')%s", argv[i], "");
            o->kv_mem_limit_gb = d;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--logits-out")) {
            NEED_VALUE();
            o->logits_out = argv[++i];
        } else if (a[0] == '-' && a[1] == '-' && a[2] != '\0' && i + 1 < argc &&
                   o->n_pending < 2 * POLICY_MAX_SET) {
            /* a policy parameter (--sink 4, --buzz-s 5): checked once the policy is known */
            o->pending[o->n_pending++] = a + 2;
            o->pending[o->n_pending++] = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            return die("unknown option '%s' (see --help)%s", a, "");
        } else {
            if (o->prompt_file) return die("more than one prompt file ('%s' and '%s')", o->prompt_file, a);
            o->prompt_file = a;
        }
#undef NEED_VALUE
    }
    if (o->prompt_file && o->prompt_text)
        return die("give the prompt either with -p or as a file, not both ('%s')%s", o->prompt_file, "");
    if (o->system && !o->chat) return die("--system needs --chat%s%s", "", "");
    /* the policy: preset first, then the command line on top */
    const policy_ops *ops = o->policy ? policy_find(o->policy) : NULL;
    if (o->preset) {
        char err[LLM_ERR_LEN];
        policy_params cli = o->pp;
        const policy_ops *pops = ops;
        if (policy_preset_load(o->preset, &pops, &o->pp, err, sizeof err) != 0)
            return die("%s%s", err, "");
        if (o->budget_set) {
            o->pp.budget = cli.budget;
            o->pp.budget_tokens = cli.budget_tokens;
        }
        if (o->budget_ref_set) o->pp.budget_ref_prompt = cli.budget_ref_prompt;
        if (o->rope_set) o->pp.rope_shifted = cli.rope_shifted;
        if (!ops) ops = pops;
    }
    if (!ops) ops = policy_find("full");
    o->policy = ops->name;
    for (int k = 0; k < o->n_pending; k += 2) {
        char err[LLM_ERR_LEN];
        int known = 0;
        for (const policy_param_def *d = ops->param_defs; d && d->name; d++)
            if (!strcmp(d->name, o->pending[k]) || (d->generic && !strcmp(d->generic, o->pending[k])))
                known = 1;
        if (!known) {
            /* not a parameter of this policy: an unknown option unless another policy has it */
            int other = 0;
            for (const policy_ops *const *p = policy_all(); *p; p++)
                for (const policy_param_def *d = (*p)->param_defs; d && d->name; d++)
                    if (!strcmp(d->name, o->pending[k]) || (d->generic && !strcmp(d->generic, o->pending[k])))
                        other = 1;
            if (!other) return die("unknown option '--%s' (see --help)%s", o->pending[k], "");
        }
        if (policy_params_set(&o->pp, ops, o->pending[k], o->pending[k + 1], err, sizeof err) != 0)
            return die("%s%s", err, "");
    }
    if (!o->model_dir) o->model_dir = default_model_dir();
    return 0;
}

/* Reads a whole file (or stdin for "-"); NULL with a message on error. */
static char *read_prompt_file(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "llm-run: %s: cannot open prompt file: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf || bad) {
        fprintf(stderr, "llm-run: %s: cannot read prompt file\n", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* Streams logits rows into a .npy whose header is rewritten with the final row count. */
typedef struct {
    FILE *f;
    int64_t rows, cols;
} npy_stream;

static int npy_stream_header(npy_stream *s)
{
    char hdr[128];
    int n = snprintf(hdr + 10, sizeof hdr - 10,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                     (long long)s->rows, (long long)s->cols);
    memset(hdr + 10 + n, ' ', sizeof hdr - 10 - n);
    hdr[sizeof hdr - 1] = '\n';
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)((sizeof hdr - 10) & 0xff);
    hdr[9] = (char)((sizeof hdr - 10) >> 8);
    if (fseek(s->f, 0, SEEK_SET) != 0) return -1;
    return fwrite(hdr, 1, sizeof hdr, s->f) == sizeof hdr ? 0 : -1;
}

static int npy_stream_rows(npy_stream *s, const float *rows, int64_t n)
{
    if (fseek(s->f, 0, SEEK_END) != 0) return -1;
    if (fwrite(rows, sizeof(float), (size_t)(n * s->cols), s->f) != (size_t)(n * s->cols)) return -1;
    s->rows += n;
    /* keep the file valid after every row, so an interrupted run leaves a readable file */
    if (npy_stream_header(s) != 0) return -1;
    return fflush(s->f);
}

/* Appends m bytes of piece to the growing text (and streams them to stdout when echo).
 * Returns 0, -1 when out of memory, -2 when stdout cannot be written (closed pipe, full disk;
 * errno set). */
static int append_text(char **text, size_t *len, size_t *cap, const char *piece, int m, int echo)
{
    if (m <= 0) return 0;
    if (*len + (size_t)m + 1 > *cap) {
        size_t nc = 2 * *cap + (size_t)m;
        char *nt = realloc(*text, nc);
        if (!nt) return -1;
        *text = nt;
        *cap = nc;
    }
    memcpy(*text + *len, piece, (size_t)m);
    *len += (size_t)m;
    (*text)[*len] = '\0';
    if (echo && (fwrite(piece, 1, (size_t)m, stdout) != (size_t)m || fflush(stdout) != 0))
        return -2;
    return 0;
}

/* Out of memory for the BLAS's work buffers (ulimit -v), checked before the first GEMM: one
 * line, then _exit, because an OpenBLAS worker stuck in its allocation loop would make exit()
 * hang (kernels/cpu/blas_reserve.c). */
static void blas_reserve_or_exit(int n_threads)
{
    char err[LLM_ERR_LEN];
    if (cpu_blas_reserve_check(n_threads, err, sizeof err) == 0) return;
    fflush(stdout);
    fprintf(stderr, "llm-run: %s\n", err);
    _exit(1);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "score")) return score_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval")) return eval_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval-merge")) return eval_merge_main(argc - 1, argv + 1);
    options o;
    /* a closed stdout pipe is a write error reported in one line, not a silent SIGPIPE death */
    signal(SIGPIPE, SIG_IGN);
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;

    char err[LLM_ERR_LEN] = "";
    char *prompt = NULL, *chat_text = NULL;
    int *ids = NULL, *tokens = NULL, *gen = NULL, n_ids = 0;
    float *logits_all = NULL;
    char *out_text = NULL;
    tokenizer *tok = NULL;
    tok_decoder *dec = NULL;
    model_weights mw;
    memset(&mw, 0, sizeof mw);
    kv_cache kv;
    memset(&kv, 0, sizeof kv);
    engine eng;
    memset(&eng, 0, sizeof eng);
    sampler smp = {0};
    npy_stream ns = {0};
    int status = 1;

    /* backend: --device cuda without a GPU, or with a policy it does not run, stops here */
    int use_cuda = 0;
    if (device_resolve(o.device, policy_find(o.policy), &o.pp, &use_cuda, err, sizeof err) != 0) {
        fprintf(stderr, "llm-run: %s\n", err);
        return 2;
    }
    if (err[0]) fprintf(stderr, "llm-run: %s\n", err);

    /* prompt text */
    if (o.prompt_text) prompt = strdup(o.prompt_text);
    else if (o.prompt_file) prompt = read_prompt_file(o.prompt_file);
    else prompt = strdup("");
    if (!prompt) goto done;

    /* model and tokenizer */
    if (model_load(o.model_dir, &mw, err, sizeof err) != 0 ||
        (o.dtype >= 0 && model_convert(&mw, (dtype_t)o.dtype, err, sizeof err) != 0) ||
        (!use_cuda && model_make_resident(&mw, err, sizeof err) != 0)) { /* the GPU uploads the weights */
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    const model_config *cfg = &mw.cfg;
    char tok_path[1200];
    snprintf(tok_path, sizeof tok_path, "%s/tokenizer.model", o.model_dir);
    tok = tokenizer_load(tok_path, err, sizeof err);
    if (!tok) {
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    if (tokenizer_vocab_size(tok) > cfg->vocab_size) {
        fprintf(stderr, "llm-run: %s: %d pieces, but config.json says vocab_size %d\n", tok_path,
                tokenizer_vocab_size(tok), cfg->vocab_size);
        goto done;
    }

    /* encode: BOS + text (Llama-2 chat template with --chat) */
    const char *text = prompt;
    if (o.chat) {
        chat_text = chat_format_llama2(o.system, prompt);
        if (!chat_text) goto oom;
        text = chat_text;
    }
    if (tokenizer_encode(tok, text, &ids, &n_ids, err, sizeof err) != 0) {
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    int n_prompt = n_ids + 1;
    tokens = malloc((size_t)n_prompt * sizeof *tokens);
    if (!tokens) goto oom;
    tokens[0] = cfg->bos_token_id;
    memcpy(tokens + 1, ids, (size_t)n_ids * sizeof *ids);
    int ctx = cfg->max_position_embeddings;
    int chunk = o.prefill_chunk > 0 && o.prefill_chunk < n_prompt ? o.prefill_chunk : n_prompt;
    int max_new = o.max_new;
    if (!o.pp.rope_shifted) {
        /* absolute positions: everything forwarded (the prompt and every generated token but
         * the last) must stay within the trained context */
        if (n_prompt > ctx) {
            fprintf(stderr, "llm-run: prompt is %d tokens, longer than the model's context of %d (%s/config.json max_position_embeddings); a budgeted policy with --rope shifted --prefill-chunk N can take it\n",
                    n_prompt, ctx, o.model_dir);
            status = 2;
            goto done;
        }
        if (n_prompt + max_new - 1 > ctx) {
            max_new = ctx - n_prompt + 1;
            if (!o.json)
                fprintf(stderr, "llm-run: note: generating at most %d tokens to stay within the context of %d\n",
                        max_new, ctx);
        }
    }

    /* KV cache sized by the policy and budget, then the run state */
    const policy_ops *ops = policy_find(o.policy);
    o.pp.seed = o.seed;
    if (o.kv_mem_limit_gb > 0) {
        /* --kv-mem-limit: size the cache before allocating it (f32 K/V on the CPU, the k_proj
         * dtype on the GPU) */
        char what[64];
        snprintf(what, sizeof what, "--kv-mem-limit %g GB", o.kv_mem_limit_gb);
        size_t es = use_cuda ? dtype_size(mw.layers[0].wk.dtype) : sizeof(float);
        int r = kv_check_limit(ops, &o.pp, cfg->n_layers, cfg->n_kv_heads, cfg->n_heads, cfg->head_dim,
                               n_prompt, max_new, es, o.kv_mem_limit_gb * 1e9, what, err, sizeof err);
        if (r != 0) {
            fprintf(stderr, "llm-run: %s\n", err);
            status = 2;
            goto done;
        }
    }
    if (kv_init(&kv, ops, &o.pp, cfg->n_layers, cfg->n_kv_heads, cfg->n_heads, cfg->head_dim,
                n_prompt, max_new, err, sizeof err) != 0) {
        fprintf(stderr, "llm-run: %s\n", err);
        status = 2;
        goto done;
    }
    int max_cap = 0;
    for (int i = 0; i < kv.n_layers * kv.n_kv_heads; i++)
        if (kv.cap[i] > max_cap) max_cap = kv.cap[i];
    if (o.pp.rope_shifted && max_cap + (chunk < n_prompt ? chunk : 0) + 1 > ctx &&
        n_prompt + max_new - 1 > ctx) {
        /* shifted positions are ranks in the cache: capacity (+ chunk) must fit the context */
        fprintf(stderr, "llm-run: --rope shifted: capacity %d%s exceeds the model's context of %d; lower --budget or --prefill-chunk\n",
                max_cap, chunk < n_prompt ? " + prefill chunk" : "", ctx);
        status = 2;
        goto done;
    }
    cpu_set_threads(o.threads);
    if ((use_cuda ? engine_init_cuda(&eng, &mw, &kv, chunk, err, sizeof err)
                  : engine_init(&eng, &mw, &kv, chunk, o.threads, err, sizeof err)) != 0) {
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    /* on the GPU a greedy step copies back only the chosen token (device argmax) */
    eng.want_logits = o.temp > 0 || o.logits_out != NULL;
    if (sampler_init(&smp, cfg->vocab_size, o.temp, o.top_p, o.top_k, o.seed) != 0) goto oom;
    if (o.logits_out) {
        ns.f = fopen(o.logits_out, "wb");
        if (!ns.f) {
            fprintf(stderr, "llm-run: %s: cannot write: %s\n", o.logits_out, strerror(errno));
            goto done;
        }
        ns.cols = cfg->vocab_size;
        logits_all = malloc((size_t)chunk * cfg->vocab_size * sizeof(float));
        if (!logits_all || npy_stream_header(&ns) != 0) goto oom;
    }
    gen = malloc(((size_t)max_new + 1) * sizeof *gen);
    dec = tok_decoder_new(tok);
    if (!gen || !dec) goto oom;
    signal(SIGINT, on_sigint);
    signal(SIGTERM, on_sigint);

    if (!use_cuda) blas_reserve_or_exit(o.threads);

    /* prefill, in chunks when asked (eviction between chunks keeps peak KV ≤ capacity + chunk) */
    double t0 = now_s();
    for (int off = 0; off < n_prompt && !g_interrupted; off += chunk) {
        int m = n_prompt - off < chunk ? n_prompt - off : chunk;
        if (engine_prefill(&eng, tokens + off, m, off, logits_all, err, sizeof err) != 0) {
            fprintf(stderr, "llm-run: %s\n", err);
            goto done;
        }
        if (o.logits_out && npy_stream_rows(&ns, logits_all, m) != 0) goto write_err;
        if (chunk < n_prompt && !o.json && isatty(2))
            fprintf(stderr, "\rprefill %d/%d tokens", off + m, n_prompt);
    }
    if (chunk < n_prompt && !o.json && isatty(2)) fputc('\n', stderr);
    double t_prefill = now_s() - t0;

    /* decode loop */
    tok_decoder_reset(dec, tokens[n_prompt - 1]);
    size_t text_cap = 4096, text_len = 0;
    out_text = malloc(text_cap);
    if (!out_text) goto oom;
    out_text[0] = '\0';
    char piece[256];
    int n_gen = 0, stop_eos = 0, n_decode_steps = 0;
    double t1 = now_s();
    for (int pos = n_prompt; n_gen < max_new && !g_interrupted; pos++) {
        int next = eng.dev && !eng.want_logits && eng.next >= 0 ? eng.next : sampler_sample(&smp, eng.logits);
        /* EOS ends the answer; a BOS starts a new document (TinyStories-style models emit it
         * between stories, and llama2.c stops there too) */
        if (next == cfg->eos_token_id || next == cfg->bos_token_id) {
            stop_eos = 1;
            break;
        }
        gen[n_gen++] = next;
        int m = tok_decoder_push(dec, next, piece, sizeof piece);
        if ((rc = append_text(&out_text, &text_len, &text_cap, piece, m, !o.json)) != 0)
            goto append_err;
        if (n_gen == max_new) break;
        if (engine_decode(&eng, next, pos, err, sizeof err) != 0) {
            fprintf(stderr, "llm-run: %s\n", err);
            goto done;
        }
        n_decode_steps++;
        if (o.logits_out && npy_stream_rows(&ns, eng.logits, 1) != 0) goto write_err;
    }
    double t_decode = now_s() - t1;
    int m = tok_decoder_flush(dec, piece, sizeof piece);
    if ((rc = append_text(&out_text, &text_len, &text_cap, piece, m, !o.json)) != 0) goto append_err;
    if (g_interrupted) fprintf(stderr, "\nllm-run: interrupted after %d tokens\n", n_gen);

    /* report */
    size_t per_tok = kv_bytes_per_token(&kv);
    int n_lh = kv.n_layers * kv.n_kv_heads;
    double peak_tokens = kv.live_peak / n_lh;       /* mean over (layer, head) at the peak */
    double avg_tokens = kv.live_samples ? kv.live_sum / kv.live_samples : 0;
    double peak_bytes = peak_tokens * (double)per_tok, avg_bytes = avg_tokens * (double)per_tok;
    int full_tokens = n_prompt + n_decode_steps;
    double full_bytes = (double)full_tokens * per_tok;
    /* the full cache's time average over the same samples: prompt, then +1 per decode step */
    double full_avg_tokens = n_prompt + n_decode_steps / 2.0;
    double prefill_tps = t_prefill > 0 ? n_prompt / t_prefill : 0;
    double decode_tps = t_decode > 0 && n_decode_steps > 0 ? n_decode_steps / t_decode : 0;
    if (o.json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "text", out_text);
        cJSON_AddItemToObject(j, "tokens", cJSON_CreateIntArray(gen, n_gen));
        cJSON_AddNumberToObject(j, "n_prompt_tokens", n_prompt);
        cJSON_AddNumberToObject(j, "n_generated_tokens", n_gen);
        cJSON_AddStringToObject(j, "device", use_cuda ? "cuda" : "cpu");
        cJSON_AddStringToObject(j, "stop", g_interrupted ? "interrupted" : stop_eos ? "eos" : "length");
        cJSON *tm = cJSON_AddObjectToObject(j, "timings");
        cJSON_AddNumberToObject(tm, "prefill_ms", t_prefill * 1e3);
        cJSON_AddNumberToObject(tm, "decode_ms", t_decode * 1e3);
        cJSON_AddNumberToObject(tm, "prefill_tok_s", prefill_tps);
        cJSON_AddNumberToObject(tm, "decode_tok_s", decode_tps);
        cJSON *k = cJSON_AddObjectToObject(j, "kv");
        cJSON_AddStringToObject(k, "policy", ops->name);
        cJSON_AddNumberToObject(k, "budget", o.pp.budget);
        cJSON_AddNumberToObject(k, "capacity", kv.cap[0]);
        cJSON_AddNumberToObject(k, "peak_bytes", peak_bytes);
        cJSON_AddNumberToObject(k, "avg_bytes", avg_bytes);
        cJSON_AddNumberToObject(k, "full_bytes", full_bytes);
        cJSON_AddNumberToObject(k, "allocated_bytes", (double)kv_bytes_allocated(&kv));
        if (eng.dev) /* GPU: everything the engine allocated (weights, cache, scratch) */
            cJSON_AddNumberToObject(k, "device_bytes", (double)cuda_engine_device_bytes(eng.dev));
        cJSON_AddNumberToObject(k, "live_peak_tokens", peak_tokens);
        cJSON_AddNumberToObject(k, "live_avg_tokens", avg_tokens);
        cJSON_AddNumberToObject(k, "full_avg_tokens", full_avg_tokens);
        cJSON_AddNumberToObject(k, "evictions", (double)kv.evictions);
        cJSON_AddStringToObject(k, "rope", o.pp.rope_shifted ? "shifted" : "absolute");
        cJSON_AddNumberToObject(k, "prefill_chunk", chunk);
        cJSON *lc = cJSON_AddArrayToObject(k, "layer_capacities");
        cJSON *hc = cJSON_AddArrayToObject(k, "head_capacities");
        for (int l = 0; l < kv.n_layers; l++) {
            double sum = 0;
            cJSON *row = cJSON_CreateArray();
            for (int g = 0; g < kv.n_kv_heads; g++) {
                sum += kv.cap[l * kv.n_kv_heads + g];
                cJSON_AddItemToArray(row, cJSON_CreateNumber(kv.cap[l * kv.n_kv_heads + g]));
            }
            cJSON_AddItemToArray(lc, cJSON_CreateNumber(sum / kv.n_kv_heads));
            cJSON_AddItemToArray(hc, row);
        }
        char *s = cJSON_PrintUnformatted(j);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
    } else {
        if (text_len > 0 && out_text[text_len - 1] != '\n') putchar('\n');
        fflush(stdout);
        fprintf(stderr,
                "prompt %d tokens | prefill %.1f ms (%.1f tok/s) | decode %d tokens %.1f ms (%.1f tok/s)\n"
                "kv: policy %s, capacity %d tokens/head, %lld evictions | peak %.1f KiB (full %.1f KiB, %.2fx) | avg %.1f KiB (full %.1f KiB, %.2fx)\n",
                n_prompt, t_prefill * 1e3, prefill_tps, n_gen, t_decode * 1e3, decode_tps, ops->name,
                kv.cap[0], (long long)kv.evictions, peak_bytes / 1024, full_bytes / 1024,
                peak_bytes > 0 ? full_bytes / peak_bytes : 0, avg_bytes / 1024,
                full_avg_tokens * per_tok / 1024, avg_bytes > 0 ? full_avg_tokens * per_tok / avg_bytes : 0);
    }
    status = g_interrupted ? 130 : 0;
    goto done;

write_err:
    fprintf(stderr, "llm-run: %s: write failed: %s\n", o.logits_out, strerror(errno));
    status = 1;
    goto done;
append_err:
    if (rc == -2) {
        fprintf(stderr, "llm-run: stdout: write failed: %s\n", strerror(errno));
        status = 1;
        goto done;
    }
oom:
    fprintf(stderr, "llm-run: out of memory\n");
    status = 1;
done:
    if (status == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "llm-run: stdout: write failed: %s\n", strerror(errno));
        status = 1;
    }
    if (ns.f && fclose(ns.f) != 0 && status == 0) {
        fprintf(stderr, "llm-run: %s: write failed: %s\n", o.logits_out, strerror(errno));
        status = 1;
    }
    free(logits_all);
    free(out_text);
    free(gen);
    tok_decoder_free(dec);
    sampler_free(&smp);
    engine_free(&eng);
    kv_free(&kv);
    free(tokens);
    free(ids);
    free(chat_text);
    free(prompt);
    tokenizer_free(tok);
    model_free(&mw);
    return status;
}
