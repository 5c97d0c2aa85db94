/* subgen_stream's window and sketch update of one decode step on the device (POLICIES.md §8.3
 * insert; kernels_cuda.cuh launch_ss_insert): eviction/policy_subgen_stream.c ss_pre_attn +
 * sketch_insert bit for bit, then the f32 estimator weights launch_ss_attend reads.
 * [DECISION] One of the two kernels with double arithmetic (with subgen_recompress.cu; Makefile:
 * ptxas's -warn-double-usage off for these files): the CPU's cluster choice (ℓ2 distances summed in double, √ against δ) and its
 * reservoir draws (u < 1/n_i, u < w2 / (μ + w2)) must be reproduced with its rounding so that
 * both backends hold the same sketch; the work is O(m_max · d + (t + s) · d) per region and step.
 * No fused multiply-add: every operation rounded as the CPU's sequence. */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/evict.cuh"

#define SI_THREADS 128
#define SI_MAX_D 256

/* evict_rng_u01: the 53-bit key · 2^-53 (exact) */
__device__ __forceinline__ double si_u01(unsigned long long seed, unsigned long long stream, int layer, int g,
                                         long long pos, long long idx)
{
    return (double)ev_rng_key(seed, stream, layer, g, pos, idx) * 0x1.0p-53;
}

