/* The device engine: the LLaMA forward pass on the GPU with the KV cache on the device
 * (cuda_backend.h). Same step order as model/forward.c:
 *   per layer: rmsnorm → q,k,v (cublasGemmEx) → RoPE → KV write (policy) → attention
 *   (+ the statistics the policy asked for) → o-proj → residual → rmsnorm → SwiGLU MLP →
 *   residual; then final norm → LM head → greedy argmax.
 *
 * The host kv_cache stays the mirror of the device cache: capacities, offsets and lengths
 * always; positions, scores and per-slot state during prefill and for host-assisted policies.
 * Prefill: the host asks the policy for the keep-lists (kv_prefill_plan, with the column sums
 * copied back when the policy wants them) and the device gathers the kept rows (stable
 * compaction). Decode with a device policy (DEV_POLICY_DEVICE): append, attention, score
 * accumulation and eviction all run on the stream; the host only updates its length mirror
 * (len = min(len + 1, cap) for these policies) and waits once per step for the next token.
 * Decode with BUZZ (DEV_POLICY_ROUNDS): as a device policy (append, score accumulation), and on
 * the steps where a region is over capacity the host copies that layer's scores back, runs the
 * policy's post_attn (the round) on the mirror and the device replays the moves.
 * Decode with a host-assisted policy (DEV_POLICY_HOST): per layer the token's q/k/v and the
 * step's probabilities are copied back, the policy's own hooks run on the host mirror, and the
 * slot moves they made (recovered from the positions before and after) are replayed on the
 * device. See model/device.c for which policy runs where. */
#include "model/cuda/engine.cuh"

static int dalloc(cuda_engine *ce, void **p, size_t bytes, char *err, size_t errlen)
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

static int halloc(cuda_engine *ce, void **p, size_t bytes, char *err, size_t errlen)
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

#define DALLOC(ptr, bytes)                                                                     \
    do {                                                                                       \
        void *p_;                                                                              \
        if (dalloc(ce, &p_, (bytes), err, errlen) != 0) return -1;                             \
        (ptr) = (decltype(ptr))p_;                                                             \
    } while (0)
#define HALLOC(ptr, bytes)                                                                     \
    do {                                                                                       \
        void *p_;                                                                              \
        if (halloc(ce, &p_, (bytes), err, errlen) != 0) return -1;                             \
        (ptr) = (decltype(ptr))p_;                                                             \
    } while (0)

static cudaDataType cuda_type(int dt)
{
    return dt == CU_F16 ? CUDA_R_16F : dt == CU_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* A matrix to the device as stored (its dtype). */
static int upload_weight(cuda_engine *ce, dweight *d, const weight_t *w, const char *what,
                         char *err, size_t errlen)
{
    size_t bytes = (size_t)w->rows * w->cols * dtype_size(w->dtype);
    d->dt = (int)w->dtype;
    d->rows = w->rows;
    d->cols = w->cols;
    if (d->dt != CU_F32 && d->dt != CU_F16 && d->dt != CU_BF16) {
        snprintf(err, errlen, "%s: dtype %d not supported on the GPU", what, d->dt);
        return -1;
    }
    DALLOC(d->data, bytes);
    CUDA_TRY(cudaMemcpy(d->data, w->data, bytes, cudaMemcpyHostToDevice));
    return 0;
}

/* A norm vector to the device as f32. */
static int upload_norm(cuda_engine *ce, float **d, const weight_t *w, char *err, size_t errlen)
{
    size_t n = (size_t)w->rows * w->cols;
    float *h = (float *)malloc(n * sizeof(float));
    if (!h) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (w->dtype == DT_F32) h[i] = ((const float *)w->data)[i];
        else if (w->dtype == DT_F16) h[i] = f16_to_f32(((const uint16_t *)w->data)[i]);
        else h[i] = bf16_to_f32(((const uint16_t *)w->data)[i]);
    }
    void *p;
    if (dalloc(ce, &p, n * sizeof(float), err, errlen) != 0) {
        free(h);
        return -1;
    }
    *d = (float *)p;
    cudaError_t e = cudaMemcpy(p, h, n * sizeof(float), cudaMemcpyHostToDevice);
    free(h);
    CUDA_TRY(e);
    return 0;
}

