/* options_llama.c — llama.cpp's command-line habits (llama-cli / llama-completion flags): what
 * they mean here. Aliases of llm-run's options (-sys, -sysf, -ctk/-ctv; -s is --seed's own), the sampling options
 * llm-run lacked (--repeat-penalty, --frequency/--presence-penalty, --repeat-last-n, --min-p:
 * llama.cpp's llama_sampler_penalties and min-p, model/sampler.c), -r (stop strings), -e
 * (escape sequences, common/common.cpp string_process_escapes), --mlock, the RoPE overrides
 * (--rope-freq-base, --rope-freq-scale, --rope-scale, --rope-scaling), and the flags that
 * change nothing here (-fa, -b, -ub, --no-mmap, ...), accepted, each with its reason in
 * --help-all. Interactive modes (-i, -if) are refused with what to use instead. */
#include "cli/cli.h"
#include "kernels/kernels.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* strings made while parsing (-sysf's file, -e's escaped copies of -p, --system, up to 8 -r and
 * up to 16 --dry-sequence-breaker):
 * used until exit, freed there */
static char *kept[32];
static int n_kept;
static void free_kept(void)
{
    for (int i = 0; i < n_kept; i++) free(kept[i]);
    n_kept = 0;
}
/* 1 when s (malloc'd) is kept, 0 when the list is full (s freed) */
static int keep(char *s)
{
    if (n_kept >= (int)(sizeof kept / sizeof kept[0])) {
        free(s);
        return 0;
    }
    if (n_kept == 0) atexit(free_kept);
    kept[n_kept++] = s;
    return 1;
}

#define O ((run_options *)ctx)
#define SETTER(name) static int name(void *ctx, const char *f, const char *v)
#define TRY(x) do { if ((x) != 0) return 2; } while (0)
/* a flag refused with one line: "FLAG: why" */
#define REFUSE(name, why) SETTER(name) { (void)ctx, (void)v; return cli_die("%s: " why, f); }

static int set_float(const char *f, const char *v, double lo, double hi, float *out)
{
    double d;
    if (cli_float(f, v, lo, hi, &d) != 0) return 2;
    *out = (float)d;
    return 0;
}

SETTER(set_system) { (void)f; O->system = v; O->chat = 1; return 0; }
/* -sysf: the file's bytes (one trailing newline dropped, as llama.cpp does) */
SETTER(set_system_file) {
    size_t n;
    char *t = cli_read_file(v, &n);
    if (!t) return 2;
    if (strlen(t) != n) {
        const size_t at = strlen(t);
        free(t);
        return cli_die("%s %s: a NUL byte at offset %zu", f, v, at);
    }
    if (n && t[n - 1] == '\n') t[--n] = '\0';
    if (!keep(t)) return cli_die("%s: too many texts", f);
    O->system = t;
    O->chat = 1;
    return 0;
}
/* --chat-template-file: a Jinja template's text, its family recognised as the model's is */
SETTER(set_chat_template_file) {
    size_t n;
    char *t = cli_read_file(v, &n);
    if (!t) return 2;
    if (strlen(t) != n) {
        free(t);
        return cli_die("%s %s: a NUL byte in the template", f, v);
    }
    if (!keep(t)) return cli_die("%s: too many texts", f);
    O->chat_template_text = t;
    O->chat = 1;
    return 0;
}
SETTER(set_min_p) { return set_float(f, v, 0, 1, &O->min_p); }
SETTER(set_repeat) { return set_float(f, v, 1e-6, 100, &O->repeat_penalty); }
SETTER(set_freq) { return set_float(f, v, -100, 100, &O->frequency_penalty); }
SETTER(set_presence) { return set_float(f, v, -100, 100, &O->presence_penalty); }
SETTER(set_last_n) { TRY(cli_int(f, v, -1, INT_MAX, &O->repeat_last_n)); return 0; }
SETTER(set_escape) { (void)f; (void)v; O->escape = 1; return 0; }
SETTER(set_no_escape) { (void)f; (void)v; O->escape = 0; return 0; }
SETTER(set_mlock) { (void)f; (void)v; O->mlock = 1; return 0; }
SETTER(set_special) { (void)f; (void)v; O->special = 1; return 0; }
SETTER(set_reverse) {
    if (!*v) return cli_die("%s: empty text", f);
    if (O->n_reverse >= (int)(sizeof O->reverse / sizeof O->reverse[0])) return cli_die("%s: at most 8", f);
    O->reverse[O->n_reverse++] = v;
    return 0;
}
SETTER(set_n_predict) { TRY(cli_int(f, v, -1, 10000000, &O->max_new)); return 0; }
SETTER(set_chat_turn) { (void)f; (void)v; O->chat = 1; return 0; }
SETTER(set_count) { int n; TRY(cli_int(f, v, 1, INT_MAX, &n)); return 0; }
SETTER(set_accept) { (void)ctx; (void)f; (void)v; return 0; }
REFUSE(set_keep, "llm-run never shifts the context; a cache that keeps the first N tokens and a "
       "recent window is --policy streaming --sink N --budget B")
