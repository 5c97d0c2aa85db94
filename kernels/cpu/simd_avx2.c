/* The AVX2 + FMA + F16C kernel family (x86-64 CPUs since Haswell / Zen). Compiled with
 * target attributes, chosen at run time by dispatch.c. F16 widens with vcvtph2ps, BF16 with a
 * 16-bit left shift of the zero-extended bits; products accumulate in f32 FMA lanes. */
#include "kernels/cpu/simd.h"

#ifdef LLM_SIMD_X86
#include "kernels/kernels.h"

#include <immintrin.h>
#include <math.h>

#define T __attribute__((target("avx2,fma,f16c")))

T static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

T static inline __m256 load_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

T static inline __m256 load_bf16(const uint16_t *p)
{
    __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

/* One kernel body per weight type: LOAD(p) gives 8 f32 lanes, SCALAR(p) one value. */
#define MATVEC_BODY(WT, LOAD, SCALAR)                                                          \
    for (int r = r0; r < r1; r++) {                                                            \
        const WT *w = W + (size_t)r * cols;                                                    \
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();                             \
        __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();                             \
        int i = 0;                                                                             \
        for (; i + 32 <= cols; i += 32) {                                                      \
            a0 = _mm256_fmadd_ps(LOAD(w + i), _mm256_loadu_ps(x + i), a0);                     \
            a1 = _mm256_fmadd_ps(LOAD(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);             \
            a2 = _mm256_fmadd_ps(LOAD(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);           \
            a3 = _mm256_fmadd_ps(LOAD(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);           \
        }                                                                                      \
        for (; i + 8 <= cols; i += 8) a0 = _mm256_fmadd_ps(LOAD(w + i), _mm256_loadu_ps(x + i), a0); \
        float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));           \
        for (; i < cols; i++) s += SCALAR(w + i) * x[i];                                       \
        y[r] = s;                                                                              \
    }

#define LOAD_F32(p) _mm256_loadu_ps(p)
#define SCALAR_F32(p) (*(p))
#define SCALAR_F16(p) f16_to_f32(*(p))
#define SCALAR_BF16(p) bf16_to_f32(*(p))

T static void matvec_f32(float *y, const float *W, const float *x, int r0, int r1, int cols)
{
    MATVEC_BODY(float, LOAD_F32, SCALAR_F32)
}

T static void matvec_f16(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols)
{
    MATVEC_BODY(uint16_t, load_f16, SCALAR_F16)
}

/* BF16 rows without widening shuffles: a 32-byte load holds 16 bf16 as 8 dwords; dword k
 * shifted left 16 is element 2k as f32, and masked with 0xffff0000 it is element 2k+1. x is
 * deinterleaved to match once per call (xp: per block of 16, the 8 even then the 8 odd
 * entries), so a row costs per 16 weights one load, a shift, an and and two FMAs.
 * Rows go one at a time on purpose: variants taking 2 or 4 rows per loop (sharing each load
 * of xp, with or without software prefetch) ran 1.4x faster from the L2 but 2.8x slower from
 * DRAM on the bench machine (AMD EPYC VM, 49 MB matrix, one thread: 9 vs 26 GB/s), whose
 * memory only streams at full rate for one sequential stream per core. */
#define BF16_XP_MAX 8192
T static void matvec_bf16(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols)
{
    if (cols > BF16_XP_MAX) {
        MATVEC_BODY(uint16_t, load_bf16, SCALAR_BF16)
        return;
    }
    float xp[BF16_XP_MAX];
    int nb = cols / 16 * 16;
    for (int i = 0; i < nb; i += 16)
        for (int k = 0; k < 8; k++) {
            xp[i + k] = x[i + 2 * k];
            xp[i + 8 + k] = x[i + 2 * k + 1];
        }
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * cols;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        int i = 0;
        for (; i + 32 <= nb; i += 32) {
            __m256i v0 = _mm256_loadu_si256((const __m256i *)(w + i));
            __m256i v1 = _mm256_loadu_si256((const __m256i *)(w + i + 16));
            a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v0, 16)), _mm256_loadu_ps(xp + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v0, hi)), _mm256_loadu_ps(xp + i + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v1, 16)), _mm256_loadu_ps(xp + i + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v1, hi)), _mm256_loadu_ps(xp + i + 24), a3);
        }
        for (; i < nb; i += 16) {
            __m256i v0 = _mm256_loadu_si256((const __m256i *)(w + i));
            a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v0, 16)), _mm256_loadu_ps(xp + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v0, hi)), _mm256_loadu_ps(xp + i + 8), a1);
        }
        float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        for (; i < cols; i++) s += bf16_to_f32(w[i]) * x[i];
        y[r] = s;
    }
}

T static void widen_f16(float *out, const uint16_t *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_f16(in + i));
    for (; i < n; i++) out[i] = f16_to_f32(in[i]);
}

T static void widen_bf16(float *out, const uint16_t *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_bf16(in + i));
    for (; i < n; i++) out[i] = bf16_to_f32(in[i]);
}

/* a · b, b of any element type (LOAD: 8 lanes of it as f32, SCALAR: one value): two accumulators
 * over 16 elements, then 8, then the tail. */
#define DOT_BODY(LOAD, SCALAR)                                                                 \
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();                                 \
    int i = 0;                                                                                 \
    for (; i + 16 <= n; i += 16) {                                                             \
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), LOAD(b + i), a0);                         \
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), LOAD(b + i + 8), a1);                 \
    }                                                                                          \
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), LOAD(b + i), a0);  \
    float s = hsum(_mm256_add_ps(a0, a1));                                                     \
    for (; i < n; i++) s += a[i] * SCALAR(b + i);                                              \
    return s;

