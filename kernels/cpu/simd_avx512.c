/* The AVX-512 kernel family (AVX-512F: Skylake-SP / Zen 4 and later): 16 f32 lanes, F16
 * widened with vcvtph2ps zmm, BF16 by zero-extend and shift (the BF16 matvec by shift and mask
 * of deinterleaved pairs). Compiled with target attributes,
 * chosen at run time by dispatch.c. (AVX-512 BF16's vdpbf16ps is not used: it would round the
 * activations to bf16, changing results; widening keeps f32 math.) */
#include "kernels/cpu/simd.h"

#ifdef LLM_SIMD_X86
#include "kernels/kernels.h"

#include <immintrin.h>
#include <math.h>

#define T __attribute__((target("avx512f,avx2,fma,f16c")))

T static inline __m512 load_f16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

T static inline __m512 load_bf16(const uint16_t *p)
{
    __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}

#define MATVEC_BODY(WT, LOAD, SCALAR)                                                          \
    for (int r = r0; r < r1; r++) {                                                            \
        const WT *w = W + (size_t)r * cols;                                                    \
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();                             \
        __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();                             \
        int i = 0;                                                                             \
        for (; i + 64 <= cols; i += 64) {                                                      \
            a0 = _mm512_fmadd_ps(LOAD(w + i), _mm512_loadu_ps(x + i), a0);                     \
            a1 = _mm512_fmadd_ps(LOAD(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);           \
            a2 = _mm512_fmadd_ps(LOAD(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);           \
            a3 = _mm512_fmadd_ps(LOAD(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);           \
        }                                                                                      \
        for (; i + 16 <= cols; i += 16) a0 = _mm512_fmadd_ps(LOAD(w + i), _mm512_loadu_ps(x + i), a0); \
        float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))); \
        for (; i < cols; i++) s += SCALAR(w + i) * x[i];                                       \
        y[r] = s;                                                                              \
    }

#define LOAD_F32(p) _mm512_loadu_ps(p)
#define SCALAR_F32(p) (*(p))
#define SCALAR_F16(p) f16_to_f32(*(p))
#define SCALAR_BF16(p) bf16_to_f32(*(p))

T static void matvec_f32(float *y, const float *W, const float *x, int r0, int r1, int cols)
{
    MATVEC_BODY(float, LOAD_F32, SCALAR_F32)
}

/* 16-bit weights: software prefetch MV_PF bytes ahead of the row being read (two cache lines
 * per 64 weights, never past the end of the rows [r0, r1) of the matrix). Half the bytes of F32
 * per element means twice the instructions per cache line, and the hardware prefetchers alone
 * then left the 16-bit kernels at 80-84% of the streaming-read bandwidth on a Sapphire Rapids
 * VM (one thread, 768 and 2048 columns, tmp microbenchmark of issue 17) where F32 reached
 * 92-95%; 3 KiB ahead brought F16 to 93-97% and BF16 (with the layout below) to 94-98%;
 * 0.5-1 KiB ahead helped less, 4 KiB no more. */
#define MV_PF 3072

T static inline void mv_prefetch(const void *p, const char *end)
{
    const char *q = (const char *)p + MV_PF;
    if (q + 64 < end) {
        _mm_prefetch(q, _MM_HINT_T0);
        _mm_prefetch(q + 64, _MM_HINT_T0);
    }
}

