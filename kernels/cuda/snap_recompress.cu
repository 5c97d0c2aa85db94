/* The capped decode re-compression of snapkv and pyramidkv on the device (POLICIES.md §7.6, §5.3;
 * kernels_cuda.cuh launch_snap_recompress): eviction/policy_snapkv.c snap_post_attn →
 * recompress_head → snap_select_head (snap_score.c) + kv_compact, for every KV head of a layer
 * whose region reached its capacity after the step's append.
 *
 * The observation scores are the CPU's snap_obs_scores operation for operation (fp32 dot
 * products, scale, row maximum, expf, the row sum in candidate order, 1 / sum, the per-row
 * accumulation, the mean over rows, the GQA mean or max), so the pooled scores and the top-k are
 * the CPU's bit for bit where expf is (the emulator; a GPU's expf is within 2 ulp of glibc's).
 * No fused multiply-add (cu_mul / cu_add). */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/evict.cuh"

#define SR_THREADS 128

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

/* One block per KV head g of the layer: nothing unless len ≥ cap; else the window (positions
 * end − w .. end − 1, end = t + 1) and the top-(target − window) of the pooled prefix scores
 * (ties → the older token) are kept, compacted in place in position order, len = their count. */
template <typename T> __global__ void __launch_bounds__(SR_THREADS) snap_rc_kernel(snap_rc_args a)
{
    const int g = blockIdx.x, tid = threadIdx.x, hd = a.head_dim;
    const int L = a.len[g];
    if (L < a.cap[g]) return; /* uniform over the block */
    const int target = a.target[g], end = a.step[1] + 1;
    T *K = (T *)a.kc + a.off[g] * hd, *V = (T *)a.vc + a.off[g] * hd;
    int32_t *P = a.pos + a.off[g];
    float *S = a.score ? a.score + a.off[g] : NULL;
    float *row = a.scratch + (size_t)g * 4 * a.stride, *acc = row + a.stride, *A = acc + a.stride,
          *pooled = A + a.stride;
    int *dst = a.map + (size_t)g * a.stride;
    __shared__ float red[32];
    __shared__ float s_inv;
    const int n_prefix = sr_count_below(P, L, end - a.w), budget = target - (L - n_prefix);
    if (L <= target || budget >= n_prefix) return; /* everything fits (snap_select_head) */

    /* snap_obs_scores: A[j] over the group's query heads */
    for (int j = tid; j < L; j += SR_THREADS) A[j] = 0.0f;
    for (int hl = 0; hl < a.G; hl++) {
        for (int j = tid; j < L; j += SR_THREADS) acc[j] = 0.0f;
        int rows = 0;
        for (int p = end - a.w < 0 ? 0 : end - a.w; p < end; p++) {
            const float *q = a.q_ring + ((size_t)(p % a.q_ring_rows) * a.n_heads + (size_t)g * a.G + hl) * hd;
            const int nv = sr_count_below(P, L, p + 1); /* the causal row: positions ≤ p */
            if (nv == 0) continue;
            float mx = -INFINITY;
            for (int j = tid; j < nv; j += SR_THREADS) {
                const T *k = K + (size_t)j * hd;
                float dot = 0.0f;
                for (int i = 0; i < hd; i++) dot = cu_add(dot, cu_mul(q[i], to_f32(k[i])));
                row[j] = cu_mul(dot, a.scale);
                mx = fmaxf(mx, row[j]);
            }
            mx = block_max(mx, red);
            for (int j = tid; j < nv; j += SR_THREADS) row[j] = expf(cu_sub(row[j], mx));
            __syncthreads();
            if (tid == 0) { /* the CPU's order */
                float sum = 0.0f;
                for (int j = 0; j < nv; j++) sum = cu_add(sum, row[j]);
                s_inv = 1.0f / sum;
            }
            __syncthreads();
            const float inv = s_inv;
            for (int j = tid; j < nv; j += SR_THREADS) acc[j] = cu_add(acc[j], cu_mul(row[j], inv));
            rows++;
        }
        if (rows == 0) continue;
        for (int j = tid; j < L; j += SR_THREADS) {
            const float m = acc[j] / (float)rows;
            A[j] = a.gqa_max ? (m > A[j] ? m : A[j]) : cu_add(A[j], m);
        }
    }
    if (!a.gqa_max)
        for (int j = tid; j < L; j += SR_THREADS) A[j] = A[j] / (float)a.G;
    __syncthreads();

    /* snap_pool over the prefix (max, or the zero-padded mean) */
    const int r = a.kernel / 2;
    for (int j = tid; j < n_prefix; j += SR_THREADS) {
        const int lo = j - r < 0 ? 0 : j - r, hi = j + r >= n_prefix ? n_prefix - 1 : j + r;
        float m = A[lo], sum = 0.0f;
        for (int i = lo; i <= hi; i++) {
            if (A[i] > m) m = A[i];
            sum = cu_add(sum, A[i]);
        }
        pooled[j] = a.pool_avg ? sum / (float)a.kernel : m;
    }
    __syncthreads();

    /* snap_topk_keep: a prefix candidate stays when fewer than `budget` rank before it (higher
     * pooled score, ties → lower index); the window always stays */
    for (int j = tid; j < L; j += SR_THREADS) {
        int keep = 1;
        if (j < n_prefix) {
            const float v = pooled[j];
            int rank = 0;
            for (int i = 0; i < n_prefix && rank < budget; i++) rank += pooled[i] > v || (pooled[i] == v && i < j);
            keep = rank < budget;
        }
        dst[j] = keep;
    }
    ev_compact<T, SR_THREADS>(K, V, P, S, L, hd, dst, a.len + g);
}

template <typename T> static cudaError_t snap_rc_go(const snap_rc_args &a, cudaStream_t s)
{
    snap_rc_kernel<T><<<a.n_kv_heads, SR_THREADS, 0, s>>>(a);
    return cudaPeekAtLastError();
}

cudaError_t launch_snap_recompress(const snap_rc_args *a, cudaStream_t s)
{
    if (a->n_kv_heads < 1 || a->head_dim < 1 || a->G < 1 || a->w < 1 || a->kernel < 1 || a->q_ring_rows < a->w ||
        !a->kc || !a->vc || !a->pos || !a->off || !a->len || !a->cap || !a->target || !a->step || !a->q_ring ||
        !a->scratch || !a->map)
        return cudaErrorInvalidValue;
    return CU_DISPATCH(a->kv_dt, snap_rc_go, *a, s);
}
