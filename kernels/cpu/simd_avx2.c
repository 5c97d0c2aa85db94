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
 * pass in dots_*. Not simd_body.inc's grouped-query kernels: with 16 registers, its dots_group
 * (a vhsum per head and key) measured slower than dots_* head by head (G = 4, 2048 keys × 64
 * in the L2, Sapphire Rapids forced to avx2: 2 keys × 2 heads 0.029 ms, 4 × 1 0.020, per head
 * 0.022 ms; Zen 3, G = 3: 2 × 3 and 1 × 4 slower too), and its acc_group, 1.4-2× faster than
 * acc_rows_f16 per head from the L1, made SmolLM2 decode at a 1500-token context 1-2% slower
 * (steps alternating in one process). This family has its own instead, below: dots_group_avx2
 * (the sums of all the (key, head) pairs of a pass reduced together) and acc_group_avx2 (the
 * same sharing as the body's acc_group, in blocks of rows that stay in the L1). */
#define SIMD_GROUPED 0
#define DOT_ACC 2
#define DOTS_ROWS 2
#define ATT_QR 2   /* prefill: 2 query rows × 4 vectors of accumulators (8 of the 16 ymm) */

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

/* The family's grouped decode scores (simd.h dots_group; defined below, after the body whose
 * dots_* it falls back to and must equal). */
T static void dots_group_avx2(float *s, int s_stride, const float *q, int G, const void *K, int kdt, int n, int hd,
                              float scale);
#define SIMD_DOTS_GROUP dots_group_avx2
T static void acc_group_avx2(float *o, const float *p, int p_stride, int G, const void *V, int vdt, int n, int hd,
                             int ncols);
#define SIMD_ACC_GROUP acc_group_avx2

#include "kernels/cpu/simd_body.inc"

/* 8 elements of a key or value row at K + off (dtype kdt) as f32 */
T static inline __m256 row8(const void *K, int kdt, size_t off)
{
    return kdt == DT_F16 ? vload_f16((const uint16_t *)K + off)
         : kdt == DT_BF16 ? vload_bf16((const uint16_t *)K + off) : vload((const float *)K + off);
}

/* Scores of keys j, j + 1 for query heads g0 .. g0 + hb - 1 (hb ≤ 3): 2 keys × hb heads × the
 * two DOT_ACC accumulators (12 ymm at most), each key chunk widened once for the hb heads. The
 * sums are dots_*'s exactly: per (head, key) the chains over chunks i (acc 0) and i + 8 (acc
 * 1), t = acc0 + acc1, then vhsum's tree ((t0+t4)+(t2+t6)) + ((t1+t5)+(t3+t7)), done for all
 * the pairs at once: 128-bit halves added by permutes, lanes 0+2 / 1+3 by shuffles, the last
 * pair by hadd (IEEE addition is commutative, so only the tree matters), then × scale. */
T static inline __attribute__((always_inline)) void grp2(float *s, int s_stride, const float *q, int hb, const void *K,
                                                         int kdt, int j, int hd, float scale)
{
    __m256 acc[3][2][2];
    for (int g = 0; g < 3; g++)
        for (int r = 0; r < 2; r++) acc[g][r][0] = acc[g][r][1] = _mm256_setzero_ps();
    const size_t k0 = (size_t)j * hd, k1 = k0 + (size_t)hd;
    for (int i = 0; i < hd; i += 16)
#pragma GCC unroll 2
        for (int k = 0; k < 2; k++) {
            const __m256 w0 = row8(K, kdt, k0 + i + 8 * k), w1 = row8(K, kdt, k1 + i + 8 * k);
#pragma GCC unroll 3
            for (int g = 0; g < 3; g++) {
                if (g >= hb) break;
                const __m256 qv = _mm256_loadu_ps(q + (size_t)g * hd + i + 8 * k);
                acc[g][0][k] = _mm256_fmadd_ps(qv, w0, acc[g][0][k]);
                acc[g][1][k] = _mm256_fmadd_ps(qv, w1, acc[g][1][k]);
            }
        }
    __m256 P[3];   /* head g: [lo + hi of key j | lo + hi of key j + 1] */
    for (int g = 0; g < 3; g++) {
        if (g >= hb) break;
        const __m256 t0 = _mm256_add_ps(acc[g][0][0], acc[g][0][1]), t1 = _mm256_add_ps(acc[g][1][0], acc[g][1][1]);
        P[g] = _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
    }
    const __m256 Pa = P[0], Pb = hb > 1 ? P[1] : P[0], Pc = hb > 2 ? P[2] : Pa;
    /* per 128-bit half: [x0 + x2, x1 + x3] of two heads side by side */
    const __m256 W0 = _mm256_add_ps(_mm256_shuffle_ps(Pa, Pb, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(Pa, Pb, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 W1 = _mm256_add_ps(_mm256_shuffle_ps(Pc, Pc, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(Pc, Pc, _MM_SHUFFLE(3, 2, 3, 2)));
    /* lanes: heads 0, 1, 2, 2 of key j | of key j + 1 */
    float out[8];
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_hadd_ps(W0, W1), _mm256_set1_ps(scale)));
    for (int g = 0; g < hb; g++) {
        s[(size_t)g * s_stride + j] = out[g];
        s[(size_t)g * s_stride + j + 1] = out[4 + g];
    }
}

/* The grouped value sums in blocks of ACCG_ROWS rows (one block of the rows' ncols columns
 * stays in the L1 while every head and column chunk goes over it): per chunk of 16 columns, the
 * 16 columns of each row widened once for up to 4 heads at a time (8 accumulators, loaded from
 * o and stored back per block). Per element the sum runs over the rows in j order, as
 * acc_rows_* does: bit-identical. simd_body.inc's acc_group (every row for a chunk before the
 * next chunk) was 1.4-2× faster than acc_rows_f16 head by head from the caches but slower in
 * the model (bench/cpu.md, session 22). */
#define ACCG_ROWS 32
T static inline __attribute__((always_inline)) void accg_chunk(float *o, const float *p, int p_stride, int hb, const void *V,
                                                               int vdt, int j0, int j1, int hd, int d)
{
    __m256 a[4][2];
    for (int g = 0; g < 4; g++) {
        if (g >= hb) break;
        a[g][0] = _mm256_loadu_ps(o + (size_t)g * hd + d);
        a[g][1] = _mm256_loadu_ps(o + (size_t)g * hd + d + 8);
    }
    for (int j = j0; j < j1; j++) {
        const size_t r = (size_t)j * hd + d;
        const __m256 v0 = row8(V, vdt, r), v1 = row8(V, vdt, r + 8);
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            if (g >= hb) break;
            const __m256 pj = _mm256_broadcast_ss(p + (size_t)g * p_stride + j);
            a[g][0] = _mm256_fmadd_ps(pj, v0, a[g][0]);
            a[g][1] = _mm256_fmadd_ps(pj, v1, a[g][1]);
        }
    }
    for (int g = 0; g < 4; g++) {
        if (g >= hb) break;
        _mm256_storeu_ps(o + (size_t)g * hd + d, a[g][0]);
        _mm256_storeu_ps(o + (size_t)g * hd + d + 8, a[g][1]);
    }
}

T static void acc_group_avx2(float *o, const float *p, int p_stride, int G, const void *V, int vdt, int n, int hd,
                             int ncols)
{
    for (int j0 = 0; j0 < n; j0 += ACCG_ROWS) {
        const int j1 = n - j0 < ACCG_ROWS ? n : j0 + ACCG_ROWS;
        for (int d = 0; d + 16 <= ncols; d += 16)
            for (int g0 = 0; g0 < G; g0 += 4) {
                const int hb = G - g0 < 4 ? G - g0 : 4;
                float *og = o + (size_t)g0 * hd;
                const float *pg = p + (size_t)g0 * p_stride;
                if (hb == 4) accg_chunk(og, pg, p_stride, 4, V, vdt, j0, j1, hd, d);
                else if (hb == 3) accg_chunk(og, pg, p_stride, 3, V, vdt, j0, j1, hd, d);
                else if (hb == 2) accg_chunk(og, pg, p_stride, 2, V, vdt, j0, j1, hd, d);
                else accg_chunk(og, pg, p_stride, 1, V, vdt, j0, j1, hd, d);
            }
    }
}

/* s[g·s_stride + j] for g < G, j < n: two keys at a time, heads three at a time (grp2); an odd
 * last key, G = 1, or a head_dim that is not a multiple of 16 go through dots_* per head. */
T static void dots_group_avx2(float *s, int s_stride, const float *q, int G, const void *K, int kdt, int n, int hd,
                              float scale)
{
    int j = 0;
    if (G > 1 && hd % 16 == 0)
        for (; j + 2 <= n; j += 2)
            for (int g0 = 0; g0 < G; g0 += 3) {
                const int hb = G - g0 < 3 ? G - g0 : 3;
                float *sg = s + (size_t)g0 * s_stride;
                const float *qg = q + (size_t)g0 * hd;
                if (hb == 3) grp2(sg, s_stride, qg, 3, K, kdt, j, hd, scale);
                else if (hb == 2) grp2(sg, s_stride, qg, 2, K, kdt, j, hd, scale);
                else grp2(sg, s_stride, qg, 1, K, kdt, j, hd, scale);
            }
    dots_heads(s, s_stride, q, G, K, kdt, j, n, hd, scale);
}
#endif
