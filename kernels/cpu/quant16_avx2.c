/* The 256-bit kernel tables for 16-bit activations (quant.h, quant16.c): "avx2" (AVX2 + FMA +
 * F16C, vpmaddwd + vpaddd) and "avxvnni" (AVX-VNNI vpdpwssd), both from quant16_body.inc and
 * qpack16_body.inc at 256 bits, and the 16-bit activation quantizers every SIMD family uses (the scalar
 * ones' bytes: the same f32 products, nearest even by vcvtps2dq under the default MXCSR).
 * Compiled with target attributes, chosen at run time by dispatch.c. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* software prefetch distance in the weight stream of the decode kernels (bytes) */
#define QPF ((size_t)cpu_pf.q16_256)   /* the intel set: 1024 (prefetch.h) */
#define TA __attribute__((target("avx2,fma,f16c")))
#define QI static inline __attribute__((always_inline))

TA static inline float hmax8_16(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

TA static inline int hsum8i_16(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* 8 quants of x[0..8) · id (nearest even, |q| ≤ 32767) as int16 at dst; returns them as int32 */
TA static inline __m256i q8x16(int16_t *dst, const float *x, __m256 id)
{
    __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), id));
    q = _mm256_max_epi32(_mm256_min_epi32(q, _mm256_set1_epi32(32767)), _mm256_set1_epi32(-32767));
    _mm_storeu_si128((__m128i *)dst, _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)));
    return q;
}

TA static inline float amax_16(const float *x, int n)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    return hmax8_16(m);
}

TA void cpu_quant_act32_16_avx2(uint8_t *row, const float *x, int K, int c)
{
    int16_t *qs = (int16_t *)row;
    float *dd = (float *)(row + qa16_off_d32(K)), *s2 = (float *)(row + qa16_off_s2(K));
    int32_t *corr = (int32_t *)(row + qa16_off_corr(K));
    int nb = K / QK32, nbp = 4 * qa16_groups(K);
    for (int b = 0; b < nbp; b++) {
        float id = 0.0f, d = b < nb ? qa16_scale(amax_16(x + (size_t)QK32 * b, QK32), &id) : 0.0f;
        int sum = 0;
        int16_t *q = qs + qa16_idx32(b, 0);   /* elements 8v..8v+7 at q + 32v */
        if (id == 0.0f)
            for (int v = 0; v < 4; v++) memset(q + 32 * v, 0, 16);
        else {
            __m256 vid = _mm256_set1_ps(id);
            __m256i s = _mm256_setzero_si256();
            for (int v = 0; v < 4; v++) s = _mm256_add_epi32(s, q8x16(q + 32 * v, x + (size_t)QK32 * b + 8 * v, vid));
            sum = hsum8i_16(s);
        }
        dd[b] = d;
        s2[2 * b] = 0.0f;
        s2[2 * b + 1] = d * (float)sum;
        if (c) corr[b] = -c * sum;
    }
}

TA void cpu_quant_act256_16_avx2(uint8_t *row, const float *x, int K)
{
    int16_t *qs = (int16_t *)row;
    float *dd = (float *)(row + qa16_off_d256(K)), *bs = (float *)(row + qa16_off_bs32f(K));
    for (int b = 0; b < K / QKK; b++, x += QKK, qs += QKK) {
        float id;
        dd[b] = qa16_scale(amax_16(x, QKK), &id);
        if (id == 0.0f) {
            memset(qs, 0, 2 * QKK);
            for (int s = 0; s < 8; s++) bs[8 * b + s] = 0.0f;
            continue;
        }
        __m256 vid = _mm256_set1_ps(id);
        for (int s = 0; s < 8; s++) {
            __m256i t = _mm256_setzero_si256();
            for (int i = 0; i < 4; i++) t = _mm256_add_epi32(t, q8x16(qs + 32 * s + 8 * i, x + 32 * s + 8 * i, vid));
            bs[8 * b + s] = (float)hsum8i_16(t);
        }
    }
}

#define QPW 256   /* qpack16_body.inc: the vector width */
#define QW 256   /* quant_vec.h: the vector width of quant16_body.inc */
#define T __attribute__((target("avx2,fma,f16c")))
#define Q(x) x##_avx2_16
#define QVNNI 0
#include "kernels/cpu/quant_vec.h"
#include "kernels/cpu/quant_vec16.h"
#include "kernels/cpu/quant16_body.inc"
#include "kernels/cpu/qpack16_body.inc"
#include "kernels/cpu/qpack16_x16.inc"
#undef T
#undef Q
#undef QVNNI

#define T __attribute__((target("avx2,fma,f16c,avxvnni")))
#define Q(x) x##_avxvnni16
#define QVNNI 1
#include "kernels/cpu/quant_vec.h"
#include "kernels/cpu/quant_vec16.h"
#include "kernels/cpu/quant16_body.inc"
#include "kernels/cpu/qpack16_body.inc"
#include "kernels/cpu/qpack16_x16.inc"
#undef T
#undef Q
#undef QVNNI

/* The X16 prefill GEMM of these two families (quant.h: cpu_quant_x16_gemm), or NULL. */
qgemm_fn cpu_quant_x16_gemm_256(const cpu_quant_ops *ops, dtype_t dt)
{
    return ops == &cpu_quant_avxvnni16 ? gemmx_avxvnni16(dt) : ops == &cpu_quant_avx2_16 ? gemmx_avx2_16(dt) : NULL;
}

const cpu_quant_ops cpu_quant_avx2_16 =
    CPU_QUANT_OPS("avx2", 16, &cpu_quant_avx2, &cpu_quant_avx2_16, avx2_16, cpu_quant_act32_16_avx2, cpu_quant_act256_16_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16);

const cpu_quant_ops cpu_quant_avxvnni16 =
    CPU_QUANT_OPS("avxvnni", 16, &cpu_quant_avxvnni, &cpu_quant_avxvnni16, avxvnni16, cpu_quant_act32_16_avx2, cpu_quant_act256_16_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16);
#endif
