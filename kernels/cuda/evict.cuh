/* kernels/cuda/evict.cuh — the device policies' eviction of one region (internal to kernels/cuda;
 * used by select.cu's launch_evict and by the decode step of attn_decode.cu). Mirrors
 * eviction/policy_local.c, policy_streaming.c and policy_h2o.c post_attn + kv_cache.c
 * kv_evict_swap_last (POLICIES.md §1.3, §1.4, §1.6), the counter RNG of policy_random.c,
 * scissorhands' importance key and hashevict's code bits (the decode victims of random,
 * scissorhands and hashevict, in attn_decode.cu and select.cu's launch_ete_shifted). */
#ifndef LLM_CUDA_EVICT_CUH
#define LLM_CUDA_EVICT_CUH

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/evict_modes.h"

#include <cfloat>

/* a ranks below b as an eviction candidate: smaller value, ties → smaller position; -1 = none */
__device__ __forceinline__ bool ev_better(float va, int pa, int ja, float vb, int pb, int jb)
{
    if (ja < 0) return false;
    if (jb < 0) return true;
    return va < vb || (va == vb && pa < pb);
}

/* Block-wide argmin of (v, p) over the candidates each thread proposes (j < 0: none); every
 * thread gets the winning j. sv/sp/sj: shared arrays of NT entries; NT a power of two. */
template <int NT>
__device__ __forceinline__ int ev_block_argmin(float v, int p, int j, float *sv, int *sp, int *sj)
{
    const int tid = threadIdx.x;
    sv[tid] = v;
    sp[tid] = p;
    sj[tid] = j;
    __syncthreads();
    for (int w = NT / 2; w > 0; w >>= 1) {
        if (tid < w && ev_better(sv[tid + w], sp[tid + w], sj[tid + w], sv[tid], sp[tid], sj[tid])) {
            sv[tid] = sv[tid + w];
            sp[tid] = sp[tid + w];
            sj[tid] = sj[tid + w];
        }
        __syncthreads();
    }
    const int r = sj[0];
    __syncthreads(); /* sj[0] read by everyone before the arrays are reused */
    return r;
}

/* The victim of a region holding L > C live slots (positions P, scores S), all NT threads:
 *   EV_LOCAL: slot ring; EV_STREAMING: slot n_sink + ring;
 *   EV_H2O: argmin of S (or S / (t − pos + 1) when mean) over n_sink ≤ pos < recent_from, ties
 *   → smaller position. When every slot is protected (sinks + recent window cover the region:
 *   the CPU policy's minimum capacity rules it out, so only a caller's bug gets here) the oldest
 *   slot at or after n_sink is evicted, else the last slot: the region never grows past C + 1
 *   slots, and the host mirror's length (C after every step) stays true. */
template <int NT>
__device__ __forceinline__ int ev_victim(int mode, const int32_t *P, const float *S, int L, int ring,
                                         int n_sink, int recent_from, int mean, int t, float *sv,
                                         int *sp, int *sj)
{
    if (mode == EV_LOCAL) return ring;
    if (mode == EV_STREAMING) return n_sink + ring;
    float bv = 0.0f;
    int bp = 0, bj = -1;
    for (int j = threadIdx.x; j < L; j += NT) {
        int p = P[j];
        if (p < n_sink || p >= recent_from) continue;
        float v = mean ? S[j] / (float)(t - p + 1) : S[j];
        if (ev_better(v, p, j, bv, bp, bj)) bv = v, bp = p, bj = j;
    }
    int victim = ev_block_argmin<NT>(bv, bp, bj, sv, sp, sj);
    if (victim >= 0) return victim;
    bj = -1;
    for (int j = threadIdx.x; j < L; j += NT) { /* every slot protected: the oldest non-sink */
        int p = P[j];
        if (p >= n_sink && ev_better((float)p, p, j, (float)bp, bp, bj)) bp = p, bj = j;
    }
    victim = ev_block_argmin<NT>((float)bp, bp, bj, sv, sp, sj);
    return victim >= 0 ? victim : L - 1;
}

/* Moves the last of the L slots (K, V rows, position, score) into the victim; all NT threads.
 * Returns after a barrier (every read of the moved entries is done). */
template <typename T, int NT>
__device__ __forceinline__ void ev_swap_last(T *K, T *V, int32_t *P, float *S, int L, int victim,
                                             int head_dim)
{
    const int last = L - 1;
    if (victim != last)
        for (int d = threadIdx.x; d < head_dim; d += NT) {
            K[(size_t)victim * head_dim + d] = K[(size_t)last * head_dim + d];
            V[(size_t)victim * head_dim + d] = V[(size_t)last * head_dim + d];
        }
    __syncthreads();
    if (threadIdx.x == 0 && victim != last) {
        P[victim] = P[last];
        if (S) S[victim] = S[last];
    }
}

