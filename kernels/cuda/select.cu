/* KV-cache maintenance on the device: writing the new token, per-step eviction of the device
 * policies (local, streaming, h2o: ring victims and argmin with ties to the older token; with
 * --rope shifted, the evict-then-attend policies' victim before the rank rotation, §1.7), and
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

/* --rope shifted, evict-then-attend (kernels_cuda.cuh launch_ete_shifted): grid n_kv_heads,
 * ES_THREADS threads; the victim, swap-last and length, then a warp per slot for the ranks and
 * the rotation (the same arithmetic as elementwise.cu rope_live_kernel). */
#define ES_THREADS 128


template <typename T> __global__ void __launch_bounds__(ES_THREADS) ete_shift_kernel(ete_shift_args a)
{
    __shared__ unsigned long long sv[ES_THREADS];
    __shared__ unsigned sw[ES_THREADS];
    __shared__ int sp[ES_THREADS], sj[ES_THREADS];
    __shared__ unsigned char s_hb[(EV_HASH_MAX_G + 1) * 64]; /* EV_HASH: probe and new-key code bits */
    __shared__ unsigned long long s_hc[EV_HASH_MAX_G + 1];    /* EV_HASH: probe codes, the new key's last */
    const int g = blockIdx.x, tid = threadIdx.x, hd = a.head_dim, half = hd / 2;
    const size_t o = a.off[g];
    const int L = a.len[g] + 1, C = a.cap[g], t = a.step[1];
    T *K = (T *)a.kc + o * hd;
    int32_t *P = a.pos + o;
    float *S = a.score ? a.score + o : NULL;
    if (a.evict == EV_L2NORM && tid == 0) S[L - 1] = cu_key_norm(K + (size_t)(L - 1) * hd, hd);
    if (a.evict == EV_SH && tid < EV_SH_WORDS) a.sstate[(o + L - 1) * EV_SH_WORDS + tid] = 0ULL; /* empty history */
    const bool hash = a.evict == EV_HASH, rat = hash && a.mean;
    int nq = 0;
    if (hash) {
        /* hashevict: the probe codes (the group's G queries as given — before the rank
         * rotation, as the CPU's pre_attn sees them — or the new key as stored, --hash-probe
         * key), then the new key's code as its state (age 0, valid; the rest of it empty) */
        const int nb = a.he_bits;
        nq = a.he_probe ? 1 : a.G;
        for (int pi = tid; pi < (nq + 1) * nb; pi += ES_THREADS) {
            const int hh = pi / nb, b = pi % nb;
            s_hb[hh * 64 + b] = hh == nq || a.he_probe ? he_bit(a.he_R, hd, b, K + (size_t)(L - 1) * hd)
                                                       : he_bit(a.he_R, hd, b, a.q + (size_t)(g * a.G + hh) * hd);
        }
        __syncthreads();
        if (tid <= nq) {
            unsigned long long c = 0;
            for (int b = 0; b < nb; b++)
                if (s_hb[tid * 64 + b]) c |= 1ULL << b;
            s_hc[tid] = c;
        }
        __syncthreads();
        if (tid == 0) {
            unsigned long long *e = a.sstate + (o + L - 1) * EV_HASH_WORDS;
            e[0] = s_hc[nq];
            e[1] = 0ULL;
            e[2] = 1ULL << 32; /* age 0, valid 1 */
        }
    }
    int n = L;
    if (L > C) {
        unsigned long long bv = 0;
        unsigned bw = 0;
        int bp = 0, bj = -1;
        for (int j = tid; j < L - 1; j += ES_THREADS) {
            const int p = P[j];
            if (p < a.n_sink || (long long)p >= (long long)t - a.n_recent) continue;
            unsigned w;
            const unsigned long long v = ete_key(a.evict, rat, a.mean, a.seed, a.layer, g, t, p, S, j, a.sstate, o + j,
                                                 a.sh_hist, s_hc, nq, &w);
            if (ete_better(rat, v, w, p, j, bv, bw, bp, bj)) bv = v, bw = w, bp = p, bj = j;
        }
        ete_block_best<ES_THREADS>(rat, bv, bw, bp, bj, sv, sw, sp, sj);
        int victim = sj[0];
        if (victim < 0) { /* no candidate (C < sink + recent + 1: the policy rules it out): the oldest */
            victim = 0;
            for (int j = 1; j < L - 1; j++)
                if (P[j] < P[victim]) victim = j;
        }
        __syncthreads(); /* S[L − 1], the new key's state (thread 0) and sj[0] read by everyone */
        if (rat) {
            /* --hash-accum mean: this rule evaluation's distance joins the running sum of every
             * member (the L − 1 slots before the new one, protected ones included; the victim's
             * state is replaced below) and its age counts it (uint32, wrapping as the CPU's) */
            for (int j = tid; j < L - 1; j += ES_THREADS) {
                unsigned long long *e = a.sstate + (o + j) * EV_HASH_WORDS;
                unsigned dist = 0;
                for (int i = 0; i < nq; i++) dist += (unsigned)__popcll(e[0] ^ s_hc[i]);
                e[1] += dist;
                e[2] = (e[2] & 0xffffffff00000000ULL) | (unsigned long long)((unsigned)e[2] + 1u);
            }
            __syncthreads();
        }
        ev_swap_last<T, ES_THREADS>(K, (T *)a.vc + o * hd, P, S, L, victim, hd);
        /* the per-slot state moves with its slot (scissorhands' history, hashevict's code) */
        const int nw = a.evict == EV_SH ? EV_SH_WORDS : hash ? EV_HASH_WORDS : 0;
        if (tid < nw && victim != L - 1) a.sstate[(o + victim) * nw + tid] = a.sstate[(o + L - 1) * nw + tid];
        n = L - 1;
    }
    __syncthreads(); /* the moved position and score, and len[g] read by everyone */
    if (tid == 0) a.len[g] = n;
    const int lane = tid & 31, warp = tid >> 5;
    for (int j = warp; j < n; j += ES_THREADS / 32) {
        const int32_t pj = P[j];
        float cnt = 0.0f;
        for (int i = lane; i < n; i += 32) cnt += P[i] < pj ? 1.0f : 0.0f;
        const size_t rank = (size_t)warp_sum(cnt);
        const float *c = a.cos_t + rank * half, *sn = a.sin_t + rank * half;
        const T *src = K + (size_t)j * hd;
        float *dst = a.kr + (o + (size_t)j) * hd;
        for (int d = lane; d < half; d += 32) {
            float x0 = to_f32(src[d]), x1 = to_f32(src[d + half]);
            dst[d] = cu_sub(cu_mul(x0, c[d]), cu_mul(x1, sn[d]));
            dst[d + half] = cu_add(cu_mul(x1, c[d]), cu_mul(x0, sn[d]));
        }
    }
}

