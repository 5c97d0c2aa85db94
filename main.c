/* llm-run: run a LLaMA-family model (Hugging Face folder or GGUF file) with a budgeted,
 * policy-driven KV cache.
 *
 *   llm-run [options] [PROMPT_FILE | -]      generate (cli/run.c)
 *   llm-run tokenize ...                      token ids (cli/tokenize.c)
 *   llm-run eval ...                          sweeps (cli/eval.c -> eval/)
 *   llm-run compare ...                       one prompt under several policies (cli/compare.c)
 *   llm-run perplexity -f FILE ...            llama-perplexity's figure (cli/perplexity.c)
 *   llm-run bench -m MODEL [-p 512 -n 128]    llama-bench's tests and table (cli/bench.c)
 *   llm-run eval-merge | score ...            merging sweeps, metrics (eval/)
 *
 * main only dispatches; each subcommand parses its own command line (cli/options.c holds the
 * option table the model-running ones share). */
#include "cli/cli.h"
#include "eval/eval.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    cli_reexec_with_runtime_settings(argv);   /* cli/runtime.c: OpenMP wait, OpenBLAS core type */
    /* a closed stdout pipe is a write error reported in one line, not a silent SIGPIPE death */
    signal(SIGPIPE, SIG_IGN);
    /* a file-size limit (ulimit -f) makes write() fail with EFBIG, reported with the file's
     * name, instead of killing the process without a word */
    signal(SIGXFSZ, SIG_IGN);
    if (argc > 1 && !strcmp(argv[1], "score")) return score_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval")) return cli_eval_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "compare")) return cli_compare_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "perplexity")) return cli_perplexity_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "bench")) return cli_bench_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval-merge")) return eval_merge_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "tokenize")) return cli_tokenize_main(argc - 1, argv + 1);
    return cli_run_main(argc, argv);
}
