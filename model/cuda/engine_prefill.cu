/* The device engine's prefill (model/cuda/cuda_engine.h, cuda_engine_prefill): a chunk of n
 * tokens through every layer, same step order as model/forward.c engine_prefill:
 *   rmsnorm → q, k, v (+ biases) → RoPE (absolute; --rope shifted: by rank) → exact causal
 *   attention over the live slots + the chunk (+ the column sums the policy asked for) → the
 *   policy's keep-lists on the host mirror, rows gathered on the device → o-proj (+ bias) +
 *   residual → rmsnorm → SwiGLU MLP + residual; then final norm → LM head.
 * Projections: engine_linear.cu (cuBLAS for a chunk, the GEMV kernel for one token). */
#include "model/cuda/engine.cuh"

/* x += W_down(silu(W_gate h) * W_up h), h = norm(x), for n rows (uses xb, hb, hb2). */
static int mlp_block(cuda_engine *ce, const dlayer *dl, int n, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    const int dim = c->hidden_size, ffn = c->intermediate_size;
    LAUNCH(launch_rmsnorm(ce->x, dl->ffn_norm, ce->xb, n, dim, c->rms_norm_eps, ce->st));
    if (ce_linear(ce, ce->hb, ce->xb, &dl->gate, n, NULL, 0, err, errlen) ||
        ce_linear(ce, ce->hb2, ce->xb, &dl->up, n, NULL, 0, err, errlen))
        return -1;
    LAUNCH(launch_swiglu(ce->hb, ce->hb2, (size_t)n * ffn, ce->st));
    return ce_linear(ce, ce->x, ce->hb, &dl->down, n, NULL, 1, err, errlen);
}

/* rmsnorm → q, k, v (+ biases) → RoPE at positions pos0.. for n rows of x; --rope shifted: no
 * RoPE here (keys are cached before RoPE, rotated by rank later). K and V rounded to the cache's
 * dtype (as model/forward.c), so the chunk attends to the values the cache will hold and the
 * host mirror's hooks see them. */
static int qkv_rope(cuda_engine *ce, const dlayer *dl, int n, int pos0, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    LAUNCH(launch_rmsnorm(ce->x, dl->attn_norm, ce->xb, n, c->hidden_size, c->rms_norm_eps, ce->st));
    if (ce_linear(ce, ce->q, ce->xb, &dl->wq, n, dl->bq, 0, err, errlen) ||
        ce_linear(ce, ce->k, ce->xb, &dl->wk, n, dl->bk, 0, err, errlen) ||
        ce_linear(ce, ce->v, ce->xb, &dl->wv, n, dl->bv, 0, err, errlen))
        return -1;
    if (pos0 < 0 || pos0 + n > ce->n_rope) {
        snprintf(err, errlen, "positions %d..%d beyond the run's %d (prompt + max new tokens)", pos0,
                 pos0 + n - 1, ce->n_rope - 1);
        return -1;
    }
    const size_t kvn = (size_t)n * c->n_kv_heads * c->head_dim;
    LAUNCH(launch_round(ce->v, ce->kv_dt, kvn, ce->st));
    if (!ce->dp.rope_shifted) {
        LAUNCH(launch_rope(ce->q, n, c->n_heads, c->head_dim, ce->rope_cos, ce->rope_sin, pos0, ce->st));
        LAUNCH(launch_rope(ce->k, n, c->n_kv_heads, c->head_dim, ce->rope_cos, ce->rope_sin, pos0, ce->st));
    }
    LAUNCH(launch_round(ce->k, ce->kv_dt, kvn, ce->st));
    return 0;
}

/* --rope shifted (POLICIES.md §1.7), layer l of a prefill chunk, as model/forward.c: ce->kr = the
 * live keys of every KV head rotated by their rank in position order (f32); the n query rows
 * rotated at ranks len[g] + i; ce->krn = the chunk's keys at ranks len[g] + i. max_len: an upper
 * bound of the layer's live lengths. */
