/* The LLaMA forward pass: prefill (a chunk of tokens as matrix-matrix products) and decode
 * (one token). Every KV write and attention read goes through eviction/ (kv_cache).
 *
 * Per layer: rmsnorm → q,k,v → RoPE → KV write (policy) → attention (+ requested statistics)
 * → o-proj → residual → rmsnorm → SwiGLU MLP → residual. Then final norm → LM head.
 *
 * Prefill and decode kept side by side: they share the engine's buffers and the shifted-RoPE
 * helpers, and reading the two passes together is how one checks that they compute the same
 * layer (the tests compare their logits bit for bit). The decode thread count of each step is
 * decode_threads.c's, the decode attention's thread split decode_attn.c's. */
#include "model/model.h"
#include "model/internal.h"

#include "eviction/eviction.h"
#include "model/cuda/cuda_engine.h"
#include "kernels/kernels.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOC(ptr, count)                                                                      \
    do {                                                                                       \
        (ptr) = model_alloc64((size_t)(count), sizeof *(ptr));  /* util.c */                                       \
        if (!(ptr)) goto oom;                                                                  \
    } while (0)

dtype_t model_kv_dtype_default(const model_weights *w)
{
    return w->cfg.n_layers > 0 && w->layers && w->layers[0].wk.dtype == DT_F32 ? DT_F32 : DT_F16;
}