T static float dot(const float *a, const float *b, int n) { DOT_BODY(LOAD_F32, SCALAR_F32) }
T static float dot_f16(const float *a, const uint16_t *b, int n) { DOT_BODY(load_f16, SCALAR_F16) }
T static float dot_bf16(const float *a, const uint16_t *b, int n) { DOT_BODY(load_bf16, SCALAR_BF16) }

/* s[j] = DOT(q, row j) · scale: two rows at a time, each with DOT_BODY's own two accumulators
 * and order (bit-identical to DOT per row), the last one alone. */
#define DOTS_BODY(ET, LOAD, SCALAR, DOT)                                                       \
    int j = 0;                                                                                 \
    for (; j + 2 <= n; j += 2) {                                                               \
        const ET *k0 = K + (size_t)j * hd, *k1 = k0 + hd;                                      \
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();                             \
        __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();                             \
        int i = 0;                                                                             \
        for (; i + 16 <= hd; i += 16) {                                                        \
            __m256 q0 = _mm256_loadu_ps(q + i), q1 = _mm256_loadu_ps(q + i + 8);               \
            a0 = _mm256_fmadd_ps(q0, LOAD(k0 + i), a0);                                        \
            a1 = _mm256_fmadd_ps(q1, LOAD(k0 + i + 8), a1);                                    \
            b0 = _mm256_fmadd_ps(q0, LOAD(k1 + i), b0);                                        \
            b1 = _mm256_fmadd_ps(q1, LOAD(k1 + i + 8), b1);                                    \
        }                                                                                      \
        for (; i + 8 <= hd; i += 8) {                                                          \
            __m256 q0 = _mm256_loadu_ps(q + i);                                                \
            a0 = _mm256_fmadd_ps(q0, LOAD(k0 + i), a0);                                        \
            b0 = _mm256_fmadd_ps(q0, LOAD(k1 + i), b0);                                        \
        }                                                                                      \
        float s0 = hsum(_mm256_add_ps(a0, a1)), s1 = hsum(_mm256_add_ps(b0, b1));              \
        for (; i < hd; i++) {                                                                  \
            s0 += q[i] * SCALAR(k0 + i);                                                       \
            s1 += q[i] * SCALAR(k1 + i);                                                       \
        }                                                                                      \
        s[j] = s0 * scale, s[j + 1] = s1 * scale;                                              \
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

T static void axpy(float *y, float a, const float *x, int n)
{
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

/* exp(x) for x ≤ 0 lanes (Cephes expf: range reduction by ln 2, degree-5 polynomial, about
 * 1 ulp); below -87.3 (where expf turns subnormal) the result is 0. */
T static inline __m256 exp_neg(__m256 x)
{
    __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_GE_OQ);
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.33654f));
    __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f));
    __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-0.693359375f), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), keep);
}

T static float exp_sum(float *p, const float *s, int n, float m)
{
    __m256 vm = _mm256_set1_ps(m), acc = _mm256_set1_ps(0.0f);
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 e = exp_neg(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
        _mm256_storeu_ps(p + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum(acc);
    for (; j < n; j++) {
        p[j] = expf(s[j] - m);
        sum += p[j];
    }
    return sum;
}

/* o[d] += Σ_j p[j] rows[j][d], rows of any element type (LOAD/SCALAR as in DOT_BODY): 32
 * columns at a time in four registers over all rows, then 8, then the tail. */
#define ACC_ROWS_BODY(LOAD, SCALAR)                                                            \
    int d = 0;                                                                                 \
    for (; d + 32 <= head_dim; d += 32) {                                                      \
        __m256 a0 = _mm256_loadu_ps(o + d), a1 = _mm256_loadu_ps(o + d + 8);                   \
        __m256 a2 = _mm256_loadu_ps(o + d + 16), a3 = _mm256_loadu_ps(o + d + 24);             \
        for (int j = 0; j < n; j++) {                                                          \
            __m256 pj = _mm256_broadcast_ss(p + j);                                            \
            a0 = _mm256_fmadd_ps(pj, LOAD(rows[j] + d), a0);                                   \
            a1 = _mm256_fmadd_ps(pj, LOAD(rows[j] + d + 8), a1);                               \
            a2 = _mm256_fmadd_ps(pj, LOAD(rows[j] + d + 16), a2);                              \
            a3 = _mm256_fmadd_ps(pj, LOAD(rows[j] + d + 24), a3);                              \
        }                                                                                      \
        _mm256_storeu_ps(o + d, a0);                                                           \
        _mm256_storeu_ps(o + d + 8, a1);                                                       \
        _mm256_storeu_ps(o + d + 16, a2);                                                      \
        _mm256_storeu_ps(o + d + 24, a3);                                                      \
    }                                                                                          \
    for (; d + 8 <= head_dim; d += 8) {                                                        \
        __m256 a0 = _mm256_loadu_ps(o + d);                                                    \
        for (int j = 0; j < n; j++) a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), LOAD(rows[j] + d), a0); \
        _mm256_storeu_ps(o + d, a0);                                                           \
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
    __m256 acc[ATT_BK / 8];
    for (int j = 0; j < ATT_BK / 8; j++) acc[j] = _mm256_setzero_ps();
    for (int d = 0; d < head_dim; d++) {
        __m256 qd = _mm256_broadcast_ss(q + d);
        const float *k = Kt + (size_t)d * ATT_BK;
        for (int j = 0; j < ATT_BK / 8; j++) acc[j] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(k + 8 * j), acc[j]);
    }
    __m256 vs = _mm256_set1_ps(scale);
    for (int j = 0; j < ATT_BK / 8; j++) _mm256_storeu_ps(s + 8 * j, _mm256_mul_ps(acc[j], vs));
}

const cpu_simd_ops cpu_simd_avx2 = {
    .name = "avx2",
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
};
#endif
