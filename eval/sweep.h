/* sweep.h — private to the files of `llm-run eval` (issue 5 "Tasks and sweeps"), by job:
 *   sweep.c          eval_run: the run loop over (example, policy, budget), progress, signals;
 *   sweep_opts.c     the settings' record OUT/run.json, the folder lock, expected.json;
 *   sweep_items.c    the work items: prompts fitted to the context, perplexity windows;
 *   sweep_lines.c    what a results line holds (task metrics, KV statistics), appending it,
 *                    and --rescore.
 * A new task adds its name in data.c, its work items in sweep_items.c and its metrics in
 * sweep_lines.c; a new option goes to eval_opts, cli/eval.c (the command line) and (when
 * results depend on it) sweep_check_run_config. Resume of results.jsonl is results.c's. */
#ifndef LLM_EVAL_SWEEP_H
#define LLM_EVAL_SWEEP_H

#include "eval/runner.h"

#include <cjson/cJSON.h>
#include <stdint.h>

struct policy_ops;

#define MAX_LIST 64
#define MAX_PARAMS 32

/* The options of a sweep, filled by the command line (cli/eval.c: the shared option table of
 * llm-run plus eval's own) or by a program. */
typedef struct {
    int task;
    const char *data, *model, *out, *prompt_style;
    const char *policies[MAX_LIST];
    int n_policies;
    double budgets[MAX_LIST];
    int n_budgets;
    int limit, max_new, threads, prefill_chunk, window, fit_skip, no_plot, rescore;
    int no_prefill_fork;             /* --no-prefill-fork: compute every run's prefill */
    int rope_shifted, budget_ref_prompt;
    int shard_i, shard_n;
    uint64_t seed;
    /* the model and its prompts */
    int dtype;                       /* -1: as in the file, else a dtype_t (--dtype) */
    int kv_dtype;                    /* -1: auto (f32 for F32 weights, else f16), else DT_F32/F16/BF16 */
    int act_bits;                    /* --act-bits: 16 (default) or 8 (cpu_quant_act_bits) */
    eval_model_opts open;            /* --mlock, --no-check, the RoPE overrides (threads, dtype
                                        and resident come from the fields here) */
    int chat;                        /* -1: auto (the model's chat template when it has one),
                                        0: raw prompt (--no-chat), 1: chat (--chat) */
    const char *chat_template;       /* --chat-template (NULL: the model's) */
    const char *system;              /* --system (NULL: the template's default) */
    int question_first;              /* --question-position first (default last) */
    int baseline;                    /* --baseline: add the no-context row (closedbook for litm) */
    /* policy parameters: name/value pairs given on the command line, applied to every policy
     * that has the parameter (its own name or a generic alias); a preset's apply to its policy */
    const char *param_name[MAX_PARAMS], *param_value[MAX_PARAMS];
    int n_params;
    const char *preset;              /* --policy-config FILE */
    /* passkey / niah */
    double depths[MAX_LIST];
    int n_depths;
    int lengths[MAX_LIST];
    int n_lengths;
    int samples;                     /* per depth x length cell */
    /* outputs */
    const char *dump_kept;           /* --dump-kept FILE (NULL: none) */
    int dump_every;
    double margin;                   /* --margin (< 0: the task's default) */
    int bootstrap;                   /* --bootstrap resamples (0: 2000) */
} eval_opts;

/* Defaults: task -1, policy full, budget 1, one shard, dtype -1, chat auto, passkey depths
 * 0,0.25,0.5,0.75,1 x lengths 1024,2048 x 4 samples, dump every 16 steps, margin -1. */
void eval_opts_init(eval_opts *o);

/* Runs the sweep of o (`llm-run eval`): loads the model once, resumes OUT/results.jsonl, writes
 * the summaries. Returns the process exit code (0, 1 on an error printed on stderr, 2 for a bad
 * setting, 130 when interrupted). */
int eval_run(eval_opts *o);

/* The policy_params of one policy of the sweep: the preset's when it is that policy's, then
 * every --NAME VALUE the policy has. 0, or -1 with err set. */
int sweep_policy_params(const eval_opts *o, const struct policy_ops *ops, policy_params *pp,
                        char *err, size_t errlen);

typedef eval_spans span_set;

/* A work item: one example of the sweep (a generation prompt, or a perplexity window). */
typedef struct {
    char id[80];
    int idx;                 /* index among the examples (before sharding) */
    int src;                 /* index into the loaded examples (generation) */
    int *tokens;             /* prompt or window tokens */
    int n_tokens;
    int truncated, words_kept, skip;   /* passkey/niah: words_kept = haystack units */
    char skip_reason[160];
    span_set spans;          /* where the document(s), question, needle sit */
    /* passkey / niah */
    double depth;
    int length, sample;
    char key[8];
} work_item;

/* ---------------------------------------------------------------------------- sweep_opts.c */