/* y[n][w.rows] = x[n][w.cols] · wᵀ (f32 out, fp32 compute); x is rounded to the weight's dtype
 * first when that is F16/BF16 (cublasGemmEx takes A and B of one type) into ce->cast, unless
 * reuse_cast says the previous call already left this x in this dtype there (q/k/v and
 * gate/up share their input). */
int ce_gemm_ex(cuda_engine *ce, float *y, const float *x, const dweight *w, int n,
                   int reuse_cast, char *err, size_t errlen)
{
    const void *xin = x;
    if (w->dt != CU_F32) {
        if (!reuse_cast) LAUNCH(launch_cast(x, ce->cast, w->dt, (size_t)n * w->cols, ce->st));
        xin = ce->cast;
    }
    const float alpha = 1.0f, beta = 0.0f;
    cudaDataType t = cuda_type(w->dt);
    CUBLAS_TRY(cublasGemmEx(ce->blas, CUBLAS_OP_T, CUBLAS_OP_N, w->rows, n, w->cols, &alpha, w->data,
                            t, w->cols, xin, t, w->cols, &beta, y, CUDA_R_32F, w->rows,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (ce->sync_each) CUDA_TRY(cudaStreamSynchronize(ce->st));
    return 0;
}

int ce_gemm(cuda_engine *ce, float *y, const float *x, const dweight *w, int n, char *err,
                size_t errlen)
{
    return ce_gemm_ex(ce, y, x, w, n, 0, err, errlen);
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
    for (int i = 0; i < ce->n_dev; i++) cudaFree(ce->dev_allocs[i]);
    for (int i = 0; i < ce->n_host; i++) cudaFreeHost(ce->host_allocs[i]);
    if (ce->blas_ok) cublasDestroy(ce->blas);
    if (ce->stream_ok) cudaStreamDestroy(ce->st);
    free(ce->dev_allocs);
    free(ce->host_allocs);
    free(ce->layers);
    free(ce);
}

static int engine_setup(cuda_engine *ce, char *err, size_t errlen)
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
        int rc = dalloc(ce, &a, nt * sizeof(float), err, errlen);
        if (!rc) rc = dalloc(ce, &b, nt * sizeof(float), err, errlen);
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
    DALLOC(ce->cast, (size_t)rows * widest * 2); /* f16/bf16 copies of GEMM inputs */
    ce->split_len = 256;
    ce->n_split = (ce->max_cap + 1 + ce->split_len - 1) / ce->split_len;
    DALLOC(ce->part_acc, (size_t)H * ce->n_split * hd * sizeof(float));
    DALLOC(ce->part_ml, (size_t)H * ce->n_split * 2 * sizeof(float));
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
    DALLOC(ce->next_d, sizeof(int));
    HALLOC(ce->h_tok, (size_t)M * sizeof(int));
    HALLOC(ce->h_next, sizeof(int));
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
            HALLOC(ce->h_krstage, (size_t)(ce->max_cap + 1) * hd * sizeof(float));
        }
    }
    if (ce->dp.host_attend) {
        if (ce->dp.mode != DEV_POLICY_HOST) {
            snprintf(err, errlen, "policy %s: its own attention needs the host-assisted path", kv->ops->name);
            return -1;
        }
        HALLOC(ce->h_att, (size_t)qdim * sizeof(float));
    }
    if (ce->dp.logit_scale) {
        HALLOC(ce->h_hscale, (size_t)n_lh * sizeof(float));
        DALLOC(ce->hscale_d, (size_t)n_lh * sizeof(float));
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
    if (ce->dp.rope_shifted) kv_bytes += n_slots * hd * ce->kv_es; /* the rotated-key scratch */
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
    if (ce->dp.rope_shifted) DALLOC(ce->kr, n_slots * hd * ce->kv_es);
    DALLOC(ce->pos, n_slots * sizeof(int32_t));
    if ((ce->dp.mode == DEV_POLICY_DEVICE && ce->dp.evict == EV_H2O) || ce->dp.mode == DEV_POLICY_ROUNDS)
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
    if (engine_setup(ce, err, errlen) != 0) {
        cuda_engine_free(ce);
        return -1;
    }
    *out = ce;
    return 0;
}