T static void matvec_f16(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols)
{
    const char *end = (const char *)(W + (size_t)r1 * cols);
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * cols;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        int i = 0;
        for (; i + 64 <= cols; i += 64) {
            mv_prefetch(w + i, end);
            a0 = _mm512_fmadd_ps(load_f16(w + i), _mm512_loadu_ps(x + i), a0);
            a1 = _mm512_fmadd_ps(load_f16(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
            a2 = _mm512_fmadd_ps(load_f16(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);
            a3 = _mm512_fmadd_ps(load_f16(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);
        }
        for (; i + 16 <= cols; i += 16) a0 = _mm512_fmadd_ps(load_f16(w + i), _mm512_loadu_ps(x + i), a0);
        float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
        for (; i < cols; i++) s += f16_to_f32(w[i]) * x[i];
        y[r] = s;
    }
}

/* BF16 rows without widening shuffles (as the AVX2 family does): a 64-byte load holds 32 bf16
 * as 16 dwords; dword k shifted left 16 is element 2k as f32, and masked with 0xffff0000 it is
 * element 2k+1. x is deinterleaved to match once per call (xp: per block of 32, the 16 even
 * then the 16 odd entries), so 32 weights cost one load, a shift, an and and two FMAs (the
 * vpmovzxwd widening took a shuffle-port uop per 16). Plus the prefetch above. Rows wider than
 * BF16_XP_MAX take the widening loop. */
#define BF16_XP_MAX 8192
T static void matvec_bf16(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols)
{
    if (cols > BF16_XP_MAX) {
        MATVEC_BODY(uint16_t, load_bf16, SCALAR_BF16)
        return;
    }
    float xp[BF16_XP_MAX];
    const int nb = cols / 32 * 32;
    for (int i = 0; i < nb; i += 32)
        for (int k = 0; k < 16; k++) {
            xp[i + k] = x[i + 2 * k];
            xp[i + 16 + k] = x[i + 2 * k + 1];
        }
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    const char *end = (const char *)(W + (size_t)r1 * cols);
#define BF16_EVEN(v) _mm512_castsi512_ps(_mm512_slli_epi32(v, 16))
#define BF16_ODD(v) _mm512_castsi512_ps(_mm512_and_si512(v, hi))
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * cols;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        int i = 0;
        for (; i + 64 <= nb; i += 64) {
            mv_prefetch(w + i, end);
            __m512i v0 = _mm512_loadu_si512(w + i), v1 = _mm512_loadu_si512(w + i + 32);
            a0 = _mm512_fmadd_ps(BF16_EVEN(v0), _mm512_loadu_ps(xp + i), a0);
            a1 = _mm512_fmadd_ps(BF16_ODD(v0), _mm512_loadu_ps(xp + i + 16), a1);
            a2 = _mm512_fmadd_ps(BF16_EVEN(v1), _mm512_loadu_ps(xp + i + 32), a2);
            a3 = _mm512_fmadd_ps(BF16_ODD(v1), _mm512_loadu_ps(xp + i + 48), a3);
        }
        for (; i < nb; i += 32) {
            __m512i v0 = _mm512_loadu_si512(w + i);
            a0 = _mm512_fmadd_ps(BF16_EVEN(v0), _mm512_loadu_ps(xp + i), a0);
            a1 = _mm512_fmadd_ps(BF16_ODD(v0), _mm512_loadu_ps(xp + i + 16), a1);
        }
        float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
        for (; i < cols; i++) s += bf16_to_f32(w[i]) * x[i];
        y[r] = s;
    }
#undef BF16_EVEN
#undef BF16_ODD
}

T static void widen_f16(float *out, const uint16_t *in, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, load_f16(in + i));
    for (; i < n; i++) out[i] = f16_to_f32(in[i]);
}

T static void widen_bf16(float *out, const uint16_t *in, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, load_bf16(in + i));
    for (; i < n; i++) out[i] = bf16_to_f32(in[i]);
}

/* a · b, b of any element type (LOAD: 16 lanes of it as f32, SCALAR: one value). */
#define DOT_BODY(LOAD, SCALAR)                                                                 \
    __m512 a0 = _mm512_setzero_ps();                                                           \
    int i = 0;                                                                                 \
    for (; i + 16 <= n; i += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), LOAD(b + i), a0); \
    float s = _mm512_reduce_add_ps(a0);                                                        \
    for (; i < n; i++) s += a[i] * SCALAR(b + i);                                              \
    return s;

