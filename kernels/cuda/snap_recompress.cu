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
#include "kernels/cuda/snap_scores.cuh"

#define SR_THREADS 128

/* One block per KV head g of the layer: nothing unless len ≥ cap; else the window (positions
 * end − w .. end − 1, end = t + 1) and the top-(target − window) of the pooled prefix scores
 * (ties → the older token) are kept, compacted in place in position order, len = their count. */
template <typename T> __global__ void __launch_bounds__(SR_THREADS) snap_rc_kernel(snap_rc_args a)
{
    const int g = blockIdx.x, hd = a.head_dim;
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

    /* snap_obs_scores + snap_pool, then snap_topk_keep */
    const sr_score_par sp = {a.q_ring, a.q_ring_rows, a.n_heads, a.G, hd, a.w, a.kernel, a.pool_avg, a.gqa_max, a.scale};
    sr_obs_pool<T, SR_THREADS>(sp, g, K, P, L, n_prefix, end, row, acc, A, pooled, red, &s_inv);
    sr_topk_keep<SR_THREADS>(pooled, n_prefix, L, budget, dst);
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
