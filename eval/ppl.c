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

/* One prediction: logits of the position before the target; into r and segment seg_k. */
static void score_step(const float *logits, int vocab, int target, const float *ref, float *save,
                       float *scratch, eval_ppl_result *r, eval_ppl_segments *seg, int seg_k)
{
    float *lp = save ? save : scratch;
    int top = log_softmax(logits, vocab, lp);
    double nll = -lp[target], kl = 0;
    int agree = 0;
    r->nll_sum += nll;
    if (ref) {
        for (int v = 0; v < vocab; v++) {
            double pr = exp((double)ref[v]);
            if (pr > 0) kl += pr * ((double)ref[v] - (double)lp[v]);
        }
        r->kl_sum += kl;
        agree = top == argmax_f(ref, vocab);
        r->agree += agree;
    }
    if (seg && seg_k < EVAL_PPL_MAX_SEG) {
        if (seg_k >= seg->n_seg) seg->n_seg = seg_k + 1;
        seg->n[seg_k]++;
        seg->nll[seg_k] += nll;
        seg->kl[seg_k] += kl;
        seg->agree[seg_k] += agree;
    }
}

int eval_ppl_stream(eval_model *m, const int *tokens, int n, const eval_policy_cfg *pc,
                    const float *ref_logp, float *save_logp, eval_ppl_result *r,
                    char *err, size_t errlen)
{
    return eval_ppl_stream_seg(m, tokens, n, pc, ref_logp, save_logp, r, NULL, err, errlen);
}

int eval_ppl_stream_seg(eval_model *m, const int *tokens, int n, const eval_policy_cfg *pc,
                        const float *ref_logp, float *save_logp, eval_ppl_result *r,
                        eval_ppl_segments *seg, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (seg) memset(seg, 0, sizeof *seg);
    if (n < 2) {
        snprintf(err, errlen, "perplexity stream of %d tokens: need at least 2", n);
        return -1;
    }
    int vocab = m->w.cfg.vocab_size;
    int chunk = pc->prefill_chunk > 1 ? (pc->prefill_chunk < n - 1 ? pc->prefill_chunk : n - 1) : 1;
    kv_cache kv;
    engine eng;
    memset(&eng, 0, sizeof eng);
    int rc = -1;
    float *scratch = malloc((size_t)vocab * sizeof *scratch);
    float *rows = chunk > 1 ? malloc((size_t)chunk * vocab * sizeof *rows) : NULL;
    if (!scratch || (chunk > 1 && !rows)) {
        free(scratch);
        free(rows);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* one token then n - 1 steps; chunked: n - 1 prompt tokens (the last token is never fed) */
    if ((chunk > 1 ? eval_kv_init(m, &kv, pc, n - 1, 1, err, errlen)
                   : eval_kv_init(m, &kv, pc, 1, n - 1, err, errlen)) != 0) {
        free(scratch);
        free(rows);
        return -1;
    }
    if (engine_init(&eng, &m->w, &kv, chunk, m->threads, err, errlen) != 0) goto done;
    r->n_pred = n - 1;
    double t0 = eval_now_s();
    if (chunk > 1) {
        for (int off = 0; off < n - 1; off += chunk) {
            int c = n - 1 - off < chunk ? n - 1 - off : chunk;
            if (engine_prefill(&eng, tokens + off, c, off, rows, err, errlen) != 0) goto done;
            for (int i = 0; i < c; i++) {
                int t = off + i;
                size_t row = (size_t)t * vocab;
                score_step(rows + (size_t)i * vocab, vocab, tokens[t + 1], ref_logp ? ref_logp + row : NULL,
                           save_logp ? save_logp + row : NULL, scratch, r, seg, t / EVAL_PPL_SEG);
            }
        }
        r->ms = (eval_now_s() - t0) * 1e3;
        eval_kv_report(&kv, n - 1, 0, &r->kv);
        rc = 0;
        goto done;
    }
    if (engine_prefill(&eng, tokens, 1, 0, NULL, err, errlen) != 0) goto done;
    for (int t = 0; t < n - 1; t++) {
        if (t > 0 && engine_decode(&eng, tokens[t], t, err, errlen) != 0) goto done;
        size_t row = (size_t)t * vocab;
        score_step(eng.logits, vocab, tokens[t + 1], ref_logp ? ref_logp + row : NULL,
                   save_logp ? save_logp + row : NULL, scratch, r, seg, t / EVAL_PPL_SEG);
    }
    r->ms = (eval_now_s() - t0) * 1e3;
    /* the full cache holds 1 + t tokens after step t: n - 1 at the end, n/2 on average */
    eval_kv_report(&kv, 1, n - 2, &r->kv);   /* one token, then n - 2 steps: full n - 1, average 1 + (n - 2) / 2 */
    rc = 0;
done:
    free(scratch);
    free(rows);
    engine_free(&eng);
    kv_free(&kv);
    return rc;
}

int eval_forced(eval_model *m, const int *prompt, int n_prompt, const int *cont, int n_cont,
                const eval_policy_cfg *pc, const float *ref_logp, float *save_logp,
                eval_ppl_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (n_prompt < 1 || n_cont < 1) {
        snprintf(err, errlen, "teacher forcing: empty prompt or continuation");
        return -1;
    }
    int vocab = m->w.cfg.vocab_size;
    int chunk = pc->prefill_chunk > 0 && pc->prefill_chunk < n_prompt ? pc->prefill_chunk : n_prompt;
    kv_cache kv;
    engine eng;
    memset(&eng, 0, sizeof eng);
    int rc = -1;
    float *scratch = malloc((size_t)vocab * sizeof *scratch);
    if (!scratch) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (eval_kv_init(m, &kv, pc, n_prompt, n_cont, err, errlen) != 0) {
        free(scratch);
        return -1;
    }
    if (engine_init(&eng, &m->w, &kv, chunk, m->threads, err, errlen) != 0) goto done;
    r->n_pred = n_cont;
    double t0 = eval_now_s();
    for (int off = 0; off < n_prompt; off += chunk) {
        int c = n_prompt - off < chunk ? n_prompt - off : chunk;
        if (engine_prefill(&eng, prompt + off, c, off, NULL, err, errlen) != 0) goto done;
    }
    for (int t = 0; t < n_cont; t++) {
        if (t > 0 && engine_decode(&eng, cont[t - 1], n_prompt + t - 1, err, errlen) != 0) goto done;
        size_t row = (size_t)t * vocab;
        score_step(eng.logits, vocab, cont[t], ref_logp ? ref_logp + row : NULL,
                   save_logp ? save_logp + row : NULL, scratch, r, NULL, 0);
    }
    r->ms = (eval_now_s() - t0) * 1e3;
    eval_kv_report(&kv, n_prompt, n_cont - 1, &r->kv);
    rc = 0;
done:
    free(scratch);
    engine_free(&eng);
    kv_free(&kv);
    return rc;
}
