/* The device engine's set-up and teardown (model/cuda/cuda_engine.h): the weights to the device
 * in their storage type (F32/F16/BF16 and the GGUF block formats, never dequantized whole; norm
 * vectors and biases as f32), the KV cache regions sized by the host kv_cache (checked against
 * the free memory before they are allocated), activations, scratch and pinned host buffers.
 * Every device/pinned allocation is recorded and freed by cuda_engine_free, also after a failed
 * set-up (the emulator counts them: tests/test_cuda_emu.sh). */
#include "model/cuda/engine.cuh"

int ce_dalloc(cuda_engine *ce, void **p, size_t bytes, char *err, size_t errlen)
{
    *p = NULL;
    if (ce->n_dev == ce->cap_dev) {
        int nc = ce->cap_dev ? 2 * ce->cap_dev : 64;
        void **na = (void **)realloc(ce->dev_allocs, (size_t)nc * sizeof *na);
        if (!na) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        ce->dev_allocs = na;
        ce->cap_dev = nc;
    }
    CUDA_TRY(cudaMalloc(p, bytes > 0 ? bytes : 1));
    ce->dev_allocs[ce->n_dev++] = *p;
    ce->dev_bytes += bytes;
    return 0;
}

int ce_halloc(cuda_engine *ce, void **p, size_t bytes, char *err, size_t errlen)
{
    *p = NULL;
    if (ce->n_host == ce->cap_host) {
        int nc = ce->cap_host ? 2 * ce->cap_host : 32;
        void **na = (void **)realloc(ce->host_allocs, (size_t)nc * sizeof *na);
        if (!na) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        ce->host_allocs = na;
        ce->cap_host = nc;
    }
    CUDA_TRY(cudaMallocHost(p, bytes > 0 ? bytes : 1));
    ce->host_allocs[ce->n_host++] = *p;
    return 0;
}

static_assert((int)CU_F32 == (int)DT_F32 && (int)CU_F16 == (int)DT_F16 && (int)CU_BF16 == (int)DT_BF16 &&
                  (int)CU_Q8_0 == (int)DT_Q8_0 && (int)CU_Q4_0 == (int)DT_Q4_0 && (int)CU_Q4_1 == (int)DT_Q4_1 &&
                  (int)CU_Q5_0 == (int)DT_Q5_0 && (int)CU_Q5_1 == (int)DT_Q5_1 && (int)CU_Q4_K == (int)DT_Q4_K &&
                  (int)CU_Q5_K == (int)DT_Q5_K && (int)CU_Q6_K == (int)DT_Q6_K && (int)CU_DT_COUNT == (int)DT_COUNT,
              "kernels/cuda's storage types are kernels.h's dtype_t");

/* A matrix to the device as stored (its dtype; the block formats stay quantized). */
static int upload_weight(cuda_engine *ce, dweight *d, const weight_t *w, const char *what,
                         char *err, size_t errlen)
{
    d->dt = (int)w->dtype;
    d->rows = w->rows;
    d->cols = w->cols;
    if (!cu_dt_valid(d->dt) || w->cols % cu_blk_elems(d->dt)) {
        snprintf(err, errlen, "%s: storage type %s with rows of %d elements not supported on the GPU",
                 what, dtype_name(w->dtype), w->cols);
        return -1;
    }
    if (w->layout != WL_ROWS) {   /* the CPU's resident WL_X16 copy (kernels.h): the device reads ggml rows */
        snprintf(err, errlen, "%s: weights in the CPU's 16-row interleaved layout cannot go to the GPU", what);
        return -1;
    }
    size_t bytes = weight_bytes(w);
    DALLOC(d->data, bytes);
    CUDA_TRY(cudaMemcpy(d->data, w->data, bytes, cudaMemcpyHostToDevice));
    return 0;
}

