/* KV-cache maintenance on the device: writing the new token, per-step eviction of the device
 * policies (local, streaming, h2o: ring victims and argmin with ties to the older token), and
 * the row gather used for stable compaction (POLICIES.md §1.3, §1.6). Mirrors
 * eviction/kv_cache.c (kv_write, kv_evict_swap_last) and the policies' post_attn hooks. */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/evict.cuh"

/* grid n_kv_heads, 128 threads. */
template <typename T>
__global__ void kv_write_kernel(T *kc, T *vc, int32_t *pos, float *score, const size_t *off,
                                int *len, const int *slot, const float *k, const float *v,
                                int head_dim, int t)
{
    const int g = blockIdx.x;
    const int sl = slot ? slot[g] : len[g];
    if (sl < 0) return; /* uniform over the block: this head was gathered instead */
    __syncthreads(); /* every thread has read len[g] before thread 0 updates it */
    const size_t base = (off[g] + (size_t)sl) * head_dim;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        kc[base + d] = from_f32<T>(k[(size_t)g * head_dim + d]);
        vc[base + d] = from_f32<T>(v[(size_t)g * head_dim + d]);
    }
    if (threadIdx.x == 0) {
        pos[off[g] + sl] = t;
        if (score) score[off[g] + sl] = 0.0f;
        if (!slot) len[g] = sl + 1;
    }
}

template <typename T>
static cudaError_t write_go(void *kc, void *vc, int32_t *pos, float *score, const size_t *off,
                            int *len, const int *slot, const float *k, const float *v,
                            int n_kv_heads, int head_dim, int t, cudaStream_t s)
{
    kv_write_kernel<T><<<n_kv_heads, 128, 0, s>>>((T *)kc, (T *)vc, pos, score, off, len, slot, k,
                                                  v, head_dim, t);
    return cudaPeekAtLastError();
}

cudaError_t launch_kv_write(void *kc, void *vc, int kv_dt, int32_t *pos, float *score,
                            const size_t *off, int *len, const int *slot, const float *k,
                            const float *v, int n_kv_heads, int head_dim, int t, cudaStream_t s)
{
    return CU_DISPATCH(kv_dt, write_go, kc, vc, pos, score, off, len, slot, k, v, n_kv_heads,
                       head_dim, t, s);
}

#define EV_THREADS 256

/* grid n_kv_heads, EV_THREADS threads (kernels/cuda/evict.cuh). */
template <typename T>
__global__ void __launch_bounds__(EV_THREADS)
evict_kernel(int mode, T *kc, T *vc, int32_t *pos, float *score, const size_t *off, int *len,
             const int *cap, int *ring, int head_dim, int n_sink, int recent_from, int mean, int t)
{
    __shared__ float sv[EV_THREADS];
    __shared__ int sp[EV_THREADS], sj[EV_THREADS];
    const int g = blockIdx.x;
    const int L = len[g], C = cap[g];
    if (L <= C) return; /* uniform: nothing to evict */
    const size_t o = off[g];
    const int victim = ev_victim<EV_THREADS>(mode, pos + o, score ? score + o : NULL, L, ring[g], n_sink,
                                             recent_from, mean, t, sv, sp, sj);
    ev_swap_last<T, EV_THREADS>(kc + o * head_dim, vc + o * head_dim, pos + o, score ? score + o : NULL, L,
                                victim, head_dim);
    if (threadIdx.x == 0) {
        len[g] = L - 1;
        ring[g] = ev_ring_next(mode, ring[g], C, n_sink);
    }
}

template <typename T>
static cudaError_t evict_go(int mode, void *kc, void *vc, int32_t *pos, float *score,
                            const size_t *off, int *len, const int *cap, int *ring,
                            int n_kv_heads, int head_dim, int n_sink, int recent_from, int mean,
                            int t, cudaStream_t s)
{
    evict_kernel<T><<<n_kv_heads, EV_THREADS, 0, s>>>(mode, (T *)kc, (T *)vc, pos, score, off, len,
                                                      cap, ring, head_dim, n_sink, recent_from,
                                                      mean, t);
    return cudaPeekAtLastError();
}