int engine_init(engine *e, const model_weights *w, kv_cache *kv, int max_chunk, int n_threads,
                char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    const model_config *c = &w->cfg;
    e->next = -1;
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
    /* a layer's attention buffers are dead once kv_prefill has stored the chunk's K/V and the
     * output projection has read patt, before the MLP writes phb/phb2: one allocation for both
     * phases (stories110M at 512 tokens: 8 MiB instead of 11) */
    size_t att_phase = (size_t)M * (2 * (size_t)qdim + 2 * (size_t)kvdim), mlp_phase = (size_t)M * 2 * (size_t)ffn;
    ALLOC(e->p_phase, att_phase > mlp_phase ? att_phase : mlp_phase);
    e->pq = e->p_phase;
    e->pk = e->pq + (size_t)M * qdim;
    e->pv = e->pk + (size_t)M * kvdim;
    e->patt = e->pv + (size_t)M * kvdim;
    e->phb = e->p_phase;
    e->phb2 = e->phb + (size_t)M * ffn;
    ALLOC(e->att_scratch, (size_t)e->n_threads * attn_prefill_scratch_floats(hd));
    ALLOC(e->pos_buf, M);
    e->shifted = kv->params.rope_shifted;
    if (e->shifted) {
        /* --rope shifted: keys are stored before RoPE and rotated by their rank in the cache
         * (POLICIES.md §1.7); ranks never exceed capacity + chunk */
        e->n_rank = max_cap + M + 1;
        ALLOC(e->rank_cos, (size_t)e->n_rank * hd / 2);
        ALLOC(e->rank_sin, (size_t)e->n_rank * hd / 2);
        ALLOC(e->rank_idx, (size_t)max_cap + 1);
        ALLOC(e->kr_live, (size_t)c->n_kv_heads * (max_cap + 1) * hd);
        ALLOC(e->kr_new, (size_t)c->n_kv_heads * M * hd);
        int *ranks = malloc((size_t)e->n_rank * sizeof *ranks);
        if (!ranks) goto oom;
        for (int r = 0; r < e->n_rank; r++) ranks[r] = r;
        rope_tables_freq(e->rank_cos, e->rank_sin, ranks, e->n_rank, hd, c->rope_theta, c->rope_scaling_factor,
                         c->n_rope_factors ? c->rope_factors : NULL);
        free(ranks);
    }
    if ((kv->ops->stats & KV_STAT_PREFILL_COLSUM) && !kv->passthrough) {
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
    if (e->dev) cuda_engine_free(e->dev); /* --device cuda */
    float *bufs[] = {e->x,    e->xb,  e->q,   e->k,   e->v,    e->att,  e->hb,
                     e->hb2,  e->logits, e->probs, e->rope_cos, e->rope_sin, e->px, e->pxb,
                     e->p_phase, e->colsum,
                     e->colsum_kv, e->att_scratch, e->rank_cos, e->rank_sin, e->kr_live, e->kr_new};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(e->pos_buf);
    free(e->rank_idx);
    memset(e, 0, sizeof *e);
}

/* Rotates n head vectors x [n][head_dim] (stride `stride` floats) by RoPE at rank r0 + i. */
static void rotate_ranks(const engine *e, float *x, int n, int stride, int r0)
{
    int hd = e->w->cfg.head_dim, half = hd / 2;
    for (int i = 0; i < n; i++)
        rope_apply(x + (size_t)i * stride, 1, 1, hd, e->rank_cos + (size_t)(r0 + i) * half,
                   e->rank_sin + (size_t)(r0 + i) * half);
}

static int cmp_pos_idx(const void *a, const void *b, void *ctx)
{
    const int32_t *pos = ctx;
    return pos[*(const int *)a] - pos[*(const int *)b];
}

/* --rope shifted: dst [len][head_dim] f32 = the live keys of (l, g) (widened from the cache's
 * dtype) rotated by their rank in position order. Slots are usually already in position order
 * (rank = slot). */
static void rotated_live_keys(engine *e, int l, int g, float *dst)
{
    kv_cache *kv = e->kv;
    int n = kv_len(kv, l, g), hd = kv->head_dim, half = hd / 2;
    const int32_t *pos = kv_positions(kv, l, g);
    widen_elems(kv->kv_dtype, kv_key_data(kv, l, g), dst, (size_t)n * hd);
    int sorted = 1;
    for (int j = 1; j < n && sorted; j++) sorted = pos[j] > pos[j - 1];
    if (sorted) {
        rotate_ranks(e, dst, n, hd, 0);
        return;
    }
    for (int j = 0; j < n; j++) e->rank_idx[j] = j;
    qsort_r(e->rank_idx, (size_t)n, sizeof(int), cmp_pos_idx, (void *)pos);
    for (int r = 0; r < n; r++)
        rope_apply(dst + (size_t)e->rank_idx[r] * hd, 1, 1, hd, e->rank_cos + (size_t)r * half,
                   e->rank_sin + (size_t)r * half);
}

/* Final norm and LM head for n rows of x → logits [n][vocab]. */
static void lm_head(engine *e, const float *x, int n, float *logits)
{
    const model_config *c = &e->w->cfg;
    rmsnorm(e->pxb, x, &e->w->final_norm, n, c->hidden_size, c->rms_norm_eps);
    matmul(logits, e->pxb, &e->w->lm_head, n);
}

/* Decode: tells the next product which matrices follow it (matmul_next_hint): product p of
 * layer l in decode order, 0 q/k/v, 1 o, 2 gate/up, 3 down (p = 4: the next layer's q/k/v, the
 * LM head after the last layer's down; l = -1: layer 0's q/k/v, after the LM head). */
static void hint_next(const model_weights *w, int l, int p)
{
    if (p == 4) l++, p = 0;
    if (l >= w->cfg.n_layers) {
        matmul_next_hint((const weight_t *const[]){&w->lm_head}, 1);
        return;
    }
    const layer_weights *lw = &w->layers[l < 0 ? 0 : l];
    const weight_t *m[3] = {&lw->wq, &lw->wk, &lw->wv};
    int k = 3;
    if (p == 1) m[0] = &lw->wo, k = 1;
    if (p == 2) m[0] = &lw->w_gate, m[1] = &lw->w_up, k = 2;
    if (p == 3) m[0] = &lw->w_down, k = 1;
    matmul_next_hint(m, k);
}

/* The MLP block with residual for n rows: x += W_down(silu(W_gate h) * W_up h), h = norm(x).
 * mw: decode (n = 1) of layer l of mw, hinted (hint_next); NULL: no hints. */
static void mlp_block(const model_config *c, const layer_weights *lw, float *x, float *xb,
                      float *hb, float *hb2, int n, const model_weights *mw, int l)
{
    rmsnorm(xb, x, &lw->ffn_norm, n, c->hidden_size, c->rms_norm_eps);
    if (mw) hint_next(mw, l, 3);
    matmul_swiglu(hb, hb2, &lw->w_gate, &lw->w_up, xb, n);   /* hb = silu(W_gate h) * W_up h */
    if (mw) hint_next(mw, l, 4);
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
    for (int i = 0; e->dev && i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size) {
            snprintf(err, errlen, "token id %d out of range [0, %d)", tokens[i], c->vocab_size);
            return -1;
        }
    if (e->dev) { /* --device cuda: the logits row is copied, the host samples the first token */
        e->next = -1;
        return cuda_engine_prefill(e->dev, tokens, n, pos0, logits_all, e->logits, err, errlen);
    }
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads;
    const int G = H / Hkv, qdim = H * hd, kvdim = Hkv * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    /* the policy's column sums; a recorded prefill (prefill_fork.c) keeps them for any policy */
    const int policy_colsum = (kv->ops->stats & KV_STAT_PREFILL_COLSUM) != 0 && !kv->passthrough;
    const int want_colsum = policy_colsum || e->record;

    /* embedding lookup */
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size) {
            snprintf(err, errlen, "token id %d out of range [0, %d)", tokens[i], c->vocab_size);
            return -1;
        }
        widen_row(e->px + (size_t)i * dim, &e->w->embed, tokens[i]);
    }
    for (int i = 0; i < n; i++) e->pos_buf[i] = pos0 + i;
    if (!e->shifted)
        rope_tables_freq(e->rope_cos, e->rope_sin, e->pos_buf, n, hd, c->rope_theta, c->rope_scaling_factor,
                         c->n_rope_factors ? c->rope_factors : NULL);

    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *lw = &e->w->layers[l];
        /* qkv matmuls for the whole chunk */
        rmsnorm(e->pxb, e->px, &lw->attn_norm, n, dim, c->rms_norm_eps);
        float *qkv_out[3] = {e->pq, e->pk, e->pv};
        const weight_t *qkv_w[3] = {&lw->wq, &lw->wk, &lw->wv};
        matmul_multi(qkv_out, qkv_w, 3, e->pxb, n);
        if (lw->bq.data) {
            add_bias(e->pq, &lw->bq, n, H * hd);
            add_bias(e->pk, &lw->bk, n, kvdim);
            add_bias(e->pv, &lw->bv, n, kvdim);
        }
        /* RoPE: at each token's position (absolute), or by rank in the cache (shifted: the
         * cache keeps keys before RoPE; rotated copies feed the attention) */
        const float *K_new = e->pk;
        int k_stride = kvdim;
        /* a 16-bit cache: the chunk's K/V as the cache will store them (rounded to its dtype;
         * keys after RoPE, or before it when shifted), so the chunk attends to itself as a
         * later token attends to it, and the policies score what is kept */
        round_elems(kv->kv_dtype, e->pv, (size_t)n * kvdim);
        if (!e->shifted) {
            rope_apply(e->pq, n, H, hd, e->rope_cos, e->rope_sin);
            rope_apply(e->pk, n, Hkv, hd, e->rope_cos, e->rope_sin);
            round_elems(kv->kv_dtype, e->pk, (size_t)n * kvdim);
        } else {
            round_elems(kv->kv_dtype, e->pk, (size_t)n * kvdim);
            size_t live_stride = (size_t)(e->probs_stride) * hd;
            for (int g = 0; g < Hkv; g++) {
                int n_live = kv_len(kv, l, g);
                rotated_live_keys(e, l, g, e->kr_live + g * live_stride);
                float *kn = e->kr_new + (size_t)g * e->max_chunk * hd;
                for (int i = 0; i < n; i++)
                    memcpy(kn + (size_t)i * hd, e->pk + (size_t)i * kvdim + (size_t)g * hd, (size_t)hd * sizeof(float));
                rotate_ranks(e, kn, n, hd, n_live);
                for (int h = g * G; h < (g + 1) * G; h++) rotate_ranks(e, e->pq + (size_t)h * hd, n, qdim, n_live);
            }
            K_new = e->kr_new;
            k_stride = hd;
        }

        /* exact causal attention over the live cache + the chunk, per query head */
        if (want_colsum) memset(e->colsum, 0, (size_t)H * e->cand_stride * sizeof(float));
