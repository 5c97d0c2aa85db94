/* Prefill attention (tiled, causal, online softmax, GQA, row log-sum-exp) and the prefill
 * column sums from a second QKᵀ pass using that LSE (POLICIES.md §1.5). Plain f32 CUDA cores,
 * written for clarity and checkability, not peak speed (no tensor cores yet).
 *
 * Keys of a KV head g, in candidate order: its len[g] live slots (storage type T, in the cache
 * region), then the chunk's n tokens (f32 scratch). Query row i (chunk-relative) sees every live
 * slot and chunk tokens 0..i. */
#include "kernels/cuda/kernels_cuda.cuh"

#define PF_BQ 16           /* query rows per block */
#define PF_BK 16           /* keys per tile */
#define PF_TPR 8           /* threads per query row */
#define PF_THREADS (PF_BQ * PF_TPR)
#define PF_MAXD 256        /* head_dim limit: PF_MAXD / PF_TPR accumulators per thread */

/* Key/value element d of candidate j of KV head g as f32 (j < n_live: live slot, else chunk). */
template <typename T>
__device__ __forceinline__ float cand_elem(const T *live, const float *chunk, int kv_stride,
                                           int col, int n_live, int j, int d, int head_dim)
{
    return j < n_live ? to_f32(live[(size_t)j * head_dim + d])
                      : chunk[(size_t)(j - n_live) * kv_stride + col + d];
}

/* grid (n_heads, ceil(n / PF_BQ)), PF_THREADS threads; dynamic shared memory
 * PF_BK·(head_dim + 1) + (PF_BQ + PF_BK)·head_dim + PF_BQ·PF_BK floats (prefill_go). Thread t
 * owns query row t / PF_TPR and the dimensions d ≡ t mod PF_TPR of its accumulator. Ks rows are
 * padded to head_dim + 1 floats: the score loop reads 16 key rows at one d per warp, which with a
 * stride of head_dim (a multiple of 32) would all hit one shared-memory bank. */