template <typename T> __global__ void __launch_bounds__(SI_THREADS) ss_insert_kernel(ss_step_args a)
{
    __shared__ float sk[SI_MAX_D], sv[SI_MAX_D]; /* the leaving token's K, V widened to f32 */
    __shared__ double sd[SI_THREADS];
    __shared__ int sp[SI_THREADS], sj[SI_THREADS];
    __shared__ int s_cl, s_created;
    __shared__ double s_p, s_w2;
    const int g = blockIdx.x, tid = threadIdx.x, d = a.head_dim;
    const ss_sketch &S = a.sk;
    const int idx = a.layer * a.n_kv_heads + g;
    ss_head *h = S.head + idx;
    const size_t o = a.off[g];
    const int n = a.len[g], C = a.cap[g];
    __syncthreads(); /* every thread has read len[g] before thread 0 may update it */
    if (n >= C) {
        T *K = (T *)a.kc + o * d, *V = (T *)a.vc + o * d;
        int32_t *P = a.pos + o;
        /* the oldest window slot (smallest position; ties → the lower slot, as ss_pre_attn) */
        int bp = 0, bj = -1;
        for (int j = tid; j < n; j += SI_THREADS)
            if (bj < 0 || P[j] < bp) bp = P[j], bj = j;
        ev_block_argmin_j<SI_THREADS>(bp, bj, sp, sj);
        const int old = sj[0], pos = sp[0];
        for (int e = tid; e < d; e += SI_THREADS) {
            sk[e] = to_f32(K[(size_t)old * d + e]);
            sv[e] = to_f32(V[(size_t)old * d + e]);
        }
        __syncthreads();
        /* UpdateSoftmaxNormalizer: the nearest representative (ties → lower index) */
        const int m = h->m;
        double bd = 0.0;
        int bi = -1;
        for (int i = tid; i < m; i += SI_THREADS) {
            const double e = ev_dist2(S.rep + ((size_t)idx * S.m_max + i) * d, sk, d);
            if (bi < 0 || e < bd) bd = e, bi = i;
        }
        ev_block_argmin_j<SI_THREADS>(bd, bi, sd, sj);
        if (tid == 0) {
            /* δ of a sketch first fed during decode: 0 (§8.3) */
            if (!h->delta_set) h->delta = 0.0, h->delta_set = 1;
            int best = sj[0], created = 0;
            int64_t *count = S.count + (size_t)idx * S.m_max;
            if (best >= 0 && (sqrt(sd[0]) <= h->delta || h->m >= S.m_max)) {
                count[best]++;
            } else {
                best = h->m++;
                count[best] = 1;
                created = 1;
            }
            s_cl = best, s_created = created;
            /* UpdateMatrixProduct's probability, with μ before this token */
            double w2 = 0.0;
            for (int e = 0; e < d; e++) w2 = __dadd_rn(w2, __dmul_rn((double)sv[e], (double)sv[e]));
            const double mw = __dadd_rn(h->mu, w2);
            s_p = mw == 0.0 ? 1.0 : __ddiv_rn(w2, mw);
            s_w2 = w2;
        }
        __syncthreads();
        const int cl = s_cl, created = s_created;
        const size_t c = (size_t)idx * S.m_max + cl;
        if (created)
            for (int e = tid; e < d; e += SI_THREADS) S.rep[c * d + e] = sk[e];
        /* the t cluster samples: each a reservoir over the cluster */
        const double inv = __ddiv_rn(1.0, (double)S.count[c]);
        for (int j = tid; j < S.t; j += SI_THREADS)
            if (created || si_u01(a.seed, SS_STREAM_S, a.layer, g, pos, j) < inv) {
                float *dst = S.samp + (c * S.t + j) * d;
                for (int e = 0; e < d; e++) dst[e] = sk[e];
                S.samp_pos[c * S.t + j] = pos;
            }
        /* the s value-norm samples: each takes the token with p = w2 / (μ + w2) */
        const double p = s_p;
        for (int j = tid; j < S.s; j += SI_THREADS)
            if (si_u01(a.seed, SS_STREAM_M, a.layer, g, pos, j) < p) {
                const size_t om = (size_t)idx * S.s + j;
                for (int e = 0; e < d; e++) S.mk[om * d + e] = sk[e], S.mv[om * d + e] = sv[e];
                S.mw2[om] = s_w2;
                S.mpos[om] = pos;
            }
        /* the new token (slot n) into the leaving one's slot */
        for (int e = tid; e < d; e += SI_THREADS) {
            K[(size_t)old * d + e] = K[(size_t)n * d + e];
            V[(size_t)old * d + e] = V[(size_t)n * d + e];
        }
        __syncthreads(); /* every draw has read μ and count */
        if (tid == 0) {
            h->mu = __dadd_rn(h->mu, s_w2); /* μ grows after the draws */
            h->n_ins++;
            P[old] = P[n];
            if (a.score) a.score[o + old] = a.score[o + n];
        }
    } else if (tid == 0) {
        a.len[g] = n + 1;
    }
    __syncthreads();
    /* the f32 weights of the estimator: n_i / t (denominator), μ / (s · w2_j) (numerator) */
    const double mu = h->mu;
    for (int i = tid; i < S.m_max; i += SI_THREADS) {
        const size_t c = (size_t)idx * S.m_max + i;
        a.cw[c] = i < h->m ? (float)__ddiv_rn((double)S.count[c], (double)S.t) : 0.0f;
    }
    for (int j = tid; j < S.s; j += SI_THREADS) {
        const size_t om = (size_t)idx * S.s + j;
        const double w2 = S.mw2[om];
        a.mwt[om] = S.mpos[om] < 0 || !(w2 > 0.0) ? 0.0f : (float)__ddiv_rn(mu, __dmul_rn((double)S.s, w2));
    }
}

template <typename T> static cudaError_t ss_insert_go(const ss_step_args &a, cudaStream_t s)
{
    const ss_step_args args = a; /* by value: a graph replays the launch */
    ss_insert_kernel<T><<<a.n_kv_heads, SI_THREADS, 0, s>>>(args);
    return cudaPeekAtLastError();
}

cudaError_t launch_ss_insert(const ss_step_args *a, cudaStream_t s)
{
    if (a->n_kv_heads < 1 || a->head_dim < 1 || a->head_dim > SI_MAX_D || !a->kc || !a->vc || !a->pos || !a->off ||
        !a->len || !a->cap || !a->sk.head || a->sk.d != a->head_dim || a->sk.t < 1 || a->sk.m_max < 1 ||
        a->sk.s < 1 || !a->cw || !a->mwt)
        return cudaErrorInvalidValue;
    return CU_DISPATCH(a->kv_dt, ss_insert_go, *a, s);
}
