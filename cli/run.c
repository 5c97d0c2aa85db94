/* run.c — `llm-run [options] [PROMPT_FILE | -]`: load the model and tokenizer, encode the prompt,
 * size the KV cache from the policy and budget, generate (model/generate.c) streaming the text
 * to stdout, and report (a stderr summary in llama.cpp's shape, or one JSON object). */
#include "cli/cli.h"
#include "eval/eval.h"
#include "eviction/kv_device.h"
#include "kernels/kernels.h"
#include "model/cuda/cuda_engine.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile int g_interrupted = 0;
static void on_sigint(int sig) { (void)sig; g_interrupted = 1; }

static const char SYNOPSIS[] =
    "[options] [PROMPT_FILE | -]\n\n"
    "Runs a LLaMA-family model (a Hugging Face folder or a GGUF file) and generates text, sending\n"
    "every layer's KV-cache writes through an eviction policy. The prompt comes from -p TEXT,\n"
    "-f FILE, PROMPT_FILE, or standard input (-). stdout carries the generated text only; the\n"
    "summary goes to stderr.\n"
    "Other commands: llm-run tokenize | eval | eval-merge | compare | perplexity | bench | score (each with --help).\n"
    "example: llm-run -m ../shared/models/stories260K -p \"Once upon a time\" -n 200";

/* What the generation callbacks write into. */
typedef struct {
    cli_npy_stream ns;
    tok_decoder *dec;
    int echo;                 /* stream text to stdout */
    eval_text out;            /* everything decoded so far */
    int n_ids_printed;        /* no tokenizer: ids printed */
    int stdout_failed;
    int prefill_progress;     /* a prefill progress line on the terminal */
    int n_prompt_total;       /* prompt tokens (the progress line) */
    eval_dump dump;           /* --dump-kept */
    const kv_cache *kv;
    int n_prompt, n_tok, dump_failed;
    const char *const *reverse;   /* -r: stop once the text contains one of them */
    int n_reverse;
} run_out;

static int on_logits(void *ctx, const float *rows, int n, char *err, size_t errlen)
{
    cli_npy_stream *s = &((run_out *)ctx)->ns;
    if (!s->f) return 0;
    if (fseek(s->f, 0, SEEK_END) != 0 ||
        fwrite(rows, sizeof(float), (size_t)(n * s->cols), s->f) != (size_t)(n * s->cols) ||
        (s->rows += n, cli_npy_stream_header(s)) != 0 || fflush(s->f) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", s->path, strerror(errno));
        return -1;
    }
    return 0;
}