#pragma omp parallel for schedule(dynamic, 1) num_threads(e->n_threads)
        for (int h = 0; h < H; h++) {
            int g = h / G, n_live = kv_len(kv, l, g);
            float *scratch = e->att_scratch + (size_t)omp_get_thread_num() * attn_prefill_scratch_floats(hd);
            /* live keys: the cache's rows (its dtype), or the f32 rank-rotated copies */
            const void *K_live = e->shifted ? e->kr_live + (size_t)g * e->probs_stride * hd : kv_key_data(kv, l, g);
            dtype_t k_dt = e->shifted ? DT_F32 : kv->kv_dtype;
            const float *Kn = e->shifted ? K_new + (size_t)g * e->max_chunk * hd : K_new + (size_t)g * hd;
            float sc = scale * model_logit_factor(kv, n_live + n);
            attn_prefill_head(e->pq + (size_t)h * hd, qdim, K_live, k_dt, kv_value_data(kv, l, g),
                              kv->kv_dtype, n_live, Kn, k_stride, e->pv + (size_t)g * hd, kvdim, n, hd, sc,
                              e->patt + (size_t)h * hd, qdim,
                              want_colsum ? e->colsum + (size_t)h * e->cand_stride : NULL, scratch);
        }
        kv_prefill_chunk chunk = {.layer = l, .n_new = n, .pos0 = pos0, .q_new = e->pq, .k_new = e->pk,
                                  .v_new = e->pv, .colsum = NULL, .cand_stride = e->cand_stride};
        if (e->shifted) {
            chunk.k_live_rot = e->kr_live;
            chunk.rot_live_stride = e->probs_stride;
            chunk.k_new_rot = e->kr_new;
            chunk.rot_new_stride = e->max_chunk;
        }
        if (want_colsum) {
            /* GQA: sum the statistics over the G query heads of each KV head (fixed order) */
            for (int g = 0; g < Hkv; g++) {
                float *dst = e->colsum_kv + (size_t)g * e->cand_stride;
                memcpy(dst, e->colsum + (size_t)g * G * e->cand_stride, e->cand_stride * sizeof(float));
                for (int r = 1; r < G; r++)
                    add_inplace(dst, e->colsum + (size_t)(g * G + r) * e->cand_stride, e->cand_stride);
            }
            chunk.colsum = policy_colsum ? e->colsum_kv : NULL;
        }
        if (e->record) prefill_record_layer(e->record, l, e->pq, e->pk, e->pv, e->colsum_kv, e->cand_stride);
        if (kv_prefill(kv, &chunk, err, errlen) != 0) return -1;

        /* output projection and residual, then the MLP */
        matmul(e->pxb, e->patt, &lw->wo, n);
        if (lw->bo.data) add_bias(e->pxb, &lw->bo, n, dim);
        add_inplace(e->px, e->pxb, (size_t)n * dim);
        mlp_block(c, lw, e->px, e->pxb, e->phb, e->phb2, n, NULL, 0);
        if (e->on_layer) e->on_layer(e->on_layer_ctx, l, c->n_layers);
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