REFUSE(set_grammar, "constrained decoding (grammars, JSON schemas) is not in llm-run")
REFUSE(set_in_text, "llm-run is not interactive (--chat, --messages)")
/* --prio: llama.cpp's levels as the process's nice value (setpriority; raising it needs the
 * privilege, else a warning and the run goes on) */
SETTER(set_prio) {
    int n;
    TRY(cli_int(f, v, -1, 3, &n));
    static const int nice_of[] = {5, 0, -5, -10, -20};   /* low, normal, medium, high, realtime */
    (void)ctx;
    if (n != 0 && setpriority(PRIO_PROCESS, 0, nice_of[n + 1]) != 0)
        fprintf(stderr, "llm-run: warning: %s %d: cannot set the nice value %d: %s\n", f, n, nice_of[n + 1], strerror(errno));
    return 0;
}
SETTER(set_split_mode) {
    (void)ctx;
    if (strcmp(v, "none") && strcmp(v, "layer") && strcmp(v, "row"))
        return cli_die("%s: expected none, layer or row, got '%s'", f, v);
    return 0;
}
SETTER(set_main_gpu) {
    int n;
    (void)ctx;
    TRY(cli_int(f, v, 0, INT_MAX, &n));
    if (n) return cli_die("%s %d: llm-run uses one GPU, CUDA device 0 (CUDA_VISIBLE_DEVICES picks it)", f, n);
    return 0;
}
SETTER(set_parallel) {
    int n;
    (void)ctx;
    TRY(cli_int(f, v, 1, INT_MAX, &n));
    if (n > 1) return cli_die("%s %d: llm-run runs one sequence (eval runs many prompts, one after another)", f, n);
    return 0;
}
REFUSE(set_adapter, "llm-run loads no adapters (LoRA, control vectors); merge one into the weights first")
REFUSE(set_download, "llm-run downloads nothing; -m takes a local .gguf or folder (scripts/fetch_model.sh "
       "fetches the project's models)")
REFUSE(set_placement, "the whole model runs on one device (--device cpu|cuda)")
REFUSE(set_prompt_cache, "llm-run keeps no prompt cache; each run prefills its prompt")
REFUSE(set_override_kv, "GGUF metadata is read as written (--rope-freq-base, --rope-freq-scale and -c "
       "override what they name)")
REFUSE(set_cpu_mask, "llm-run does not pin threads itself; OpenMP's OMP_PLACES and OMP_PROC_BIND do "
       "(OMP_PLACES=cores OMP_PROC_BIND=close)")
REFUSE(set_yarn, "llm-run has linear RoPE scaling (--rope-scale, --rope-freq-scale) and the model's own "
       "(llama3), not YaRN")
