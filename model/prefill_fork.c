/* prefill_fork.c — a whole-prompt prefill computed once and replayed into the caches of other
 * policies (issue 16, "where prefill is identical across runs, compute it once per example and
 * fork"). In one pass over an empty cache, a layer's hidden states depend only on the prompt:
 * the chunk attends to itself, and the policy acts only after the layer's attention (kv_prefill)
 * on what it is handed (kv_prefill_chunk: post-RoPE queries, K/V rounded to the cache's dtype,
 * the attention column sums). So recording that per layer, plus the last logits row, lets a
 * second policy's cache be filled by calling kv_prefill with the same arguments, without the
 * matrix products: the results are the same bits as a prefill of its own
 * (tests/test_prefill_fork.c compares every policy). Not forkable (engine_prefill_forkable):
 * a chunked prefill, --rope shifted (the chunk's keys are rotated by rank in the cache), a
 * policy that rescales the attention (logit_scale: buzz_logn), the GPU engine. */
#include "model/internal.h"
#include "eviction/eviction.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prefill_record {
    int n, n_layers, qdim, kvdim, n_kv_heads, vocab;
    dtype_t kv_dtype;
    int *tokens;              /* [n] the prompt, so a replay onto other tokens is refused */
    float *q, *k, *v;         /* per layer [n][qdim], [n][kvdim], [n][kvdim] */
    float *colsum;            /* per layer [n_kv_heads][n] */
    float *logits;            /* [vocab] after the last prompt token */
    int layers_done;
    double seconds;           /* the recorded prefill's wall time */
};

double prefill_record_seconds(const prefill_record *r) { return r ? r->seconds : 0; }

size_t prefill_record_bytes(const engine *e, int n)
{
    const model_config *c = &e->w->cfg;
    size_t qdim = (size_t)c->n_heads * c->head_dim, kvdim = (size_t)c->n_kv_heads * c->head_dim;
    return (size_t)c->n_layers * (size_t)n * (qdim + 2 * kvdim + (size_t)c->n_kv_heads) * sizeof(float) +
           (size_t)c->vocab_size * sizeof(float) + (size_t)n * sizeof(int);
}

int engine_prefill_forkable(const engine *e, int n)
{
    const kv_cache *kv = e->kv;
    if (e->dev || e->shifted || n < 1 || n > e->max_chunk || kv->ops->logit_scale) return 0;
    for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++)
        if (kv->len[i] != 0) return 0;
    return 1;
}

/* engine_prefill's hook: what layer l handed the policy (colsum_kv [n_kv_heads][cand_stride]
 * computed whatever the policy needs while recording). */
void prefill_record_layer(prefill_record *r, int l, const float *q, const float *k, const float *v,
                          const float *colsum_kv, int cand_stride)
{
    size_t n = (size_t)r->n;
    memcpy(r->q + (size_t)l * n * r->qdim, q, n * r->qdim * sizeof(float));
    memcpy(r->k + (size_t)l * n * r->kvdim, k, n * r->kvdim * sizeof(float));
    memcpy(r->v + (size_t)l * n * r->kvdim, v, n * r->kvdim * sizeof(float));
    for (int g = 0; g < r->n_kv_heads; g++)
        memcpy(r->colsum + ((size_t)l * r->n_kv_heads + g) * n, colsum_kv + (size_t)g * cand_stride,
               n * sizeof(float));
    r->layers_done = l + 1;
}

void prefill_record_free(prefill_record *r)
{
    if (!r) return;
    free(r->tokens);
    free(r->q);
    free(r->k);
    free(r->v);
    free(r->colsum);
    free(r->logits);
    free(r);
}

