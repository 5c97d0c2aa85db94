/* The AVX2 + FMA + F16C kernel family (x86-64 CPUs since Haswell / Zen): 8 f32 lanes, F16
 * widened with vcvtph2ps, BF16 with a 16-bit left shift of the zero-extended bits (the BF16
 * matvec by shift and mask of deinterleaved pairs); products accumulate in f32 FMA lanes.
 * The kernels themselves are simd_body.inc's, over the primitives defined here. Compiled with
 * target attributes, chosen at run time by dispatch.c. */
#include "kernels/cpu/simd.h"

#ifdef LLM_SIMD_X86
#include "kernels/kernels.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define T __attribute__((target("avx2,fma,f16c")))
#define SIMD_NAME "avx2"
#define SIMD_OPS cpu_simd_avx2

typedef __m256 vf;
typedef __m256i vi;
#define VN 8
/* 16 ymm registers: two accumulators per dot row (two chains over 16 elements), two rows per
 * pass in dots_*. No grouped-query kernels: with 16 registers, sharing a widened key between
 * heads measured slower than dots_* head by head (G = 4, 2048 keys × 64 in the L2, Sapphire
 * Rapids forced to avx2: 2 keys × 2 heads 0.029 ms, 4 × 1 0.020, per head 0.022 ms), so
 * attention.c runs dots_* / acc_rows_* per head on this family. */
#define SIMD_GROUPED 0
#define DOT_ACC 2
#define DOTS_ROWS 2

#define vzero() _mm256_setzero_ps()
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vset1(x) _mm256_set1_ps(x)
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vadd(a, b) _mm256_add_ps(a, b)
#define vsub(a, b) _mm256_sub_ps(a, b)
#define vmax(a, b) _mm256_max_ps(a, b)
#define vdiv(a, b) _mm256_div_ps(a, b)
#define vabs(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a)
#define vmul_if_neg(g, e) _mm256_blendv_ps(g, _mm256_mul_ps(g, e), g)   /* g < 0 (sign bit) ? g·e : g */
#define vround(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vpow2i(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
typedef __m256 vmask;
#define vge(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define vmaskz_mul(m, a, b) _mm256_and_ps(_mm256_mul_ps(a, b), m)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vload_i(p) _mm256_loadu_si256((const __m256i *)(p))
#define vbf16_even(v) _mm256_castsi256_ps(_mm256_slli_epi32(v, 16))
#define vbf16_odd(v) _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)))
#define MV_PREFETCH(p, end) ((void)0)   /* the hardware prefetchers keep up at 8 lanes */
#define MV_PREFETCH32(p, end) ((void)0)

T static inline float vhsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

T static inline __m256 vload_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

T static inline __m256 vload_bf16(const uint16_t *p)
{
    __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

/* f32 → binary16 by vcvtps2ph with round-to-nearest-even: the same bits as f32_to_f16 for every
 * input (overflow to inf, subnormals, NaN quieted with its payload's top bits). */
T static inline void vstore_f16(uint16_t *p, __m256 v)
{
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

/* f32 → bfloat16 as f32_to_bf16: (u + 0x7fff + (u >> 16 & 1)) >> 16, NaN: u >> 16 | 0x40. */
T static inline void vstore_bf16(uint16_t *p, __m256 v)
{
    __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
    r = _mm256_srli_epi32(r, 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(r));
}

#include "kernels/cpu/simd_body.inc"
#endif
