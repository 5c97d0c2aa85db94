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

#include "model/model.h"   /* model_weights (eval_model_weights) */

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

/* Sweeps: `llm-run eval --task T --data FILE --model DIR --policies a,b --budgets x,y --out OUT`
 * runs every (example, policy, budget) with the model loaded once, appends one JSON line per
 * triple to OUT/results.jsonl (flushed and fsync'ed; a rerun resumes) and writes
 * OUT/summary.{csv,md,png}. Files: data.c (readers), prompt.c (templates in configs/prompts),
 * generate.c (prefill + greedy decode under a policy), ppl.c (teacher-forced stream: NLL,
 * KL and top-1 agreement against the full cache), results.c, summary.c, sweep.c, merge.c. */

#include <stdint.h>
#include <sys/types.h>

struct policy_ops;

typedef enum {
    EVAL_TASK_XSUM = 0,      /* summarisation, ROUGE (H2O's HELM request file or {document, summary}) */
    EVAL_TASK_CNNDM,         /* summarisation, ROUGE ({article, highlights}) */
    EVAL_TASK_LITM,          /* 10-document QA, best-subspan EM (Lost in the Middle records) */
    EVAL_TASK_WIKITEXT,      /* perplexity ({"text": row} jsonl, or raw text lines) */
    EVAL_TASK_TINYSTORIES,   /* perplexity (text lines, or {"text": ...} jsonl) */
    EVAL_TASK_PASSKEY,       /* generated in-process: a 5-digit key in repeated filler (passkey.c) */
    EVAL_TASK_NIAH,          /* generated in-process: a key sentence in real text (--data: the haystack) */
    EVAL_TASK_COUNT
} eval_task;

const char *eval_task_name(eval_task t);               /* "xsum", ... */
int eval_task_from_name(const char *name);             /* -1 when unknown */
int eval_task_is_ppl(eval_task t);                     /* wikitext, tinystories */
int eval_task_is_synthetic(eval_task t);               /* passkey, niah: examples made in-process */

typedef struct { char *title, *text; } eval_doc;

/* One record of a data file. Strings are malloc'd UTF-8 (NULL when the task has none). */
typedef struct {
    char id[64];        /* the record's own "id"/"idx" when it has one, else "" (the loader
                           then sets "lineN", N = line number in the file) */
    char *document;     /* xsum/cnndm: the article; wikitext/tinystories: the text row */
    char *reference;    /* xsum/cnndm: the reference summary */
    char *question;     /* litm */
    eval_doc *docs;     /* litm: the search results, in the file's order */
    int n_docs;
    char **answers;     /* litm: gold answers */
    int n_answers;
    int gold_index;     /* litm: index of the doc with "isgold": true, else -1 */
} eval_example;

/* Parses one line of a data file (no trailing newline needed; need not be NUL-terminated) for
 * task. xsum: {"article": HELM request "###\nArticle: DOC\n\nSummarize ...", "summary_gt"} (the
 * document is cut out of the request) or {"document", "summary"}; cnndm: {"article",
 * "highlights"} (or "summary_gt"); litm: {"question", "answers": [..], "ctxs": [{"title",
 * "text", "isgold"}..]}; wikitext/tinystories: {"text": ...} when the line starts with '{',
 * else the raw line. Any bytes are safe input (fuzzed).
 * Returns 0, or -1 with err set ("litm: \"answers\" is not a list of strings"; the loader
 * prefixes file and line); *out is zeroed on error (nothing to free). Free with
 * eval_example_free. */
int eval_parse_example(eval_task task, const char *line, size_t len, eval_example *out,
                       char *err, size_t errlen);
void eval_example_free(eval_example *ex);

/* Reads a data file (plain or gzip-compressed, via zlib) for task: one example per non-empty
 * line. Errors name the file and line. *ex is malloc'd [*n]; free with eval_examples_free. */
int eval_load_examples(eval_task task, const char *path, eval_example **ex, int *n,
                       char *err, size_t errlen);