int engine_prefill_record(engine *e, const int *tokens, int n, prefill_record **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    if (!engine_prefill_forkable(e, n)) return model_fail(err, errlen, "prefill record: this prefill depends on the policy (not forkable)");
    const model_config *c = &e->w->cfg;
    prefill_record *r = calloc(1, sizeof *r);
    if (!r) return model_fail(err, errlen, "out of memory");
    r->n = n;
    r->n_layers = c->n_layers;
    r->qdim = c->n_heads * c->head_dim;
    r->kvdim = c->n_kv_heads * c->head_dim;
    r->n_kv_heads = c->n_kv_heads;
    r->vocab = c->vocab_size;
    r->kv_dtype = e->kv->kv_dtype;
    size_t L = (size_t)c->n_layers, N = (size_t)n;
    r->tokens = malloc(N * sizeof *r->tokens);
    r->q = malloc(L * N * r->qdim * sizeof(float));
    r->k = malloc(L * N * r->kvdim * sizeof(float));
    r->v = malloc(L * N * r->kvdim * sizeof(float));
    r->colsum = malloc(L * N * r->n_kv_heads * sizeof(float));
    r->logits = malloc((size_t)r->vocab * sizeof(float));
    if (!r->tokens || !r->q || !r->k || !r->v || !r->colsum || !r->logits) {
        prefill_record_free(r);
        return model_fail(err, errlen, "out of memory (prefill record of %zu MiB)", prefill_record_bytes(e, n) >> 20);
    }
    memcpy(r->tokens, tokens, N * sizeof *r->tokens);
    if (!e->colsum) {   /* engine_init sized them only for a policy that reads them */
        e->colsum = malloc((size_t)c->n_heads * e->cand_stride * sizeof(float));
        e->colsum_kv = malloc((size_t)c->n_kv_heads * e->cand_stride * sizeof(float));
        if (!e->colsum || !e->colsum_kv) {
            prefill_record_free(r);
            return model_fail(err, errlen, "out of memory");
        }
    }
    e->record = r;
    double t0 = model_now_s();
    int rc = engine_prefill(e, tokens, n, 0, NULL, err, errlen);
    r->seconds = model_now_s() - t0;
    e->record = NULL;
    if (rc != 0 || r->layers_done != r->n_layers) {
        prefill_record_free(r);
        return rc != 0 ? rc : model_fail(err, errlen, "prefill record: incomplete");
    }
    memcpy(r->logits, e->logits, (size_t)r->vocab * sizeof(float));
    *out = r;
    return 0;
}

int prefill_record_matches(const prefill_record *r, const engine *e, const int *tokens, int n)
{
    const model_config *c = &e->w->cfg;
    return r && r->n == n && r->n_layers == c->n_layers && r->vocab == c->vocab_size &&
           r->qdim == c->n_heads * c->head_dim && r->kvdim == c->n_kv_heads * c->head_dim &&
           r->kv_dtype == e->kv->kv_dtype && !memcmp(r->tokens, tokens, (size_t)n * sizeof *tokens) &&
           engine_prefill_forkable(e, n);
}

int engine_prefill_replay(engine *e, const prefill_record *r, const int *tokens, int n, char *err,
                          size_t errlen)
{
    if (!prefill_record_matches(r, e, tokens, n))
        return model_fail(err, errlen, "prefill replay: the record is of another prompt, model or cache dtype, or this run is not forkable");
    kv_cache *kv = e->kv;
    const int want_colsum = (kv->ops->stats & KV_STAT_PREFILL_COLSUM) != 0 && !kv->passthrough;
    size_t N = (size_t)n;
    for (int l = 0; l < r->n_layers; l++) {
        kv_prefill_chunk chunk = {.layer = l, .n_new = n, .pos0 = 0,
                                  .q_new = r->q + (size_t)l * N * r->qdim,
                                  .k_new = r->k + (size_t)l * N * r->kvdim,
                                  .v_new = r->v + (size_t)l * N * r->kvdim,
                                  .colsum = want_colsum ? r->colsum + (size_t)l * N * r->n_kv_heads : NULL,
                                  .cand_stride = n};
        if (kv_prefill(kv, &chunk, err, errlen) != 0) return -1;
    }
    kv_sample_stats(kv);
    memcpy(e->logits, r->logits, (size_t)r->vocab * sizeof(float));
    return 0;
}
