/* llm-run: run a LLaMA-family model (Hugging Face folder or GGUF file) with a budgeted,
 * policy-driven KV cache.
 *
 *   llm-run [options] [PROMPT_FILE | -]      generate (cli/run.c)
 *   llm-run eval | eval-merge | score ...    sweeps and metrics (eval/)
 *
 * main only dispatches; each subcommand parses its own command line (cli/options.c holds the
 * option table the model-running ones share). */
#include "cli/cli.h"
#include "eval/eval.h"

#include <signal.h>
#include <string.h>

int main(int argc, char **argv)
{
    /* a closed stdout pipe is a write error reported in one line, not a silent SIGPIPE death */
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && !strcmp(argv[1], "score")) return score_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval")) return eval_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "eval-merge")) return eval_merge_main(argc - 1, argv + 1);
    return cli_run_main(argc, argv);
}
