/* ppl_chunks.c — llama.cpp's perplexity protocol (tools/perplexity/perplexity.cpp perplexity(),
 * the figure llama-perplexity prints): the token stream cut into chunks of n_ctx, each run from
 * an empty cache with its first token replaced by BOS when the model adds one, and only the
 * second half of each chunk scored (positions n_ctx/2 .. n_ctx-2 predict the next token, so each
 * prediction has at least n_ctx/2 tokens of context). The NLL of a token is llama.cpp's
 * log_softmax: max over the float row, Σ expf(l − max) in double. Perplexity = exp(mean NLL),
 * its uncertainty exp(mean)·sqrt((mean of NLL² − mean²) / (count − 1)) as llama.cpp prints it. */
#include "eval/runner.h"
#include "eval/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eval_ppl_chunks(eval_model *m, const int *tokens, int n, int n_ctx, int n_chunks, const eval_policy_cfg *pc,
                    eval_ppl_chunk_fn on_chunk, void *ud, eval_ppl_chunks_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (n_ctx < 4) {
        snprintf(err, errlen, "perplexity: a context of %d tokens (need at least 4)", n_ctx);
        return -1;
    }
    if (n < 2 * n_ctx) {
        snprintf(err, errlen, "perplexity: the text is %d tokens; a context of %d needs at least %d (2 chunks)", n,
                 n_ctx, 2 * n_ctx);
        return -1;
    }
    const int n_max = n / n_ctx, vocab = m->w.cfg.vocab_size, first = n_ctx / 2;
    const int chunk = pc->prefill_chunk > 0 && pc->prefill_chunk < n_ctx ? pc->prefill_chunk : n_ctx;
    const int bos = eval_model_add_bos(m) ? eval_model_bos(m) : -1;
    r->n_chunks = n_chunks > 0 && n_chunks < n_max ? n_chunks : n_max;
    r->n_ctx = n_ctx;
    int *ids = malloc((size_t)n_ctx * sizeof *ids);
    float *rows = malloc((size_t)n_ctx * vocab * sizeof *rows);
    if (!ids || !rows) {
        free(ids);
        free(rows);
        snprintf(err, errlen, "perplexity: out of memory for %d rows of %d logits", n_ctx, vocab);
        return -1;
    }
    double nll = 0.0, nll2 = 0.0, t0 = eval_now_s();
    int rc = -1;
    for (int c = 0; c < r->n_chunks; c++) {
        memcpy(ids, tokens + (size_t)c * n_ctx, (size_t)n_ctx * sizeof *ids);
        if (bos >= 0) ids[0] = bos;
        kv_cache kv;
        engine eng;
        memset(&eng, 0, sizeof eng);
        if (eval_kv_init(m, &kv, pc, n_ctx, 1, err, errlen) != 0) goto done;
        int ok = engine_init(&eng, &m->w, &kv, chunk, m->threads, err, errlen) == 0;
        for (int off = 0; ok && off < n_ctx; off += chunk) {
            const int k = n_ctx - off < chunk ? n_ctx - off : chunk;
            ok = engine_prefill(&eng, ids + off, k, off, off + k > first ? rows + (size_t)off * vocab : NULL, err,
                                errlen) == 0;
        }
        if (ok) eval_kv_report(&kv, n_ctx, 0, &r->kv);
        engine_free(&eng);
        kv_free(&kv);
        if (!ok) goto done;
        for (int j = first; j < n_ctx - 1; j++) {
            const float *l = rows + (size_t)j * vocab;
            float mx = l[0];
            for (int v = 1; v < vocab; v++) mx = fmaxf(mx, l[v]);
            double sum = 0.0;
            for (int v = 0; v < vocab; v++) sum += (double)expf(l[v] - mx);
            const double x = -((double)(l[tokens[(size_t)c * n_ctx + j + 1]] - mx) - log(sum));
            nll += x;
            nll2 += x * x;
        }
        r->count += n_ctx - 1 - first;
        r->ppl = exp(nll / r->count);
        if (on_chunk) on_chunk(ud, c, r->n_chunks, r->ppl, eval_now_s() - t0);
    }
    const double mean = nll / r->count, var = nll2 / r->count - mean * mean;
    r->ppl = exp(mean);
    r->ppl_err = var > 0 && r->count > 1 ? sqrt(var / (r->count - 1)) * r->ppl : NAN;
    r->nll_mean = mean;
    r->seconds = eval_now_s() - t0;
    rc = 0;
done:
    free(ids);
    free(rows);
    return rc;
}
