/* subgen_stream's decode attention on the device (POLICIES.md §8.3 attend; kernels_cuda.cuh
 * launch_ss_attend): eviction/policy_subgen_stream.c ss_attend in f32. Per query head h of
 * group g, over the window W (len[g] cache slots), the cluster samples S_i (m · t) and the
 * value-norm samples M (s, once the sketch holds a token):
 *   l = scale · ⟨q, k⟩ (the CPU's dotf: in order, no fused multiply-add), m* = max over all,
 *   num = Σ_W e^{l−m*} v + Σ_{M, w2>0} μ/(s·w2) e^{l−m*} v,
 *   den = Σ_W e^{l−m*} + Σ_i (n_i/t) Σ_{S_i} e^{l−m*},   out = num / den,
 * the weights n_i/t and μ/(s·w2) from launch_ss_insert (f32). The CPU sums in double; the f32
 * sums here differ by float rounding (the emulated parity runs check them against it). */
#include "kernels/cuda/kernels_cuda.cuh"

#define SA_THREADS 128

/* ⟨q, k⟩ · scale as eviction/policy_subgen_stream.c dotf(q, k) * scale */
template <typename K> __device__ __forceinline__ float sa_logit(const float *q, const K *k, int d, float scale)
{
    float s = 0.0f;
    for (int i = 0; i < d; i++) s = __fadd_rn(s, __fmul_rn(q[i], to_f32(k[i])));
    return __fmul_rn(s, scale);
}

template <typename T> __global__ void __launch_bounds__(SA_THREADS) ss_attend_kernel(ss_step_args a)
{
    __shared__ float red[32];
    __shared__ float s_den;
    const int h = blockIdx.x, tid = threadIdx.x, d = a.head_dim, g = h / a.G;
    const ss_sketch &S = a.sk;
    const int idx = a.layer * a.n_kv_heads + g;
    const size_t o = a.off[g];
    const int n = a.len[g], m = S.head[idx].m, t = S.t;
    const int nS = m * t, nM = S.head[idx].n_ins > 0 ? S.s : 0, nk = n + nS + nM;
    const T *K = (const T *)a.kc + o * d, *V = (const T *)a.vc + o * d;
    const float *q = a.q + (size_t)h * d;
    const float *samp = S.samp + (size_t)idx * S.m_max * t * d;
    const float *mk = S.mk + (size_t)idx * S.s * d, *mv = S.mv + (size_t)idx * S.s * d;
    const float *mwt = a.mwt + (size_t)idx * S.s, *cw = a.cw + (size_t)idx * S.m_max;
    float *w = a.scratch + (size_t)h * a.scratch_stride;
    /* the logits (an empty value-norm sample: none), their maximum m* */
    float mx = -INFINITY;
    for (int j = tid; j < nk; j += SA_THREADS) {
        float l;
        if (j < n) l = sa_logit(q, K + (size_t)j * d, d, a.scale);
        else if (j < n + nS) l = sa_logit(q, samp + (size_t)(j - n) * d, d, a.scale);
        else if (S.mpos[(size_t)idx * S.s + (j - n - nS)] >= 0)
            l = sa_logit(q, mk + (size_t)(j - n - nS) * d, d, a.scale);
        else l = -INFINITY;
        w[j] = l;
        mx = fmaxf(mx, l);
    }
    mx = block_max(mx, red);
    /* e^{l − m*}, the value-norm samples' times μ / (s · w2) (0: skipped by the CPU) */
    for (int j = tid; j < nk; j += SA_THREADS) {
        const float e = expf(w[j] - mx);
        w[j] = j < n + nS ? e : mwt[j - n - nS] > 0.0f ? mwt[j - n - nS] * e : 0.0f;
    }
    __syncthreads();
    if (tid == 0) { /* the denominator in the CPU's order */
        float den = 0.0f;
        for (int j = 0; j < n; j++) den += w[j];
        for (int i = 0; i < m; i++) {
            float sum = 0.0f;
            for (int j = 0; j < t; j++) sum += w[n + i * t + j];
            den += cw[i] * sum;
        }
        s_den = den;
    }
    __syncthreads();
    const float den = s_den;
    for (int e = tid; e < d; e += SA_THREADS) {
        float num = 0.0f;
        for (int j = 0; j < n; j++) num += w[j] * to_f32(V[(size_t)j * d + e]);
        for (int j = 0; j < nM; j++)
            if (w[n + nS + j] != 0.0f) num += w[n + nS + j] * mv[(size_t)j * d + e];
        a.out[(size_t)h * d + e] = num / den;
    }
}

template <typename T> static cudaError_t ss_attend_go(const ss_step_args &a, cudaStream_t s)
{
    const ss_step_args args = a; /* by value: a graph replays the launch */
    ss_attend_kernel<T><<<a.n_kv_heads * a.G, SA_THREADS, 0, s>>>(args);
    return cudaPeekAtLastError();
}

cudaError_t launch_ss_attend(const ss_step_args *a, cudaStream_t s)
{
    if (a->n_kv_heads < 1 || a->G < 1 || a->head_dim < 1 || !a->kc || !a->vc || !a->off || !a->len ||
        !a->sk.head || !a->q || !a->out || !a->scratch || !a->cw || !a->mwt ||
        a->scratch_stride < (size_t)a->sk.m_max * a->sk.t + a->sk.s)
        return cudaErrorInvalidValue;
    return CU_DISPATCH(a->kv_dt, ss_attend_go, *a, s);
}