T static float dot(const float *a, const float *b, int n) { DOT_BODY(LOAD_F32, SCALAR_F32) }
T static float dot_f16(const float *a, const uint16_t *b, int n) { DOT_BODY(load_f16, SCALAR_F16) }
T static float dot_bf16(const float *a, const uint16_t *b, int n) { DOT_BODY(load_bf16, SCALAR_BF16) }

/* s[j] = DOT(q, row j) · scale: four rows at a time, each with DOT_BODY's own accumulator and
 * order (bit-identical to DOT per row), the rest one by one. */
#define DOTS_BODY(ET, LOAD, SCALAR, DOT)                                                       \
    int j = 0;                                                                                 \
    for (; j + 4 <= n; j += 4) {                                                               \
        const ET *k0 = K + (size_t)j * hd, *k1 = k0 + hd, *k2 = k1 + hd, *k3 = k2 + hd;        \
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();                             \
        __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();                             \
        int i = 0;                                                                             \
        for (; i + 16 <= hd; i += 16) {                                                        \
            __m512 qv = _mm512_loadu_ps(q + i);                                                \
            a0 = _mm512_fmadd_ps(qv, LOAD(k0 + i), a0);                                        \
            a1 = _mm512_fmadd_ps(qv, LOAD(k1 + i), a1);                                        \
            a2 = _mm512_fmadd_ps(qv, LOAD(k2 + i), a2);                                        \
            a3 = _mm512_fmadd_ps(qv, LOAD(k3 + i), a3);                                        \
        }                                                                                      \
        float s0 = _mm512_reduce_add_ps(a0), s1 = _mm512_reduce_add_ps(a1);                   \
        float s2 = _mm512_reduce_add_ps(a2), s3 = _mm512_reduce_add_ps(a3);                   \
        for (; i < hd; i++) {                                                                  \
            s0 += q[i] * SCALAR(k0 + i);                                                       \
            s1 += q[i] * SCALAR(k1 + i);                                                       \
            s2 += q[i] * SCALAR(k2 + i);                                                       \
            s3 += q[i] * SCALAR(k3 + i);                                                       \
        }                                                                                      \
        s[j] = s0 * scale, s[j + 1] = s1 * scale, s[j + 2] = s2 * scale, s[j + 3] = s3 * scale; \
    }                                                                                          \
    for (; j < n; j++) s[j] = DOT(q, K + (size_t)j * hd, hd) * scale;

T static void dots_f32(float *s, const float *q, const float *K, int n, int hd, float scale)
{
    DOTS_BODY(float, LOAD_F32, SCALAR_F32, dot)
}

T static void dots_f16(float *s, const float *q, const uint16_t *K, int n, int hd, float scale)
{
    DOTS_BODY(uint16_t, load_f16, SCALAR_F16, dot_f16)
}

T static void dots_bf16(float *s, const float *q, const uint16_t *K, int n, int hd, float scale)
{
    DOTS_BODY(uint16_t, load_bf16, SCALAR_BF16, dot_bf16)
}

/* Grouped decode scores: 4 keys at a time, each key's 16-lane chunks widened once and used by
 * up to 4 query heads per pass (16 accumulators); per (head, key) the accumulation is DOTS_BODY's
 * (one accumulator over 16-lane chunks, reduce, scalar tail, × scale), so the floats are the
 * same. The last n % 4 keys go through dots_* per head. */
