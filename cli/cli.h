/* cli/ — the command line: one option table shared by every subcommand that runs a model
 * (options.c), and one file per subcommand (run.c: `llm-run [options] [PROMPT_FILE]`, ...).
 * main.c only dispatches. The top layer: includes anything below (eval, model, tokenizer,
 * eviction, kernels), nothing includes it.
 *
 * Parsing never exits: a bad command line prints one line "llm-run: ..." on stderr (naming the
 * flag, with a did-you-mean suggestion for unknown ones) and returns 2. */
#ifndef LLM_CLI_H
#define LLM_CLI_H

#include "eval/eval.h"
#include "eviction/eviction.h"
#include "model/model.h"

#include <stdio.h>

#define LLM_RUN_VERSION "0.2.0"

/* Everything the shared table sets. */
typedef struct {
    const char *model_dir;     /* -m: folder or .gguf */
    const char *prompt_text;   /* -p */
    const char *prompt_file;   /* positional or -f, "-" = stdin */
    int prompt_file_trim;      /* -f: drop one trailing newline (llama-cli's habit) */
    const char *prompt_ids;    /* --prompt-ids 1,2,3 or @FILE (JSON array): ids as given */
    const char *force_ids;     /* --force-ids: teacher forcing of the generated ids (parity tests) */
    int max_new;
    int ctx_len;               /* -c: prompt + generated positions at most (0: the model's) */
    float temp, top_p;
    int top_k;
    uint64_t seed;             /* 0 .. 2^32 − 2, as llama.cpp's uint32 seed */
    int seed_random;           /* -s -1 (llama.cpp's default): seed drawn at start-up, reported */
    int threads;
    int chat;
    const char *system;
    const char *chat_template; /* --chat-template chatml|llama3|llama2 (NULL: the model's) */
    const char *chat_template_text;   /* --chat-template-file's Jinja text (NULL: the model's) */
    const char *messages;      /* --messages FILE: a JSON conversation */
    int no_parse_special;      /* --no-parse-special: "<|im_start|>" in the prompt is text */
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
    int act_bits;              /* --act-bits 8|16: activations of the block-format matmuls
                                  (cpu_quant_act_bits; 16 by default) */
    int kv_dtype;              /* --kv-dtype: -1 auto (model_kv_dtype_default), else DT_F32,
                                  DT_F16 or DT_BF16; resolved into pp.kv_dtype once the model
                                  is loaded */
    int verbose_prompt;        /* --verbose-prompt: the prompt's ids and pieces on stderr */
    int no_check;              /* --no-check: skip the finite-weights test at load */
    int ignore_eos;            /* --ignore-eos: generate max_new tokens whatever they are */
    const char *dump_kept;     /* --dump-kept FILE: kept prompt positions as JSON lines */
    int dump_every;            /* --dump-every N: a line every N decode steps (default 16) */
    /* llama.cpp's flags (cli/options_llama.c) */
    float min_p;               /* --min-p (0: off) */
    float repeat_penalty, frequency_penalty, presence_penalty;   /* 1, 0, 0: off */
    int repeat_last_n;         /* --repeat-last-n (default 64; 0 off; -1 the context) */
    int escape;                /* -e: \n \t \\ ... in -p, --system and -r processed */
    const char *reverse[8];    /* -r TEXT: stop once the output contains one of them */
    int n_reverse;
    int special;               /* -sp: special tokens printed as their text (the stopping one too) */
    int mlock;                 /* --mlock: lock the weights in memory after the load (model_mlock) */
    int cache_type_k, cache_type_v;   /* -ctk / -ctv: 0 unset, else a dtype_t + 1 */
    float rope_freq_base;      /* --rope-freq-base: 0, or the RoPE base (rope_theta) to use */
    float rope_freq_scale;     /* --rope-freq-scale (--rope-scale N: 1/N): 0, or positions x F */
    int rope_scaling_none;     /* --rope-scaling none: no linear scaling (the model's ignored) */
    /* llama.cpp's other samplers (cli/options_sampling.c; model/sampler.c runs them) */
    float typical_p;           /* --typical (1: off) */
    float top_n_sigma;         /* --top-nsigma (-1: off) */
    float xtc_probability, xtc_threshold;   /* --xtc-probability (0: off), --xtc-threshold (0.1) */
    float dynatemp_range, dynatemp_exp;     /* --dynatemp-range (0: off), --dynatemp-exp (1) */
    int mirostat;              /* --mirostat 0|1|2 */
    float mirostat_lr, mirostat_ent;        /* --mirostat-lr (eta 0.1), --mirostat-ent (tau 5) */
    int min_keep;              /* --min-keep (0) */
    char sampler_order[16];    /* --samplers / --sampling-seq as SAMPLER_STAGES letters ("": default) */
    float dry_multiplier, dry_base;       /* --dry-multiplier (0: off), --dry-base (1.75) */
    int dry_allowed_length, dry_last_n;   /* --dry-allowed-length (2), --dry-penalty-last-n (64; -1 the context) */
    const char *dry_breakers[16];         /* --dry-sequence-breaker TEXT ... */
    int n_dry_breakers;                   /* -1: llama.cpp's defaults \n : " * ("none": 0) */
    float adaptive_target, adaptive_decay; /* --adaptive-target (-1: off), --adaptive-decay (0.9) */
    int n_logit_bias;          /* -l ID+BIAS (up to 64): ids (checked against the vocabulary at load) */
    int logit_bias_id[64];
    float logit_bias[64];
    const char *sampler_flag;  /* the last of these flags given (eval and compare refuse them) */
    const char *positional[8]; /* non-option arguments, in order */
    int n_positional;
} run_options;