void eval_examples_free(eval_example *ex, int n);

/* ------------------------------------------------------------------------- prompt.c */

/* A prompt protocol loaded from configs/prompts/STYLE.json (EVAL.md: "buzz", "helm", "litm").
 * Templates use {document}, {question}, {search_results}; search_results = docs rendered with
 * doc_format ({k}: 1-based index, {title}, {text}) joined with doc_join. */
typedef struct {
    char name[64];
    char *tmpl[EVAL_TASK_COUNT];   /* NULL: the style has no template for that task */
    char *tmpl_first[EVAL_TASK_COUNT];      /* "templates_first": the instruction/question
                                               before the context (--question-position first) */
    char *tmpl_closedbook[EVAL_TASK_COUNT]; /* "templates_closedbook": the no-context prompt
                                               (litm: Lost in the Middle's closedbook_qa) */
    char *doc_format, *doc_join;
    char *stop;                    /* stop string (HELM "###"), or NULL */
    int bos;                       /* 1: BOS before the prompt (BUZZ, LITM), 0: none (H2O) */
    int max_new[EVAL_TASK_COUNT];  /* default --max-new-tokens per task (0: none given) */
} eval_prompt_style;

/* Loads a style by name (looked up as configs/prompts/NAME.json in the current directory, then
 * next to the executable) or by path (anything with a '/' or ending in .json). */
int eval_prompt_load(const char *name_or_path, eval_prompt_style *ps, char *err, size_t errlen);
void eval_prompt_free(eval_prompt_style *ps);

/* The prompt of ex for task with every document cut to at most word_cap words (whitespace-
 * separated; -1: no cut). *truncated = 1 when a word was dropped. malloc'd, NULL on OOM or
 * when the style has no template for the task. */
char *eval_prompt_render(const eval_prompt_style *ps, eval_task task, const eval_example *ex,
                         int word_cap, int *truncated);

/* Named byte ranges of a prompt's content and the token ranges that encode them ([a, b)). */
#define EVAL_MAX_SPANS 24
typedef struct {
    int n;
    char name[EVAL_MAX_SPANS][16];  /* "document", "doc0".."doc9", "question", "needle" */
    int ch[EVAL_MAX_SPANS][2];      /* bytes of the content */
    int tok[EVAL_MAX_SPANS][2];     /* tokens of the prompt (filled by the encoder) */
} eval_spans;

enum { EVAL_PROMPT_LAST = 0, EVAL_PROMPT_FIRST = 1, EVAL_PROMPT_CLOSEDBOOK = 2 };
/* eval_prompt_render of a variant: EVAL_PROMPT_LAST (templates), _FIRST (templates_first),
 * _CLOSEDBOOK (templates_closedbook); NULL when the style has no such template. sp (NULL
 * allowed) receives the byte ranges of {document}, each document of {search_results} ("doc0",
 * ...) and {question}. */
char *eval_prompt_render_ex(const eval_prompt_style *ps, eval_task task, const eval_example *ex,
                            int word_cap, int variant, int *truncated, eval_spans *sp);

/* --------------------------------------------------------- the model (generate.c, ppl.c) */

struct tokenizer;
struct tok_decoder;
typedef struct eval_model eval_model;

/* How to open a model (eval_model_open). */
typedef struct {
    int threads;              /* ≤ 0: the default (cpu_num_cores) */
    int dtype;                /* -1: as in the file, else a dtype_t for model_convert */
    int resident;             /* model_make_resident (the CPU backend) */
    int allow_no_tokenizer;   /* a model without a tokenizer opens (prompts as ids only) */
    int no_check;             /* skip model_check_finite (huge models: --no-check) */
    int mlock;                /* model_mlock after the load (--mlock; refused: a warning on stderr) */
    /* llama.cpp's RoPE overrides (--rope-freq-base, --rope-freq-scale / --rope-scale,
     * --rope-scaling none), applied to the loaded config: */
    float rope_freq_base;     /* > 0: rope_theta */
    float rope_freq_scale;    /* > 0: rope_scaling_factor = 1 / it (linear: positions x it) */
    int rope_scaling_none;    /* rope_scaling_factor = 1 (before rope_freq_scale, which then
                                 has no effect, as in llama.cpp) */
    const char *chat_jinja;   /* a chat template's Jinja text in place of the model's
                                 (--chat-template-file; copied), or NULL */
} eval_model_opts;

