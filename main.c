/* llm-run: run a LLaMA-family model (Hugging Face folder or GGUF file) with a budgeted,
 * policy-driven KV cache.
 *
 *   llm-run [options] [PROMPT_FILE | -]      generate (cli/run.c)
 *   llm-run tokenize ...                      token ids (cli/tokenize.c)
 *   llm-run eval ...                          sweeps (cli/eval.c -> eval/)
 *   llm-run compare ...                       one prompt under several policies (cli/compare.c)
 *   llm-run eval-merge | score ...            merging sweeps, metrics (eval/)
 *
 * main only dispatches; each subcommand parses its own command line (cli/options.c holds the
 * option table the model-running ones share). */
#include "cli/cli.h"
#include "eval/eval.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Settings the OpenMP and OpenBLAS runtimes read when they load, before main:
 *  - OMP_WAIT_POLICY=passive: a thread that reaches a barrier first sleeps instead of spinning.
 *    On a machine where another process holds a core, spinning made 2-thread decode collapse
 *    (SmolLM2: 1.8 tok/s vs 28 with one thread); passive waits keep it at the 1-thread speed,
 *    and cost nothing measurable on a quiet machine (bench/cpu.md);
 *  - OPENBLAS_CORETYPE: Debian's OpenBLAS 0.3.21 does not know Sapphire Rapids / Zen 4 and
 *    falls back to its generic kernels; name the widest family the CPU runs.
 * Both are set only when the user has not, then the program re-executes itself once
 * (LLM_RUN_REEXEC guards the loop). Not under valgrind (its LD_PRELOAD), where /proc/self/exe
 * is the tool. */
static void reexec_with_runtime_settings(char **argv)
{
    if (getenv("LLM_RUN_REEXEC")) return;
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload")) return;
    int change = 0;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) change |= setenv("OMP_WAIT_POLICY", "passive", 1) == 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (!getenv("OPENBLAS_CORETYPE")) {
        __builtin_cpu_init();
        const char *t = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                      : __builtin_cpu_supports("avx2") ? "Haswell" : NULL;
        if (t) change |= setenv("OPENBLAS_CORETYPE", t, 1) == 0;
    }
#endif
    if (!change) return;
    setenv("LLM_RUN_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);   /* on failure: carry on with the runtimes as they are */
}

int main(int argc, char **argv)
{
    /* a closed stdout pipe is a write error reported in one line, not a silent SIGPIPE death */
    reexec_with_runtime_settings(argv);
    signal(SIGPIPE, SIG_IGN);
    /* a file-size limit (ulimit -f) makes write() fail with EFBIG, reported with the file's
     * name, instead of killing the process without a word */
    signal(SIGXFSZ, SIG_IGN);
    if (argc > 1 && !strcmp(argv[1], "score")) return score_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval")) return cli_eval_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "compare")) return cli_compare_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval-merge")) return eval_merge_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "tokenize")) return cli_tokenize_main(argc - 1, argv + 1);
    return cli_run_main(argc, argv);
}