/* A vector (norm weight, bias; any storage type) to the device as f32; NULL when absent. */
static int upload_norm(cuda_engine *ce, float **d, const weight_t *w, char *err, size_t errlen)
{
    *d = NULL;
    if (!w->data) return 0;
    size_t n = (size_t)w->rows * w->cols;
    if (n % dtype_block(w->dtype)) {
        snprintf(err, errlen, "a vector of %zu %s elements is not whole blocks", n, dtype_name(w->dtype));
        return -1;
    }
    float *h = (float *)malloc(n * sizeof(float));
    if (!h) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    dequantize_row(w->dtype, w->data, h, (int64_t)n); /* F32/F16/BF16 copied or widened */
    void *p;
    if (ce_dalloc(ce, &p, n * sizeof(float), err, errlen) != 0) {
        free(h);
        return -1;
    }
    *d = (float *)p;
    cudaError_t e = cudaMemcpy(p, h, n * sizeof(float), cudaMemcpyHostToDevice);
    free(h);
    CUDA_TRY(e);
    return 0;
}

extern "C" int cuda_device_count(char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, whylen, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    if (n < 1) snprintf(why, whylen, "cudaGetDeviceCount found no device");
    return n;
}

extern "C" size_t cuda_engine_device_bytes(const cuda_engine *ce) { return ce ? ce->dev_bytes : 0; }

extern "C" void cuda_engine_free(cuda_engine *ce)
{
    if (!ce) return;
    if (ce->stream_ok) cudaStreamSynchronize(ce->st);
    for (int i = 0; i < 2; i++)
        if (ce->graph[i]) cudaGraphExecDestroy(ce->graph[i]);
    for (int i = 0; i < ce->n_dev; i++) cudaFree(ce->dev_allocs[i]);
    for (int i = 0; i < ce->n_host; i++) cudaFreeHost(ce->host_allocs[i]);
    if (ce->blas_ok) cublasDestroy(ce->blas);
    if (ce->stream_ok) cudaStreamDestroy(ce->st);
    free(ce->dev_allocs);
    free(ce->host_allocs);
    free(ce->layers);
    free(ce->kv_fresh);
    free(ce->ada);
    free(ce);
}