REFUSE(set_self_extend, "no self-extend; a prompt longer than the cache runs under a KV budget (--policy, "
       "--budget), positions past the training context with --rope-scale")
REFUSE(set_log_file, "llm-run logs to stderr only; redirect it (2> FILE)")
REFUSE(set_infill, "llm-run has no fill-in-the-middle mode")
REFUSE(set_interactive, "llm-run is not interactive: it answers one prompt (--chat -p TEXT, or a whole "
       "conversation with --messages FILE)")

/* -ctk / -ctv: the cache types llm-run has (f32, f16, bf16); llama.cpp's quantized ones refused */
static int cache_type(const char *f, const char *v, int *out)
{
    if (!strcmp(v, "f32")) *out = DT_F32 + 1;
    else if (!strcmp(v, "f16")) *out = DT_F16 + 1;
    else if (!strcmp(v, "bf16")) *out = DT_BF16 + 1;
    else return cli_die("%s: llm-run's KV cache holds f32, f16 or bf16 (as --kv-dtype), not '%s'", f, v);
    return 0;
}
static const char *kv_name(int dt) { return dt == DT_F32 ? "f32" : dt == DT_F16 ? "f16" : "bf16"; }
SETTER(set_ctk) { return cache_type(f, v, &O->cache_type_k); }
SETTER(set_ctv) { return cache_type(f, v, &O->cache_type_v); }

/* RoPE overrides (llama.cpp's common/arg.cpp): the base, and linear position scaling given as
 * the frequency scale F (positions x F: 0.5 doubles the context) or as the context factor N
 * (F = 1/N); --rope-scaling none turns the model's linear scaling off, yarn is not here */
SETTER(set_rope_base) { return set_float(f, v, 1e-3, 1e12, &O->rope_freq_base); }
SETTER(set_rope_freq_scale) { return set_float(f, v, 1e-6, 1e6, &O->rope_freq_scale); }
SETTER(set_rope_scale) {
    float n;
    TRY(set_float(f, v, 1e-6, 1e6, &n));
    O->rope_freq_scale = 1.0f / n;
    return 0;
}
SETTER(set_rope_scaling) {
    if (!strcmp(v, "none")) O->rope_scaling_none = 1;
    else if (!strcmp(v, "linear")) O->rope_scaling_none = 0;
    else if (!strcmp(v, "yarn")) return set_yarn(ctx, "--rope-scaling yarn", v);
    else return cli_die("%s: expected none, linear or yarn, got '%s'", f, v);
    return 0;
}

#undef O