/* Opens a model path (eval/model.c): a Hugging Face folder (weights + tokenizer.json or
 * tokenizer.model) or a GGUF file (weights + the byte-level BPE vocabulary in its metadata,
 * tokenizer.ggml.model gpt2); the end-of-generation ids (the tokenizer's, plus BOS for
 * SentencePiece models). NULL with err set (the path and the problem). */
eval_model *eval_model_open(const char *path, const eval_model_opts *o, char *err, size_t errlen);
/* eval_model_open with threads, the file's dtype, resident weights. */
eval_model *eval_model_load(const char *dir, int threads, char *err, size_t errlen);
void eval_model_free(eval_model *m);
int eval_model_context(const eval_model *m);           /* max_position_embeddings */
int eval_model_vocab(const eval_model *m);
int eval_model_bos(const eval_model *m);
/* The parts, for the commands that drive the engine themselves (cli/). */
model_weights *eval_model_weights(eval_model *m);
struct tokenizer *eval_model_tokenizer(eval_model *m);
const char *eval_model_tokenizer_path(const eval_model *m);
int eval_model_stop_ids(const eval_model *m, const int **ids);   /* count; ids owned by m */
int eval_model_threads(const eval_model *m);

/* Whether the model wants BOS in front of a prompt (tokenizer_add_bos; 1 without a tokenizer). */
int eval_model_add_bos(const eval_model *m);
/* Tokenizes text as data (special tokens are text, never parsed); prepends BOS when bos.
 * *ids malloc'd. */
int eval_tokenize(const eval_model *m, const char *text, int bos, int **ids, int *n,
                  char *err, size_t errlen);
/* Picks the chat template: by name (chatml|llama3|llama2) or, NULL, the model's own. 0 or -1. */
int eval_model_chat(eval_model *m, const char *name, char *err, size_t errlen);

/* A prompt to encode (eval_encode). */
typedef struct {
    const char *text;          /* the prompt / user content */
    size_t text_len;
    int parse_special;         /* special tokens written in text become ids (BPE default) */
    int chat;                  /* wrap text as one user turn in the chat template */
    int content_is_data;       /* with chat: text is data (a document): encoded with special
                                  parsing off, so a "<|im_end|>" in it cannot break the template */
    const char *system;        /* with chat: a system message (NULL: the template's default) */
    const void *messages;      /* a conversation (chat_message[n_messages]) instead of text */
    int n_messages;
    const char *chat_template; /* chatml|llama3|llama2, NULL: the model's */
} eval_prompt_in;

/* The prompt's ids: BOS when the model adds one (and the template does not write it), then the
 * text or the rendered template with the generation prompt. *ids malloc'd. 0, or -1 with err. */
int eval_encode(eval_model *m, const eval_prompt_in *in, int **ids, int *n, char *err, size_t errlen);
/* eval_encode, and content[0..1] = the token range [c0, c1) that encodes in->text (the user
 * content; with chat and content_is_data it is encoded apart, so the range is exact). */
int eval_encode_ex(eval_model *m, const eval_prompt_in *in, int **ids, int *n, int content[2],
                   char *err, size_t errlen);
/* Byte offsets of tokens: starts[i] = where ids[c0 + i] starts in the text that ids[c0..c1)
 * decode to (i = 0..c1-c0; starts[c1-c0] = its length), through the streaming detokenizer (a
 * token inside a multi-byte character starts where the character does). 0, or -1 (no
 * tokenizer, out of memory). */