/* Subcommands that accept the shared options put their own table beside it. */
typedef struct cli_opt {
    const char *name;          /* "--model" */
    const char *alias;         /* "-m", or NULL */
    const char *arg;           /* value placeholder ("DIR"), NULL for a switch (optional: below) */
    const char *help;          /* one line (continuations start with "\n") */
    int group;                 /* CLI_G_* */
    int common;                /* listed by --help (the rest only by --help-all) */
    /* applies the value (NULL for a switch) to ctx; 0, or 2 after printing the error */
    int (*set)(void *ctx, const char *flag, const char *val);
} cli_opt;
/* An arg in brackets ("[on|off|auto]") is optional: the next argument is taken only when it is
 * one of the '|'-separated values (set gets it, or NULL), so `-fa on` and `-fa` both parse. */

enum { CLI_G_MODEL, CLI_G_GEN, CLI_G_KV, CLI_G_OUT, CLI_G_MISC, CLI_G_SUB, CLI_G_LLAMA, CLI_G_COUNT };

/* The shared tables (each terminated by a zero entry): llm-run's own, and llama.cpp's flags
 * (cli/options_llama.c: aliases, the penalties and min-p, -r, -e, --mlock, -ctk/-ctv, and the
 * flags that change nothing here, accepted with what they mean here in --help-all). */
extern const cli_opt cli_run_options[];
extern const cli_opt cli_llama_options[];
extern const cli_opt cli_sampling_options[];
/* The three (llm-run's, llama.cpp's, its samplers: cli/options_sampling.c), NULL-terminated:
 * what the parser, --help and the suggestions read. */
extern const cli_opt *const cli_shared_tables[];
/* After parsing (run_options_finish): -e applied, -ctk/-ctv resolved into kv_dtype (an
 * explicit --kv-dtype of another type is an error), -sys → --chat. 0, or 2 after printing the
 * error. */
int cli_llama_finish(run_options *o);
/* eval and compare: the sampling flags they would ignore (penalties, min-p, -r, the samplers of
 * options_sampling.c) are an error naming cmd. 0, or 2 after printing it. */
int cli_llama_unused(const run_options *o, const char *cmd);
/* The model-opening options of o (threads, --dtype, --no-check, --mlock, the RoPE overrides)
 * into *mo; the caller sets resident and allow_no_tokenizer. */
void cli_model_opts(const run_options *o, eval_model_opts *mo);
/* The sampling options of o beyond sampler_init's (min-p, typical, top-n-sigma, XTC, dynamic
 * temperature, min-keep, the order, Mirostat, the logit bias, DRY with its breakers mapped to
 * token sequences by tok: NULL refuses breakers) into *s; context: the positions of the run (DRY's
 * window of -1). 0, or 2 after printing the error (a -l id outside the vocabulary, breakers
 * without a tokenizer, out of memory). */
int cli_sampling_apply(const run_options *o, sampler *s, const struct tokenizer *tok, int context);

/* Defaults of run_options (max_new 256, greedy, all physical cores, budget 1, device from
 * $LLM_DEVICE or auto). */
void run_options_init(run_options *o);

/* Parses argv[first..argc) with the shared table plus `extra` (NULL or a zero-terminated table
 * whose setters get extra_ctx). Unknown --NAME VALUE pairs are kept as policy parameters and
 * checked by run_options_finish. Returns 0, 1 (help/version printed: exit 0), or 2 (error
 * printed). prog names the subcommand in --help ("llm-run", "llm-run eval"). */
int cli_parse(int argc, char **argv, int first, run_options *o, const cli_opt *extra,
              void *extra_ctx, const char *prog, const char *synopsis);

