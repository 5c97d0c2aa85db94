/* The decode re-compression of subgen on the device (POLICIES.md §8.2, §7.6 capped;
 * kernels_cuda.cuh launch_subgen_recompress): eviction/policy_subgen.c sg_post_attn →
 * subgen_select (greedy k-center, policy_common.c subgen_gonzalez) + kv_compact, for every KV head
 * of a layer whose region went past its capacity with the step's append.
 * [DECISION] Double arithmetic (Makefile: ptxas's -warn-double-usage off for this file, as for
 * ss_insert.cu): the CPU's distances are ℓ2² summed in double (evict_dist2), and the farthest
 * point must be the CPU's, ties included. O(k · n · d) per re-compressed region. */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/evict.cuh"

#define SG_THREADS 128

/* One block per KV head g of the layer: nothing unless len > cap; else the `recent` last slots
 * and target − recent centers of the others (the first the oldest slot, then each time the slot
 * farthest from the centers so far, ties → the lower slot) are kept, compacted in place in
 * position order, len = target. */
template <typename T> __global__ void __launch_bounds__(SG_THREADS) subgen_rc_kernel(subgen_rc_args a)
{
    __shared__ double sd[SG_THREADS];
    __shared__ int sj[SG_THREADS];
    const int g = blockIdx.x, tid = threadIdx.x, hd = a.head_dim;
    const int L = a.len[g];
    if (L <= a.cap[g] || L <= a.target) return; /* uniform over the block */
    T *K = (T *)a.kc + a.off[g] * hd, *V = (T *)a.vc + a.off[g] * hd;
    int32_t *P = a.pos + a.off[g];
    float *S = a.score ? a.score + a.off[g] : NULL;
    double *dist = a.dist + (size_t)g * a.stride; /* a center: −1 */
    int *keep = a.map + (size_t)g * a.stride;
    const int n_old = L - a.recent, k = a.target - a.recent < n_old ? a.target - a.recent : n_old;
    /* the first center (slot 0) and every older slot's squared distance to it */
    for (int i = tid; i < L; i += SG_THREADS) {
        keep[i] = i == 0 || i >= n_old;
        if (i < n_old) dist[i] = i == 0 ? -1.0 : ev_dist2(K + (size_t)i * hd, K, hd);
    }
    for (int c = 1; c < k; c++) {
        __syncthreads(); /* the distances of the last center are in */
        double bd = 0.0;
        int bj = -1;
        for (int i = tid; i < n_old; i += SG_THREADS)
            if (dist[i] >= 0.0 && (bj < 0 || dist[i] > bd)) bd = dist[i], bj = i;
        ev_block_argmin_j<SG_THREADS>(-bd, bj, sd, sj); /* the farthest, ties → the lower slot */
        const int j = sj[0];
        __syncthreads(); /* every thread has read sj[0] */
        const T *kj = K + (size_t)j * hd;
        for (int i = tid; i < n_old; i += SG_THREADS) {
            if (i == j) {
                dist[i] = -1.0;
                keep[i] = 1;
            } else if (dist[i] >= 0.0) {
                const double e = ev_dist2(K + (size_t)i * hd, kj, hd);
                if (e < dist[i]) dist[i] = e;
            }
        }
    }
    ev_compact<T, SG_THREADS>(K, V, P, S, L, hd, keep, a.len + g);
}

template <typename T> static cudaError_t subgen_rc_go(const subgen_rc_args &a, cudaStream_t s)
{
    subgen_rc_kernel<T><<<a.n_kv_heads, SG_THREADS, 0, s>>>(a);
    return cudaPeekAtLastError();
}

cudaError_t launch_subgen_recompress(const subgen_rc_args *a, cudaStream_t s)
{
    if (a->n_kv_heads < 1 || a->head_dim < 1 || a->target < 1 || a->recent < 0 || a->recent >= a->target ||
        !a->kc || !a->vc || !a->pos || !a->off || !a->len || !a->cap || !a->dist || !a->map)
        return cudaErrorInvalidValue;
    return CU_DISPATCH(a->kv_dt, subgen_rc_go, *a, s);
}
