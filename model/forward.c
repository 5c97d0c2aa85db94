/* The LLaMA forward pass: prefill (a chunk of tokens as matrix-matrix products) and decode
 * (one token). Every KV write and attention read goes through eviction/ (kv_cache).
 *
 * Per layer: rmsnorm → q,k,v → RoPE → KV write (policy) → attention (+ requested statistics)
 * → o-proj → residual → rmsnorm → SwiGLU MLP → residual. Then final norm → LM head. */
#include "model/model.h"

#include "eviction/eviction.h"
#include "kernels/kernels.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOC(ptr, count)                                                                      \
    do {                                                                                       \
        (ptr) = calloc((size_t)(count) > 0 ? (size_t)(count) : 1, sizeof *(ptr));              \
        if (!(ptr)) goto oom;                                                                  \
    } while (0)

int engine_init(engine *e, const model_weights *w, kv_cache *kv, int max_chunk, int n_threads,
                char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    const model_config *c = &w->cfg;
    e->w = w;
    e->kv = kv;
    e->max_chunk = max_chunk < 1 ? 1 : max_chunk;
    e->n_threads = n_threads < 1 ? 1 : n_threads;
    int dim = c->hidden_size, hd = c->head_dim, qdim = c->n_heads * hd, kvdim = c->n_kv_heads * hd;
    int ffn = c->intermediate_size, M = e->max_chunk;
    int max_cap = 0;
    for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++)
        if (kv->cap[i] > max_cap) max_cap = kv->cap[i];
    e->probs_stride = max_cap + 1;
    e->cand_stride = max_cap + M;
    ALLOC(e->x, dim);
    ALLOC(e->xb, dim);
    ALLOC(e->q, qdim);
    ALLOC(e->k, kvdim);
    ALLOC(e->v, kvdim);
    ALLOC(e->att, qdim);
    ALLOC(e->hb, ffn);
    ALLOC(e->hb2, ffn);
    ALLOC(e->logits, c->vocab_size);
    ALLOC(e->probs, (size_t)c->n_heads * e->probs_stride);
    ALLOC(e->rope_cos, (size_t)M * hd / 2);
    ALLOC(e->rope_sin, (size_t)M * hd / 2);
    ALLOC(e->px, (size_t)M * dim);
    ALLOC(e->pxb, (size_t)M * dim);
    ALLOC(e->pq, (size_t)M * qdim);
    ALLOC(e->pk, (size_t)M * kvdim);
    ALLOC(e->pv, (size_t)M * kvdim);
    ALLOC(e->patt, (size_t)M * qdim);
    ALLOC(e->phb, (size_t)M * ffn);
    ALLOC(e->phb2, (size_t)M * ffn);
    ALLOC(e->att_scratch, (size_t)e->n_threads * e->cand_stride);
    if (kv->ops->stats & KV_STAT_PREFILL_COLSUM) {
        ALLOC(e->colsum, (size_t)c->n_heads * e->cand_stride);
        ALLOC(e->colsum_kv, (size_t)c->n_kv_heads * e->cand_stride);
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory allocating the run state (prefill chunk %d tokens)", M);
    engine_free(e);
    return -1;
}