cudaError_t launch_evict(int mode, void *kc, void *vc, int kv_dt, int32_t *pos, float *score,
                         const size_t *off, int *len, const int *cap, int *ring, int n_kv_heads,
                         int head_dim, int n_sink, int recent_from, int mean, int t,
                         cudaStream_t s)
{
    if (mode == EV_NONE) return cudaSuccess;
    if (mode != EV_LOCAL && mode != EV_STREAMING && mode != EV_H2O) return cudaErrorInvalidValue;
    return CU_DISPATCH(kv_dt, evict_go, mode, kc, vc, pos, score, off, len, cap, ring, n_kv_heads,
                       head_dim, n_sink, recent_from, mean, t, s);
}

/* grid n rows, 128 threads. */
template <typename T>
__global__ void kv_gather_kernel(T *kdst, T *vdst, const T *kc, const T *vc, size_t region_off,
                                 const int *src, int n_live, const float *k_new,
                                 const float *v_new, int kv_stride, int col, int head_dim)
{
    const int i = blockIdx.x, j = src[i];
    T *kd = kdst + (size_t)i * head_dim, *vd = vdst + (size_t)i * head_dim;
    if (j < n_live) {
        const T *ks = kc + (region_off + j) * head_dim, *vs = vc + (region_off + j) * head_dim;
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            kd[d] = ks[d];
            vd[d] = vs[d];
        }
    } else {
        const float *ks = k_new + (size_t)(j - n_live) * kv_stride + col;
        const float *vs = v_new + (size_t)(j - n_live) * kv_stride + col;
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            kd[d] = from_f32<T>(ks[d]);
            vd[d] = from_f32<T>(vs[d]);
        }
    }
}

template <typename T>
static cudaError_t gather_go(void *kdst, void *vdst, const void *kc, const void *vc,
                             size_t region_off, const int *src, int n, int n_live,
                             const float *k_new, const float *v_new, int kv_stride, int col,
                             int head_dim, cudaStream_t s)
{
    kv_gather_kernel<T><<<n, 128, 0, s>>>((T *)kdst, (T *)vdst, (const T *)kc, (const T *)vc,
                                          region_off, src, n_live, k_new, v_new, kv_stride, col,
                                          head_dim);
    return cudaPeekAtLastError();
}

cudaError_t launch_kv_gather(void *kdst, void *vdst, const void *kc, const void *vc, int kv_dt,
                             size_t region_off, const int *src, int n, int n_live,
                             const float *k_new, const float *v_new, int kv_stride, int col,
                             int head_dim, cudaStream_t s)
{
    if (n < 1) return cudaSuccess;
    return CU_DISPATCH(kv_dt, gather_go, kdst, vdst, kc, vc, region_off, src, n, n_live, k_new,
                       v_new, kv_stride, col, head_dim, s);
}

/* grid n_kv_heads, 128 threads: one thread per live row (kernels_cuda.cuh launch_key_norms). */
template <typename T>
__global__ void key_norm_kernel(const T *kc, const size_t *off, const int *len, float *knorm, int head_dim)
{
    const int g = blockIdx.x;
    for (int j = threadIdx.x; j < len[g]; j += blockDim.x) {
        knorm[off[g] + j] = cu_key_norm(kc + (off[g] + (size_t)j) * head_dim, head_dim);
    }
}

template <typename T>
static cudaError_t norm_go(const void *kc, const size_t *off, const int *len, float *knorm, int n_kv_heads,
                           int head_dim, cudaStream_t s)
{
    key_norm_kernel<T><<<n_kv_heads, 128, 0, s>>>((const T *)kc, off, len, knorm, head_dim);
    return cudaPeekAtLastError();
}

cudaError_t launch_key_norms(const void *kc, int kv_dt, const size_t *off, const int *len, float *knorm,
                             int n_kv_heads, int head_dim, cudaStream_t s)
{
    return CU_DISPATCH(kv_dt, norm_go, kc, off, len, knorm, n_kv_heads, head_dim, s);
}