template <typename TK, typename TV>
__global__ void __launch_bounds__(PF_THREADS)
attn_prefill_kernel(const float *q, int q_stride, const TK *kc, const TV *vc, const size_t *off,
                    const int *len, const float *k_new, const float *v_new, int kv_stride, int n,
                    int G, int head_dim, float scale, float *out, int out_stride, float *lse,
                    int lse_stride, const float *head_scale)
{
    extern __shared__ float sm[];
    const int ld = head_dim + 1;             /* padded row stride of Ks */
    float *Qs = sm;                          /* [PF_BQ][head_dim], pre-scaled */
    float *Ks = Qs + PF_BQ * head_dim;       /* [PF_BK][ld] */
    float *Vs = Ks + PF_BK * ld;             /* [PF_BK][head_dim] */
    float *Ss = Vs + PF_BK * head_dim;       /* [PF_BQ][PF_BK] scores of the tile */
    const int h = blockIdx.x, g = h / G, i0 = blockIdx.y * PF_BQ, tid = threadIdx.x;
    const int n_live = len[g], col = g * head_dim;
    const TK *Kl = kc + off[g] * head_dim;
    const TV *Vl = vc + off[g] * head_dim;
    const float sc = head_scale ? head_scale[g] : scale;

    for (int e = tid; e < PF_BQ * head_dim; e += PF_THREADS) {
        int r = e / head_dim, d = e - r * head_dim, i = i0 + r;
        Qs[e] = i < n ? q[(size_t)i * q_stride + (size_t)h * head_dim + d] * sc : 0.0f;
    }
    const int r = tid / PF_TPR, sub = tid % PF_TPR, i = i0 + r;
    float m = -INFINITY, l = 0.0f, acc[PF_MAXD / PF_TPR];
#pragma unroll
    for (int k = 0; k < PF_MAXD / PF_TPR; k++) acc[k] = 0.0f;
    /* keys visible to the last row of this block (uniform over the block) */
    const int i_last = min(i0 + PF_BQ, n) - 1;
    const int n_keys = n_live + i_last + 1;
    for (int j0 = 0; j0 < n_keys; j0 += PF_BK) {
        __syncthreads(); /* Qs written (first tile); Ks/Vs/Ss no longer read (later tiles) */
        for (int e = tid; e < PF_BK * head_dim; e += PF_THREADS) {
            int c = e / head_dim, d = e - c * head_dim, j = j0 + c;
            float kk = 0.0f, vv = 0.0f;
            if (j < n_keys) {
                kk = cand_elem(Kl, k_new, kv_stride, col, n_live, j, d, head_dim);
                vv = cand_elem(Vl, v_new, kv_stride, col, n_live, j, d, head_dim);
            }
            Ks[c * ld + d] = kk;
            Vs[e] = vv;
        }
        __syncthreads();
        for (int e = tid; e < PF_BQ * PF_BK; e += PF_THREADS) {
            int rr = e / PF_BK, c = e - rr * PF_BK, ii = i0 + rr, j = j0 + c;
            float sc = -INFINITY;
            if (ii < n && j < n_keys && (j < n_live || j - n_live <= ii)) {
                const float *qr = Qs + rr * head_dim, *kr = Ks + c * ld;
                float dot = 0.0f;
                for (int d = 0; d < head_dim; d++) dot += qr[d] * kr[d];
                sc = dot;
            }
            Ss[e] = sc;
        }
        __syncthreads();
        /* online softmax update of row r (the PF_TPR threads of a row compute the same m, l) */
        const float *Sr = Ss + r * PF_BK;
        float tmax = -INFINITY;
        for (int c = 0; c < PF_BK; c++) tmax = fmaxf(tmax, Sr[c]);
        float mn = fmaxf(m, tmax);
        if (mn != -INFINITY) {
            float corr = expf(m - mn); /* 0 when m = -inf */
            l *= corr;
#pragma unroll
            for (int k = 0; k < PF_MAXD / PF_TPR; k++) acc[k] *= corr;
            for (int c = 0; c < PF_BK; c++) {
                float p = expf(Sr[c] - mn); /* masked: exp(-inf) = 0 */
                l += p;
#pragma unroll
                for (int k = 0; k < PF_MAXD / PF_TPR; k++) {
                    int d = sub + k * PF_TPR;
                    if (d < head_dim) acc[k] += p * Vs[c * head_dim + d];
                }
            }
            m = mn;
        }
    }
    if (i < n) {
        float inv = 1.0f / l;
        float *o = out + (size_t)i * out_stride + (size_t)h * head_dim;
#pragma unroll
        for (int k = 0; k < PF_MAXD / PF_TPR; k++) {
            int d = sub + k * PF_TPR;
            if (d < head_dim) o[d] = acc[k] * inv;
        }
        if (sub == 0) lse[(size_t)h * lse_stride + i] = m + logf(l);
    }
}