void engine_free(engine *e)
{
    float *bufs[] = {e->x,    e->xb,  e->q,   e->k,   e->v,    e->att,  e->hb,
                     e->hb2,  e->logits, e->probs, e->rope_cos, e->rope_sin, e->px, e->pxb,
                     e->pq,   e->pk,  e->pv,  e->patt, e->phb, e->phb2, e->colsum,
                     e->colsum_kv, e->att_scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    memset(e, 0, sizeof *e);
}

/* Final norm and LM head for n rows of x → logits [n][vocab]. */
static void lm_head(engine *e, const float *x, int n, float *logits)
{
    const model_config *c = &e->w->cfg;
    rmsnorm(e->pxb, x, &e->w->final_norm, n, c->hidden_size, c->rms_norm_eps);
    matmul(logits, e->pxb, &e->w->lm_head, n);
}

/* The MLP block with residual for n rows: x += W_down(silu(W_gate h) * W_up h), h = norm(x). */
static void mlp_block(const model_config *c, const layer_weights *lw, float *x, float *xb,
                      float *hb, float *hb2, int n)
{
    rmsnorm(xb, x, &lw->ffn_norm, n, c->hidden_size, c->rms_norm_eps);
    matmul(hb, xb, &lw->w_gate, n);
    matmul(hb2, xb, &lw->w_up, n);
    swiglu(hb, hb2, (size_t)n * c->intermediate_size);
    matmul(xb, hb, &lw->w_down, n);
    add_inplace(x, xb, (size_t)n * c->hidden_size);
}

int engine_prefill(engine *e, const int *tokens, int n, int pos0, float *logits_all, char *err,
                   size_t errlen)
{
    const model_config *c = &e->w->cfg;
    kv_cache *kv = e->kv;
    if (n < 1 || n > e->max_chunk) {
        snprintf(err, errlen, "prefill: %d tokens, the run state holds 1..%d", n, e->max_chunk);
        return -1;
    }
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads;
    const int G = H / Hkv, qdim = H * hd, kvdim = Hkv * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    const int want_colsum = (kv->ops->stats & KV_STAT_PREFILL_COLSUM) != 0;

    /* embedding lookup */
    const float *emb = (const float *)e->w->embed.data;
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size) {
            snprintf(err, errlen, "token id %d out of range [0, %d)", tokens[i], c->vocab_size);
            return -1;
        }
        memcpy(e->px + (size_t)i * dim, emb + (size_t)tokens[i] * dim, (size_t)dim * sizeof(float));
    }
    int *pos = malloc((size_t)n * sizeof *pos);
    if (!pos) {
        snprintf(err, errlen, "prefill: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) pos[i] = pos0 + i;
    rope_tables(e->rope_cos, e->rope_sin, pos, n, hd, c->rope_theta, c->rope_scaling_factor);
    free(pos);

    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *lw = &e->w->layers[l];
        /* qkv matmuls for the whole chunk, then RoPE at each token's position */
        rmsnorm(e->pxb, e->px, &lw->attn_norm, n, dim, c->rms_norm_eps);
        matmul(e->pq, e->pxb, &lw->wq, n);
        matmul(e->pk, e->pxb, &lw->wk, n);
        matmul(e->pv, e->pxb, &lw->wv, n);
        rope_apply(e->pq, n, H, hd, e->rope_cos, e->rope_sin);
        rope_apply(e->pk, n, Hkv, hd, e->rope_cos, e->rope_sin);

        /* exact causal attention over the live cache + the chunk, per query head */
        if (want_colsum) memset(e->colsum, 0, (size_t)H * e->cand_stride * sizeof(float));
#pragma omp parallel for schedule(dynamic, 1)
        for (int h = 0; h < H; h++) {
            int g = h / G;
            float *scratch = e->att_scratch + (size_t)omp_get_thread_num() * e->cand_stride;
            attn_prefill_head(e->pq + (size_t)h * hd, qdim, kv_keys(kv, l, g), kv_values(kv, l, g),
                              kv_len(kv, l, g), e->pk + (size_t)g * hd, e->pv + (size_t)g * hd,
                              kvdim, n, hd, scale, e->patt + (size_t)h * hd, qdim,
                              want_colsum ? e->colsum + (size_t)h * e->cand_stride : NULL, scratch);
        }
        kv_prefill_chunk chunk = {.layer = l, .n_new = n, .pos0 = pos0, .q_new = e->pq, .k_new = e->pk,
                                  .v_new = e->pv, .colsum = NULL, .cand_stride = e->cand_stride};
        if (want_colsum) {
            /* GQA: sum the statistics over the G query heads of each KV head (fixed order) */
            for (int g = 0; g < Hkv; g++) {
                float *dst = e->colsum_kv + (size_t)g * e->cand_stride;
                memcpy(dst, e->colsum + (size_t)g * G * e->cand_stride, e->cand_stride * sizeof(float));
                for (int r = 1; r < G; r++)
                    add_inplace(dst, e->colsum + (size_t)(g * G + r) * e->cand_stride, e->cand_stride);
            }
            chunk.colsum = e->colsum_kv;
        }
        if (kv_prefill(kv, &chunk, err, errlen) != 0) return -1;

        /* output projection and residual, then the MLP */
        matmul(e->pxb, e->patt, &lw->wo, n);
        add_inplace(e->px, e->pxb, (size_t)n * dim);
        mlp_block(c, lw, e->px, e->pxb, e->phb, e->phb2, n);
    }
    kv_sample_stats(kv);

    if (logits_all) {
        lm_head(e, e->px, n, logits_all);
        memcpy(e->logits, logits_all + (size_t)(n - 1) * c->vocab_size,
               (size_t)c->vocab_size * sizeof(float));
    } else {
        lm_head(e, e->px + (size_t)(n - 1) * dim, 1, e->logits);
    }
    return 0;
}