#define RND_STREAM_DECODE 0x524e44444543ULL /* eviction/policy_random.c: the decode victims' stream */

/* eviction/policy_common.c evict_splitmix64 / evict_rng_u01, bit for bit */
__device__ __forceinline__ unsigned long long ev_splitmix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
/* the 53-bit integer behind u = that · 2^-53 (the same order, no double arithmetic) */
__device__ __forceinline__ unsigned long long ev_rng_key(unsigned long long seed, unsigned long long stream, int layer,
                                                         int g, long long pos, long long idx)
{
    unsigned long long h = ev_splitmix64(stream);
    h = ev_splitmix64(h ^ (unsigned long long)(unsigned)layer);
    h = ev_splitmix64(h ^ (unsigned long long)(unsigned)g);
    h = ev_splitmix64(h ^ (unsigned long long)pos);
    h = ev_splitmix64(h ^ (unsigned long long)idx);
    return ev_splitmix64(seed ^ h) >> 11;
}

/* scissorhands' importance of a slot's history e (EV_SH_WORDS words) as an ordered key:
 * ones / max(1, min(n_push, hist)) as a float — correctly rounded, and two different ratios of
 * numerators and denominators ≤ 448 differ by ≥ 1/448², far above float rounding, so the floats
 * order them as policy_scissorhands.c's exact integer comparison does (equal ratios: equal) */
__device__ __forceinline__ unsigned long long sh_key(const unsigned long long *e, int hist)
{
    const unsigned *w = (const unsigned *)(e + 7);
    unsigned rec = min(w[0], (unsigned)hist);
    return __float_as_uint((float)w[1] / (float)(rec ? rec : 1u));
}

/* eviction/policy_hashevict.c hashevict_code, one bit: [Σ_i R[b][i] · x[i] ≥ 0], summed in fp32
 * in order with separate roundings (no fused multiply-add: the CPU's sequence) */
template <typename T> __device__ __forceinline__ bool he_bit(const float *R, int d, int b, const T *x)
{
    const float *r = R + (size_t)b * d;
    float s = 0.0f;
    for (int i = 0; i < d; i++) s = __fadd_rn(s, __fmul_rn(r[i], to_f32(x[i])));
    return s >= 0.0f;
}

/* Block-wide argmin of the (key, j) each of the NT threads proposes (j < 0: none), ties → the
 * lower j: left in sk[0], sj[0] (shared [NT], NT a power of two); every thread calls it and
 * synchronises before it reuses the arrays. (ss_insert.cu: the oldest slot, the nearest cluster;
 * subgen_recompress.cu: the farthest point, key −distance.) */
template <int NT, typename K> __device__ __forceinline__ void ev_block_argmin_j(K key, int j, K *sk, int *sj)
{
    const int tid = threadIdx.x;
    sk[tid] = key, sj[tid] = j;
    __syncthreads();
    for (int w = NT / 2; w > 0; w >>= 1) {
        if (tid < w && sj[tid + w] >= 0 &&
            (sj[tid] < 0 || sk[tid + w] < sk[tid] || (sk[tid + w] == sk[tid] && sj[tid + w] < sj[tid])))
            sk[tid] = sk[tid + w], sj[tid] = sj[tid + w];
        __syncthreads();
    }
}

/* eviction/policy_common.c evict_dist2: Σ ((double)x − y)² in order, no fused multiply-add;
 * non-finite → DBL_MAX. Double arithmetic: only the FP64 kernels instantiate it (ss_insert.cu,
 * subgen_recompress.cu; Makefile). */
template <typename X, typename Y> __device__ __forceinline__ double ev_dist2(const X *x, const Y *y, int d)
{
    double s = 0.0;
    for (int i = 0; i < d; i++) {
        const double e = __dsub_rn((double)to_f32(x[i]), (double)to_f32(y[i]));
        s = __dadd_rn(s, __dmul_rn(e, e));
    }
    return s >= 0.0 && s <= DBL_MAX ? s : DBL_MAX;
}

/* kv_cache.c kv_compact on the device, all NT threads of the block: the region's slots j < L with
 * keep[j] ≠ 0 (keep: [L], written by the block before the call) move down to 0, 1, … in slot order
 * (K, V rows of head_dim, position P, score S when non-NULL); *len = their count. keep[j] becomes
 * the new slot of j or −1. Each thread moves its columns in slot order: a row only moves down,
 * onto one that thread has already read. */
template <typename T, int NT>
__device__ __forceinline__ void ev_compact(T *K, T *V, int32_t *P, float *S, int L, int head_dim, int *keep,
                                           int *len)
{
    __syncthreads(); /* keep and every read of the old rows are done */
    if (threadIdx.x == 0) {
        int n = 0;
        for (int j = 0; j < L; j++) keep[j] = keep[j] ? n++ : -1;
        for (int j = 0; j < L; j++)
            if (keep[j] >= 0 && keep[j] != j) {
                P[keep[j]] = P[j];
                if (S) S[keep[j]] = S[j];
            }
        *len = n;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < head_dim; i += NT)
        for (int j = 0; j < L; j++) {
            const int d = keep[j];
            if (d >= 0 && d != j) {
                K[(size_t)d * head_dim + i] = K[(size_t)j * head_dim + i];
                V[(size_t)d * head_dim + i] = V[(size_t)j * head_dim + i];
            }
        }
}