/* After parsing: the preset, then the policy parameters on top; the default model. 0 or 2. */
int run_options_finish(run_options *o);

/* Prints the grouped help of the shared table (+ extra); all: every option (--help-all). */
void cli_print_help(FILE *f, const char *prog, const char *synopsis, const cli_opt *extra, int all);

/* Number parsing with one-line errors naming the flag; 0 or -1 (printed). */
int cli_int(const char *flag, const char *s, long lo, long hi, int *out);
int cli_float(const char *flag, const char *s, double lo, double hi, double *out);
/* Seconds on CLOCK_MONOTONIC (the commands' own timings: run, perplexity, bench). */
double cli_now_s(void);
/* Prints "llm-run: " + the formatted message + newline; returns 2. */
int cli_die(const char *fmt, ...);
/* The option of the shared table or extra closest to an unknown flag, or NULL. */
const char *cli_suggest(const char *flag, const cli_opt *extra);

/* Reads a file whole (a prompt, -sysf's, --prompt-ids @FILE; "-": stdin): bytes as they are
 * (NUL bytes included); *len set. NULL with a one-line message printed on error (missing, not a
 * regular file/FIFO, read error, over 1 GiB). */
char *cli_read_file(const char *path, size_t *len);

/* --prompt-ids, --force-ids (flag names the option in messages): "1,2,3" or "@FILE" holding a JSON
 * array of integers, each in [0, vocab). Returns a malloc'd array of *n >= 1 ids, or NULL with a
 * one-line message printed (not an id, out of range, empty, unreadable file, out of memory). */
int *cli_parse_prompt_ids(const char *flag, const char *arg, int vocab, int *n);

/* 1 when some policy has a parameter (or generic alias) of this name (without the dashes). */
int cli_is_policy_param(const char *name);
/* --list-policies: every policy with its paper, parameters and defaults, on stdout (cli/help.c). */
void cli_list_policies(void);

/* Subcommands. */
/* cli/run_report.c: the outputs of `llm-run` besides the text. */
/* --logits-out: a float32 .npy [rows][cols] whose header is rewritten with the row count after
 * every append, so the file is valid after each row (an interrupted run keeps what it computed). */
typedef struct {
    FILE *f;
    const char *path;
    int64_t rows, cols;
} cli_npy_stream;
/* Writes the 128-byte .npy v1 header for s->rows x s->cols at offset 0. 0, or -1 (errno set). */
int cli_npy_stream_header(cli_npy_stream *s);
/* --json: one object (text, tokens, timings in ms and tok/s, weights bytes, kv: policy, dtype,
 * budget, capacities, byte figures of kv_stats, evictions) on stdout. budget_cap: the capacity
 * the budget alone gives (kv_budget_capacity), to say whether the policy raised it. */
void cli_run_print_json(const run_options *o, const kv_cache *kv, const gen_result *g, const char *text,
                        const kv_stats *st, int use_cuda, const engine *eng, int chunk, double load_s,
                        int budget_cap);
/* The stderr summary in llama.cpp's shape (load, prompt eval, eval, total; ms and tok/s) plus
 * one KV line (policy, dtype, capacity, evictions, peak and average bytes against full). */
void cli_run_print_summary(const kv_cache *kv, const gen_result *g, const kv_stats *st, double load_s);

int cli_run_main(int argc, char **argv);
int cli_tokenize_main(int argc, char **argv);   /* argv[0] = "tokenize" */
int cli_eval_main(int argc, char **argv);       /* argv[0] = "eval" (cli/eval.c) */
int cli_compare_main(int argc, char **argv);    /* argv[0] = "compare" (cli/compare.c) */
int cli_perplexity_main(int argc, char **argv); /* argv[0] = "perplexity" (cli/perplexity.c) */
int cli_bench_main(int argc, char **argv);      /* argv[0] = "bench": llama-bench's tests (cli/bench.c) */

/* Sets what the OpenMP and OpenBLAS runtimes read when they load (the OpenMP wait: spin when
 * this run's threads, -t / --threads in argv or every CPU, fit the CPUs no other process is
 * running on at start, else OMP_WAIT_POLICY=passive; OPENBLAS_CORETYPE for CPUs Debian's
 * OpenBLAS 0.3.21 does not know), each only when the user has not, then re-executes the program
 * once (/proc/self/exe, argv unchanged; LLM_RUN_REEXEC guards the loop). Returns when nothing
 * needs setting or the exec fails. Call first thing in main. Measurements: cli/runtime.c. */
void cli_reexec_with_runtime_settings(char **argv);

#endif