int engine_decode(engine *e, int token, int pos, char *err, size_t errlen)
{
    const model_config *c = &e->w->cfg;
    kv_cache *kv = e->kv;
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads;
    const int G = H / Hkv;
    const float scale = 1.0f / sqrtf((float)hd);
    const int want_probs = (kv->ops->stats & KV_STAT_DECODE_PROBS) != 0;
    if (token < 0 || token >= c->vocab_size) {
        snprintf(err, errlen, "token id %d out of range [0, %d)", token, c->vocab_size);
        return -1;
    }
    memcpy(e->x, (const float *)e->w->embed.data + (size_t)token * dim, (size_t)dim * sizeof(float));
    rope_tables(e->rope_cos, e->rope_sin, &pos, 1, hd, c->rope_theta, c->rope_scaling_factor);

    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *lw = &e->w->layers[l];
        /* qkv matmuls for this position, RoPE */
        rmsnorm(e->xb, e->x, &lw->attn_norm, 1, dim, c->rms_norm_eps);
        matmul(e->q, e->xb, &lw->wq, 1);
        matmul(e->k, e->xb, &lw->wk, 1);
        matmul(e->v, e->xb, &lw->wv, 1);
        rope_apply(e->q, 1, H, hd, e->rope_cos, e->rope_sin);
        rope_apply(e->k, 1, Hkv, hd, e->rope_cos, e->rope_sin);

        /* the policy says where the new K/V go (append, or over a victim) */
        for (int g = 0; g < Hkv; g++) {
            int slot = kv_decode_slot(kv, l, g, pos, e->q + (size_t)g * G * hd, e->k + (size_t)g * hd,
                                      e->v + (size_t)g * hd);
            kv_write(kv, l, g, slot, pos, e->k + (size_t)g * hd, e->v + (size_t)g * hd);
        }
        /* attention over the live slots of each head's KV group */
#pragma omp parallel for schedule(static)
        for (int h = 0; h < H; h++) {
            int g = h / G;
            attn_decode_head(e->q + (size_t)h * hd, kv_keys(kv, l, g), kv_values(kv, l, g),
                             kv_len(kv, l, g), hd, scale, e->probs + (size_t)h * e->probs_stride,
                             e->att + (size_t)h * hd);
        }
        /* eviction after attention (attend-then-evict policies) */
        for (int g = 0; g < Hkv; g++)
            kv_post_attn(kv, l, g, pos, want_probs ? e->probs + (size_t)g * G * e->probs_stride : NULL,
                         e->probs_stride);

        matmul(e->xb, e->att, &lw->wo, 1);
        add_inplace(e->x, e->xb, dim);
        mlp_block(c, lw, e->x, e->xb, e->hb, e->hb2, 1);
    }
    kv_sample_stats(kv);
    lm_head(e, e->x, 1, e->logits);
    return 0;
}
