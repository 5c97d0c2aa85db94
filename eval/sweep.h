/* sweep.h — private to the files of `llm-run eval` (issue 5 "Tasks and sweeps"), by job:
 *   sweep.c          eval_main: the run loop over (example, policy, budget), progress, signals;
 *   sweep_opts.c     the command line (eval_opts) and its record OUT/run.json;
 *   sweep_items.c    the work items: prompts fitted to the context, perplexity windows;
 *   sweep_lines.c    what a results line holds (task metrics, KV statistics), appending it,
 *                    and --rescore.
 * A new task adds its name in data.c, its work items in sweep_items.c and its metrics in
 * sweep_lines.c; a new option goes to eval_opts, sweep_parse_opts and (when results depend on
 * it) sweep_check_run_config. Resume and locking of results.jsonl are results.c's. */
#ifndef LLM_EVAL_SWEEP_H
#define LLM_EVAL_SWEEP_H

#include "eval/runner.h"

#include <cjson/cJSON.h>
#include <stdint.h>

#define MAX_LIST 64

/* The options of a sweep (llm-run eval --help). */
typedef struct {
    int task;
    const char *data, *model, *out, *prompt_style;
    const char *policies[MAX_LIST];
    int n_policies;
    double budgets[MAX_LIST];
    int n_budgets;
    int limit, max_new, threads, prefill_chunk, window, fit_skip, no_plot, rescore;
    int rope_shifted, budget_ref_prompt;
    int shard_i, shard_n;
    uint64_t seed;
} eval_opts;

/* A work item: one example of the sweep (a generation prompt, or a perplexity window). */
typedef struct {
    char id[80];
    int idx;                 /* index among the examples (before sharding) */
    int src;                 /* index into the loaded examples (generation) */
    int *tokens;             /* prompt or window tokens */
    int n_tokens;
    int truncated, words_kept, skip;
    char skip_reason[160];
} work_item;

/* ---------------------------------------------------------------------------- sweep_opts.c */

/* Parses argv[1..argc) (after "eval") into o, with the defaults filled in (policy full, budget
 * 1, the model of $LLM_MODEL or ../shared/models/stories260K, the shard of SLURM_ARRAY_*).
 * Returns 0; 1 after printing --help; 2 after printing a usage error. Lists point into a static
 * buffer (one parse per process). */
int sweep_parse_opts(int argc, char **argv, eval_opts *o);

/* DIR/run.json: the settings a results file depends on, written on the first run; a rerun with
 * other settings into the same folder is refused (policies, budgets, --limit and --shard may
 * change). style: the prompt style's name; max_new: the effective generation length.
 * Returns 0, or -1 with err set. */
int sweep_check_run_config(const char *dir, const eval_opts *o, const char *style, int max_new,
                           char *err, size_t errlen);

/* --------------------------------------------------------------------------- sweep_items.c */

/* Renders and tokenizes ex into w->tokens; a prompt over `limit` tokens gets every document cut
 * to the largest word count that fits (binary search; w->truncated, w->words_kept), or with
 * fit_skip (or when even no document does not fit) w->skip and w->skip_reason.
 * Returns 0, or -1 with err set. */
int sweep_fit_prompt(eval_model *m, const eval_prompt_style *ps, eval_task task, const eval_example *ex,
                     int limit, int fit_skip, work_item *w, char *err, size_t errlen);

/* Perplexity windows: every row tokenized with BOS (empty rows contribute nothing), the rows
 * concatenated into one stream (BUZZ never resets the cache between rows), cut into windows of
 * `window` tokens (at most `limit` when > 0); a last window shorter than 16 tokens is dropped.
 * *items: allocated [*n_items]. Returns 0, or -1 with err set. */
int sweep_ppl_windows(eval_model *m, const eval_example *ex, int n_ex, int window, int limit,
                      work_item **items, int *n_items, char *err, size_t errlen);

/* --------------------------------------------------------------------------- sweep_lines.c */

/* A new results line: task, id, idx, policy, budget, rope. */
cJSON *sweep_line_head(const eval_opts *o, const work_item *w, const char *policy, double budget);

/* Adds j.kv: capacity, peak/avg bytes (and the full cache's), evictions. */
void sweep_add_kv(cJSON *j, const eval_kv_stats *kv);

/* The task metrics of one generated text into mt: litm em, em_strict; summarisation ROUGE
 * (Google's rouge-score with stemming, and pltrdy's). Returns 0, or -1 with err set. */
int sweep_gen_metrics(cJSON *mt, eval_task task, const eval_example *ex, const char *out, char *err,
                      size_t errlen);

/* Appends j (deleted here) as the line of `key`; 0, or -1 after printing the error. */
int sweep_emit(eval_results *res, cJSON *j, const char *key);

/* --rescore: the metrics of every generation line of DIR/results.jsonl recomputed from its
 * "output" and the example of the same id in --data; the file is replaced atomically.
 * Returns 0, or -1 with err set. */
int sweep_rescore(const eval_opts *o, const char *dir, char *err, size_t errlen);

#endif