int ce_setup(cuda_engine *ce, char *err, size_t errlen)
{
    const model_weights *w = ce->w;
    const model_config *c = &w->cfg;
    kv_cache *kv = ce->kv;
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads;
    const int qdim = H * hd, kvdim = Hkv * hd, ffn = c->intermediate_size, M = ce->max_chunk;
    const int n_lh = kv->n_layers * kv->n_kv_heads;
    if (hd > 256) {
        snprintf(err, errlen, "head_dim %d: the CUDA attention kernels take head_dim <= 256", hd);
        return -1;
    }
    int dev;
    CUDA_TRY(cudaGetDevice(&dev));
    CUDA_TRY(cudaDeviceGetAttribute(&ce->n_sm, cudaDevAttrMultiProcessorCount, dev));
    ce->gemv_blocks = 2 * (ce->n_sm > 0 ? ce->n_sm : 1); /* one wave at the GEMV's occupancy */
    CUDA_TRY(cudaStreamCreateWithFlags(&ce->st, cudaStreamNonBlocking));
    ce->stream_ok = 1;
    CUBLAS_TRY(cublasCreate(&ce->blas));
    ce->blas_ok = 1;
    CUBLAS_TRY(cublasSetStream(ce->blas, ce->st));
    CUBLAS_TRY(cublasSetMathMode(ce->blas, CUBLAS_DEFAULT_MATH)); /* no TF32 for f32 weights */

    /* weights, in their file dtype (tied LM head shares the embedding) */
    ce->layers = (dlayer *)calloc((size_t)c->n_layers, sizeof *ce->layers);
    if (!ce->layers) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    char what[64];
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *lw = &w->layers[l];
        dlayer *dl = &ce->layers[l];
        snprintf(what, sizeof what, "model.layers.%d", l);
        if (upload_norm(ce, &dl->attn_norm, &lw->attn_norm, err, errlen) ||
            upload_norm(ce, &dl->ffn_norm, &lw->ffn_norm, err, errlen) ||
            upload_norm(ce, &dl->bq, &lw->bq, err, errlen) || upload_norm(ce, &dl->bk, &lw->bk, err, errlen) ||
            upload_norm(ce, &dl->bv, &lw->bv, err, errlen) || upload_norm(ce, &dl->bo, &lw->bo, err, errlen) ||
            upload_weight(ce, &dl->wq, &lw->wq, what, err, errlen) ||
            upload_weight(ce, &dl->wk, &lw->wk, what, err, errlen) ||
            upload_weight(ce, &dl->wv, &lw->wv, what, err, errlen) ||
            upload_weight(ce, &dl->wo, &lw->wo, what, err, errlen) ||
            upload_weight(ce, &dl->gate, &lw->w_gate, what, err, errlen) ||
            upload_weight(ce, &dl->up, &lw->w_up, what, err, errlen) ||
            upload_weight(ce, &dl->down, &lw->w_down, what, err, errlen))
            return -1;
    }
    if (upload_weight(ce, &ce->embed, &w->embed, "model.embed_tokens.weight", err, errlen) ||
        upload_norm(ce, &ce->final_norm, &w->final_norm, err, errlen))
        return -1;
    if (w->lm_head.data == w->embed.data) ce->lm_head = ce->embed;
    else if (upload_weight(ce, &ce->lm_head, &w->lm_head, "lm_head.weight", err, errlen))
        return -1;

    ce->max_cap = 0;
    for (int i = 0; i < n_lh; i++)
        if (kv->cap[i] > ce->max_cap) ce->max_cap = kv->cap[i];
    /* policies that re-partition a layer's arena among its heads (ada_*) may give one head up to
     * the whole arena: every per-head bound (attention pieces, logits rows, rank rotation, replay
     * scratch) is sized for that, not for the capacities at the start */
    if (ce->dp.relayout)
        for (int l = 0; l < kv->n_layers; l++) {
            int a = kv_idx(kv, l, 0), b = kv_idx(kv, l, Hkv - 1);
            int rows = (int)(kv->off[b] + (size_t)kv->cap[b] + 1 - kv->off[a]);
            if (rows - 1 > ce->max_cap) ce->max_cap = rows - 1;
        }
    /* RoPE tables for every position of the run, made by the CPU code (same numbers); in
     * shifted mode for every rank too (ranks never exceed capacity + chunk, model/forward.c) */
    ce->n_rope = kv->prompt_tokens + kv->max_new + 1;
    ce->n_rope_rows = ce->n_rope;
    if (ce->dp.rope_shifted && ce->max_cap + M + 1 > ce->n_rope_rows) ce->n_rope_rows = ce->max_cap + M + 1;
    {
        size_t half = (size_t)hd / 2, nt = (size_t)ce->n_rope_rows * half;
        float *cs = (float *)malloc(nt * sizeof(float)), *sn = (float *)malloc(nt * sizeof(float));
        int *pos = (int *)malloc((size_t)ce->n_rope_rows * sizeof(int));
        if (!cs || !sn || !pos) {
            free(cs);
            free(sn);
            free(pos);
            snprintf(err, errlen, "out of host memory (RoPE tables)");
            return -1;
        }
        for (int i = 0; i < ce->n_rope_rows; i++) pos[i] = i;
        rope_tables_freq(cs, sn, pos, ce->n_rope_rows, hd, c->rope_theta, c->rope_scaling_factor,
                         c->n_rope_factors ? c->rope_factors : NULL);
        void *a = NULL, *b = NULL;
        int rc = ce_dalloc(ce, &a, nt * sizeof(float), err, errlen);
        if (!rc) rc = ce_dalloc(ce, &b, nt * sizeof(float), err, errlen);
        cudaError_t e1 = rc ? cudaSuccess : cudaMemcpy(a, cs, nt * sizeof(float), cudaMemcpyHostToDevice);
        cudaError_t e2 = rc ? cudaSuccess : cudaMemcpy(b, sn, nt * sizeof(float), cudaMemcpyHostToDevice);
        free(cs);
        free(sn);
        free(pos);
        if (rc) return -1;
        CUDA_TRY(e1);
        CUDA_TRY(e2);
        ce->rope_cos = (float *)a;
        ce->rope_sin = (float *)b;
    }

    /* activations and scratch */
    ce->logit_rows = M < 64 ? M : 64;
    int rows = M > ce->logit_rows ? M : ce->logit_rows;
    int widest = dim > qdim ? dim : qdim;
    if (ffn > widest) widest = ffn;
    DALLOC(ce->x, (size_t)M * dim * sizeof(float));
    DALLOC(ce->xb, (size_t)M * dim * sizeof(float));
    DALLOC(ce->q, (size_t)M * qdim * sizeof(float));
    DALLOC(ce->k, (size_t)M * kvdim * sizeof(float));
    DALLOC(ce->v, (size_t)M * kvdim * sizeof(float));
    DALLOC(ce->att, (size_t)M * qdim * sizeof(float));
    DALLOC(ce->hb, (size_t)M * ffn * sizeof(float));
    DALLOC(ce->hb2, (size_t)M * ffn * sizeof(float));
    DALLOC(ce->lse, (size_t)H * M * sizeof(float));
    DALLOC(ce->logits, (size_t)ce->logit_rows * c->vocab_size * sizeof(float));
    /* prefill GEMM inputs as hi + lo halves of a 16-bit type; block-format weights dequantized to
     * f16 a tile of rows at a time (at most 16 Mi elements, a whole matrix when smaller) */
    ce->cast_elems = (size_t)rows * widest;
    DALLOC(ce->cast, 2 * ce->cast_elems * 2);
    {
        int max_rows = 0, max_cols = 0, any_quant = cu_is_quant(ce->lm_head.dt);
        for (int l = 0; l < c->n_layers; l++) {
            const dweight *ws[7] = {&ce->layers[l].wq, &ce->layers[l].wk, &ce->layers[l].wv, &ce->layers[l].wo,
                                    &ce->layers[l].gate, &ce->layers[l].up, &ce->layers[l].down};
            for (int i = 0; i < 7; i++) any_quant |= cu_is_quant(ws[i]->dt);
        }
        max_rows = c->vocab_size > ffn ? c->vocab_size : ffn;
        if (dim > max_rows) max_rows = dim;
        max_cols = widest;
        if (any_quant) {
            size_t t = ((size_t)16 << 20) / (size_t)max_cols;
            ce->tile_rows = (int)(t < 64 ? 64 : t > (size_t)max_rows ? (size_t)max_rows : t);
            DALLOC(ce->wtile, (size_t)ce->tile_rows * max_cols * 2);
        }
        CUDA_TRY(gemv_prepare(widest));
    }
    /* decode step parameters (token, position, logit scales), the attention's arrival counters,
     * the logits row of a graph step */
    DALLOC(ce->step_d, (size_t)(2 + n_lh) * sizeof(int));
    HALLOC(ce->h_step, (size_t)(2 + n_lh) * sizeof(int));
    /* + 1: the layer's counter (EV_TOVA) */
    DALLOC(ce->counter_d, (size_t)(Hkv + 1) * sizeof(int));
    CUDA_TRY(cudaMemset(ce->counter_d, 0, (size_t)(Hkv + 1) * sizeof(int)));
    HALLOC(ce->h_logits, (size_t)c->vocab_size * sizeof(float));
    HALLOC(ce->h_len, (size_t)n_lh * sizeof(int));
    ce->split_len = 256;
    ce->n_split = (ce->max_cap + 1 + ce->split_len - 1) / ce->split_len;
    DALLOC(ce->part_acc, (size_t)H * ce->n_split * hd * sizeof(float));
    DALLOC(ce->part_ml, (size_t)H * ce->n_split * 2 * sizeof(float));
    if (EV_IS_ETE(ce->dp.evict))
        DALLOC(ce->ev_part, (size_t)H * ce->n_split * sizeof(ev_cand));
    ce->slog_stride = ce->max_cap + 1;
    if (ce->dp.want_probs) DALLOC(ce->slog, (size_t)H * ce->slog_stride * sizeof(float));
    ce->cand_stride = ce->max_cap + M;
    if (ce->dp.want_colsum) {
        DALLOC(ce->colsum, (size_t)Hkv * ce->cand_stride * sizeof(float));
        HALLOC(ce->h_colsum, (size_t)Hkv * ce->cand_stride * sizeof(float));
    }
    DALLOC(ce->tok_d, (size_t)M * sizeof(int));
    DALLOC(ce->src_d, (size_t)(ce->dp.relayout ? Hkv : 1) * ce->cand_stride * sizeof(int));
    if (ce->dp.relayout) HALLOC(ce->h_off_before, (size_t)Hkv * sizeof(size_t));
    DALLOC(ce->slot_d, (size_t)Hkv * sizeof(int));
    ce->next_words = 1 + (ce->dp.evict == EV_ADA && ce->dp.dev_decode ? 3 * n_lh : 0);
    DALLOC(ce->next_d, (size_t)ce->next_words * sizeof(int));
    HALLOC(ce->h_tok, (size_t)M * sizeof(int));
    HALLOC(ce->h_next, (size_t)ce->next_words * sizeof(int));
    HALLOC(ce->h_slots, (size_t)Hkv * sizeof(int));
    HALLOC(ce->h_keep, (size_t)Hkv * ce->cand_stride * sizeof(int));
    HALLOC(ce->h_nkeep, (size_t)Hkv * sizeof(int));
    HALLOC(ce->h_nlive, (size_t)Hkv * sizeof(int));
    HALLOC(ce->h_src, (size_t)(ce->max_cap + 2) * sizeof(int));
    HALLOC(ce->h_cand, (size_t)(ce->max_cap + 2) * sizeof(int32_t));
    if (ce->dp.mode == DEV_POLICY_ROUNDS) {
        HALLOC(ce->h_pos_before, (size_t)Hkv * ce->cand_stride * sizeof(int32_t));
        HALLOC(ce->slot_of, (size_t)ce->n_rope * sizeof(int));
    }
    if (ce->dp.mode == DEV_POLICY_HOST) {
        HALLOC(ce->h_qkv, (size_t)(qdim + 2 * kvdim) * sizeof(float));
        if (ce->dp.want_probs) HALLOC(ce->h_probs, (size_t)H * ce->slog_stride * sizeof(float));
        HALLOC(ce->h_pos_before, (size_t)Hkv * ce->cand_stride * sizeof(int32_t));
        HALLOC(ce->slot_of, (size_t)ce->n_rope * sizeof(int));
        HALLOC(ce->h_pq, (size_t)M * qdim * sizeof(float));
        HALLOC(ce->h_pk, (size_t)M * kvdim * sizeof(float));
        HALLOC(ce->h_pv, (size_t)M * kvdim * sizeof(float));
    }
    if (ce->dp.rope_shifted) {
        DALLOC(ce->krn, (size_t)M * kvdim * sizeof(float));
        if (ce->dp.mode == DEV_POLICY_HOST) {
            HALLOC(ce->h_krl, (size_t)Hkv * (ce->max_cap + 1) * hd * sizeof(float));
            HALLOC(ce->h_krn, (size_t)Hkv * M * hd * sizeof(float));
        }
    }
    if (ce->dp.host_attend) {
        if (ce->dp.mode != DEV_POLICY_HOST) {
            snprintf(err, errlen, "policy %s: its own attention needs the host-assisted path", kv->ops->name);
            return -1;
        }
        HALLOC(ce->h_att, (size_t)qdim * sizeof(float));
    }
    if (ce_setup_policy(ce, err, errlen)) return -1; /* engine_policy.cu */
    if (ce->dp.logit_scale) {
        ce->h_hscale = (float *)(ce->h_step + 2);
        ce->hscale_d = (float *)(ce->step_d + 2);
    }

    /* the KV cache: check that it fits BEFORE allocating it (leave 256 MiB for cuBLAS
     * workspaces and the gather scratch) */
    size_t n_slots = kv->n_slots, tmp_rows = (size_t)(ce->max_cap + 1 > M ? ce->max_cap + 1 : M);
    if (ce->dp.relayout) /* a whole layer's arena (its size never changes) */
        for (int l = 0; l < kv->n_layers; l++) {
            int a = kv_idx(kv, l, 0), b = kv_idx(kv, l, Hkv - 1);
            size_t rows = kv->off[b] + (size_t)kv->cap[b] + 1 - kv->off[a];
            if (rows > tmp_rows) tmp_rows = rows;
        }
    ce->tmp_rows = tmp_rows;
    /* K/V in the host cache's dtype (--kv-dtype; auto: f32 for F32 weights, else f16 — BF16
     * models too: the same bytes, 3 more mantissa bits; bf16 K/V measured 1.5e-2 relative logit
     * error against the CPU (h2o 0.5, emulated), f16 K/V 1.1e-3), so the host mirror of the
     * host-assisted policies holds exactly the device's rows and every byte figure agrees. */
    dtype_t kv_dtype = kv->kv_dtype;
    ce->kv_dt = (int)kv_dtype;
    ce->kv_es = dtype_size(kv_dtype);
    size_t kv_bytes = n_slots * hd * 2 * ce->kv_es + n_slots * (sizeof(int32_t) + sizeof(float));
    if (ce->dp.rope_shifted) kv_bytes += n_slots * hd * sizeof(float); /* the rotated-key scratch (f32) */
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    size_t reserve = (size_t)256 << 20;
    size_t tmp_bytes = 2 * tmp_rows * hd * ce->kv_es;
    if (kv_bytes + tmp_bytes + reserve > free_b) {
        double limit = (double)free_b - (double)reserve - (double)tmp_bytes;
        char what2[96];
        snprintf(what2, sizeof what2, "the free GPU memory after the weights (%.3f GB usable)",
                 limit > 0 ? limit / 1e9 : 0.0);
        if (kv_check_limit(kv->ops, &kv->params, kv->n_layers, kv->n_kv_heads, kv->n_heads, hd,
                           kv->prompt_tokens, kv->max_new, ce->kv_es, limit > 1 ? limit : 1, what2,
                           err, errlen) == 0)
            snprintf(err, errlen, "KV cache of %.3f GB does not fit in the free GPU memory (%.3f GB)",
                     kv_bytes / 1e9, free_b / 1e9);
        return -1;
    }
    DALLOC(ce->kc, n_slots * hd * ce->kv_es);
    DALLOC(ce->vc, n_slots * hd * ce->kv_es);
    if (ce->dp.rope_shifted) DALLOC(ce->kr, n_slots * hd * sizeof(float));
    DALLOC(ce->pos, n_slots * sizeof(int32_t));
    /* per-slot scores (h2o, BUZZ, scissorhands: moved with the slots) or key norms (l2norm) */
    if ((ce->dp.mode == DEV_POLICY_DEVICE && (ce->dp.evict == EV_H2O || ce->dp.evict == EV_H2O_EF)) ||
        ce->dp.mode == DEV_POLICY_ROUNDS ||
        ce->dp.evict == EV_L2NORM || ce->dp.evict == EV_SH)
        DALLOC(ce->score, n_slots * sizeof(float));
    DALLOC(ce->off, (size_t)n_lh * sizeof(size_t));
    DALLOC(ce->len, (size_t)n_lh * sizeof(int));
    DALLOC(ce->cap, (size_t)n_lh * sizeof(int));
    DALLOC(ce->ring, (size_t)n_lh * sizeof(int));
    DALLOC(ce->tmpk, tmp_bytes / 2);
    DALLOC(ce->tmpv, tmp_bytes / 2);
    CUDA_TRY(cudaMemcpy(ce->off, kv->off, (size_t)n_lh * sizeof(size_t), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(ce->len, kv->len, (size_t)n_lh * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(ce->cap, kv->cap, (size_t)n_lh * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemset(ce->ring, 0, (size_t)n_lh * sizeof(int)));
    if (ce->score) CUDA_TRY(cudaMemset(ce->score, 0, n_slots * sizeof(float)));
    CUDA_TRY(cudaDeviceSynchronize());
    return 0;
}

extern "C" int cuda_engine_init(cuda_engine **out, const model_weights *w, kv_cache *kv,
                                int max_chunk, const device_policy *dp, char *err, size_t errlen)
{
    *out = NULL;
    if (dp->mode == DEV_POLICY_REFUSED) {
        snprintf(err, errlen, "policy %s is not ported to the CUDA backend", kv->ops->name);
        return -1;
    }
    cuda_engine *ce = (cuda_engine *)calloc(1, sizeof *ce);
    if (!ce) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    ce->w = w;
    ce->kv = kv;
    ce->dp = *dp;
    ce->max_chunk = max_chunk < 1 ? 1 : max_chunk;
    const char *s = getenv("LLM_CUDA_SYNC");
    ce->sync_each = s && *s && strcmp(s, "0") != 0;
    /* a decode step as one CUDA graph (captured once, replayed); LLM_CUDA_GRAPH=0: launched
     * kernel by kernel (the same kernels); never with LLM_CUDA_SYNC (no waits inside a capture) */
    const char *gr = getenv("LLM_CUDA_GRAPH");
    ce->use_graphs = !ce->sync_each && !(gr && !strcmp(gr, "0"));
    if (ce_setup(ce, err, errlen) != 0) {
        cuda_engine_free(ce);
        return -1;
    }
    *out = ce;
    return 0;
}