/* x += W_down(silu(W_gate h) * W_up h), h = norm(x), for n rows (uses xb, hb, hb2). */
static int mlp_block(cuda_engine *ce, const dlayer *dl, int n, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    const int dim = c->hidden_size, ffn = c->intermediate_size;
    LAUNCH(launch_rmsnorm(ce->x, dl->ffn_norm, ce->xb, n, dim, c->rms_norm_eps, ce->st));
    if (ce_gemm(ce, ce->hb, ce->xb, &dl->gate, n, err, errlen) ||
        ce_gemm_ex(ce, ce->hb2, ce->xb, &dl->up, n, dl->up.dt == dl->gate.dt, err, errlen))
        return -1;
    LAUNCH(launch_swiglu(ce->hb, ce->hb2, (size_t)n * ffn, ce->st));
    if (ce_gemm(ce, ce->xb, ce->hb, &dl->down, n, err, errlen)) return -1;
    LAUNCH(launch_add(ce->x, ce->xb, (size_t)n * dim, ce->st));
    return 0;
}

/* rmsnorm → q, k, v → RoPE at positions pos0.. for n rows of x (layer l); --rope shifted: no
 * RoPE here (keys are cached before RoPE; shifted_rotate rotates by rank). A 16-bit cache: k
 * and v rounded to its dtype (as model/forward.c), so the chunk attends to the values the
 * cache will hold and the host mirror's hooks see them. */
static int qkv_rope(cuda_engine *ce, const dlayer *dl, int n, int pos0, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    LAUNCH(launch_rmsnorm(ce->x, dl->attn_norm, ce->xb, n, c->hidden_size, c->rms_norm_eps, ce->st));
    if (ce_gemm(ce, ce->q, ce->xb, &dl->wq, n, err, errlen) ||
        ce_gemm_ex(ce, ce->k, ce->xb, &dl->wk, n, dl->wk.dt == dl->wq.dt, err, errlen) ||
        ce_gemm_ex(ce, ce->v, ce->xb, &dl->wv, n, dl->wv.dt == dl->wk.dt && dl->wk.dt == dl->wq.dt,
                err, errlen))
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

/* --rope shifted (POLICIES.md §1.7), layer l, as model/forward.c: ce->kr = the live keys of
 * every KV head rotated by their rank in position order; the n query rows rotated at ranks
 * len[g] + delta + i (prefill: delta 0, decode after the write: delta -1, i = 0); for a
 * prefill (krn != 0) ce->krn = the chunk's keys at ranks len[g] + i. max_len: an upper bound
 * of the layer's live lengths. */
static int shifted_rotate(cuda_engine *ce, int l, int n, int delta, int krn, int max_len,
                          char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    const int hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, G = H / Hkv;
    const int i0 = kv_idx(ce->kv, l, 0);
    LAUNCH(launch_rope_live(ce->kr, ce->kc, ce->kv_dt, ce->pos, ce->off + i0, ce->len + i0, Hkv, hd,
                            ce->rope_cos, ce->rope_sin, max_len, ce->st));
    LAUNCH(launch_rope_rank(ce->q, n, H, G, hd, ce->rope_cos, ce->rope_sin, ce->len + i0, delta, ce->st));
    if (krn) {
        CUDA_TRY(cudaMemcpyAsync(ce->krn, ce->k, (size_t)n * Hkv * hd * sizeof(float),
                                 cudaMemcpyDeviceToDevice, ce->st));
        LAUNCH(launch_rope_rank(ce->krn, n, Hkv, 1, hd, ce->rope_cos, ce->rope_sin, ce->len + i0, 0, ce->st));
    }
    return 0;
}

/* The policy's logit scale (buzz_logn, POLICIES.md §4.9) for layer l: scale · logit_scale(n_keys)
 * per KV head, n_keys = the host mirror's live length + extra (prefill: the chunk's tokens;
 * decode: 1 when the device appends the token, 0 when the host already counted it), computed
 * by the policy's own hook as model/forward.c does; uploaded on the stream. NULL without one. */
static const float *head_scales(cuda_engine *ce, int l, int extra, float scale, char *err,
                                size_t errlen)
{
    if (!ce->dp.logit_scale) return NULL;
    kv_cache *kv = ce->kv;
    const int i0 = kv_idx(kv, l, 0);
    for (int g = 0; g < kv->n_kv_heads; g++)
        ce->h_hscale[i0 + g] = scale * kv->ops->logit_scale(kv, kv_len(kv, l, g) + extra);
    cudaError_t e = cudaMemcpyAsync(ce->hscale_d + i0, ce->h_hscale + i0,
                                    (size_t)kv->n_kv_heads * sizeof(float), cudaMemcpyHostToDevice,
                                    ce->st);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s:%d: cudaMemcpyAsync (logit scales): %s", __FILE__, __LINE__,
                 cudaGetErrorString(e));
        return NULL;
    }
    return ce->hscale_d + i0;
}