template <typename TK, typename TV>
static cudaError_t prefill_go(const float *q, int q_stride, const void *kc, const void *vc,
                              const size_t *off, const int *len, const float *k_new,
                              const float *v_new, int kv_stride, int n, int n_heads, int G,
                              int head_dim, float scale, float *out, int out_stride, float *lse,
                              int lse_stride, cudaStream_t s, const float *head_scale)
{
    size_t smem = ((size_t)PF_BK * (head_dim + 1) + (size_t)(PF_BQ + PF_BK) * head_dim + PF_BQ * PF_BK) *
                  sizeof(float);
    cudaError_t e = cudaFuncSetAttribute(attn_prefill_kernel<TK, TV>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    dim3 grid(n_heads, (n + PF_BQ - 1) / PF_BQ);
    attn_prefill_kernel<TK, TV><<<grid, PF_THREADS, smem, s>>>(q, q_stride, (const TK *)kc, (const TV *)vc,
                                                               off, len, k_new, v_new, kv_stride, n, G,
                                                               head_dim, scale, out, out_stride, lse,
                                                               lse_stride, head_scale);
    return cudaPeekAtLastError();
}

/* Dispatches F<TK, TV> for the key/value storage pairs the engine uses: both the cache's type,
 * or f32 keys (the rank-rotated scratch of --rope shifted) with 16-bit values. */
#define CU_DISPATCH_KV(kdt, vdt, F, ...)                                                        \
    ((kdt) == (vdt) ? CU_DISPATCH(vdt, F##_same, __VA_ARGS__)                                   \
     : (kdt) == CU_F32 && (vdt) == CU_F16  ? F<float, __half>(__VA_ARGS__)                      \
     : (kdt) == CU_F32 && (vdt) == CU_BF16 ? F<float, __nv_bfloat16>(__VA_ARGS__)               \
                                           : cudaErrorInvalidValue)
template <typename T>
static cudaError_t prefill_go_same(const float *q, int q_stride, const void *kc, const void *vc,
                                   const size_t *off, const int *len, const float *k_new,
                                   const float *v_new, int kv_stride, int n, int n_heads, int G,
                                   int head_dim, float scale, float *out, int out_stride, float *lse,
                                   int lse_stride, cudaStream_t s, const float *head_scale)
{
    return prefill_go<T, T>(q, q_stride, kc, vc, off, len, k_new, v_new, kv_stride, n, n_heads, G, head_dim,
                            scale, out, out_stride, lse, lse_stride, s, head_scale);
}

cudaError_t launch_attn_prefill(const float *q, int q_stride, const void *kc, int k_dt, const void *vc,
                                int v_dt, const size_t *off, const int *len, const float *k_new,
                                const float *v_new, int kv_stride, int n, int n_heads, int G,
                                int head_dim, float scale, float *out, int out_stride, float *lse,
                                int lse_stride, cudaStream_t s, const float *head_scale)
{
    if (head_dim < 1 || head_dim > PF_MAXD) return cudaErrorInvalidValue;
    if (n < 1) return cudaSuccess;
    return CU_DISPATCH_KV(k_dt, v_dt, prefill_go, q, q_stride, kc, vc, off, len, k_new, v_new, kv_stride,
                          n, n_heads, G, head_dim, scale, out, out_stride, lse, lse_stride, s,
                          head_scale);
}

/* ------------------------------------------------------------------ column sums */

#define CS_BC 64  /* candidates (columns) per block = threads */
#define CS_BR 16  /* query rows per shared tile */

/* grid (n_kv_heads, ceil(n_cand_max / CS_BC)), CS_BC threads; dynamic shared memory
 * head_dim·CS_BC (keys, transposed) + CS_BR·head_dim (queries) + CS_BR (lse) floats.
 * Thread t owns candidate j = blockIdx.y·CS_BC + t and sums, in fixed order (query head of the
 * group, then rows ascending), exp(s_ij − lse_hi) over the rows i that see it. */
template <typename T>
__global__ void __launch_bounds__(CS_BC)
attn_colsum_kernel(const float *q, int q_stride, const T *kc, const size_t *off, const int *len,
                   const float *k_new, int kv_stride, int n, int G, int head_dim, float scale,
                   const float *lse, int lse_stride, float *colsum, int cand_stride,
                   const float *head_scale)
{
    extern __shared__ float sm[];
    float *Kt = sm;                         /* [head_dim][CS_BC] */
    float *Qs = Kt + head_dim * CS_BC;      /* [CS_BR][head_dim] */
    float *Ls = Qs + CS_BR * head_dim;      /* [CS_BR] */
    const int g = blockIdx.x, tid = threadIdx.x, j0 = blockIdx.y * CS_BC, j = j0 + tid;
    const int n_live = len[g], n_cand = n_live + n, col = g * head_dim;
    if (j0 >= n_cand) return; /* uniform over the block */
    const T *Kl = kc + off[g] * head_dim;
    const float sc = head_scale ? head_scale[g] : scale;
    for (int e = tid; e < CS_BC * head_dim; e += CS_BC) {
        int c = e / head_dim, d = e - c * head_dim, jj = j0 + c;
        Kt[d * CS_BC + c] = jj < n_cand ? cand_elem(Kl, k_new, kv_stride, col, n_live, jj, d, head_dim)
                                        : 0.0f;
    }
    /* the first row that sees any candidate of this block: chunk token j0 − n_live is first seen
     * by row j0 − n_live; live slots by row 0 */
    const int row_first = j0 - n_live > 0 ? j0 - n_live : 0;
    float acc = 0.0f;
    for (int hh = 0; hh < G; hh++) {
        const int h = g * G + hh;
        for (int i0 = row_first; i0 < n; i0 += CS_BR) {
            __syncthreads(); /* Kt written / previous Qs, Ls no longer read */
            for (int e = tid; e < CS_BR * head_dim; e += CS_BC) {
                int r = e / head_dim, d = e - r * head_dim, i = i0 + r;
                Qs[e] = i < n ? q[(size_t)i * q_stride + (size_t)h * head_dim + d] * sc : 0.0f;
            }
            for (int r = tid; r < CS_BR; r += CS_BC)
                Ls[r] = i0 + r < n ? lse[(size_t)h * lse_stride + i0 + r] : 0.0f;
            __syncthreads();
            if (j < n_cand) {
                for (int r = 0; r < CS_BR; r++) {
                    int i = i0 + r;
                    if (i >= n || (j >= n_live && j - n_live > i)) continue;
                    const float *qr = Qs + r * head_dim;
                    float dot = 0.0f;
                    for (int d = 0; d < head_dim; d++) dot += qr[d] * Kt[d * CS_BC + tid];
                    acc += expf(dot - Ls[r]);
                }
            }
        }
    }
    if (j < n_cand) colsum[(size_t)g * cand_stride + j] = acc;
}

template <typename T>
static cudaError_t colsum_go(const float *q, int q_stride, const void *kc, const size_t *off,
                             const int *len, const float *k_new, int kv_stride, int n,
                             int n_kv_heads, int G, int head_dim, float scale, const float *lse,
                             int lse_stride, int n_cand_max, float *colsum, int cand_stride,
                             cudaStream_t s, const float *head_scale)
{
    size_t smem = ((size_t)head_dim * CS_BC + (size_t)CS_BR * head_dim + CS_BR) * sizeof(float);
    cudaError_t e = cudaFuncSetAttribute(attn_colsum_kernel<T>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    dim3 grid(n_kv_heads, (n_cand_max + CS_BC - 1) / CS_BC);
    attn_colsum_kernel<T><<<grid, CS_BC, smem, s>>>(q, q_stride, (const T *)kc, off, len, k_new,
                                                    kv_stride, n, G, head_dim, scale, lse,
                                                    lse_stride, colsum, cand_stride, head_scale);
    return cudaPeekAtLastError();
}

cudaError_t launch_attn_colsum(const float *q, int q_stride, const void *kc, int kv_dt,
                               const size_t *off, const int *len, const float *k_new,
                               int kv_stride, int n, int n_kv_heads, int G, int head_dim,
                               float scale, const float *lse, int lse_stride, int n_cand_max,
                               float *colsum, int cand_stride, cudaStream_t s,
                               const float *head_scale)
{
    if (head_dim < 1 || head_dim > PF_MAXD) return cudaErrorInvalidValue;
    if (n < 1 || n_cand_max < 1) return cudaSuccess;
    return CU_DISPATCH(kv_dt, colsum_go, q, q_stride, kc, off, len, k_new, kv_stride, n,
                       n_kv_heads, G, head_dim, scale, lse, lse_stride, n_cand_max, colsum,
                       cand_stride, s, head_scale);
}
