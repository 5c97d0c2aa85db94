/* Decode attention split over the cache length (flash-decoding) for variable per-(layer,
 * KV head) lengths, and the per-step statistics (probabilities, score accumulation) that
 * H2O/BUZZ-style policies ask for (POLICIES.md §1.5). */
#include "kernels/cuda/kernels_cuda.cuh"

#define DC_THREADS 128
#define DC_MAX_SPLIT 1024 /* split_len limit (shared logits buffer) */

/* grid (n_heads, n_split), DC_THREADS threads; dynamic shared memory head_dim + split_len
 * floats. Block (h, s) handles slots [s·split_len, min(len, (s+1)·split_len)) of KV head
 * h / G; a block past the end does nothing (pass 2 skips it). */
template <typename T>
__global__ void __launch_bounds__(DC_THREADS)
attn_decode_split_kernel(const float *q, const T *kc, const T *vc, const size_t *off,
                         const int *len, int G, int head_dim, float scale, int split_len,
                         int n_split, float *part_acc, float *part_ml, float *slog,
                         int slog_stride, const float *head_scale)
{
    extern __shared__ float sm[];
    __shared__ float red[32];
    float *qs = sm;              /* [head_dim] pre-scaled query */
    float *sl = sm + head_dim;   /* [split_len] logits, then exp(logit − m) */
    const int h = blockIdx.x, s = blockIdx.y, g = h / G, tid = threadIdx.x;
    const int L = len[g], j0 = s * split_len, j1 = min(L, j0 + split_len), nj = j1 - j0;
    if (nj <= 0) return; /* uniform over the block */
    const T *K = kc + off[g] * head_dim, *V = vc + off[g] * head_dim;
    const float sc = head_scale ? head_scale[g] : scale;
    for (int d = tid; d < head_dim; d += DC_THREADS) qs[d] = q[(size_t)h * head_dim + d] * sc;
    __syncthreads();
    /* logits: one warp per slot, lanes over head_dim, shuffle reduction */
    const int lane = tid & 31, warp = tid >> 5, n_warps = DC_THREADS / 32;
    for (int j = j0 + warp; j < j1; j += n_warps) {
        const T *kr = K + (size_t)j * head_dim;
        float dot = 0.0f;
        for (int d = lane; d < head_dim; d += 32) dot += qs[d] * to_f32(kr[d]);
        dot = warp_sum(dot);
        if (lane == 0) {
            sl[j - j0] = dot;
            if (slog) slog[(size_t)h * slog_stride + j] = dot;
        }
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int c = tid; c < nj; c += DC_THREADS) mx = fmaxf(mx, sl[c]);
    mx = block_max(mx, red);
    float sum = 0.0f;
    for (int c = tid; c < nj; c += DC_THREADS) {
        float p = expf(sl[c] - mx);
        sl[c] = p;
        sum += p;
    }
    sum = block_sum(sum, red); /* its __syncthreads also publishes sl[] */
    float *acc = part_acc + ((size_t)h * n_split + s) * head_dim;
    for (int d = tid; d < head_dim; d += DC_THREADS) {
        float a = 0.0f;
        for (int c = 0; c < nj; c++) a += sl[c] * to_f32(V[(size_t)(j0 + c) * head_dim + d]);
        acc[d] = a;
    }
    if (tid == 0) {
        part_ml[((size_t)h * n_split + s) * 2] = mx;
        part_ml[((size_t)h * n_split + s) * 2 + 1] = sum;
    }
}

/* grid n_heads, DC_THREADS threads: combines the non-empty pieces of head h in order. */
__global__ void __launch_bounds__(DC_THREADS)
attn_decode_combine_kernel(const int *len, int G, int head_dim, int split_len, int n_split,
                           const float *part_acc, const float *part_ml, float *out, float *lse)
{
    const int h = blockIdx.x, g = h / G;
    int ns = (len[g] + split_len - 1) / split_len;
    if (ns > n_split) ns = n_split;
    const float *ml = part_ml + (size_t)h * n_split * 2;
    float M = -INFINITY;
    for (int s = 0; s < ns; s++) M = fmaxf(M, ml[2 * s]);
    float Lsum = 0.0f;
    for (int s = 0; s < ns; s++) Lsum += expf(ml[2 * s] - M) * ml[2 * s + 1];
    for (int d = threadIdx.x; d < head_dim; d += DC_THREADS) {
        float o = 0.0f;
        for (int s = 0; s < ns; s++)
            o += expf(ml[2 * s] - M) * part_acc[((size_t)h * n_split + s) * head_dim + d];
        out[(size_t)h * head_dim + d] = o / Lsum;
    }
    if (threadIdx.x == 0) lse[h] = M + logf(Lsum);
}