const cli_opt cli_llama_options[] = {
    {"--n-predict", NULL, "N", "llama.cpp's long -n: --max-new-tokens", CLI_G_LLAMA, 0, set_n_predict},
    {"--predict", NULL, "N", "as --n-predict", CLI_G_LLAMA, 0, set_n_predict},
    {"--system-prompt", "-sys", "TEXT", "llama.cpp's -sys: --system, and implies --chat", CLI_G_LLAMA, 0, set_system},
    {"--system-prompt-file", "-sysf", "FILE", "as -sys with the file's text (one trailing newline dropped)", CLI_G_LLAMA, 0, set_system_file},
    {"--chat-template-file", NULL, "FILE", "a Jinja chat template in place of the model's: its family (ChatML, Llama-3,\n"
     "Llama-2) is recognised from its text, as the model's is, and implies --chat", CLI_G_LLAMA, 0, set_chat_template_file},
    {"--min-p", NULL, "F", "keep tokens with p >= F x the top token's p (before --temp, as llama.cpp's\n"
     "default --samplers order; default 0 = off)", CLI_G_LLAMA, 0, set_min_p},
    {"--repeat-penalty", NULL, "F", "llama.cpp's repetition penalty (default 1 = off): a token among the last\n"
     "--repeat-last-n of prompt and output has its logit divided by F (x F if <= 0);\n"
     "greedy decoding too", CLI_G_LLAMA, 0, set_repeat},
    {"--frequency-penalty", NULL, "F", "minus F x its count in that window (default 0 = off)", CLI_G_LLAMA, 0, set_freq},
    {"--presence-penalty", NULL, "F", "minus F if in that window (default 0 = off)", CLI_G_LLAMA, 0, set_presence},
    {"--repeat-last-n", NULL, "N", "the window of the penalties (default 64; 0 = off, -1 = the context)", CLI_G_LLAMA, 0, set_last_n},
    {"--reverse-prompt", "-r", "TEXT", "stop once the output contains TEXT (printed, as llama-cli prints it;\n"
     "up to 8; --json says stop \"stop\")", CLI_G_LLAMA, 0, set_reverse},
    {"--escape", "-e", NULL, "process \\n \\r \\t \\' \\\" \\\\ \\xHH in -p, --system and -r (llama.cpp's default;\n"
     "llm-run's is off: text as given)", CLI_G_LLAMA, 0, set_escape},
    {"--no-escape", NULL, NULL, "text as given (llm-run's default)", CLI_G_LLAMA, 0, set_no_escape},
    {"--cache-type-k", "-ctk", "TYPE", "f32, f16 or bf16: --kv-dtype (with -ctv the same type)", CLI_G_LLAMA, 0, set_ctk},
    {"--cache-type-v", "-ctv", "TYPE", "f32, f16 or bf16: --kv-dtype (with -ctk the same type)", CLI_G_LLAMA, 0, set_ctv},
    {"--rope-freq-base", NULL, "N", "RoPE base frequency (rope_theta; default: the model's)", CLI_G_LLAMA, 0, set_rope_base},
    {"--rope-freq-scale", NULL, "F", "linear RoPE scaling: positions x F (0.5 stretches the context 2x;\n"
     "default: the model's rope_scaling factor)", CLI_G_LLAMA, 0, set_rope_freq_scale},
    {"--rope-scale", NULL, "N", "linear RoPE scaling by context factor N: --rope-freq-scale 1/N", CLI_G_LLAMA, 0, set_rope_scale},
    {"--rope-scaling", NULL, "none|linear", "none: no linear scaling (the model's and --rope-freq-scale ignored);\n"
     "linear: the default (yarn is refused)", CLI_G_LLAMA, 0, set_rope_scaling},
    {"--special", "-sp", NULL, "print special tokens as their text (<|im_end|>: the end-of-turn token that\n"
     "stops the run too, as llama-cli prints it)", CLI_G_LLAMA, 0, set_special},
    {"--mlock", NULL, NULL, "lock the weights in memory after the load (a warning if ulimit -l refuses)", CLI_G_LLAMA, 0, set_mlock},
    {"--single-turn", "-st", NULL, "--chat (llm-run always answers one turn)", CLI_G_LLAMA, 0, set_chat_turn},
    {"--conversation", "-cnv", NULL, "--chat, one turn (llm-run is not interactive)", CLI_G_LLAMA, 0, set_chat_turn},
    {"--no-conversation", "-no-cnv", NULL, "accepted: without --chat the prompt is raw text", CLI_G_LLAMA, 0, set_accept},
    {"--flash-attn", "-fa", "[on|off|auto]", "accepted: the CPU attention is always computed in tiles\n"
     "(flash-style); results do not depend on it", CLI_G_LLAMA, 0, set_accept},
    {"--batch-size", "-b", "N", "accepted: the prompt is prefilled in one pass (--prefill-chunk splits it,\n"
     "with eviction in between)", CLI_G_LLAMA, 0, set_count},
    {"--ubatch-size", "-ub", "N", "accepted, as -b", CLI_G_LLAMA, 0, set_count},
    {"--threads-batch", "-tb", "N", "accepted: prefill runs on the -t threads", CLI_G_LLAMA, 0, set_count},
    {"--jinja", NULL, NULL, "accepted: the chat template is always recognised from the model's Jinja text", CLI_G_LLAMA, 0, set_accept},
    {"--no-mmap", NULL, NULL, "accepted: the matrices decode streams are always copied into memory at load", CLI_G_LLAMA, 0, set_accept},
    {"--no-warmup", NULL, NULL, "accepted: llm-run runs no warm-up pass", CLI_G_LLAMA, 0, set_accept},
    {"--color", "-co", NULL, "accepted: output is plain text", CLI_G_LLAMA, 0, set_accept},
    {"--log-disable", NULL, NULL, "accepted: stdout carries the text only already (the summary is on stderr)", CLI_G_LLAMA, 0, set_accept},
    {"--simple-io", NULL, NULL, "accepted: the output is plain text on stdout", CLI_G_LLAMA, 0, set_accept},
    {"--verbose", "-v", NULL, "accepted: the summary is always on stderr (--verbose-prompt: the prompt's ids)", CLI_G_LLAMA, 0, set_accept},
    {"--numa", NULL, "TYPE", "accepted: threads are not placed per NUMA node", CLI_G_LLAMA, 0, set_accept},
    {"--prio", NULL, "N", "process priority as llama.cpp's levels: -1 low, 0 normal, 1 medium, 2 high,\n"
     "3 realtime (nice 5, 0, -5, -10, -20; a warning without the privilege)", CLI_G_LLAMA, 0, set_prio},
    {"--split-mode", "-sm", "none|layer|row", "accepted: the model runs on one device", CLI_G_LLAMA, 0, set_split_mode},
    {"--main-gpu", "-mg", "N", "0 accepted (the one GPU llm-run uses); others refused", CLI_G_LLAMA, 0, set_main_gpu},
    {"--keep", NULL, "N", "refused: the context never shifts (--policy streaming --sink N keeps the first N)", CLI_G_LLAMA, 0, set_keep},
    {"--grammar", NULL, "G", "refused: no constrained decoding", CLI_G_LLAMA, 0, set_grammar},
    {"--grammar-file", NULL, "FILE", "refused, as --grammar", CLI_G_LLAMA, 0, set_grammar},
    {"--json-schema", "-j", "SCHEMA", "refused, as --grammar", CLI_G_LLAMA, 0, set_grammar},
    {"--in-prefix", NULL, "TEXT", "refused: interactive (as -i)", CLI_G_LLAMA, 0, set_in_text},
    {"--in-suffix", NULL, "TEXT", "refused: interactive (as -i)", CLI_G_LLAMA, 0, set_in_text},
    {"--parallel", "-np", "N", "1 accepted (one sequence); more refused", CLI_G_LLAMA, 0, set_parallel},
    {"--cont-batching", "-cb", NULL, "accepted: one sequence, nothing to batch", CLI_G_LLAMA, 0, set_accept},
    {"--no-cont-batching", "-nocb", NULL, "accepted, as -cb", CLI_G_LLAMA, 0, set_accept},
    {"--kv-unified", "-kvu", NULL, "accepted: one sequence, one cache", CLI_G_LLAMA, 0, set_accept},
    {"--no-kv-unified", "-no-kvu", NULL, "accepted, as -kvu", CLI_G_LLAMA, 0, set_accept},
    {"--defrag-thold", "-dt", "N", "accepted: one sequence's cache has nothing to defragment", CLI_G_LLAMA, 0, set_accept},
    {"--swa-full", NULL, NULL, "accepted: llm-run runs no sliding-window model", CLI_G_LLAMA, 0, set_accept},
    {"--no-context-shift", NULL, NULL, "accepted: the context never shifts (generation stops at -c)", CLI_G_LLAMA, 0, set_accept},
    {"--context-shift", NULL, NULL, "refused, as --keep: the context never shifts", CLI_G_LLAMA, 0, set_keep},
    {"--no-kv-offload", "-nkvo", NULL, "accepted: the KV cache is where the model runs (host memory on the CPU)", CLI_G_LLAMA, 0, set_accept},
    {"--kv-offload", "-kvo", NULL, "accepted, as -nkvo", CLI_G_LLAMA, 0, set_accept},
    {"--no-repack", "-nr", NULL, "accepted: the CPU kernels' weight layout is fixed", CLI_G_LLAMA, 0, set_accept},
    {"--repack", NULL, NULL, "accepted, as -nr", CLI_G_LLAMA, 0, set_accept},
    {"--check-tensors", NULL, NULL, "accepted: every weight is checked finite at load already (--no-check skips)", CLI_G_LLAMA, 0, set_accept},
    {"--warmup", NULL, NULL, "accepted: llm-run runs no warm-up pass (as --no-warmup)", CLI_G_LLAMA, 0, set_accept},
    {"--no-perf", NULL, NULL, "accepted: the timings summary goes to stderr (--json: in the object)", CLI_G_LLAMA, 0, set_accept},
    {"--perf", NULL, NULL, "accepted, as --no-perf", CLI_G_LLAMA, 0, set_accept},
    {"--display-prompt", NULL, NULL, "accepted: the prompt is never echoed (--verbose-prompt lists its ids)", CLI_G_LLAMA, 0, set_accept},
    {"--poll", NULL, "N", "accepted: the OpenMP wait policy is chosen at start (OMP_WAIT_POLICY overrides)", CLI_G_LLAMA, 0, set_accept},
    {"--cpu-mask", "-C", "M", "refused: threads are placed by OMP_PLACES / OMP_PROC_BIND", CLI_G_LLAMA, 0, set_cpu_mask},
    {"--cpu-range", "-Cr", "LO-HI", "refused, as -C", CLI_G_LLAMA, 0, set_cpu_mask},
    {"--cpu-strict", NULL, "0|1", "refused, as -C", CLI_G_LLAMA, 0, set_cpu_mask},
    {"--lora", NULL, "FILE", "refused: no adapters (merge a LoRA into the weights)", CLI_G_LLAMA, 0, set_adapter},
    {"--lora-scaled", NULL, "FILE", "refused, as --lora", CLI_G_LLAMA, 0, set_adapter},
    {"--control-vector", NULL, "FILE", "refused, as --lora", CLI_G_LLAMA, 0, set_adapter},
    {"--hf-repo", "-hf", "REPO", "refused: no downloads (-m a local file; scripts/fetch_model.sh)", CLI_G_LLAMA, 0, set_download},
    {"--hf-file", "-hff", "FILE", "refused, as -hf", CLI_G_LLAMA, 0, set_download},
    {"--model-url", "-mu", "URL", "refused, as -hf", CLI_G_LLAMA, 0, set_download},
    {"--override-tensor", "-ot", "PATTERN", "refused: the model runs on one device", CLI_G_LLAMA, 0, set_placement},
    {"--tensor-split", "-ts", "SPLIT", "refused, as -ot", CLI_G_LLAMA, 0, set_placement},
    {"--override-kv", NULL, "KEY=TYPE:VALUE", "refused: GGUF metadata is read as written", CLI_G_LLAMA, 0, set_override_kv},
    {"--prompt-cache", NULL, "FILE", "refused: no prompt cache (each run prefills its prompt)", CLI_G_LLAMA, 0, set_prompt_cache},
    {"--prompt-cache-all", NULL, NULL, "refused, as --prompt-cache", CLI_G_LLAMA, 0, set_prompt_cache},
    {"--prompt-cache-ro", NULL, NULL, "refused, as --prompt-cache", CLI_G_LLAMA, 0, set_prompt_cache},
    {"--multiline-input", "-mli", NULL, "refused, as -i", CLI_G_LLAMA, 0, set_interactive},
    {"--in-prefix-bos", NULL, NULL, "refused, as -i", CLI_G_LLAMA, 0, set_interactive},
    {"--print-token-count", "-ptc", "N", "refused, as -i", CLI_G_LLAMA, 0, set_interactive},
    {"--prio-batch", NULL, "N", "accepted: prefill runs on the same threads (--prio sets their priority)", CLI_G_LLAMA, 0, set_accept},
    {"--poll-batch", NULL, "N", "accepted, as --poll", CLI_G_LLAMA, 0, set_accept},
    {"--cpu-mask-batch", "-Cb", "M", "refused, as -C", CLI_G_LLAMA, 0, set_cpu_mask},
    {"--cpu-range-batch", "-Crb", "LO-HI", "refused, as -C", CLI_G_LLAMA, 0, set_cpu_mask},
    {"--cpu-strict-batch", NULL, "0|1", "refused, as -C", CLI_G_LLAMA, 0, set_cpu_mask},
    {"--no-host", NULL, NULL, "accepted: no host buffer types to bypass", CLI_G_LLAMA, 0, set_accept},
    {"--offline", NULL, NULL, "accepted: llm-run never goes online", CLI_G_LLAMA, 0, set_accept},
    {"--no-jinja", NULL, NULL, "accepted: templates are recognised by family, never run as Jinja", CLI_G_LLAMA, 0, set_accept},
    {"--log-colors", NULL, "[on|off|auto]", "accepted: stderr is plain text", CLI_G_LLAMA, 0, set_accept},
    {"--log-verbosity", "-lv", "N", "accepted: one summary on stderr (--verbose-prompt: the prompt's ids)", CLI_G_LLAMA, 0, set_accept},
    {"--log-prefix", NULL, NULL, "accepted, as --log-colors", CLI_G_LLAMA, 0, set_accept},
    {"--log-timestamps", NULL, NULL, "accepted, as --log-colors", CLI_G_LLAMA, 0, set_accept},
    {"--log-file", NULL, "FILE", "refused: redirect stderr (2> FILE)", CLI_G_LLAMA, 0, set_log_file},
    {"--json-schema-file", "-jf", "FILE", "refused, as --grammar", CLI_G_LLAMA, 0, set_grammar},
    {"--spm-infill", NULL, NULL, "refused: no fill-in-the-middle mode", CLI_G_LLAMA, 0, set_infill},
    {"--grp-attn-n", "-gan", "N", "refused: no self-extend (a KV budget keeps long prompts; --rope-scale)", CLI_G_LLAMA, 0, set_self_extend},
    {"--grp-attn-w", "-gaw", "N", "refused, as -gan", CLI_G_LLAMA, 0, set_self_extend},
    {"--yarn-orig-ctx", NULL, "N", "refused: no YaRN (--rope-scaling yarn is refused too)", CLI_G_LLAMA, 0, set_yarn},
    {"--yarn-ext-factor", NULL, "N", "refused, as --yarn-orig-ctx", CLI_G_LLAMA, 0, set_yarn},
    {"--yarn-attn-factor", NULL, "N", "refused, as --yarn-orig-ctx", CLI_G_LLAMA, 0, set_yarn},
    {"--yarn-beta-slow", NULL, "N", "refused, as --yarn-orig-ctx", CLI_G_LLAMA, 0, set_yarn},
    {"--yarn-beta-fast", NULL, "N", "refused, as --yarn-orig-ctx", CLI_G_LLAMA, 0, set_yarn},
    {"--control-vector-scaled", NULL, "FILE S", "refused, as --lora", CLI_G_LLAMA, 0, set_adapter},
    {"--control-vector-layer-range", NULL, "START END", "refused, as --lora", CLI_G_LLAMA, 0, set_adapter},
    {"--hf-token", "-hft", "TOKEN", "refused, as -hf", CLI_G_LLAMA, 0, set_download},
    {"--interactive", "-i", NULL, "refused: llm-run answers one prompt (--chat, --messages)", CLI_G_LLAMA, 0, set_interactive},
    {"--interactive-first", "-if", NULL, "refused, as -i", CLI_G_LLAMA, 0, set_interactive},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

const cli_opt *const cli_shared_tables[] = {cli_run_options, cli_llama_options, cli_sampling_options, NULL};

/* common.cpp's string_process_escapes: \n \r \t \' \" \\ and \xHH (two hex digits); any other
 * backslash pair is kept as written. In place (the result is never longer). */
static void process_escapes(char *s)
{
    static const char hexd[] = "0123456789abcdefABCDEF";
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '\\' || !r[1]) {
            *w++ = *r;
            continue;
        }
        const char c = *++r;
        switch (c) {
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case '\'': case '"': case '\\': *w++ = c; break;
        default:
            if (c == 'x' && r[1] && r[2] && strchr(hexd, r[1]) && strchr(hexd, r[2])) {
                const char hex[3] = {r[1], r[2], 0};
                *w++ = (char)strtol(hex, NULL, 16);
                r += 2;
            } else {
                *w++ = '\\';
                *w++ = c;
            }
        }
    }
    *w = '\0';
}

