/* eval/ — the evaluation harness: the metrics the papers report (ROUGE, exact match,
 * Self-BLEU, perplexity and fidelity against the full cache) and the policy × budget sweeps
 * over the shared data sets (../shared/docs/EVAL.md).
 *
 * Errors: functions that can fail take `char *err, size_t errlen`, return 0 on success and -1
 * with a one-line message naming the input and the problem. Nothing here calls exit().
 */
#ifndef LLM_EVAL_H
#define LLM_EVAL_H

#include <stddef.h>

/* =============================================================== metrics (rouge.c, em.c, bleu.c)
 * (section owned by the metrics work; the API below is fixed, comments to be completed) */

typedef struct { double p, r, f; } rouge_prf;       /* precision, recall, F1 in [0, 1] */
typedef struct { rouge_prf rouge1, rouge2, rougeL, rougeLsum; } rouge_scores;
typedef enum { ROUGE_IMPL_GOOGLE = 0, ROUGE_IMPL_PLTRDY = 1 } rouge_impl;

/* ROUGE of one (target, prediction) pair. ROUGE_IMPL_GOOGLE: Google rouge-score semantics
 * (EVAL.md), stem = Porter stemming of tokens longer than 3 chars. ROUGE_IMPL_PLTRDY: the
 * `rouge` 1.0.1 package (stem ignored). */
int rouge_pair(const char *target, const char *prediction, rouge_impl impl, int stem,
               rouge_scores *out, char *err, size_t errlen);

/* Lost-in-the-Middle best_subspan_em (EVAL.md): 1.0 if any normalised answer is a substring
 * of the normalised prediction (cut at its first newline), else 0.0. */
double em_best_subspan(const char *prediction, const char *const *answers, int n_answers);

/* Self-BLEU of one generated text as the BUZZ paper computed it (EVAL.md "BLEU / Self-BLEU"). */
double self_bleu(const char *text);

/* `llm-run score rouge|em ...` (argv[0] = "score"); returns the process exit code. */
int score_main(int argc, char **argv);

/* ======================================================= tasks and sweeps (runner, readers)
 * (section owned by the sweep work) */

#endif