int eval_token_offsets(const eval_model *m, const int *ids, int c0, int c1, int *starts);
/* 1 when the model's tokenizer carries a chat template (GGUF tokenizer.chat_template or
 * tokenizer_config.json). */
int eval_model_has_chat_template(const eval_model *m);
/* The name of the chat template eval_encode uses ("chatml", ...; NULL before the first use). */
const char *eval_model_chat_name(const eval_model *m);

/* KV memory of one run, as `llm-run --json` reports it (bytes are K+V of all layers in the
 * cache's dtype, eval_policy_cfg.kv_dtype). */
typedef struct {
    int capacity;                  /* kv.cap[0] */
    double peak_bytes, avg_bytes;  /* live KV: peak and time average */
    double full_peak_bytes, full_avg_bytes; /* the full cache on the same run */
    long long evictions;
} eval_kv_stats;

/* One policy configuration: the policy, its parameters (budget in pp.budget, --rope in
 * pp.rope_shifted) and prefill chunk (0: whole prompt). */
struct eval_dump;

typedef struct {
    const struct policy_ops *ops;
    double budget;
    int rope_shifted;
    int budget_ref_prompt;
    int prefill_chunk;
    uint64_t seed;
    const void *params;        /* NULL, or a policy_params (eviction.h) holding the policy's
                                  parameters (--sink 4 ...); budget, rope, budget_ref and seed
                                  above override its fields */
    const struct eval_dump *dump; /* NULL, or where the kept positions go (--dump-kept) */
    int kv_dtype;            /* K/V storage: -1 auto (model_kv_dtype_default: f32 for F32
                                weights, else f16), else DT_F32, DT_F16 or DT_BF16 */
    struct prefill_record **fork; /* NULL, or the prefill shared by the runs of one prompt
                                (gen_params.fork, model.h): recorded by the first forkable
                                run, replayed by the next; the caller frees it */
} eval_policy_cfg;

typedef struct {
    char *text;              /* malloc'd generated text (cut before the stop string) */
    int *tokens;             /* malloc'd [n_gen] generated ids (free with the text) */
    int n_prompt, n_gen;
    const char *stop;        /* "eos", "stop", "length" */
    double prefill_ms, decode_ms;
    int prefill_forked;      /* 1: the prefill was replayed from eval_policy_cfg.fork */
    double prefill_computed_ms; /* then: the time the recorded prefill took to compute */
    eval_kv_stats kv;
} eval_gen_result;

/* Generated text, grown as tokens decode (eval_generate, cli/run.c): text[0..len) and a NUL;
 * text NULL until the first push. */
typedef struct { char *text; size_t len, cap; } eval_text;
/* Appends s[0..n) (nothing when n <= 0). 0, or -1 when out of memory (the text unchanged). */
int eval_text_push(eval_text *t, const char *s, int n);
/* Stop texts (llama.cpp's -r, a prompt spec's stop): the earliest occurrence in t of one of
 * stops[0..n) that ends within its last `added` bytes (so one spanning tokens is found the
 * step its last byte arrives), or NULL. Called after every push, it finds each first
 * occurrence exactly once. */
const char *eval_text_stop(const eval_text *t, size_t added, const char *const *stops, int n);

/* Greedy generation (llm-run's main loop): prefill tokens[0..n_prompt) (in chunks when asked),
 * then argmax decode for up to max_new tokens, stopping at EOS/BOS or when the decoded text
 * contains stop (when non-NULL). Positions must fit the model's context (the caller fits the
 * prompt). Returns 0, or -1 with err set (kv_init, engine errors). */
int eval_generate(eval_model *m, const int *tokens, int n_prompt, int max_new, const char *stop,
                  const eval_policy_cfg *pc, eval_gen_result *r, char *err, size_t errlen);