static int shifted_rotate(cuda_engine *ce, int l, int n, int max_len, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    const int hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, G = H / Hkv;
    const int i0 = kv_idx(ce->kv, l, 0);
    LAUNCH(launch_rope_live(ce->kr, ce->kc, ce->kv_dt, ce->pos, ce->off + i0, ce->len + i0, 0, Hkv, hd,
                            ce->rope_cos, ce->rope_sin, max_len, ce->st));
    LAUNCH(launch_rope_rank(ce->q, n, H, G, hd, ce->rope_cos, ce->rope_sin, ce->len + i0, 0, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->krn, ce->k, (size_t)n * Hkv * hd * sizeof(float), cudaMemcpyDeviceToDevice,
                             ce->st));
    LAUNCH(launch_rope_rank(ce->krn, n, Hkv, 1, hd, ce->rope_cos, ce->rope_sin, ce->len + i0, 0, ce->st));
    return 0;
}

/* The policy's logit scale (buzz_logn, POLICIES.md §4.9) for layer l: scale · logit_scale(n_keys)
 * per KV head, n_keys = the host mirror's live length + extra, computed by the policy's own hook
 * as model/forward.c does; uploaded on the stream (each layer its own part of the pinned buffer,
 * not reused before the stream passed it). NULL without one. */
const float *ce_head_scales(cuda_engine *ce, int l, int extra, float scale, char *err, size_t errlen)
{
    if (!ce->dp.logit_scale) return NULL;
    kv_cache *kv = ce->kv;
    const int i0 = kv_idx(kv, l, 0);
    for (int g = 0; g < kv->n_kv_heads; g++)
        ce->h_hscale[i0 + g] = scale * kv->ops->logit_scale(kv, kv_len(kv, l, g) + extra);
    cudaError_t e = cudaMemcpyAsync(ce->hscale_d + i0, ce->h_hscale + i0, (size_t)kv->n_kv_heads * sizeof(float),
                                    cudaMemcpyHostToDevice, ce->st);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: cudaMemcpyAsync (logit scales): %s", __FILE__, __LINE__, cudaGetErrorString(e));
        return NULL;
    }
    return ce->hscale_d + i0;
}

