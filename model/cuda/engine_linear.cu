/* The projections of the device engine (model/cuda/engine.cuh, ce_linear): y = x · Wᵀ for n rows.
 *
 * One row (a decode step, a 1-token chunk): the GEMV kernel (kernels/cuda/gemv.cu) on the
 * weights as stored — block formats dequantized in registers, f32 activations, f32 accumulation.
 *
 * A chunk of n > 1 rows: cuBLAS, fp32 accumulation (CUBLAS_COMPUTE_32F), activations kept at
 * (nearly) f32 precision:
 *   F32 weights:   cublasGemmEx in f32 (no TF32: CUBLAS_DEFAULT_MATH);
 *   F16/BF16:      the activations split into hi + lo halves of the weights' type
 *                  (launch_split_hilo: hi = round(x), lo = round(x − hi)), two tensor-core GEMMs
 *                  into the same output (β = 0, then β = 1): 22 significant bits for f16, 16 for
 *                  bf16 (relative error ≤ 2⁻¹⁷ per element, against 2⁻⁹ when x is rounded to bf16);
 *   block formats: a tile of weight rows dequantized to f16 into scratch (ce->wtile, at most 16 Mi
 *                  elements), then the f16 hi/lo GEMMs on the tile; weights rounded to f16 (11
 *                  bits; the CPU instead rounds the activations to 8 bits).
 * Limits: f16 halves overflow above 65504 (activations of that size are not seen in LLaMA-family
 * GEMM inputs, which follow an RMSNorm or a SwiGLU). */
#include "model/cuda/engine.cuh"

static cudaDataType cuda_type(int dt)
{
    return dt == CU_F16 ? CUDA_R_16F : dt == CU_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* C[m][n] (col-major, ldc) (+)= A[m][k]ᵀ-stored-row-major · B — the engine's one GEMM shape */
static int gemm(cuda_engine *ce, int m, int n, int k, const void *A, int t, const void *B, float *C, int ldc,
                float beta, char *err, size_t errlen)
{
    const float alpha = 1.0f;
    cudaDataType ct = cuda_type(t);
    CUBLAS_TRY(cublasGemmEx(ce->blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A, ct, k, B, ct, k, &beta, C,
                            CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (ce->sync_each) CUDA_TRY(cudaStreamSynchronize(ce->st));
    return 0;
}

/* y[n][w.rows] = x[n][w.cols] · wᵀ through cuBLAS (n > 1) */
static int gemm_rows(cuda_engine *ce, float *y, const float *x, const dweight *w, int n, char *err,
                     size_t errlen)
{
    const size_t nx = (size_t)n * w->cols;
    if (w->dt == CU_F32) return gemm(ce, w->rows, n, w->cols, w->data, CU_F32, x, y, w->rows, 0.0f, err, errlen);
    if (nx > ce->cast_elems) {
        snprintf(err, errlen, "GEMM input of %zu elements over the scratch of %zu", nx, ce->cast_elems);
        return -1;
    }
    const int t = w->dt == CU_BF16 ? CU_BF16 : CU_F16; /* block formats: f16 tiles */
    void *hi = ce->cast, *lo = (char *)ce->cast + ce->cast_elems * 2;
    LAUNCH(launch_split_hilo(x, nx, t, hi, lo, ce->st));
    if (!cu_is_quant(w->dt))
        return gemm(ce, w->rows, n, w->cols, w->data, t, hi, y, w->rows, 0.0f, err, errlen) ||
               gemm(ce, w->rows, n, w->cols, w->data, t, lo, y, w->rows, 1.0f, err, errlen);
    for (int r0 = 0; r0 < w->rows; r0 += ce->tile_rows) {
        int nr = w->rows - r0 < ce->tile_rows ? w->rows - r0 : ce->tile_rows;
        LAUNCH(launch_dequant_rows(w->data, w->dt, w->cols, r0, nr, ce->wtile, CU_F16, ce->st));
        if (gemm(ce, nr, n, w->cols, ce->wtile, CU_F16, hi, y + r0, w->rows, 0.0f, err, errlen) ||
            gemm(ce, nr, n, w->cols, ce->wtile, CU_F16, lo, y + r0, w->rows, 1.0f, err, errlen))
            return -1;
    }
    return 0;
}

int ce_linear(cuda_engine *ce, float *y, const float *x, const dweight *w, int n, const float *bias, int add,
              char *err, size_t errlen)
{
    if (n == 1) {
        gv_args a;
        memset(&a, 0, sizeof a);
        a.m[0] = cu_of(*w);
        a.nm = 1;
        a.epi = add ? GV_ADD : GV_STORE;
        a.x = x;
        a.y[0] = y;
        a.bias = bias;
        LAUNCH(launch_gemv(&a, ce->gemv_blocks, ce->st));
        return 0;
    }
    if (!add) {
        if (gemm_rows(ce, y, x, w, n, err, errlen)) return -1;
        if (bias) LAUNCH(launch_add_bias(y, bias, n, w->rows, ce->st));
        return 0;
    }
    /* y += x·wᵀ (+ bias), through xb-sized scratch: the product, its bias, then the residual */
    if (y == ce->xb || x == ce->xb || (size_t)n * w->rows > (size_t)ce->max_chunk * ce->w->cfg.hidden_size) {
        snprintf(err, errlen, "ce_linear: residual add of %d x %d needs the xb scratch", n, w->rows);
        return -1;
    }
    if (gemm_rows(ce, ce->xb, x, w, n, err, errlen)) return -1;
    if (bias) LAUNCH(launch_add_bias(ce->xb, bias, n, w->rows, ce->st));
    LAUNCH(launch_add(y, ce->xb, (size_t)n * w->rows, ce->st));
    return 0;
}