static int append(run_out *o, const char *piece, int m, char *err, size_t errlen)
{
    if (m <= 0) return 0;
    if (eval_text_push(&o->out, piece, m) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (o->echo && (fwrite(piece, 1, (size_t)m, stdout) != (size_t)m || fflush(stdout) != 0)) {
        snprintf(err, errlen, "stdout: write failed: %s", strerror(errno));
        o->stdout_failed = 1;
        return -1;
    }
    return 0;
}

static int on_token(void *ctx, int id, char *err, size_t errlen)
{
    run_out *o = ctx;
    int steps = o->n_tok++;   /* decode steps done before this token */
    if (o->dump.f && steps > 0 && steps % o->dump.every == 0 &&
        eval_dump_kept(&o->dump, o->kv, o->n_prompt, steps) != 0) {
        snprintf(err, errlen, "--dump-kept: write failed: %s", strerror(errno));
        return -1;
    }
    char piece[TOK_PIECE_MAX];
    int m = o->dec ? tok_decoder_push(o->dec, id, piece, sizeof piece)
                   : snprintf(piece, sizeof piece, "%s%d", o->n_ids_printed++ ? " " : "", id);
    if (append(o, piece, m, err, errlen) < 0) return -1;
    return o->n_reverse && m > 0 && eval_text_stop(&o->out, (size_t)m, o->reverse, o->n_reverse) ? 1 : 0;
}

/* a long unchunked prompt: the prefill's progress by layer (stderr is a terminal) */
static void on_prefill_layer(void *ctx, int layer, int n_layers)
{
    const run_out *o = ctx;
    fprintf(stderr, "\rprefill %d tokens: layer %d/%d", o->n_prompt_total, layer + 1, n_layers);
}

static void on_prefill(void *ctx, int done, int total)
{
    run_out *o = ctx;
    if (o->prefill_progress) fprintf(stderr, "\rprefill %d/%d tokens", done, total);
    if (o->dump.f && done == total && eval_dump_kept(&o->dump, o->kv, o->n_prompt, 0) != 0) o->dump_failed = 1;
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

int cli_run_main(int argc, char **argv)
{
    run_options o;
    run_options_init(&o);
    int rc = cli_parse(argc, argv, 1, &o, NULL, NULL, "llm-run", SYNOPSIS);
    if (rc) return rc == 1 ? 0 : rc;
    if (o.n_positional > 1) return cli_die("more than one prompt file ('%s' and '%s')", o.positional[0], o.positional[1]);
    if (o.n_positional == 1) {
        if (o.prompt_file) return cli_die("more than one prompt file ('%s' and '%s')", o.prompt_file, o.positional[0]);
        o.prompt_file = o.positional[0];
        o.prompt_file_trim = 0;
    }
    if (o.prompt_file && o.prompt_text)
        return cli_die("give the prompt either with -p or as a file, not both ('%s')", o.prompt_file);
    if (o.prompt_ids && (o.prompt_text || o.prompt_file || o.chat || o.messages))
        return cli_die("--prompt-ids gives the prompt as token ids: not with -p, a prompt file, --chat or --messages");
    if (o.messages && (o.prompt_text || o.prompt_file))
        return cli_die("--messages gives the whole conversation: not with -p or a prompt file");
    if ((rc = run_options_finish(&o)) != 0) return rc;
    if (o.logits_out) {
        /* never overwrite an input: the model, the prompt, a conversation or a preset */
        const char *inputs[] = {o.model_dir, o.prompt_file, o.messages, o.preset,
                                o.prompt_ids && o.prompt_ids[0] == '@' ? o.prompt_ids + 1 : NULL};
        struct stat so, si;
        if (stat(o.logits_out, &so) == 0)
            for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
                if (inputs[i] && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
                    return cli_die("--logits-out %s is an input of this run (%s): refusing to overwrite it",
                                   o.logits_out, inputs[i]);
    }

    char err[LLM_ERR_LEN] = "";
    char *prompt = NULL;
    size_t prompt_len = 0;
    int *tokens = NULL, *forced = NULL;
    tokenizer *tok = NULL;
    eval_model *em = NULL;
    chat_message *msgs = NULL;
    int n_msgs = 0;
    kv_cache kv;
    memset(&kv, 0, sizeof kv);
    engine eng;
    memset(&eng, 0, sizeof eng);
    sampler smp = {0};
    gen_result g;
    memset(&g, 0, sizeof g);
    run_out out = {.echo = !o.json};
    int budget_cap = 0;
    int status = 1;
    double t_load = cli_now_s();

    /* backend: --device cuda without a GPU, or with a policy it does not run, stops here */
    int use_cuda = 0;
    if (device_resolve(o.device, policy_find(o.policy), &o.pp, &use_cuda, err, sizeof err) != 0) {
        fprintf(stderr, "llm-run: %s\n", err);
        return 2;
    }
    if (err[0]) fprintf(stderr, "llm-run: %s\n", err);

    /* prompt text */
    if (o.prompt_text) prompt = strdup(o.prompt_text), prompt_len = prompt ? strlen(prompt) : 0;
    else if (o.prompt_file) prompt = cli_read_file(o.prompt_file, &prompt_len);
    else prompt = strdup("");
    if (!prompt) goto done;
    if (o.prompt_file_trim && prompt_len > 0 && prompt[prompt_len - 1] == '\n') prompt[--prompt_len] = '\0';
    if (strlen(prompt) != prompt_len) {
        fprintf(stderr, "llm-run: %s: the prompt contains a NUL byte at offset %zu\n",
                o.prompt_file ? o.prompt_file : "prompt", strlen(prompt));
        status = 2;
        goto done;
    }

    /* model and tokenizer (eval/model.c: a folder's tokenizer.json / tokenizer.model, or the
     * vocabulary inside a GGUF file) */
    cpu_quant_act_bits(o.act_bits);
    eval_model_opts mo = {.resident = !use_cuda, .allow_no_tokenizer = o.prompt_ids != NULL};
    cli_model_opts(&o, &mo);
    if (!(em = eval_model_open(o.model_dir, &mo, err, sizeof err))) {
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    model_weights *mw = eval_model_weights(em);
    tok = eval_model_tokenizer(em);
    if (mw->n_kept && !o.json) {
        fprintf(stderr, "llm-run: note: --dtype %s: %d weight%s kept in the file's dtype (row length not a multiple of %d):",
                dtype_name((dtype_t)o.dtype), mw->n_kept, mw->n_kept > 1 ? "s" : "", dtype_block((dtype_t)o.dtype));
        for (int i = 0; i < mw->n_kept && i < MODEL_MAX_KEPT; i++) fprintf(stderr, " %s", mw->kept[i]);
        fprintf(stderr, "%s\n", mw->n_kept > MODEL_MAX_KEPT ? " ..." : "");
    }
    const model_config *cfg = &mw->cfg;
    if (!tok && !o.json) fprintf(stderr, "llm-run: note: no tokenizer: the output is token ids\n");

    /* a prompt that must fit the context (absolute positions) and cannot, by its size in bytes:
     * refused before tokenizing it (a 13 MB prompt took 15 s and 3 GB to be refused). Every
     * token covers at most its longest piece's bytes; x4 covers what normalisation may expand. */
    if (tok && !o.prompt_ids && (!o.pp.rope_shifted || o.ctx_len > 0)) {
        size_t longest = 1;
        for (int i = 0; i < tokenizer_vocab_size(tok); i++) {
            const char *p = tokenizer_piece(tok, i);
            if (p && strlen(p) > longest) longest = strlen(p);
        }
        size_t ctx_tokens = (size_t)(o.ctx_len > 0 ? o.ctx_len : cfg->max_position_embeddings);
        if (prompt_len / (longest * 4) > ctx_tokens) {
            fprintf(stderr, "llm-run: the prompt is %zu bytes, at least %zu tokens, longer than the context of %zu; "
                    "a budgeted policy with --rope shifted --prefill-chunk N can take it\n",
                    prompt_len, prompt_len / (longest * 4), ctx_tokens);
            status = 2;
            goto done;
        }
    }

    /* encode: the ids as given, or [BOS] + text / the chat template */
    int n_prompt;
    if (o.prompt_ids) {
        if (!(tokens = cli_parse_prompt_ids("--prompt-ids", o.prompt_ids, cfg->vocab_size, &n_prompt))) {
            status = 2;
            goto done;
        }
    } else {
        if (o.messages && chat_messages_load(o.messages, &msgs, &n_msgs, err, sizeof err) != 0) {
            fprintf(stderr, "llm-run: %s\n", err);
            status = 2;
            goto done;
        }
        eval_prompt_in in = {.text = prompt, .text_len = prompt_len, .parse_special = !o.no_parse_special,
                             .chat = o.chat, .system = o.system, .messages = msgs, .n_messages = n_msgs,
                             .chat_template = o.chat_template};
        if (eval_encode(em, &in, &tokens, &n_prompt, err, sizeof err) != 0) {
            fprintf(stderr, "llm-run: %s\n", err);
            status = 2;
            goto done;
        }
        if (n_prompt == 0) {
            fprintf(stderr, "llm-run: the prompt is empty and the model adds no BOS: nothing to start from\n");
            status = 2;
            goto done;
        }
    }
    if (o.verbose_prompt) {
        fprintf(stderr, "prompt: %d tokens\n", n_prompt);
        for (int i = 0; i < n_prompt; i++)
            fprintf(stderr, "%6d -> '%s'\n", tokens[i], tok ? tokenizer_piece(tok, tokens[i]) : "");
    }
    int ctx = o.ctx_len > 0 ? o.ctx_len : cfg->max_position_embeddings;
    int chunk = o.prefill_chunk > 0 && o.prefill_chunk < n_prompt ? o.prefill_chunk : n_prompt;
    int max_new = o.max_new >= 0 ? o.max_new : ctx - n_prompt + 1 > 1 ? ctx - n_prompt + 1 : 1;   /* -n -1: the context */
    if (o.ctx_len > 0 && o.ctx_len > cfg->max_position_embeddings && !o.pp.rope_shifted && !o.json)
        fprintf(stderr, "llm-run: note: -c %d is beyond the model's trained context of %d\n", o.ctx_len,
                cfg->max_position_embeddings);
    if (!o.pp.rope_shifted || o.ctx_len > 0) {
        /* absolute positions: everything forwarded (the prompt and every generated token but
         * the last) must stay within the context */
        if (n_prompt > ctx) {
            if (o.ctx_len > 0)
                fprintf(stderr, "llm-run: prompt is %d tokens, longer than the context of %d (-c)\n", n_prompt, ctx);
            else
                fprintf(stderr, "llm-run: prompt is %d tokens, longer than the model's context of %d (%s); a budgeted policy with --rope shifted --prefill-chunk N can take it\n",
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

    /* KV cache sized by the policy and budget (elements of --kv-dtype, or the model's default),
     * then the run state */
    const policy_ops *ops = policy_find(o.policy);
    o.pp.seed = o.seed;
    o.pp.kv_dtype = o.kv_dtype >= 0 ? o.kv_dtype : (int)model_kv_dtype_default(mw);
    if (o.kv_mem_limit_gb > 0) {
        /* --kv-mem-limit: size the cache before allocating it (the same K/V element size on
         * the CPU and the GPU) */
        char what[64];
        snprintf(what, sizeof what, "--kv-mem-limit %g GB", o.kv_mem_limit_gb);
        size_t es = dtype_size((dtype_t)o.pp.kv_dtype);
        if (kv_check_limit(ops, &o.pp, cfg->n_layers, cfg->n_kv_heads, cfg->n_heads, cfg->head_dim,
                           n_prompt, max_new, es, o.kv_mem_limit_gb * 1e9, what, err, sizeof err) != 0) {
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
    int max_cap = 0, min_cap = INT_MAX;
    for (int i = 0; i < kv.n_layers * kv.n_kv_heads; i++) {
        if (kv.cap[i] > max_cap) max_cap = kv.cap[i];
        if (kv.cap[i] < min_cap) min_cap = kv.cap[i];
    }
    /* POLICIES.md §1.2: a budget below the policy's protected sets (sink + window, ...) is
     * raised to that minimum; say so (peak KV then exceeds the budget the user asked for) */
    budget_cap = kv_budget_capacity(&o.pp, n_prompt, max_new, 1);
    if (min_cap > budget_cap && !o.json)
        fprintf(stderr, "llm-run: note: policy %s needs at least %d slots per (layer, KV head) for what it "
                "protects; the budget's %d was raised to %d (POLICIES.md 1.2)\n", ops->name, min_cap,
                budget_cap, min_cap);
    if (o.pp.rope_shifted && max_cap + (chunk < n_prompt ? chunk : 0) + 1 > ctx &&
        n_prompt + max_new - 1 > ctx) {
        /* shifted positions are ranks in the cache: capacity (+ chunk) must fit the context */
        fprintf(stderr, "llm-run: --rope shifted: capacity %d%s exceeds the model's context of %d; lower --budget or --prefill-chunk\n",
                max_cap, chunk < n_prompt ? " + prefill chunk" : "", ctx);
        status = 2;
        goto done;
    }
    cpu_set_threads(o.threads);
    if ((use_cuda ? engine_init_cuda(&eng, mw, &kv, chunk, err, sizeof err)
                  : engine_init(&eng, mw, &kv, chunk, o.threads, err, sizeof err)) != 0) {
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    if (sampler_init(&smp, cfg->vocab_size, o.temp, o.top_p, o.top_k, o.seed) != 0) goto oom;
    if (o.seed_random && !o.json) fprintf(stderr, "llm-run: seed %llu (drawn for -s -1; -s %llu repeats this run)\n",
                                          (unsigned long long)o.seed, (unsigned long long)o.seed);
    if (cli_sampling_apply(&o, &smp, tok, n_prompt + max_new) != 0) {
        status = 2;
        goto done;
    }
    if (o.repeat_last_n != 0 &&
        sampler_set_penalties(&smp, o.repeat_penalty, o.frequency_penalty, o.presence_penalty,
                              o.repeat_last_n > 0 ? o.repeat_last_n : n_prompt + max_new) != 0)
        goto oom;
    /* on the GPU a greedy step copies back only the chosen token (device argmax) */
    eng.want_logits = sampler_needs_logits(&smp) || o.logits_out != NULL;
    if (o.logits_out) {
        out.ns.path = o.logits_out;
        out.ns.f = fopen(o.logits_out, "wb");
        if (!out.ns.f) {
            fprintf(stderr, "llm-run: %s: cannot write: %s\n", o.logits_out, strerror(errno));
            goto done;
        }
        out.ns.cols = cfg->vocab_size;
        if (cli_npy_stream_header(&out.ns) != 0) {
            fprintf(stderr, "llm-run: %s: write failed: %s\n", o.logits_out, strerror(errno));
            goto done;
        }
    }
    if (tok && !(out.dec = tok_decoder_new(tok))) goto oom;
    if (out.dec) tok_decoder_reset(out.dec, tokens[n_prompt - 1]);
    if (out.dec && o.special) tok_decoder_set_special(out.dec, 1);
    out.out.cap = 4096;
    if (!(out.out.text = malloc(out.out.cap))) goto oom;
    out.out.text[0] = '\0';
    /* progress on a terminal: by chunk, or by layer for an unchunked prompt over 2k tokens */
    out.prefill_progress = (chunk < n_prompt || n_prompt > 2048) && !o.json && isatty(2);
    out.n_prompt_total = n_prompt;
    if (out.prefill_progress && chunk >= n_prompt && !use_cuda) {
        eng.on_layer = on_prefill_layer;
        eng.on_layer_ctx = &out;
    }
    if (o.dump_kept) {
        if (use_cuda) {
            fprintf(stderr, "llm-run: --dump-kept reads the cache on the host: use --device cpu\n");
            status = 2;
            goto done;
        }
        if (!(out.dump.f = fopen(o.dump_kept, "a"))) {
            fprintf(stderr, "llm-run: %s: cannot write: %s\n", o.dump_kept, strerror(errno));
            goto done;
        }
        out.dump.every = o.dump_every > 0 ? o.dump_every : 16;
        out.kv = &kv;
        out.n_prompt = n_prompt;
    }
    signal(SIGINT, on_sigint);
    signal(SIGTERM, on_sigint);
    if (!use_cuda) blas_reserve_or_exit(o.threads);
    out.reverse = o.reverse;
    out.n_reverse = o.n_reverse;
    t_load = cli_now_s() - t_load;

    /* the generation loop: EOS ends the answer; a BOS starts a new document (TinyStories-style
     * models emit it between stories, and llama2.c stops there too) */
    const int *stop_ids;
    int n_stop = eval_model_stop_ids(em, &stop_ids);
    if (o.ignore_eos) n_stop = 0;
    gen_params gp = {.max_new = max_new, .prefill_chunk = chunk, .stop_ids = stop_ids, .n_stop_ids = n_stop,
                     .want_prompt_logits = o.logits_out != NULL, .interrupted = &g_interrupted};
    if (o.force_ids) {
        if (!(forced = cli_parse_prompt_ids("--force-ids", o.force_ids, cfg->vocab_size, &gp.n_force))) {
            status = 2;
            goto done;
        }
        gp.force_ids = forced;
    }
    gen_callbacks cb = {.ctx = &out, .on_logits = o.logits_out ? on_logits : NULL, .on_token = on_token,
                        .on_prefill = on_prefill};
    if (generate(&eng, &smp, tokens, n_prompt, &gp, &cb, &g, err, sizeof err) != 0) {
        if (out.prefill_progress) fputc('\n', stderr);
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    if (out.prefill_progress) fputc('\n', stderr);
    if (out.dump_failed) {
        fprintf(stderr, "llm-run: %s: write failed\n", o.dump_kept);
        goto done;
    }
    char piece[TOK_PIECE_MAX];
    int m = 0;
    if (out.dec && o.special && g.stop_id >= 0) {   /* -sp: the end-of-turn token too, as llama-cli */
        m = tok_decoder_push(out.dec, g.stop_id, piece, sizeof piece);
        if (append(&out, piece, m, err, sizeof err) != 0) {
            fprintf(stderr, "llm-run: %s\n", err);
            goto done;
        }
    }
    m = out.dec ? tok_decoder_flush(out.dec, piece, sizeof piece) : 0;
    if (append(&out, piece, m, err, sizeof err) != 0) {
        fprintf(stderr, "llm-run: %s\n", err);
        goto done;
    }
    if (g_interrupted) fprintf(stderr, "\nllm-run: interrupted after %d tokens\n", g.n_gen);

    /* report */
    kv_stats st;
    kv_stats_get(&kv, n_prompt, g.n_decode_steps, &st);
    if (o.json) {
        cli_run_print_json(&o, &kv, &g, out.out.text, &st, use_cuda, &eng, chunk, t_load, budget_cap);
    } else {
        if (out.out.len > 0 && out.out.text[out.out.len - 1] != '\n') putchar('\n');
        fflush(stdout);
        cli_run_print_summary(&kv, &g, &st, t_load);
    }
    status = g_interrupted ? 130 : 0;
    goto done;
oom:
    fprintf(stderr, "llm-run: out of memory\n");
    status = 1;
done:
    if (status == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "llm-run: stdout: write failed: %s\n", strerror(errno));
        status = 1;
    }
    if (out.ns.f && fclose(out.ns.f) != 0 && status == 0) {
        fprintf(stderr, "llm-run: %s: write failed: %s\n", o.logits_out, strerror(errno));
        status = 1;
    }
    if (out.dump.f) fclose(out.dump.f);
    free(out.out.text);
    tok_decoder_free(out.dec);
    gen_result_free(&g);
    sampler_free(&smp);
    engine_free(&eng);
    kv_free(&kv);
    free(tokens);
    free(forced);
    free(prompt);
    chat_messages_free(msgs, n_msgs);
    eval_model_free(em);
    return status;
}