extern "C" int cuda_engine_prefill(cuda_engine *ce, const int *tokens, int n, int pos0,
                                   float *logits_all, float *logits_last, char *err, size_t errlen)
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
    if (ce->mirror_stale) {
        /* a prefill after decode steps (a later chunk, a follow-up turn): the device policies kept
         * positions and scores on the device only, and the policies' on_prefill read them on the
         * host mirror (live slots as candidates) */
        CUDA_TRY(cudaMemcpyAsync(kv->pos, ce->pos, kv->n_slots * sizeof(int32_t), cudaMemcpyDeviceToHost, ce->st));
        if (ce->score && kv->score)
            CUDA_TRY(cudaMemcpyAsync(kv->score, ce->score, kv->n_slots * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
        CUDA_TRY(cudaStreamSynchronize(ce->st));
        ce->mirror_stale = 0;
    }
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
        /* the keys as the attention sees them: the cache (absolute), or rotated by rank */
        const void *katt = ce->kc;
        const float *knew = ce->k;
        if (ce->dp.rope_shifted) {
            if (shifted_rotate(ce, l, n, 0, 1, max_cand - n, err, errlen)) return -1;
            katt = ce->kr;
            knew = ce->krn;
        }
        const float *hs = NULL;
        if (ce->dp.logit_scale && !(hs = head_scales(ce, l, n, scale, err, errlen))) return -1;
        /* exact causal attention over the live slots + the chunk */
        LAUNCH(launch_attn_prefill(ce->q, qdim, katt, ce->vc, ce->kv_dt, off_l, len_l, knew, ce->v,
                                   kvdim, n, H, G, hd, scale, ce->att, qdim, ce->lse, ce->max_chunk,
                                   ce->st, hs));
        if (ce->dp.want_colsum) {
            LAUNCH(launch_attn_colsum(ce->q, qdim, katt, ce->kv_dt, off_l, len_l, knew, kvdim, n,
                                      Hkv, G, hd, scale, ce->lse, ce->max_chunk, max_cand, ce->colsum,
                                      ce->cand_stride, ce->st, hs));
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
            if (kv_prefill_plan(kv, &chunk, ce->h_keep, ce->cand_stride, ce->h_nkeep, err, errlen) != 0)
                return -1;
        } else if (ce_host_prefill(ce, &chunk, err, errlen)) {
            return -1;
        }
        if (ce->relayout_pending) { /* the policy re-partitioned the layer (ada_*) */
            ce->relayout_pending = 0;
            if (ce_gather_layer(ce, l, ce->h_off_before, ce->h_keep, ce->cand_stride, ce->h_nkeep,
                                ce->h_nlive, err, errlen))
                return -1;
        } else {
            for (int g = 0; g < Hkv; g++)
                if (ce_gather_region(ce, l, g, ce->h_keep + (size_t)g * ce->cand_stride, ce->h_nkeep[g],
                                     ce->h_nlive[g], err, errlen))
                    return -1;
        }
        if (ce_upload_layer_meta(ce, l, err, errlen)) return -1;
        /* after a prefill the slots are in position order: the rings restart at slot 0 */
        CUDA_TRY(cudaMemsetAsync(ce->ring + kv_idx(kv, l, 0), 0, (size_t)Hkv * sizeof(int), ce->st));
        /* output projection and residual, then the MLP */
        if (ce_gemm(ce, ce->xb, ce->att, &dl->wo, n, err, errlen)) return -1;
        LAUNCH(launch_add(ce->x, ce->xb, (size_t)n * dim, ce->st));
        if (mlp_block(ce, dl, n, err, errlen)) return -1;
    }
    kv_sample_stats(kv);

    /* final norm and LM head: every row in blocks (logits_all), or the last row */
    LAUNCH(launch_rmsnorm(ce->x, ce->final_norm, ce->xb, n, dim, c->rms_norm_eps, ce->st));
    int r0 = logits_all ? 0 : n - 1;
    for (; r0 < n; r0 += ce->logit_rows) {
        int m = n - r0 < ce->logit_rows ? n - r0 : ce->logit_rows;
        if (ce_gemm(ce, ce->logits, ce->xb + (size_t)r0 * dim, &ce->lm_head, m, err, errlen)) return -1;
        float *dst = logits_all ? logits_all + (size_t)r0 * V : logits_last;
        CUDA_TRY(cudaMemcpyAsync(dst, ce->logits, (size_t)m * V * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
        CUDA_TRY(cudaStreamSynchronize(ce->st));
    }
    if (logits_all) memcpy(logits_last, logits_all + (size_t)(n - 1) * V, (size_t)V * sizeof(float));
    return 0;
}

extern "C" int cuda_engine_decode(cuda_engine *ce, int token, int pos, float *logits, int *next,
                                  char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads;
    const int G = H / Hkv, V = c->vocab_size;
    const float scale = 1.0f / sqrtf((float)hd);
    /* the device writes and scores the token (DEVICE and ROUNDS), or the host hooks do (HOST) */
    const int device_policy = ce->dp.mode != DEV_POLICY_HOST;
    /* the device policies grow every head by one and evict back to capacity: the host mirror
     * of the lengths follows without reading the device */
    int max_len = 0;
    for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++) {
        if (device_policy && kv->len[i] + 1 > kv->cap[i] + 1) {
            snprintf(err, errlen, "KV cache region %d is over its capacity %d", i, kv->cap[i]);
            return -1;
        }
        if (kv->len[i] + 1 > max_len) max_len = kv->len[i] + 1;
    }
    ce->h_tok[0] = token;
    CUDA_TRY(cudaMemcpyAsync(ce->tok_d, ce->h_tok, sizeof(int), cudaMemcpyHostToDevice, ce->st));
    LAUNCH(launch_embed(ce->embed.data, ce->embed.dt, ce->tok_d, 1, dim, ce->x, ce->st));
    for (int l = 0; l < c->n_layers; l++) {
        const dlayer *dl = &ce->layers[l];
        const int i0 = kv_idx(kv, l, 0);
        if (qkv_rope(ce, dl, 1, pos, err, errlen)) return -1;
        if (device_policy)
            LAUNCH(launch_kv_write(ce->kc, ce->vc, ce->kv_dt, ce->pos, ce->score, ce->off + i0,
                                   ce->len + i0, NULL, ce->k, ce->v, Hkv, hd, pos, ce->st));
        else if (ce_host_pre_attn(ce, l, pos, err, errlen))
            return -1;
        /* --rope shifted: the live keys (the new one included) and the query by rank */
        const void *katt = ce->kc;
        if (ce->dp.rope_shifted) {
            if (shifted_rotate(ce, l, 1, -1, 0, max_len, err, errlen)) return -1;
            katt = ce->kr;
        }
        const float *hs = NULL;
        if (ce->dp.logit_scale && !(hs = head_scales(ce, l, device_policy ? 1 : 0, scale, err, errlen)))
            return -1;
        if (ce->dp.host_attend) {
            /* the policy's own attention (subgen_stream, §8.3) on the host mirror's K/V and
             * state, with the query ce_host_pre_attn copied back (h_qkv) */
            for (int g = 0; g < Hkv; g++)
                kv->ops->attend(kv, l, g, ce->h_qkv + (size_t)g * G * hd, scale, ce->h_att + (size_t)g * G * hd);
            CUDA_TRY(cudaMemcpyAsync(ce->att, ce->h_att, (size_t)H * hd * sizeof(float),
                                     cudaMemcpyHostToDevice, ce->st));
        } else {
            LAUNCH(launch_attn_decode(ce->q, katt, ce->vc, ce->kv_dt, ce->off + i0, ce->len + i0, H, G,
                                      hd, scale, ce->split_len, ce->n_split, ce->part_acc, ce->part_ml,
                                      ce->dp.want_probs ? ce->slog : NULL, ce->slog_stride, ce->att,
                                      ce->lse, ce->st, hs));
        }
        if (device_policy) {
            if (ce->score && ce->dp.want_probs)
                LAUNCH(launch_score_accum(ce->slog, ce->slog_stride, ce->lse, ce->off + i0,
                                          ce->len + i0, Hkv, G, max_len, ce->score, ce->st));
            if (ce->dp.mode == DEV_POLICY_ROUNDS && ce_rounds_post_attn(ce, l, pos, err, errlen))
                return -1;
            LAUNCH(launch_evict(ce->dp.evict, ce->kc, ce->vc, ce->kv_dt, ce->pos, ce->score,
                                ce->off + i0, ce->len + i0, ce->cap + i0, ce->ring + i0, Hkv, hd,
                                ce->dp.n_sink, pos - ce->dp.n_recent + 1, ce->dp.mean, pos, ce->st));
        } else if (ce_host_post_attn(ce, l, pos, err, errlen)) {
            return -1;
        }
        if (ce_gemm(ce, ce->xb, ce->att, &dl->wo, 1, err, errlen)) return -1;
        LAUNCH(launch_add(ce->x, ce->xb, (size_t)dim, ce->st));
        if (mlp_block(ce, dl, 1, err, errlen)) return -1;
    }
    LAUNCH(launch_rmsnorm(ce->x, ce->final_norm, ce->xb, 1, dim, c->rms_norm_eps, ce->st));
    if (ce_gemm(ce, ce->logits, ce->xb, &ce->lm_head, 1, err, errlen)) return -1;
    LAUNCH(launch_argmax(ce->logits, V, ce->next_d, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->h_next, ce->next_d, sizeof(int), cudaMemcpyDeviceToHost, ce->st));
    if (logits)
        CUDA_TRY(cudaMemcpyAsync(logits, ce->logits, (size_t)V * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    *next = ce->h_next[0];
    if (device_policy) ce->mirror_stale = 1;
    if (ce->dp.mode == DEV_POLICY_DEVICE)
        for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++) {
            kv->len[i]++;
            if (kv->len[i] > kv->cap[i] && ce->dp.evict != EV_NONE) {
                kv->len[i] = kv->cap[i];
                kv->evictions++;
            }
        }
    kv_sample_stats(kv);
    return 0;
}
