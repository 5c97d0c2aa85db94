/* Prefill attention (tiled, causal, online softmax, GQA, row log-sum-exp) and the prefill
 * column sums from a second QKᵀ pass using that LSE (POLICIES.md §1.5). Two kernels for the
 * attention: with a 16-bit cache (F16 or BF16 keys and values, head_dim a multiple of 16, at
 * most 128) the FlashAttention-2-style tensor-core one (attn_prefill_tc_kernel: WMMA 16×16×16
 * tiles, f32 accumulation, queries and probabilities split into 16-bit hi + lo (+ lo2 for
 * BF16) parts so that the products keep about f32 precision); otherwise (f32 caches, f32
 * rank-rotated keys, other head sizes) the f32 CUDA-core one (attn_prefill_kernel).
 *
 * Keys of a KV head g, in candidate order: its len[g] live slots (storage type T, in the cache
 * region), then the chunk's n tokens (f32 scratch). Query row i (chunk-relative) sees every live
 * slot and chunk tokens 0..i. */
#include "kernels/cuda/kernels_cuda.cuh"

#ifdef __CUDACC__
#include <mma.h> /* the emulator (tests/cuda_emu/emu.h) brings its own nvcuda::wmma */
#endif

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

/* ------------------------------------------------------------ tensor-core prefill */

#define TC_WARPS 4                  /* warps per block, 16 query rows each */
#define TC_BQ (16 * TC_WARPS)       /* query rows per block */
#define TC_BK 32                    /* keys per tile */
#define TC_THREADS (32 * TC_WARPS)
#define TC_MAXD 128

/* parts of the 16-bit split of an f32 (x ≈ Σ parts): binary16 keeps 11 bits a part, bfloat16 8 */
template <typename T> struct tc_parts { static constexpr int n = 2; };
template <> struct tc_parts<__nv_bfloat16> { static constexpr int n = 3; };

template <typename T> __device__ __forceinline__ void tc_split(float x, T *dst, size_t stride)
{
#pragma unroll
    for (int k = 0; k < tc_parts<T>::n; k++) {
        T p = from_f32<T>(x);
        dst[(size_t)k * stride] = p;
        x -= to_f32(p);
    }
}

/* Shared memory of attn_prefill_tc_kernel, in bytes (every array 32-byte aligned for WMMA). */
static size_t tc_smem_bytes(int head_dim, int parts, size_t esize)
{
    return (size_t)parts * TC_BQ * head_dim * esize   /* Q parts [parts][TC_BQ][D] */
           + 2 * (size_t)TC_BK * head_dim * esize     /* K, V tiles [TC_BK][D] */
           + (size_t)TC_BQ * TC_BK * 4                /* scores [TC_BQ][TC_BK] f32 */
           + (size_t)parts * TC_BQ * TC_BK * esize    /* P parts [parts][TC_BQ][TC_BK] */
           + (size_t)TC_BQ * head_dim * 4             /* O [TC_BQ][D] f32 */
           + 2 * (size_t)TC_BQ * 4;                   /* running max, running sum */
}

/* grid (n_heads, ceil(n / TC_BQ)), TC_THREADS threads, tc_smem_bytes() of dynamic shared
 * memory; T = __half or __nv_bfloat16 (keys and values both), head_dim a multiple of 16, at most
 * TC_MAXD. Same inputs, outputs and visibility rule as attn_prefill_kernel. Warp w owns query
 * rows 16w..16w+15 of the block: per key tile, S = Q·Kᵀ on tensor cores (Σ over the parts of
 * Q), an online-softmax step on its rows (two lanes a row), P split into parts, O = O·corr +
 * P·V on tensor cores with O kept in shared memory (a fragment's element-to-row mapping is
 * unspecified, so the per-row rescale happens there). */