/* DIR/run.json: the settings a results file depends on, written on the first run; a rerun with
 * other settings into the same folder is refused (policies, budgets, --limit and --shard may
 * change). style: the prompt style's name; max_new: the effective generation length; chat:
 * the chat template's name or "none". Returns 0, or -1 with err set. */
int sweep_check_run_config(const char *dir, const eval_opts *o, const char *style, int max_new,
                           const char *chat, char *err, size_t errlen);

/* Takes the advisory lock of DIR (flock on the directory, held until the process exits): a
 * second sweep into the same folder fails at once. Returns the lock's fd, or -1 with err set
 * ("DIR: another llm-run eval is writing here"). */
int sweep_lock_dir(const char *dir, char *err, size_t errlen);

/* DIR/expected.json: the cells each run into DIR is to fill ({"runs": [{"ids": [...],
 * "policies": [...], "budgets": [...], "extra": [{"policy", "budget"}]}, ...]}: this run's entry
 * is added unless there), which eval-merge checks. 0, or -1 with err set. */
int sweep_write_expected(const char *dir, const char *const *ids, int n_ids, const eval_opts *o,
                         char *err, size_t errlen);

/* The pseudo-policy of the no-context row: "closedbook" (litm), else "nocontext". */
const char *sweep_baseline_name(int task);

/* --------------------------------------------------------------------------- sweep_items.c */

/* Encodes the prompt content text (chat: one user turn, the content as data; else the raw text
 * with the style's BOS) and maps sp's byte ranges to token ranges. 0, or -1 with err set. */
int sweep_encode(eval_model *m, const eval_opts *o, const eval_prompt_style *ps, const char *text,
                 span_set *sp, int **ids, int *n, char *err, size_t errlen);

/* Renders and encodes ex into w->tokens (variant: 0 the task's prompt, 1 the no-context
 * baseline); a prompt over `limit` tokens gets every document cut to the largest word count that
 * fits (binary search; w->truncated, w->words_kept), or with fit_skip (or when even no document
 * does not fit) w->skip and w->skip_reason. Returns 0, or -1 with err set. */
int sweep_fit_prompt(eval_model *m, const eval_opts *o, const eval_prompt_style *ps, const eval_example *ex,
                     int variant, int limit, work_item *w, char *err, size_t errlen);

/* The passkey / niah items: depths x lengths x samples, ids "d<depth>_L<length>_s<k>". */
int sweep_passkey_items(const eval_opts *o, work_item **items, int *n_items, char *err, size_t errlen);
/* Builds w's prompt: the most haystack whose encoded prompt is at most w->length tokens (and
 * limit), the needle at w->depth (no_needle: the baseline without it). text: the niah haystack
 * (NULL for passkey). 0, or -1 with err set. */
int sweep_passkey_fit(eval_model *m, const eval_opts *o, const char *text, int no_needle, int limit,
                      work_item *w, char *err, size_t errlen);

/* Perplexity windows: every row tokenized with BOS (empty rows contribute nothing), the rows
 * concatenated into one stream (BUZZ never resets the cache between rows), cut into windows of
 * `window` tokens (at most `limit` when > 0); a last window shorter than 16 tokens is dropped.
 * *items: allocated [*n_items]. Returns 0, or -1 with err set. */
int sweep_ppl_windows(eval_model *m, const eval_example *ex, int n_ex, int window, int limit,
                      work_item **items, int *n_items, char *err, size_t errlen);

/* --------------------------------------------------------------------------- sweep_lines.c */

/* A new results line: task, id, idx, policy, budget, rope, question_position. */
cJSON *sweep_line_head(const eval_opts *o, const work_item *w, const char *policy, double budget);
/* Adds j.spans: {"question": [a, b], "doc0": [a, b], ...} (token ranges of the prompt). */
void sweep_add_spans(cJSON *j, const span_set *sp);

/* Adds j.kv: capacity, peak/avg bytes (and the full cache's), evictions. */
void sweep_add_kv(cJSON *j, const eval_kv_stats *kv);

/* The task metrics of one generated text into mt: litm em, em_strict; summarisation ROUGE
 * (Google's rouge-score with stemming, and pltrdy's). Returns 0, or -1 with err set. */
int sweep_gen_metrics(cJSON *mt, eval_task task, const eval_example *ex, const char *out, char *err,
                      size_t errlen);
/* passkey / niah: acc = 1 when key appears in out. */
void sweep_passkey_metrics(cJSON *mt, const char *key, const char *out);

/* Appends j (deleted here) as the line of `key`; 0, or -1 after printing the error. */
int sweep_emit(eval_results *res, cJSON *j, const char *key);

/* --rescore: the metrics of every generation line of DIR/results.jsonl recomputed from its
 * "output" and the example of the same id in --data; the file is replaced atomically.
 * Returns 0, or -1 with err set. */
int sweep_rescore(const eval_opts *o, const char *dir, char *err, size_t errlen);

#endif