static const char *escaped(const char *s)
{
    char *c = s ? strdup(s) : NULL;
    if (!c) return s;
    process_escapes(c);
    return keep(c) ? c : s;
}

int cli_llama_finish(run_options *o)
{
    if (o->chat_template && o->chat_template_text)
        return cli_die("--chat-template and --chat-template-file: two templates; give one");
    if (o->cache_type_k && o->cache_type_v && o->cache_type_k != o->cache_type_v)
        return cli_die("-ctk and -ctv: llm-run stores K and V in one type (--kv-dtype)");
    if (o->cache_type_k || o->cache_type_v) {
        const int t = (o->cache_type_k ? o->cache_type_k : o->cache_type_v) - 1;
        if (o->kv_dtype >= 0 && o->kv_dtype != t)
            return cli_die("%s %s and --kv-dtype %s: two cache types; give one", o->cache_type_k ? "-ctk" : "-ctv",
                           kv_name(t), kv_name(o->kv_dtype));
        o->kv_dtype = t;
    }
    if (o->escape) {
        o->prompt_text = o->prompt_text ? escaped(o->prompt_text) : NULL;
        o->system = o->system ? escaped(o->system) : NULL;
        for (int i = 0; i < o->n_reverse; i++) o->reverse[i] = escaped(o->reverse[i]);
        for (int i = 0; i < o->n_dry_breakers; i++) o->dry_breakers[i] = escaped(o->dry_breakers[i]);
    }
    for (int i = 0; i < o->n_reverse; i++)
        if (!*o->reverse[i]) return cli_die("-r: empty text after -e");
    return 0;
}

int cli_llama_unused(const run_options *o, const char *cmd)
{
    if (o->min_p > 0 || o->repeat_penalty != 1.0f || o->frequency_penalty != 0.0f || o->presence_penalty != 0.0f)
        return cli_die("%s: decodes greedily without penalties (--min-p, --repeat-penalty, --frequency-penalty, "
                       "--presence-penalty are llm-run's)", cmd);
    if (o->n_reverse) return cli_die("%s: -r is llm-run's (it stops a generation on its text)", cmd);
    if (o->special) return cli_die("%s: -sp is llm-run's (it prints special tokens)", cmd);
    if (o->sampler_flag) return cli_die("%s: decodes greedily (%s is llm-run's)", cmd, o->sampler_flag);
    return 0;
}

void cli_model_opts(const run_options *o, eval_model_opts *mo)
{
    mo->threads = o->threads;
    mo->dtype = o->dtype;
    mo->no_check = o->no_check;
    mo->mlock = o->mlock;
    mo->chat_jinja = o->chat_template_text;
    mo->rope_freq_base = o->rope_freq_base;
    mo->rope_freq_scale = o->rope_freq_scale;
    mo->rope_scaling_none = o->rope_scaling_none;
}
