/* The 256-bit quantized kernel tables (quant.h): "avx2" (AVX2 + FMA + F16C, vpmaddubsw) and
 * "avxvnni" (the same code with AVX-VNNI's vpdpbusd/vpdpwssd), both from quant_body.inc and qpack_body.inc at 256 bits, and
 * their activation quantizers (bit-identical with the scalar ones: the same f32 products, roundf
 * done exactly as trunc ± 1, nearest-even by vcvtps2dq under the default MXCSR). Compiled with
 * target attributes, chosen at run time by dispatch.c. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <math.h>
#include <string.h>



/* software prefetch distance in the weight stream of the decode kernels (bytes) */
#define QPF ((size_t)cpu_pf.q8)   /* the intel set: 1024 (prefetch.h) */
#define TA __attribute__((target("avx2,fma,f16c")))
#define QI static inline __attribute__((always_inline))

TA static inline float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

TA static inline int hsum8i(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* roundf (half away from zero), exactly: t = trunc(v), + sign(v) when |v − t| ≥ 0.5 */
TA static inline __m256 roundf8(__m256 v)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
    __m256 one = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(t, _mm256_and_ps(one, _mm256_cmp_ps(f, _mm256_set1_ps(0.5f), _CMP_GE_OQ)));
}

/* 32 int32 (4 ymm, element order) → 32 int8 in element order */
TA static inline void pack32(int8_t *dst, __m256i a, __m256i b, __m256i c, __m256i d)
{
    __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    __m256i v = _mm256_packs_epi16(ab, cd);   /* lanes: a0 b0 c0 d0 | a1 b1 c1 d1 (4 each) */
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)dst, v);
}

TA void cpu_quant_act32_avx2(uint8_t *row, const float *x, int K, int c)
{
    int8_t *qs = (int8_t *)row;
    float *dd = (float *)(row + qa_off_d(K)), *s2 = (float *)(row + qa_off_s2(K));
    int32_t *corr = (int32_t *)(row + qa_off_corr(K));
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int b = 0; b < K / QK32; b++, x += QK32, qs += QK32) {
        __m256 v[4];
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < 4; i++) {
            v[i] = _mm256_loadu_ps(x + 8 * i);
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[i]));
        }
        const float amax = hmax8(m), d = amax / 127, id = d ? 1.0f / d : 0.0f;
        __m256i q[4], s = _mm256_setzero_si256();
        for (int i = 0; i < 4; i++) {
            q[i] = _mm256_cvtps_epi32(roundf8(_mm256_mul_ps(v[i], _mm256_set1_ps(id))));
            s = _mm256_add_epi32(s, q[i]);
        }
        pack32(qs, q[0], q[1], q[2], q[3]);
        int sum = hsum8i(s);
        dd[b] = f16_to_f32(f32_to_f16(d));
        s2[2 * b] = 0.0f;
        s2[2 * b + 1] = f16_to_f32(f32_to_f16((float)sum * d));
        if (c) corr[b] = -c * sum;
    }
}

TA void cpu_quant_act256_avx2(uint8_t *row, const float *x, int K)
{
    int8_t *qs = (int8_t *)row;
    float *dd = (float *)(row + qa_off_d(K));
    int16_t *bs16 = (int16_t *)(row + qa_off_bs16(K)), *bs32 = (int16_t *)(row + qa_off_bs32(K));
    float *bs32f = (float *)(row + qa_off_bs32f(K));
    int32_t *c16 = (int32_t *)(row + qa_off_c16(K));
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int b = 0; b < K / QKK; b++, x += QKK, qs += QKK) {
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < QKK; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
        const float amax = hmax8(m);
        if (!amax) {
            dd[b] = 0;
            memset(qs, 0, QKK);
            for (int j = 0; j < 16; j++) bs16[16 * b + j] = 0, c16[16 * b + j] = 0;
            for (int j = 0; j < 8; j++) bs32[8 * b + j] = 0, bs32f[8 * b + j] = 0.0f;
            continue;
        }
        int jm = 0;
        while (fabsf(x[jm]) != amax) jm++;   /* the first element of largest magnitude */
        const float iscale = -127.f / x[jm];
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127);
        for (int g = 0; g < QKK / 32; g++) {
            __m256i q[4];
            for (int i = 0; i < 4; i++)
                q[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + 32 * g + 8 * i))), lim);
            pack32(qs + 32 * g, q[0], q[1], q[2], q[3]);
            int s0 = hsum8i(_mm256_add_epi32(q[0], q[1])), s1 = hsum8i(_mm256_add_epi32(q[2], q[3]));
            bs16[16 * b + 2 * g] = (int16_t)s0;
            bs16[16 * b + 2 * g + 1] = (int16_t)s1;
            c16[16 * b + 2 * g] = -32 * s0;
            c16[16 * b + 2 * g + 1] = -32 * s1;
            bs32[8 * b + g] = (int16_t)(s0 + s1);
            bs32f[8 * b + g] = (float)(s0 + s1);
        }
        dd[b] = 1 / iscale;
    }
}

#define QPW 256   /* qpack_body.inc: the vector width */
#define QW 256   /* quant_vec.h: the vector width of quant_body.inc */
#define T __attribute__((target("avx2,fma,f16c")))
#define Q(x) x##_avx2
#define QVNNI 0
#include "kernels/cpu/quant_vec.h"
#include "kernels/cpu/quant_vec8.h"
#include "kernels/cpu/quant_body.inc"
#include "kernels/cpu/qpack_body.inc"
#undef T
#undef Q
#undef QVNNI

#define T __attribute__((target("avx2,fma,f16c,avxvnni")))
#define Q(x) x##_avxvnni
#define QVNNI 1
#include "kernels/cpu/quant_vec.h"
#include "kernels/cpu/quant_vec8.h"
#include "kernels/cpu/quant_body.inc"
#include "kernels/cpu/qpack_body.inc"
#undef T
#undef Q
#undef QVNNI

const cpu_quant_ops cpu_quant_avx2 =
    CPU_QUANT_OPS("avx2", 8, &cpu_quant_avx2, &cpu_quant_avx2_16, avx2, cpu_quant_act32_avx2, cpu_quant_act256_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16);

const cpu_quant_ops cpu_quant_avxvnni =
    CPU_QUANT_OPS("avxvnni", 8, &cpu_quant_avxvnni, &cpu_quant_avxvnni16, avxvnni, cpu_quant_act32_avx2, cpu_quant_act256_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16, [DT_Q8_0] = 128);
#endif