template <typename T>
__global__ void __launch_bounds__(TC_THREADS)
attn_prefill_tc_kernel(const float *q, int q_stride, const T *kc, const T *vc, const size_t *off,
                       const int *len, const float *k_new, const float *v_new, int kv_stride, int n,
                       int G, int head_dim, float scale, float *out, int out_stride, float *lse,
                       int lse_stride, const float *head_scale)
{
    namespace wmma = nvcuda::wmma;
    constexpr int NP = tc_parts<T>::n;
    extern __shared__ float sm[];
    const int D = head_dim;
    T *Qp = (T *)sm;                                  /* [NP][TC_BQ][D] */
    T *Ks = Qp + (size_t)NP * TC_BQ * D;              /* [TC_BK][D] */
    T *Vs = Ks + (size_t)TC_BK * D;                   /* [TC_BK][D] */
    float *Ss = (float *)(Vs + (size_t)TC_BK * D);    /* [TC_BQ][TC_BK] */
    T *Pp = (T *)(Ss + TC_BQ * TC_BK);                /* [NP][TC_BQ][TC_BK] */
    float *Os = (float *)(Pp + (size_t)NP * TC_BQ * TC_BK); /* [TC_BQ][D] */
    float *Ms = Os + (size_t)TC_BQ * D, *Ls = Ms + TC_BQ;
    const int h = blockIdx.x, g = h / G, i0 = blockIdx.y * TC_BQ, tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int n_live = len[g], col = g * D;
    const T *Kl = kc + off[g] * D;
    const T *Vl = vc + off[g] * D;
    const float sc = head_scale ? head_scale[g] : scale;

    for (int e = tid; e < TC_BQ * D; e += TC_THREADS) {
        int r = e / D, d = e - r * D, i = i0 + r;
        tc_split<T>(i < n ? q[(size_t)i * q_stride + (size_t)h * D + d] * sc : 0.0f, Qp + e, (size_t)TC_BQ * D);
        Os[e] = 0.0f;
    }
    for (int r = tid; r < TC_BQ; r += TC_THREADS) {
        Ms[r] = -INFINITY;
        Ls[r] = 0.0f;
    }
    const int i_last = min(i0 + TC_BQ, n) - 1;
    const int n_keys = n_live + i_last + 1;
    /* this lane's row of the warp's 16 and its half of the tile's columns */
    const int rl = 16 * warp + lane / 2, ri = i0 + rl, half = lane % 2;
    for (int j0 = 0; j0 < n_keys; j0 += TC_BK) {
        __syncthreads(); /* Q/O/stats initialised (first tile); K/V of the last tile no longer read */
        for (int e = tid; e < TC_BK * D; e += TC_THREADS) {
            int c = e / D, d = e - c * D, j = j0 + c;
            T kk = from_f32<T>(0.0f), vv = kk;
            if (j < n_live) {
                kk = Kl[(size_t)j * D + d];
                vv = Vl[(size_t)j * D + d];
            } else if (j < n_keys) { /* chunk rows: already rounded to the cache type by the engine */
                kk = from_f32<T>(k_new[(size_t)(j - n_live) * kv_stride + col + d]);
                vv = from_f32<T>(v_new[(size_t)(j - n_live) * kv_stride + col + d]);
            }
            Ks[e] = kk;
            Vs[e] = vv;
        }
        __syncthreads();
        /* S rows of this warp = Σ_parts Qpart · Kᵀ */
        for (int ct = 0; ct < TC_BK / 16; ct++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < D; kk += 16) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;
                wmma::load_matrix_sync(kb, Ks + (size_t)ct * 16 * D + kk, D);
                for (int p = 0; p < NP; p++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qa;
                    wmma::load_matrix_sync(qa, Qp + (size_t)p * TC_BQ * D + (size_t)16 * warp * D + kk, D);
                    wmma::mma_sync(acc, qa, kb, acc);
                }
            }
            wmma::store_matrix_sync(Ss + (size_t)16 * warp * TC_BK + ct * 16, acc, TC_BK, wmma::mem_row_major);
        }
        __syncwarp();
        /* online softmax on row rl: this lane's 16 columns, combined with its partner lane */
        float *Sr = Ss + (size_t)rl * TC_BK;
        float tmax = -INFINITY;
        for (int c = 16 * half; c < 16 * half + 16; c++) {
            int j = j0 + c;
            bool ok = ri < n && j < n_keys && (j < n_live || j - n_live <= ri);
            if (!ok) Sr[c] = -INFINITY;
            tmax = fmaxf(tmax, Sr[c]);
        }
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
        const float m_old = Ms[rl], mn = fmaxf(m_old, tmax);
        const float corr = mn == -INFINITY ? 1.0f : expf(m_old - mn); /* 0 when m_old = -inf */
        float psum = 0.0f;
        for (int c = 16 * half; c < 16 * half + 16; c++) {
            float pr = mn == -INFINITY ? 0.0f : expf(Sr[c] - mn); /* masked: exp(-inf) = 0 */
            psum += pr;
            tc_split<T>(pr, Pp + (size_t)rl * TC_BK + c, (size_t)TC_BQ * TC_BK);
        }
        psum += __shfl_xor_sync(0xffffffffu, psum, 1);
        for (int d = half; d < D; d += 2) Os[(size_t)rl * D + d] *= corr;
        /* P and the rescaled O rows written before the tensor cores read them (elements of other
         * lanes), and both lanes of the row have read Ms / Ls before lane 0 updates them */
        __syncwarp();
        if (half == 0) {
            Ms[rl] = mn;
            Ls[rl] = Ls[rl] * corr + psum;
        }
        /* O rows of this warp += Σ_parts Ppart · V */
        for (int dt = 0; dt < D; dt += 16) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            float *o = Os + (size_t)16 * warp * D + dt;
            wmma::load_matrix_sync(acc, o, D, wmma::mem_row_major);
            for (int kk = 0; kk < TC_BK; kk += 16) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
                wmma::load_matrix_sync(vb, Vs + (size_t)kk * D + dt, D);
                for (int p = 0; p < NP; p++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa;
                    wmma::load_matrix_sync(pa, Pp + (size_t)p * TC_BQ * TC_BK + (size_t)16 * warp * TC_BK + kk, TC_BK);
                    wmma::mma_sync(acc, pa, vb, acc);
                }
            }
            wmma::store_matrix_sync(o, acc, D, wmma::mem_row_major);
        }
        __syncwarp(); /* O stored before the next tile's rescale (another lane's elements) */
    }
    if (ri < n) {
        const float l = Ls[rl], inv = 1.0f / l;
        float *o = out + (size_t)ri * out_stride + (size_t)h * D;
        for (int d = half; d < D; d += 2) o[d] = Os[(size_t)rl * D + d] * inv;
        if (half == 0) lse[(size_t)h * lse_stride + ri] = Ms[rl] + logf(l);
    }
}