/* Teacher-forced perplexity (BUZZ eval_long_ppl.py protocol, EVAL.md): tokens[0] is prefilled,
 * then tokens[1..n-2] are decoded one per step with the policy evicting after every step; the
 * logits at step t predict tokens[t+1]. The cache is sized for n_prompt = 1, max_new = n - 1,
 * so a fractional budget is a fraction of n. Per predicted token: NLL (natural log); when
 * ref_logp ([n-1][vocab] log-probabilities of the full cache on the same stream) is given,
 * KL(full || policy) in nats and top-1 agreement (argmax, lowest id on ties). save_logp
 * (NULL or [n-1][vocab]) receives this run's log-probabilities. */
typedef struct {
    int n_pred;                    /* n - 1 */
    double nll_sum, kl_sum;
    int agree;                     /* predictions whose argmax equals the reference's */
    double ms;
    eval_kv_stats kv;
} eval_ppl_result;

int eval_ppl_stream(eval_model *m, const int *tokens, int n, const eval_policy_cfg *pc,
                    const float *ref_logp, float *save_logp, eval_ppl_result *r,
                    char *err, size_t errlen);
/* With pc->prefill_chunk = C > 1 the stream is instead fed C tokens at a time (engine_prefill
 * with every row's logits; the policy selects after each chunk, so a budget below the stream
 * evicts while the stream is prefilled: "chunked prefill beyond the budget"); the cache is
 * sized for n_prompt = n - 1, max_new = 1 (a fractional budget is still a fraction of n).
 * Both modes fill the per-segment sums below: segment k covers the predictions of stream
 * tokens [k·EVAL_PPL_SEG + 1, (k+1)·EVAL_PPL_SEG] ("per 1k tokens of stream"). */
#define EVAL_PPL_SEG 1024
#define EVAL_PPL_MAX_SEG 256
typedef struct {
    int n_seg;
    int n[EVAL_PPL_MAX_SEG], agree[EVAL_PPL_MAX_SEG];
    double nll[EVAL_PPL_MAX_SEG], kl[EVAL_PPL_MAX_SEG];
} eval_ppl_segments;
/* eval_ppl_stream, also filling seg (NULL allowed). */
int eval_ppl_stream_seg(eval_model *m, const int *tokens, int n, const eval_policy_cfg *pc,
                        const float *ref_logp, float *save_logp, eval_ppl_result *r,
                        eval_ppl_segments *seg, char *err, size_t errlen);

/* llama.cpp's perplexity (llama-perplexity's default protocol; ppl_chunks.c): tokens cut into
 * chunks of n_ctx (at most n_chunks > 0 of them, else all n / n_ctx), each run from an empty
 * cache under pc (the full cache, or a policy with pc->prefill_chunk < n_ctx evicting between
 * sub-chunks) with its first token replaced by BOS when the model adds one; the second half of
 * each chunk scored: positions n_ctx/2 .. n_ctx-2 predict the next token (n_ctx/2 − 1
 * predictions a chunk). NLL in nats as llama.cpp's log_softmax (float max, double Σ expf).
 * on_chunk (NULL allowed) sees the running perplexity after each chunk. n ≥ 2·n_ctx required.
 * 0, or -1 with err set (too few tokens, kv_init, engine errors, out of memory). */
typedef struct {
    int n_ctx, n_chunks, count;   /* count: the tokens scored */
    double ppl, ppl_err;          /* exp(mean NLL), and llama.cpp's ± (its standard error × ppl) */
    double nll_mean, seconds;
    eval_kv_stats kv;             /* the last chunk's cache */
} eval_ppl_chunks_result;
typedef void (*eval_ppl_chunk_fn)(void *ud, int chunk, int n_chunks, double ppl_so_far, double seconds);
int eval_ppl_chunks(eval_model *m, const int *tokens, int n, int n_ctx, int n_chunks, const eval_policy_cfg *pc,
                    eval_ppl_chunk_fn on_chunk, void *ud, eval_ppl_chunks_result *r, char *err, size_t errlen);