extern "C" int cuda_engine_prefill(cuda_engine *ce, const int *tokens, int n, int pos0, float *logits_all,
                                   float *logits_last, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads;
    const int G = H / Hkv, qdim = H * hd, kvdim = Hkv * hd, V = c->vocab_size;
    const float scale = 1.0f / sqrtf((float)hd);
    if (n < 1 || n > ce->max_chunk) {
        snprintf(err, errlen, "prefill: %d tokens, the run state holds 1..%d", n, ce->max_chunk);
        return -1;
    }
    if ((ce->mirror_stale || ce->rows_stale) && ce_refresh_mirror(ce, err, errlen)) return -1;
    memcpy(ce->h_tok, tokens, (size_t)n * sizeof(int));
    CUDA_TRY(cudaMemcpyAsync(ce->tok_d, ce->h_tok, (size_t)n * sizeof(int), cudaMemcpyHostToDevice, ce->st));
    LAUNCH(launch_embed(ce->embed.data, ce->embed.dt, ce->tok_d, n, dim, ce->x, ce->st));

    for (int l = 0; l < c->n_layers; l++) {
        const dlayer *dl = &ce->layers[l];
        const size_t *off_l = ce->off + kv_idx(kv, l, 0);
        int *len_l = ce->len + kv_idx(kv, l, 0);
        if (qkv_rope(ce, dl, n, pos0, err, errlen)) return -1;
        int max_cand = 0;
        for (int g = 0; g < Hkv; g++) {
            ce->h_nlive[g] = kv_len(kv, l, g);
            if (ce->h_nlive[g] + n > max_cand) max_cand = ce->h_nlive[g] + n;
        }
        /* the keys as the attention sees them: the cache (absolute), or rotated by rank (f32) */
        const void *katt = ce->kc;
        int k_dt = ce->kv_dt;
        const float *knew = ce->k;
        if (ce->dp.rope_shifted) {
            if (shifted_rotate(ce, l, n, max_cand - n, err, errlen)) return -1;
            katt = ce->kr;
            k_dt = CU_F32;
            knew = ce->krn;
        }
        const float *hs = NULL;
        if (ce->dp.logit_scale && !(hs = ce_head_scales(ce, l, n, scale, err, errlen))) return -1;
        /* exact causal attention over the live slots + the chunk */
        LAUNCH(launch_attn_prefill(ce->q, qdim, katt, k_dt, ce->vc, ce->kv_dt, off_l, len_l, knew, ce->v, kvdim, n,
                                   H, G, hd, scale, ce->att, qdim, ce->lse, ce->max_chunk, ce->st, hs));
        if (ce->dp.want_colsum) {
            LAUNCH(launch_attn_colsum(ce->q, qdim, katt, k_dt, off_l, len_l, knew, kvdim, n, Hkv, G, hd, scale,
                                      ce->lse, ce->max_chunk, max_cand, ce->colsum, ce->cand_stride, ce->st, hs));
            CUDA_TRY(cudaMemcpyAsync(ce->h_colsum, ce->colsum, (size_t)Hkv * ce->cand_stride * sizeof(float),
                                     cudaMemcpyDeviceToHost, ce->st));
        }
        CUDA_TRY(cudaStreamSynchronize(ce->st));
        /* the policy's keep-lists on the host mirror, then the device gathers the kept rows */
        kv_prefill_chunk chunk;
        memset(&chunk, 0, sizeof chunk);
        chunk.layer = l;
        chunk.n_new = n;
        chunk.pos0 = pos0;
        chunk.colsum = ce->dp.want_colsum ? ce->h_colsum : NULL;
        chunk.cand_stride = ce->cand_stride;
        if (ce->dp.mode != DEV_POLICY_HOST) {
            /* the keep-lists from positions and scores only */
            if (kv_prefill_plan(kv, &chunk, ce->h_keep, ce->cand_stride, ce->h_nkeep, err, errlen) != 0) return -1;
        } else if (ce_host_prefill(ce, &chunk, err, errlen)) {
            return -1;
        }
        if (ce->relayout_pending) { /* the policy re-partitioned the layer (ada_*) */
            ce->relayout_pending = 0;
            if (ce_gather_layer(ce, l, ce->h_off_before, ce->h_keep, ce->cand_stride, ce->h_nkeep, ce->h_nlive,
                                err, errlen))
                return -1;
        } else {
            for (int g = 0; g < Hkv; g++)
                if (ce_gather_region(ce, l, g, ce->h_keep + (size_t)g * ce->cand_stride, ce->h_nkeep[g],
                                     ce->h_nlive[g], err, errlen))
                    return -1;
        }
        if (ce_upload_layer_meta(ce, l, err, errlen)) return -1;
        if (ce->dp.evict == EV_L2NORM) /* the kept keys' norms (the decode victim's key) */
            LAUNCH(launch_key_norms(ce->kc, ce->kv_dt, off_l, len_l, ce->score, Hkv, hd, ce->st));
        /* after a prefill the slots are in position order: the rings restart at slot 0 */
        CUDA_TRY(cudaMemsetAsync(ce->ring + kv_idx(kv, l, 0), 0, (size_t)Hkv * sizeof(int), ce->st));
        /* output projection (+ bias) and residual, then the MLP */
        if (ce_linear(ce, ce->x, ce->att, &dl->wo, n, dl->bo, 1, err, errlen)) return -1;
        if (mlp_block(ce, dl, n, err, errlen)) return -1;
    }
    kv_sample_stats(kv);
    if (ce->sstate) ce->sstate_dirty = 1; /* the prefill hooks moved and zeroed histories on the host */
    if (ce->ss_d.head) ce->ss_dirty = 1;  /* subgen_stream's on_prefill fed the sketch on the host */
    if (ce->ada) ce->ada_dirty = 1;       /* ada_*: the split set the targets on the host */
    /* the snap family's query ring took the chunk's last queries on the host: the device copy
     * follows (decode steps write it on the device, eviction/kv_device.h) */
    if (ce->qring && ce_upload_qring(ce, err, errlen)) return -1;

    /* final norm and LM head: every row in blocks (logits_all), or the last row */
    LAUNCH(launch_rmsnorm(ce->x, ce->final_norm, ce->xb, n, dim, c->rms_norm_eps, ce->st));
    int r0 = logits_all ? 0 : n - 1;
    for (; r0 < n; r0 += ce->logit_rows) {
        int m = n - r0 < ce->logit_rows ? n - r0 : ce->logit_rows;
        if (ce_linear(ce, ce->logits, ce->xb + (size_t)r0 * dim, &ce->lm_head, m, NULL, 0, err, errlen)) return -1;
        float *dst = logits_all ? logits_all + (size_t)r0 * V : logits_last;
        CUDA_TRY(cudaMemcpyAsync(dst, ce->logits, (size_t)m * V * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
        CUDA_TRY(cudaStreamSynchronize(ce->st));
    }
    if (logits_all) memcpy(logits_last, logits_all + (size_t)(n - 1) * V, (size_t)V * sizeof(float));
    return 0;
}
