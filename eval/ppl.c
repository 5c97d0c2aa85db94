/* ppl.c — perplexity under a budget and fidelity against the full cache (issue 5 "Metrics";
 * protocol of BUZZ's eval_long_ppl.py, EVAL.md "Perplexity"): a teacher-forced token stream fed
 * one token per step, the policy evicting after every step. */
#include "eval/runner.h"
#include "eval/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* logp[v] = log softmax(logits)[v], in double, stored as float. Returns the argmax (lowest id
 * on ties). */
static int log_softmax(const float *logits, int vocab, float *logp)
{
    int best = 0;
    for (int v = 1; v < vocab; v++)
        if (logits[v] > logits[best]) best = v;
    double mx = logits[best], s = 0;
    for (int v = 0; v < vocab; v++) s += exp((double)logits[v] - mx);
    double lse = mx + log(s);
    for (int v = 0; v < vocab; v++) logp[v] = (float)((double)logits[v] - lse);
    return best;
}

static int argmax_f(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* One prediction: logits of the position before tokens[t+1]. */
static void score_step(const float *logits, int vocab, int target, const float *ref, float *save,
                       float *scratch, eval_ppl_result *r)
{
    float *lp = save ? save : scratch;
    int top = log_softmax(logits, vocab, lp);
    r->nll_sum -= lp[target];
    if (ref) {
        double kl = 0;
        for (int v = 0; v < vocab; v++) {
            double pr = exp((double)ref[v]);
            if (pr > 0) kl += pr * ((double)ref[v] - (double)lp[v]);
        }
        r->kl_sum += kl;
        r->agree += top == argmax_f(ref, vocab);
    }
}

int eval_ppl_stream(eval_model *m, const int *tokens, int n, const eval_policy_cfg *pc,
                    const float *ref_logp, float *save_logp, eval_ppl_result *r,
                    char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (n < 2) {
        snprintf(err, errlen, "perplexity stream of %d tokens: need at least 2", n);
        return -1;
    }
    int vocab = m->w.cfg.vocab_size;
    kv_cache kv;
    engine eng;
    memset(&eng, 0, sizeof eng);
    int rc = -1;
    float *scratch = malloc((size_t)vocab * sizeof *scratch);
    if (!scratch) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (eval_kv_init(m, &kv, pc, 1, n - 1, err, errlen) != 0) {
        free(scratch);
        return -1;
    }
    if (engine_init(&eng, &m->w, &kv, 1, m->threads, err, errlen) != 0) goto done;
    r->n_pred = n - 1;
    double t0 = eval_now_s();
    if (engine_prefill(&eng, tokens, 1, 0, NULL, err, errlen) != 0) goto done;
    for (int t = 0; t < n - 1; t++) {
        if (t > 0 && engine_decode(&eng, tokens[t], t, err, errlen) != 0) goto done;
        size_t row = (size_t)t * vocab;
        score_step(eng.logits, vocab, tokens[t + 1], ref_logp ? ref_logp + row : NULL,
                   save_logp ? save_logp + row : NULL, scratch, r);
    }
    r->ms = (eval_now_s() - t0) * 1e3;
    /* the full cache holds 1 + t tokens after step t: n - 1 at the end, n/2 on average */
    eval_kv_report(&kv, 1, n - 2, &r->kv);   /* one token, then n - 2 steps: full n - 1, average 1 + (n - 2) / 2 */
    rc = 0;
done:
    free(scratch);
    engine_free(&eng);
    kv_free(&kv);
    return rc;
}