/* The ring of local / streaming after an eviction (policy_local.c, policy_streaming.c). */
__device__ __forceinline__ int ev_ring_next(int mode, int ring, int C, int n_sink)
{
    return mode == EV_LOCAL ? (ring + 1) % C : mode == EV_STREAMING ? (ring + 1) % (C - n_sink) : ring;
}

/* The victim rule of the evict-then-attend kernels (attn_decode.cu, and select.cu's
 * launch_ete_shifted for --rope shifted): (v, p) ranks before (bv, bp) as a victim: smaller key,
 * ties → smaller position; j < 0: none.
 * rat (hashevict --hash-accum mean): the keys are the running means v / w (acc, age after this
 * step's evaluation, age ≥ 1), the largest first, compared exactly in integers as
 * policy_hashevict.c rule_victim does (v · bw against bv · w in 64 bits), ties → smaller position */
__device__ __forceinline__ bool ete_better(bool rat, unsigned long long v, unsigned w, int p, int j,
                                           unsigned long long bv, unsigned bw, int bp, int bj)
{
    if (j < 0) return false;
    if (bj < 0) return true;
    if (rat) {
        const unsigned long long lhs = v * bw, rhs = bv * w;
        return lhs > rhs || (lhs == rhs && p < bp);
    }
    return v < bv || (v == bv && p < bp);
}

/* Block-wide best of the candidates (bv, bw, bp, bj) each of the NT threads proposes, by
 * ete_better (j < 0: none): left in sv[0], sw[0], sp[0], sj[0] (shared arrays of NT entries, NT a
 * power of two); every thread calls it. The caller reads element 0 and synchronises before it
 * reuses the arrays. */
template <int NT>
__device__ __forceinline__ void ete_block_best(bool rat, unsigned long long bv, unsigned bw, int bp, int bj,
                                               unsigned long long *sv, unsigned *sw, int *sp, int *sj)
{
    const int tid = threadIdx.x;
    sv[tid] = bv;
    sw[tid] = bw;
    sp[tid] = bp;
    sj[tid] = bj;
    __syncthreads();
    for (int w = NT / 2; w > 0; w >>= 1) {
        if (tid < w && ete_better(rat, sv[tid + w], sw[tid + w], sp[tid + w], sj[tid + w], sv[tid], sw[tid], sp[tid], sj[tid])) {
            sv[tid] = sv[tid + w];
            sw[tid] = sw[tid + w];
            sp[tid] = sp[tid + w];
            sj[tid] = sj[tid + w];
        }
        __syncthreads();
    }
}

/* The victim key of slot `slot` (position p) for the evict-then-attend kernels at step t, lower
 * first (ete_better): l2norm the largest norm S (0xffffffff − its bits), random the counter RNG,
 * h2o evict-first the score S (/ (t − p) with mean; norms and scores ≥ 0: their bits order
 * them), scissorhands the importance of its history, hashevict the largest Hamming distance of
 * its code to the nq probe codes (summed); --hash-accum mean (rat): the running sum with this
 * step's distance as the key and the age after it as *w (else *w = 0). S: the region's norms
 * (l2norm) or scores (h2o), entry si, read only for those; sstate: every slot's state. */
__device__ __forceinline__ unsigned long long ete_key(int evict, bool rat, int mean, unsigned long long seed, int layer,
                                                      int g, int t, int p, const float *S, size_t si,
                                                      const unsigned long long *sstate, size_t slot, int sh_hist,
                                                      const unsigned long long *codes, int nq, unsigned *w)
{
    *w = 0;
    if (evict == EV_L2NORM) return 0xffffffffULL - __float_as_uint(S[si]);
    if (evict == EV_RANDOM) return ev_rng_key(seed, RND_STREAM_DECODE, layer, g, t, p);
    if (evict == EV_SH) return sh_key(sstate + slot * EV_SH_WORDS, sh_hist);
    if (evict == EV_HASH) {
        const unsigned long long *e = sstate + slot * EV_HASH_WORDS;
        unsigned dist = 0;
        for (int i = 0; i < nq; i++) dist += (unsigned)__popcll(e[0] ^ codes[i]);
        if (!rat) return 0xffffffffULL - dist;
        *w = (unsigned)e[2] + 1u; /* --hash-accum mean: this evaluation's distance joins the sum first */
        return e[1] + dist;
    }
    return __float_as_uint(mean ? S[si] / (float)(t - p) : S[si]); /* EV_H2O_EF */
}

#endif