#define DOTS_GROUP_BODY(ET, LOAD, SCALAR, DOTS)                                                \
    const ET *K = Kv;                                                                          \
    int j = 0;                                                                                 \
    for (; j + 4 <= n; j += 4) {                                                               \
        const ET *k0 = K + (size_t)j * hd, *k1 = k0 + hd, *k2 = k1 + hd, *k3 = k2 + hd;        \
        for (int g0 = 0; g0 < G; g0 += 4) {                                                    \
            int gn = G - g0 < 4 ? G - g0 : 4;                                                  \
            __m512 acc[4][4];                                                                  \
            for (int g = 0; g < 4; g++)                                                        \
                for (int k = 0; k < 4; k++) acc[g][k] = _mm512_setzero_ps();                   \
            int i = 0;                                                                         \
            for (; i + 16 <= hd; i += 16) {                                                    \
                __m512 w0 = LOAD(k0 + i), w1 = LOAD(k1 + i), w2 = LOAD(k2 + i), w3 = LOAD(k3 + i); \
                for (int g = 0; g < 4; g++) {                                                  \
                    if (g >= gn) break;                                                        \
                    __m512 qv = _mm512_loadu_ps(q + (size_t)(g0 + g) * hd + i);                \
                    acc[g][0] = _mm512_fmadd_ps(qv, w0, acc[g][0]);                            \
                    acc[g][1] = _mm512_fmadd_ps(qv, w1, acc[g][1]);                            \
                    acc[g][2] = _mm512_fmadd_ps(qv, w2, acc[g][2]);                            \
                    acc[g][3] = _mm512_fmadd_ps(qv, w3, acc[g][3]);                            \
                }                                                                              \
            }                                                                                  \
            for (int g = 0; g < gn; g++) {                                                     \
                const float *qg = q + (size_t)(g0 + g) * hd;                                   \
                float s0 = _mm512_reduce_add_ps(acc[g][0]), s1 = _mm512_reduce_add_ps(acc[g][1]); \
                float s2 = _mm512_reduce_add_ps(acc[g][2]), s3 = _mm512_reduce_add_ps(acc[g][3]); \
                for (int t = i; t < hd; t++) {                                                 \
                    s0 += qg[t] * SCALAR(k0 + t);                                              \
                    s1 += qg[t] * SCALAR(k1 + t);                                              \
                    s2 += qg[t] * SCALAR(k2 + t);                                              \
                    s3 += qg[t] * SCALAR(k3 + t);                                              \
                }                                                                              \
                float *sg = s + (size_t)(g0 + g) * s_stride + j;                               \
                sg[0] = s0 * scale, sg[1] = s1 * scale, sg[2] = s2 * scale, sg[3] = s3 * scale; \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    if (j < n)                                                                                 \
        for (int g = 0; g < G; g++) DOTS(s + (size_t)g * s_stride + j, q + (size_t)g * hd, K + (size_t)j * hd, n - j, hd, scale);

T static void dots_f32(float *s, const float *q, const float *K, int n, int hd, float scale);
T static void dots_f16(float *s, const float *q, const uint16_t *K, int n, int hd, float scale);
T static void dots_bf16(float *s, const float *q, const uint16_t *K, int n, int hd, float scale);

T static void dots_group(float *s, int s_stride, const float *q, int G, const void *Kv, int kdt, int n, int hd,
                         float scale)
{
    if (kdt == DT_F16) {
        DOTS_GROUP_BODY(uint16_t, load_f16, SCALAR_F16, dots_f16)
    } else if (kdt == DT_BF16) {
        DOTS_GROUP_BODY(uint16_t, load_bf16, SCALAR_BF16, dots_bf16)
    } else {
        DOTS_GROUP_BODY(float, LOAD_F32, SCALAR_F32, dots_f32)
    }
}

/* Grouped value sums: 32 columns at a time, each row's two 16-lane chunks widened once for up
 * to 8 heads per pass (16 accumulators, 2·G independent FMA chains); 16 columns for the rest. */
#define ACC_GROUP_BODY(ET, LOAD)                                                               \
    const ET *V = Vv;                                                                          \
    int d = 0;                                                                                 \
    for (; d + 32 <= ncols; d += 32)                                                           \
        for (int g0 = 0; g0 < G; g0 += 8) {                                                    \
            int gn = G - g0 < 8 ? G - g0 : 8;                                                  \
            __m512 a[8][2];                                                                    \
            for (int g = 0; g < gn; g++) {                                                     \
                a[g][0] = _mm512_loadu_ps(o + (size_t)(g0 + g) * hd + d);                      \
                a[g][1] = _mm512_loadu_ps(o + (size_t)(g0 + g) * hd + d + 16);                 \
            }                                                                                  \
            for (int j = 0; j < n; j++) {                                                      \
                __m512 v0 = LOAD(V + (size_t)j * hd + d), v1 = LOAD(V + (size_t)j * hd + d + 16); \
                for (int g = 0; g < 8; g++) {                                                  \
                    if (g >= gn) break;                                                        \
                    __m512 pj = _mm512_set1_ps(p[(size_t)(g0 + g) * p_stride + j]);            \
                    a[g][0] = _mm512_fmadd_ps(pj, v0, a[g][0]);                                \
                    a[g][1] = _mm512_fmadd_ps(pj, v1, a[g][1]);                                \
                }                                                                              \
            }                                                                                  \
            for (int g = 0; g < gn; g++) {                                                     \
                _mm512_storeu_ps(o + (size_t)(g0 + g) * hd + d, a[g][0]);                      \
                _mm512_storeu_ps(o + (size_t)(g0 + g) * hd + d + 16, a[g][1]);                 \
            }                                                                                  \
        }                                                                                      \
    for (; d + 16 <= ncols; d += 16)                                                           \
        for (int g = 0; g < G; g++) {                                                          \
            __m512 a0 = _mm512_loadu_ps(o + (size_t)g * hd + d);                               \
            for (int j = 0; j < n; j++)                                                        \
                a0 = _mm512_fmadd_ps(_mm512_set1_ps(p[(size_t)g * p_stride + j]), LOAD(V + (size_t)j * hd + d), a0); \
            _mm512_storeu_ps(o + (size_t)g * hd + d, a0);                                      \
        }

T static void acc_group(float *o, const float *p, int p_stride, int G, const void *Vv, int vdt, int n, int hd,
                        int ncols)
{
    if (vdt == DT_F16) {
        ACC_GROUP_BODY(uint16_t, load_f16)
    } else if (vdt == DT_BF16) {
        ACC_GROUP_BODY(uint16_t, load_bf16)
    } else {
        ACC_GROUP_BODY(float, LOAD_F32)
    }
}

T static void axpy(float *y, float a, const float *x, int n)
{
    __m512 va = _mm512_set1_ps(a);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

/* exp(x) for x ≤ 0 lanes (Cephes expf: range reduction by ln 2, degree-5 polynomial, about
 * 1 ulp); below -87.3 (where expf turns subnormal) the result is 0. */
T static inline __m512 exp_neg(__m512 x)
{
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_GE_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.33654f));
    __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
    __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500E-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(e));
}

T static float exp_sum(float *p, const float *s, int n, float m)
{
    __m512 vm = _mm512_set1_ps(m), acc = _mm512_set1_ps(0.0f);
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 e = exp_neg(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
        _mm512_storeu_ps(p + j, e);
        acc = _mm512_add_ps(acc, e);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; j < n; j++) {
        p[j] = expf(s[j] - m);
        sum += p[j];
    }
    return sum;
}

/* o[d] += Σ_j p[j] rows[j][d], rows of any element type (LOAD/SCALAR as in DOT_BODY): 64
 * columns at a time in four registers over all rows, then 16, then the tail. */
#define ACC_ROWS_BODY(LOAD, SCALAR)                                                            \
    int d = 0;                                                                                 \
    for (; d + 64 <= head_dim; d += 64) {                                                      \
        __m512 a0 = _mm512_loadu_ps(o + d), a1 = _mm512_loadu_ps(o + d + 16);                  \
        __m512 a2 = _mm512_loadu_ps(o + d + 32), a3 = _mm512_loadu_ps(o + d + 48);             \
        for (int j = 0; j < n; j++) {                                                          \
            __m512 pj = _mm512_set1_ps(p[j]);                                                  \
            a0 = _mm512_fmadd_ps(pj, LOAD(rows[j] + d), a0);                                   \
            a1 = _mm512_fmadd_ps(pj, LOAD(rows[j] + d + 16), a1);                              \
            a2 = _mm512_fmadd_ps(pj, LOAD(rows[j] + d + 32), a2);                              \
            a3 = _mm512_fmadd_ps(pj, LOAD(rows[j] + d + 48), a3);                              \
        }                                                                                      \
        _mm512_storeu_ps(o + d, a0);                                                           \
        _mm512_storeu_ps(o + d + 16, a1);                                                      \
        _mm512_storeu_ps(o + d + 32, a2);                                                      \
        _mm512_storeu_ps(o + d + 48, a3);                                                      \
    }                                                                                          \
    for (; d + 16 <= head_dim; d += 16) {                                                      \
        __m512 a0 = _mm512_loadu_ps(o + d);                                                    \
        for (int j = 0; j < n; j++) a0 = _mm512_fmadd_ps(_mm512_set1_ps(p[j]), LOAD(rows[j] + d), a0); \
        _mm512_storeu_ps(o + d, a0);                                                           \
    }                                                                                          \
    for (; d < head_dim; d++)                                                                  \
        for (int j = 0; j < n; j++) o[d] += p[j] * SCALAR(rows[j] + d);

T static void acc_rows(float *o, const float *p, const float *const *rows, int n, int head_dim)
{
    ACC_ROWS_BODY(LOAD_F32, SCALAR_F32)
}

T static void acc_rows_f16(float *o, const float *p, const uint16_t *const *rows, int n, int head_dim)
{
    ACC_ROWS_BODY(load_f16, SCALAR_F16)
}

T static void acc_rows_bf16(float *o, const float *p, const uint16_t *const *rows, int n, int head_dim)
{
    ACC_ROWS_BODY(load_bf16, SCALAR_BF16)
}

T static void scores_tile(float *s, const float *q, const float *Kt, int head_dim, float scale)
{
    __m512 acc[ATT_BK / 16];
    for (int j = 0; j < ATT_BK / 16; j++) acc[j] = _mm512_setzero_ps();
    for (int d = 0; d < head_dim; d++) {
        __m512 qd = _mm512_set1_ps(q[d]);
        const float *k = Kt + (size_t)d * ATT_BK;
        for (int j = 0; j < ATT_BK / 16; j++) acc[j] = _mm512_fmadd_ps(qd, _mm512_loadu_ps(k + 16 * j), acc[j]);
    }
    __m512 vs = _mm512_set1_ps(scale);
    for (int j = 0; j < ATT_BK / 16; j++) _mm512_storeu_ps(s + 16 * j, _mm512_mul_ps(acc[j], vs));
}

const cpu_simd_ops cpu_simd_avx512 = {
    .name = "avx512",
    .matvec_f32 = matvec_f32,
    .matvec_f16 = matvec_f16,
    .matvec_bf16 = matvec_bf16,
    .widen_f16 = widen_f16,
    .widen_bf16 = widen_bf16,
    .dot = dot,
    .axpy = axpy,
    .exp_sum = exp_sum,
    .acc_rows = acc_rows,
    .scores_tile = scores_tile,
    .dot_f16 = dot_f16,
    .dot_bf16 = dot_bf16,
    .acc_rows_f16 = acc_rows_f16,
    .acc_rows_bf16 = acc_rows_bf16,
    .dots_f32 = dots_f32,
    .dots_f16 = dots_f16,
    .dots_bf16 = dots_bf16,
    .dots_group = dots_group,
    .acc_group = acc_group,
};
#endif