template <typename T>
static cudaError_t decode_go(const float *q, const void *kc, const void *vc, const size_t *off,
                             const int *len, int n_heads, int G, int head_dim, float scale,
                             int split_len, int n_split, float *part_acc, float *part_ml,
                             float *slog, int slog_stride, cudaStream_t s,
                             const float *head_scale)
{
    size_t smem = ((size_t)head_dim + split_len) * sizeof(float);
    attn_decode_split_kernel<T><<<dim3(n_heads, n_split), DC_THREADS, smem, s>>>(
        q, (const T *)kc, (const T *)vc, off, len, G, head_dim, scale, split_len, n_split,
        part_acc, part_ml, slog, slog_stride, head_scale);
    return cudaPeekAtLastError();
}

cudaError_t launch_attn_decode(const float *q, const void *kc, const void *vc, int kv_dt,
                               const size_t *off, const int *len, int n_heads, int G,
                               int head_dim, float scale, int split_len, int n_split,
                               float *part_acc, float *part_ml, float *slog, int slog_stride,
                               float *out, float *lse, cudaStream_t s, const float *head_scale)
{
    if (head_dim < 1 || head_dim > 1024 || split_len < 1 || split_len > DC_MAX_SPLIT || n_split < 1)
        return cudaErrorInvalidValue;
    cudaError_t e = CU_DISPATCH(kv_dt, decode_go, q, kc, vc, off, len, n_heads, G, head_dim, scale,
                                split_len, n_split, part_acc, part_ml, slog, slog_stride, s,
                                head_scale);
    if (e != cudaSuccess) return e;
    attn_decode_combine_kernel<<<n_heads, DC_THREADS, 0, s>>>(len, G, head_dim, split_len, n_split,
                                                              part_acc, part_ml, out, lse);
    return cudaPeekAtLastError();
}

/* grid (n_heads, ceil(max_len / 256)), 256 threads. */
__global__ void decode_probs_kernel(float *slog, int slog_stride, const float *lse, const int *len,
                                    int G)
{
    const int h = blockIdx.x, j = blockIdx.y * blockDim.x + threadIdx.x;
    if (j < len[h / G]) {
        float *p = slog + (size_t)h * slog_stride + j;
        *p = expf(*p - lse[h]);
    }
}

cudaError_t launch_decode_probs(float *slog, int slog_stride, const float *lse, const int *len,
                                int n_heads, int G, int max_len, cudaStream_t s)
{
    if (max_len < 1) return cudaSuccess;
    decode_probs_kernel<<<dim3(n_heads, cu_blocks(max_len, 256)), 256, 0, s>>>(slog, slog_stride,
                                                                                lse, len, G);
    return cudaPeekAtLastError();
}

/* grid (n_kv_heads, ceil(max_len / 256)), 256 threads: one slot per thread, the G query heads
 * summed in order (as eviction/policy_h2o.c). */
__global__ void score_accum_kernel(const float *slog, int slog_stride, const float *lse,
                                   const size_t *off, const int *len, int G, float *score)
{
    const int g = blockIdx.x, j = blockIdx.y * blockDim.x + threadIdx.x;
    if (j >= len[g]) return;
    float a = 0.0f;
    for (int hh = 0; hh < G; hh++) {
        int h = g * G + hh;
        a += expf(slog[(size_t)h * slog_stride + j] - lse[h]);
    }
    score[off[g] + j] += a;
}

cudaError_t launch_score_accum(const float *slog, int slog_stride, const float *lse,
                               const size_t *off, const int *len, int n_kv_heads, int G,
                               int max_len, float *score, cudaStream_t s)
{
    if (max_len < 1) return cudaSuccess;
    score_accum_kernel<<<dim3(n_kv_heads, cu_blocks(max_len, 256)), 256, 0, s>>>(
        slog, slog_stride, lse, off, len, G, score);
    return cudaPeekAtLastError();
}