template <typename T>
static cudaError_t prefill_tc_go(const float *q, int q_stride, const void *kc, const void *vc, const size_t *off,
                                 const int *len, const float *k_new, const float *v_new, int kv_stride, int n,
                                 int n_heads, int G, int head_dim, float scale, float *out, int out_stride,
                                 float *lse, int lse_stride, cudaStream_t s, const float *head_scale)
{
    size_t smem = tc_smem_bytes(head_dim, tc_parts<T>::n, sizeof(T));
    cudaError_t e = cudaFuncSetAttribute(attn_prefill_tc_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem);
    if (e != cudaSuccess) return e;
    dim3 grid(n_heads, (n + TC_BQ - 1) / TC_BQ);
    attn_prefill_tc_kernel<T><<<grid, TC_THREADS, smem, s>>>(q, q_stride, (const T *)kc, (const T *)vc, off, len,
                                                            k_new, v_new, kv_stride, n, G, head_dim, scale, out,
                                                            out_stride, lse, lse_stride, head_scale);
    return cudaPeekAtLastError();
}

int attn_prefill_uses_tc(int k_dt, int v_dt, int head_dim)
{
    return k_dt == v_dt && (k_dt == CU_F16 || k_dt == CU_BF16) && head_dim % 16 == 0 && head_dim >= 16 &&
           head_dim <= TC_MAXD;
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
    if (attn_prefill_uses_tc(k_dt, v_dt, head_dim))
        return k_dt == CU_F16 ? prefill_tc_go<__half>(q, q_stride, kc, vc, off, len, k_new, v_new, kv_stride, n,
                                                     n_heads, G, head_dim, scale, out, out_stride, lse,
                                                     lse_stride, s, head_scale)
                              : prefill_tc_go<__nv_bfloat16>(q, q_stride, kc, vc, off, len, k_new, v_new,
                                                             kv_stride, n, n_heads, G, head_dim, scale, out,
                                                             out_stride, lse, lse_stride, s, head_scale);
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
