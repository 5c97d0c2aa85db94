/* runner.h — private to eval/: the model of a sweep and the KV helpers shared by generate.c
 * and ppl.c. */
#ifndef LLM_EVAL_RUNNER_H
#define LLM_EVAL_RUNNER_H

#include "eval/eval.h"
#include "eviction/eviction.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

struct eval_model {
    model_weights w;      /* as in the file (or --dtype) */
    tokenizer *tok;       /* NULL only with allow_no_tokenizer */
    char tok_path[1200];  /* where the tokenizer came from (messages) */
    tok_decoder *dec;
    chat_template *chat;  /* eval_model_chat: made on first use */
    char *chat_jinja;     /* eval_model_opts.chat_jinja's copy, or NULL: the model's template */
    int *stop_ids;        /* end-of-generation ids (generate() stops before emitting one) */
    int n_stop;
    int threads;
};

/* kv_init for a policy configuration with n_prompt + max_new tokens. */
int eval_kv_init(eval_model *m, kv_cache *kv, const eval_policy_cfg *pc, int n_prompt, int max_new,
                 char *err, size_t errlen);
/* The KV statistics of a finished run of n_prompt tokens and n_decode_steps decode steps, as
 * llm-run reports them (kv_stats_get). */
void eval_kv_report(const kv_cache *kv, int n_prompt, int n_decode_steps, eval_kv_stats *s);

#endif
