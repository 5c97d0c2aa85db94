/* kernels/cuda/snap_scores.cuh — the snap family's decode scoring on the device, shared by the
 * capped re-compressions of snapkv / pyramidkv (snap_recompress.cu) and ada_snapkv /
 * ada_pyramidkv (ada_recompress.cu): eviction/snap_score.c snap_obs_scores + snap_pool of one KV
 * head's live slots, operation for operation (fp32 dot products, scale, row maximum, expf, the
 * row sum in candidate order, 1 / sum, the per-row accumulation, the mean over rows, the GQA
 * mean or max; the pooling over the prefix). No fused multiply-add (cu_mul / cu_add). */
#ifndef LLM_KERNELS_CUDA_SNAP_SCORES_CUH
#define LLM_KERNELS_CUDA_SNAP_SCORES_CUH

#include "kernels/cuda/kernels_cuda.cuh"

/* Candidates among P[0..n) (positions ascending) at positions < bound: a binary search. */
__device__ __forceinline__ int sr_count_below(const int32_t *P, int n, int bound)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (P[mid] < bound) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The parameters of the scoring that do not change with the head. */
struct sr_score_par {
    const float *q_ring; /* this layer's ring [q_ring_rows][n_heads][head_dim], row = position mod rows */
    int q_ring_rows, n_heads, G, head_dim;
    int w, kernel, pool_avg, gqa_max;
    float scale;
};

/* KV head g's observation scores A[0..L) of its L live slots (keys K, positions P ascending),
 * window ending at `end` (rows end − w .. end − 1), pooled over the prefix into
 * pooled[0..n_prefix); row, acc: [L] scratch; red: [32] shared; s_inv: one shared float. Every
 * thread of the block (NT) calls it; it ends with a __syncthreads. */
template <typename T, int NT>
__device__ void sr_obs_pool(const sr_score_par &a, int g, const T *K, const int32_t *P, int L, int n_prefix, int end,
                            float *row, float *acc, float *A, float *pooled, float *red, float *s_inv)
{
    const int tid = threadIdx.x, hd = a.head_dim;
    for (int j = tid; j < L; j += NT) A[j] = 0.0f;
    for (int hl = 0; hl < a.G; hl++) {
        for (int j = tid; j < L; j += NT) acc[j] = 0.0f;
        int rows = 0;
        for (int p = end - a.w < 0 ? 0 : end - a.w; p < end; p++) {
            const float *q = a.q_ring + ((size_t)(p % a.q_ring_rows) * a.n_heads + (size_t)g * a.G + hl) * hd;
            const int nv = sr_count_below(P, L, p + 1); /* the causal row: positions ≤ p */
            if (nv == 0) continue;
            float mx = -INFINITY;
            for (int j = tid; j < nv; j += NT) {
                const T *k = K + (size_t)j * hd;
                float dot = 0.0f;
                for (int i = 0; i < hd; i++) dot = cu_add(dot, cu_mul(q[i], to_f32(k[i])));
                row[j] = cu_mul(dot, a.scale);
                mx = fmaxf(mx, row[j]);
            }
            mx = block_max(mx, red);
            for (int j = tid; j < nv; j += NT) row[j] = expf(cu_sub(row[j], mx));
            __syncthreads();
            if (tid == 0) { /* the CPU's order */
                float sum = 0.0f;
                for (int j = 0; j < nv; j++) sum = cu_add(sum, row[j]);
                *s_inv = 1.0f / sum;
            }
            __syncthreads();
            const float inv = *s_inv;
            for (int j = tid; j < nv; j += NT) acc[j] = cu_add(acc[j], cu_mul(row[j], inv));
            rows++;
        }
        if (rows == 0) continue;
        for (int j = tid; j < L; j += NT) {
            const float m = acc[j] / (float)rows;
            A[j] = a.gqa_max ? (m > A[j] ? m : A[j]) : cu_add(A[j], m);
        }
    }
    if (!a.gqa_max)
        for (int j = tid; j < L; j += NT) A[j] = A[j] / (float)a.G;
    __syncthreads();

    /* snap_pool over the prefix (max, or the zero-padded mean) */
    const int r = a.kernel / 2;
    for (int j = tid; j < n_prefix; j += NT) {
        const int lo = j - r < 0 ? 0 : j - r, hi = j + r >= n_prefix ? n_prefix - 1 : j + r;
        float m = A[lo], sum = 0.0f;
        for (int i = lo; i <= hi; i++) {
            if (A[i] > m) m = A[i];
            sum = cu_add(sum, A[i]);
        }
        pooled[j] = a.pool_avg ? sum / (float)a.kernel : m;
    }
    __syncthreads();
}

/* snap_topk_keep of one head: keep[j] = 1 for a prefix candidate with fewer than `budget`
 * ranking before it (higher pooled score, ties → lower index) and for every window slot
 * (j ≥ n_prefix); 0 otherwise. budget ≥ n_prefix keeps all without reading pooled. */
template <int NT>
__device__ __forceinline__ void sr_topk_keep(const float *pooled, int n_prefix, int L, int budget, int *keep)
{
    for (int j = threadIdx.x; j < L; j += NT) {
        int k = 1;
        if (j < n_prefix && budget < n_prefix) {
            const float v = pooled[j];
            int rank = 0;
            for (int i = 0; i < n_prefix && rank < budget; i++) rank += pooled[i] > v || (pooled[i] == v && i < j);
            k = rank < budget;
        }
        keep[j] = k;
    }
}

#endif