/* Teacher-forced continuation (llm-run compare): prefill prompt[0..n_prompt) under pc (in
 * chunks of pc->prefill_chunk), then decode cont[0..n_cont-2] one per step; row t (t < n_cont)
 * is the distribution that predicts cont[t]. NLL of cont, and with ref_logp ([n_cont][vocab]
 * log-probabilities, e.g. the full cache's on the same tokens) KL(ref || this) in nats and top-1
 * agreement; save_logp (NULL or [n_cont][vocab]) receives this run's rows. r->n_pred = n_cont.
 * 0, or -1 with err set. */
int eval_forced(eval_model *m, const int *prompt, int n_prompt, const int *cont, int n_cont,
                const eval_policy_cfg *pc, const float *ref_logp, float *save_logp,
                eval_ppl_result *r, char *err, size_t errlen);

/* ------------------------------------------------------------------------ results.c */

/* OUT/results.jsonl, opened for appending. Resume: complete lines are kept and their keys
 * ("id"|"policy"|"budget") remembered; a torn last line (no newline, or not JSON) is cut off. */
typedef struct {
    char path[1100];
    int fd;
    off_t size;              /* bytes of complete lines */
    char **keys;             /* done keys */
    int n_keys, cap_keys;
    int n_torn;              /* 1 when a torn last line was cut */
} eval_results;

int eval_results_open(eval_results *r, const char *dir, char *err, size_t errlen);
int eval_results_done(const eval_results *r, const char *key);
/* Appends line (one JSON object, no newline) + "\n" and fsyncs. On a write error the file is
 * cut back to its last complete line and -1 returned with err naming the file. */
int eval_results_append(eval_results *r, const char *key, const char *line, char *err,
                        size_t errlen);
void eval_results_close(eval_results *r);
/* Remembers key as done without writing (eval-merge's dedup set; r may have no file). */
int eval_results_mark(eval_results *r, const char *key);
/* The key of a result: id|policy|budget (budget printed with %.6g). */
void eval_result_key(char *out, size_t outlen, const char *id, const char *policy, double budget);

/* Reads every complete JSON line of path; *lines malloc'd strings. Missing file → 0 lines. */
int eval_read_lines(const char *path, char ***lines, int *n, char *err, size_t errlen);

/* ------------------------------------------------------------------------ summary.c */

/* Writes DIR/summary.csv and DIR/summary.md from DIR/results.jsonl: per (policy, budget) the
 * mean of every metric with a 95% confidence interval (Student t over examples), KV memory
 * relative to the full cache (peak and average) and tokens/s; then DIR/summary.png through
 * scripts/plot_sweep.py (a missing python3/matplotlib is a warning on stderr, not an error). */
int eval_write_summary(const char *dir, char *err, size_t errlen);
/* Draws DIR/summary.png from DIR/summary.csv with scripts/plot_sweep.py (next to the executable,
 * else in the current directory): metric vs budget, one line per policy (BUZZ paper Fig. 5).
 * Returns 0, or -1 after a one-line warning on stderr (python3 or matplotlib missing). */
int eval_plot_summary(const char *dir);
/* Two-sided 95% Student-t critical value for df degrees of freedom (df >= 1). */
double eval_t95(int df);

/* Summary options: margin of the equivalence claims (in the primary metric's units; < 0: the
 * task's default: 0.01 = 1 ROUGE-1 point, 0.02 = 2 EM / accuracy points, 0.01 nats of NLL) and
 * bootstrap resamples (≤ 0: 2000). */
typedef struct { double margin; int resamples; } eval_summary_opts;
/* eval_write_summary with options (NULL: the defaults). */
int eval_write_summary_ex(const char *dir, const eval_summary_opts *so, char *err, size_t errlen);

/* ------------------------------------------------------------------------- stats.c */

/* 95% percentile bootstrap interval of the mean of x[0..n) with `resamples` resamples drawn
 * from a generator seeded with seed (reproducible). lo = hi = x's mean when n = 1; NAN when
 * n = 0. */
