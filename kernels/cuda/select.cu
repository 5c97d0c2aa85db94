/* KV-cache maintenance on the device: writing the new token, per-step eviction of the device
 * policies (local, streaming, h2o: ring victims and argmin with ties to the older token), and
 * the row gather used for stable compaction (POLICIES.md §1.3, §1.6). Mirrors
 * eviction/kv_cache.c (kv_write, kv_evict_swap_last) and the policies' post_attn hooks. */
#include "kernels/cuda/kernels_cuda.cuh"

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

/* a ranks below b as an eviction candidate: smaller value, ties → smaller position; -1 = none */
__device__ __forceinline__ bool ev_better(float va, int pa, int ja, float vb, int pb, int jb)
{
    if (ja < 0) return false;
    if (jb < 0) return true;
    return va < vb || (va == vb && pa < pb);
}

/* grid n_kv_heads, EV_THREADS threads. */
template <typename T>
__global__ void __launch_bounds__(EV_THREADS)
evict_kernel(int mode, T *kc, T *vc, int32_t *pos, float *score, const size_t *off, int *len,
             const int *cap, int *ring, int head_dim, int n_sink, int recent_from, int mean, int t)
{
    __shared__ float sv[EV_THREADS];
    __shared__ int sp[EV_THREADS], sj[EV_THREADS];
    const int g = blockIdx.x, tid = threadIdx.x;
    const int L = len[g], C = cap[g];
    if (L <= C) return; /* uniform: nothing to evict */
    const size_t o = off[g];
    int victim = -1;
    if (mode == EV_LOCAL) {
        victim = ring[g];
    } else if (mode == EV_STREAMING) {
        victim = n_sink + ring[g];
    } else if (mode == EV_H2O) {
        /* argmin over the unprotected slots: each thread scans a stride, then a tree reduction */
        float bv = 0.0f;
        int bp = 0, bj = -1;
        for (int j = tid; j < L; j += EV_THREADS) {
            int p = pos[o + j];
            if (p < n_sink || p >= recent_from) continue;
            float v = mean ? score[o + j] / (float)(t - p + 1) : score[o + j];
            if (ev_better(v, p, j, bv, bp, bj)) {
                bv = v;
                bp = p;
                bj = j;
            }
        }
        sv[tid] = bv;
        sp[tid] = bp;
        sj[tid] = bj;
        __syncthreads();
        for (int w = EV_THREADS / 2; w > 0; w >>= 1) {
            if (tid < w && ev_better(sv[tid + w], sp[tid + w], sj[tid + w], sv[tid], sp[tid], sj[tid])) {
                sv[tid] = sv[tid + w];
                sp[tid] = sp[tid + w];
                sj[tid] = sj[tid + w];
            }
            __syncthreads();
        }
        victim = sj[0];
    }
    if (victim < 0 || victim >= L) return; /* every slot protected: keep (cannot happen, see engine) */
    const int last = L - 1;
    if (victim != last) {
        for (int d = tid; d < head_dim; d += EV_THREADS) {
            kc[(o + victim) * head_dim + d] = kc[(o + last) * head_dim + d];
            vc[(o + victim) * head_dim + d] = vc[(o + last) * head_dim + d];
        }
    }
    __syncthreads(); /* all reads of pos/score/len done before thread 0 writes them */
    if (tid == 0) {
        if (victim != last) {
            pos[o + victim] = pos[o + last];
            if (score) score[o + victim] = score[o + last];
        }
        len[g] = last;
        if (mode == EV_LOCAL) ring[g] = (ring[g] + 1) % C;
        else if (mode == EV_STREAMING) ring[g] = (ring[g] + 1) % (C - n_sink);
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
