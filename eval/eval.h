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
 * (section owned by the metrics work). Text is UTF-8, NUL-terminated. The metrics follow the
 * reference packages exactly (tests/fixtures/eval, made by scripts/make_rouge_fixtures.py). */

typedef struct { double p, r, f; } rouge_prf;       /* precision, recall, F1 in [0, 1] */
typedef struct { rouge_prf rouge1, rouge2, rougeL, rougeLsum; } rouge_scores;
typedef enum { ROUGE_IMPL_GOOGLE = 0, ROUGE_IMPL_PLTRDY = 1 } rouge_impl;

/* ROUGE of one (target = reference, prediction = hypothesis) pair into *out.
 * ROUGE_IMPL_GOOGLE: Google rouge-score 0.1.2 (RougeScorer(["rouge1", "rouge2", "rougeL",
 *   "rougeLsum"], use_stemmer=stem).score(target, prediction); EVAL.md): lowercase, runs outside
 *   [a-z0-9] separate tokens, stem != 0: NLTK Porter stemming of tokens longer than 3 chars;
 *   rouge1/2 on n-gram counts, rougeL on the LCS of all tokens, rougeLsum summary-level over
 *   the non-empty "\n"-separated sentences. Scores are 0 when a side has no tokens. Fails
 *   only when out of memory.
 * ROUGE_IMPL_PLTRDY: the `rouge` 1.0.1 package, Rouge().get_scores(prediction, target)[0]
 *   (the BUZZ and H2O papers' metric; EVAL.md lists its quirks: '.'-sentences, no lowercasing,
 *   n-gram sets, exclusive summary-level LCS, 1e-8 in F). stem is ignored. Its "rouge-l" (summary
 *   level) is returned as rougeL AND as rougeLsum (the package has no separate Lsum).
 *   Returns -1 when either text has no sentence ("" or only '.'), where the package raises
 *   ValueError. (The package also fails with RecursionError on sentence pairs of roughly 1000
 *   words or more; we compute those.)
 * Errors: -1 with a one-line message in err; *out is zeroed. */
int rouge_pair(const char *target, const char *prediction, rouge_impl impl, int stem,
               rouge_scores *out, char *err, size_t errlen);

/* NLTK PorterStemmer().stem(word) in its default NLTK_EXTENSIONS mode (porter.c) of the ASCII
 * word[0..len) (uppercase is lowered); writes the NUL-terminated stem to out (room for len + 1
 * bytes: a stem is never longer than its word) and returns its length. */
int porter_stem(const char *word, int len, char *out);

/* Lost-in-the-Middle best_subspan_em (EVAL.md; lost-in-the-middle metrics.py): the prediction
 * is cut at its first "\n"; prediction and answers are normalised SQuAD-style (lowercase,
 * drop ASCII punctuation, articles a/an/the -> space, collapse whitespace); returns 1.0 if any
 * normalised answer is a substring of the normalised prediction (not token aligned), else
 * 0.0 (also for n_answers = 0). Lowercasing is ASCII only. */
double em_best_subspan(const char *prediction, const char *const *answers, int n_answers);

/* Self-BLEU of one generated text as the BUZZ paper computed it (EVAL.md "BLEU / Self-BLEU";
 * buzz-llm run_bleu_eval.py, after Texygen): the text is split on '.', every piece (empty ones
 * too) stripped and split on whitespace; each piece is scored by NLTK sentence_bleu against
 * all the others with weights (1/3, 1/3, 1/3) and SmoothingFunction().method1; returns the
 * mean in [0, 1]. Returns NAN for a text without '.' (one piece: NLTK raises, no references). */
double self_bleu(const char *text);

/* `llm-run score rouge|em|self-bleu ...` (argv[0] = "score"); files with one text per line,
 * means printed as JSON (--json) or a table; see `llm-run score --help`. Returns the process
 * exit code: 0, 1 with one line on stderr naming the file and line, 2 on bad usage. */
int score_main(int argc, char **argv);

/* ======================================================= tasks and sweeps (runner, readers)
 * (section owned by the sweep work) */

#endif