template <typename T> static cudaError_t ete_shift_go(const ete_shift_args &a, cudaStream_t s)
{
    const ete_shift_args args = a; /* by value: a graph replays the launch */
    ete_shift_kernel<T><<<a.n_kv_heads, ES_THREADS, 0, s>>>(args);
    return cudaPeekAtLastError();
}

cudaError_t launch_ete_shifted(const ete_shift_args *a, cudaStream_t s)
{
    if (a->n_kv_heads < 1 || a->head_dim < 2 || a->head_dim % 2 || !a->kc || !a->vc || !a->kr || !a->pos ||
        !a->off || !a->len || !a->cap || !a->step || !a->cos_t || !a->sin_t ||
        (a->evict != EV_L2NORM && a->evict != EV_RANDOM && a->evict != EV_H2O_EF && a->evict != EV_SH &&
         a->evict != EV_HASH) ||
        (a->evict == EV_HASH && (!a->sstate || !a->he_R || a->he_bits < 1 || a->he_bits > 64 ||
                                 (!a->he_probe && (!a->q || a->G < 1 || a->G > EV_HASH_MAX_G)))) ||
        ((a->evict == EV_L2NORM || a->evict == EV_H2O_EF) && !a->score) ||
        (a->evict == EV_SH && (!a->sstate || a->sh_hist < 1 || a->sh_hist > EV_SH_MAX_HIST)))
        return cudaErrorInvalidValue;
    return CU_DISPATCH(a->kv_dt, ete_shift_go, *a, s);
}