static int decode_cpu(engine *e, int token, int pos, int T);

int engine_decode(engine *e, int token, int pos, char *err, size_t errlen)
{
    const model_config *c = &e->w->cfg;
    if (token < 0 || token >= c->vocab_size) {
        snprintf(err, errlen, "token id %d out of range [0, %d)", token, c->vocab_size);
        return -1;
    }
    if (e->dev) /* --device cuda */
        return cuda_engine_decode(e->dev, token, pos, e->want_logits ? e->logits : NULL, &e->next,
                                  err, errlen);
    int T = decode_threads_begin(e), saved = omp_get_max_threads();
    if (T != saved) omp_set_num_threads(T);
    double t0 = model_now_s();
    int rc = decode_cpu(e, token, pos, T);
    decode_threads_end(e, T, model_now_s() - t0);
    if (T != saved) omp_set_num_threads(saved);
    return rc;
}

/* One decode step on the CPU with T threads. */
static int decode_cpu(engine *e, int token, int pos, int T)
{
    const model_config *c = &e->w->cfg;
    kv_cache *kv = e->kv;
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads;
    const int G = H / Hkv;
    const float scale = 1.0f / sqrtf((float)hd);
    const int want_probs = (kv->ops->stats & KV_STAT_DECODE_PROBS) != 0 && !kv->passthrough;
    widen_row(e->x, &e->w->embed, token);
    if (!e->shifted)
        rope_tables_freq(e->rope_cos, e->rope_sin, &pos, 1, hd, c->rope_theta, c->rope_scaling_factor,
                         c->n_rope_factors ? c->rope_factors : NULL);

    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *lw = &e->w->layers[l];
        /* qkv matmuls for this position, RoPE at the position (absolute mode) */
        rmsnorm(e->xb, e->x, &lw->attn_norm, 1, dim, c->rms_norm_eps);
        float *qkv_out[3] = {e->q, e->k, e->v};
        const weight_t *qkv_w[3] = {&lw->wq, &lw->wk, &lw->wv};
        hint_next(e->w, l, 1);
        if (!(kv->ops->attend && !kv->passthrough) && !e->shifted) model_decode_attention_hint(e, l, T);
        matmul_multi(qkv_out, qkv_w, 3, e->xb, 1);
        if (lw->bq.data) {
            add_bias(e->q, &lw->bq, 1, H * hd);
            add_bias(e->k, &lw->bk, 1, Hkv * hd);
            add_bias(e->v, &lw->bv, 1, Hkv * hd);
        }
        if (!e->shifted) {
            rope_apply(e->q, 1, H, hd, e->rope_cos, e->rope_sin);
            rope_apply(e->k, 1, Hkv, hd, e->rope_cos, e->rope_sin);
        }
        /* a 16-bit cache: the new K/V as it will store them (the policy hooks see that) */
        round_elems(kv->kv_dtype, e->k, (size_t)Hkv * hd);
        round_elems(kv->kv_dtype, e->v, (size_t)Hkv * hd);

        /* the policy says where the new K/V go (append, or over a victim) */
        for (int g = 0; g < Hkv; g++) {
            int slot = kv_decode_slot(kv, l, g, pos, e->q + (size_t)g * G * hd, e->k + (size_t)g * hd,
                                      e->v + (size_t)g * hd);
            kv_write(kv, l, g, slot, pos, e->k + (size_t)g * hd, e->v + (size_t)g * hd);
        }
        /* shifted mode: rotate the live keys and the query by their ranks */
        if (e->shifted)
            for (int g = 0; g < Hkv; g++) {
                int len = kv_len(kv, l, g);
                rotated_live_keys(e, l, g, e->kr_live + (size_t)g * e->probs_stride * hd);
                for (int h = g * G; h < (g + 1) * G; h++) rotate_ranks(e, e->q + (size_t)h * hd, 1, hd, len - 1);
            }
        /* attention over the live slots of each head's KV group (or the policy's own) */
        if (kv->ops->attend && !kv->passthrough) {
            for (int g = 0; g < Hkv; g++)
                kv->ops->attend(kv, l, g, e->q + (size_t)g * G * hd, scale, e->att + (size_t)g * G * hd);
        } else {
            model_decode_attention(e, l, scale, T);
        }
        /* eviction after attention (attend-then-evict policies), per group then layer-wise */
        for (int g = 0; g < Hkv; g++)
            kv_post_attn(kv, l, g, pos, want_probs ? e->probs + (size_t)g * G * e->probs_stride : NULL,
                         e->probs_stride);
        if (kv->ops->post_attn_layer && !kv->passthrough)
            kv->ops->post_attn_layer(kv, l, pos, want_probs ? e->probs : NULL, e->probs_stride);

        hint_next(e->w, l, 2);
        matmul(e->xb, e->att, &lw->wo, 1);
        if (lw->bo.data) add_bias(e->xb, &lw->bo, 1, dim);
        add_inplace(e->x, e->xb, dim);
        mlp_block(c, lw, e->x, e->xb, e->hb, e->hb2, 1, e->w, l);
    }
    kv_sample_stats(kv);
    hint_next(e->w, -1, 0);   /* the next step's first product, read ahead while this one samples */
    lm_head(e, e->x, 1, e->logits);
    return 0;
}