void eval_bootstrap_mean(const double *x, int n, int resamples, uint64_t seed, double *lo, double *hi);
/* Paired: the interval of mean(a[i] - b[i]) resampling the pairs i (the same examples). The
 * interval of identical runs is [0, 0]. */
void eval_bootstrap_paired(const double *a, const double *b, int n, int resamples, uint64_t seed,
                           double *lo, double *hi);
/* The equivalence claim "policy ≈ full within ±margin" from the paired interval [lo, hi] of
 * (policy - full): "confirmed" (inside ±margin), "refuted" (entirely beyond it), "not
 * testable at this n" (wider than 2·margin), else "inconclusive". */
const char *eval_claim(double lo, double hi, double margin);
/* Evidence check: 1 when the full cache's interval lies entirely above the baseline's
 * (higher_is_better) and they do not overlap, else 0. */
int eval_evidence(double full_lo, double full_hi, double base_lo, double base_hi);
/* The task's primary metric ("rouge1", "em", "acc", "nll") and whether higher is better. */
const char *eval_primary_metric(const char *task, int *higher_is_better);

/* ------------------------------------------------------------------------ passkey.c */

/* One passkey / needle-in-a-haystack prompt (task passkey or niah). */
typedef struct {
    int niah;                 /* 0: passkey in repeated filler; 1: a key sentence in real text */
    double depth;             /* relative depth of the needle in the haystack, 0..1 */
    int question_first;       /* the question before the haystack (else after it) */
    int no_needle;            /* the baseline: the same haystack without the needle */
    uint64_t seed;            /* picks the key (and for niah the topic and the text offset) */
    const char *text;         /* niah: the haystack source text, NUL-terminated (else NULL) */
} eval_passkey_spec;

typedef struct {
    char *content;            /* malloc'd user content: instruction, haystack, question */
    char key[8];              /* the 5 digits */
    int needle[2];            /* byte range of the needle in content ([0, 0] without one) */
    int question[2];          /* byte range of the question */
    int haystack[2];          /* byte range of the haystack */
} eval_passkey_prompt;

/* Renders the prompt with `units` haystack units (passkey: filler sentences; niah: words of the
 * text) and the needle after round(depth · units) of them. Deterministic in spec and units.
 * Returns 0, or -1 (out of memory; niah: no text). Free with eval_passkey_free. */
int eval_passkey_render(const eval_passkey_spec *s, int units, eval_passkey_prompt *out);
void eval_passkey_free(eval_passkey_prompt *p);
/* 1 when the key appears in the output (the passkey scorer), else 0. */
int eval_passkey_correct(const char *output, const char *key);

/* ---------------------------------------------------------------------------- dump.c */

/* --dump-kept FILE: the prompt positions each (layer, KV head) keeps, as JSON lines. */
typedef struct eval_dump {
    void *f;                  /* FILE*, opened for appending */
    int every;                /* a line every `every` decode steps (and one after prefill) */
    const void *head;         /* NULL, or a cJSON object whose fields start every line (id,
                                 policy, budget, spans: what a plot needs) */
} eval_dump;
/* Appends one line: head's fields, "step" (decode steps done; 0 = after the prefill),
 * "n_prompt", "n_layers", "n_kv_heads", "kept": [layer][kv head] = ascending prompt positions
 * (< n_prompt) held in the cache. kv: a kv_cache (eviction.h). 0, or -1 (write error). */
int eval_dump_kept(const eval_dump *d, const void *kv, int n_prompt, int step);

/* -------------------------------------------------------------------- sweep.c, merge.c */

/* `llm-run eval-merge [--out OUT] DIR...` (argv[0] = "eval-merge"): refuses shards whose
 * run.json differ or whose cells (example × policy × budget, from each shard's expected.json)
 * are missing, naming them, unless --allow-partial. */
int eval_merge_main(int argc, char **argv);

#endif
