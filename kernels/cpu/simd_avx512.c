/* The AVX-512 kernel family (AVX-512F: Skylake-SP / Zen 4 and later): 16 f32 lanes, F16
 * widened with vcvtph2ps zmm, BF16 by zero-extend and shift (the BF16 matvec by shift and mask
 * of deinterleaved pairs). The kernels themselves are simd_body.inc's, over the primitives
 * defined here. Compiled with target attributes, chosen at run time by dispatch.c.
 * (AVX-512 BF16's vdpbf16ps is not used: it would round the activations to bf16, changing
 * results; widening keeps f32 math.) */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/simd.h"

#ifdef LLM_SIMD_X86
#include "kernels/kernels.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define T __attribute__((target("avx512f,avx2,fma,f16c")))
#define SIMD_NAME "avx512"
#define SIMD_OPS cpu_simd_avx512

typedef __m512 vf;
typedef __m512i vi;
#define VN 16
/* 32 zmm registers: one accumulator per dot row, four rows per pass in dots_*, 16 (key, head)
 * accumulators in dots_group (this file's dots_group_avx512; the body's, 4 keys × 4 heads, for
 * the shapes it leaves), 8 heads × 2 in acc_group (16 accumulators). */
#define SIMD_GROUPED 1
#define SIMD_GEMM_NT cpu_gemm_nt_f32_avx512   /* gemm_avx512.c */
#define DOT_ACC 1
#define DOTS_ROWS 4
#define GRP_KEYS 4
#define GRP_HEADS 4
#define ACCG_HEADS 8
#define ATT_QR 4   /* prefill: 4 query rows × 4 vectors of accumulators (16 zmm) */

#define vzero() _mm512_setzero_ps()
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vset1(x) _mm512_set1_ps(x)
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vadd(a, b) _mm512_add_ps(a, b)
#define vsub(a, b) _mm512_sub_ps(a, b)
#define vmax(a, b) _mm512_max_ps(a, b)
#define vdiv(a, b) _mm512_div_ps(a, b)
#define vabs(a) _mm512_abs_ps(a)
#define vmul_if_neg(g, e) _mm512_mask_mul_ps(g, _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ), g, e)
#define vround(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vpow2i(n) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))
typedef __mmask16 vmask;
#define vge(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)
#define vmaskz_mul(m, a, b) _mm512_maskz_mul_ps(m, a, b)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vhsum(v) _mm512_reduce_add_ps(v)
#define vload_i(p) _mm512_loadu_si512(p)
#define vbf16_even(v) _mm512_castsi512_ps(_mm512_slli_epi32(v, 16))
#define vbf16_odd(v) _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)))

T static inline __m512 vload_f16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

T static inline __m512 vload_bf16(const uint16_t *p)
{
    __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}

/* 16-bit weights: software prefetch MV_PF bytes ahead of the row being read (two cache lines
 * per 64 weights, never past the end of the rows [r0, r1) of the matrix). Half the bytes of F32
 * per element means twice the instructions per cache line, and the hardware prefetchers alone
 * then left the 16-bit kernels at 80-84% of the streaming-read bandwidth on a Sapphire Rapids
 * VM (one thread, 768 and 2048 columns, tmp microbenchmark of issue 17) where F32 reached
 * 92-95%; 3 KiB ahead brought F16 to 93-97% and BF16 (deinterleaved) to 94-98%; 0.5-1 KiB ahead
 * helped less, 4 KiB no more. Into the L2 (prefetcht1), not the L1: with two threads F16 decode
 * went 78-79% -> 80-82% of the bandwidth, BF16 unchanged, one thread unchanged (bench/decode_ab.py
 * --reps 4, interleaved, 2026-11-27); 2 and 4 KiB ahead were worse than 3 KiB for either hint.
 * The same hint left F32 (below) within noise (84% vs 85%) and made the block-format kernels'
 * prefetch 5-10% slower (bench_quant cold 2T), so those keep T0. */
#define MV_PF cpu_pf.mv16     /* the intel set: 3072 (prefetch.h) */
#define MV_PF32 cpu_pf.mv32   /* the intel set: 3072 */
T static inline void mv_prefetch(const void *p, const char *end)
{
    const char *q = (const char *)p + MV_PF;
    if (q + 64 < end) {
        _mm_prefetch(q, _MM_HINT_T1);
        _mm_prefetch(q + 64, _MM_HINT_T1);
    }
}
#define MV_PREFETCH(p, end) mv_prefetch(p, end)
/* f32 rows: four cache lines per 64 weights, MV_PF32 ahead. With the weights in huge pages
 * (model_make_resident) 2-thread F32 decode went 83% -> 85% of the bandwidth and the LM head
 * alone 91% -> 98% (bench/decode_ab.py, bench/matvec_seq.c, 2026-11-27; the 92-95% without it
 * above was one thread). */
T static inline void mv_prefetch32(const void *p, const char *end)
{
    const char *q = (const char *)p + MV_PF32;
    if (q + 192 < end) {
        _mm_prefetch(q, _MM_HINT_T0);
        _mm_prefetch(q + 64, _MM_HINT_T0);
        _mm_prefetch(q + 128, _MM_HINT_T0);
        _mm_prefetch(q + 192, _MM_HINT_T0);
    }
}
#define MV_PREFETCH32(p, end) mv_prefetch32(p, end)

/* f32 → binary16 / bfloat16, the same bits as f32_to_f16 / f32_to_bf16 (see simd_avx2.c). */
T static inline void vstore_f16(uint16_t *p, __m512 v)
{
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

T static inline void vstore_bf16(uint16_t *p, __m512 v)
{
    __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    r = _mm512_srli_epi32(r, 16);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(r));
}

/* The family's grouped decode scores (simd.h dots_group), defined after the body whose dots_*
 * and dots_group it falls back to and must equal. */
T static void dots_group_avx512(float *s, int s_stride, const float *q, int G, const void *K, int kdt, int n, int hd,
                                float scale);
#define SIMD_DOTS_GROUP dots_group_avx512

#include "kernels/cpu/simd_body.inc"

/* 16 sums of 16 lanes at once, each by vhsum's tree (_mm512_reduce_add_ps: lane i + lane i + 8,
 * then i + i + 4, i + i + 2, i + i + 1), so each equals vhsum(A[k]) bit for bit (IEEE addition
 * commutes; only the tree matters): 128-bit quarters added by vshuff32x4 at the first two
 * levels, lanes by vshufps at the last two. Lane 4q + t of the result holds the sum of
 * A[4t + q] (HSUM16_LANE). 45 shuffles and adds where 16 vhsums take about 130 instructions,
 * most of them on the shuffle ports. */
#define HSUM16_LANE(k) ((((k) & 3) << 2) | ((k) >> 2))
T static inline __attribute__((always_inline)) __m512 hsum16(const __m512 *A)
{
    __m512 C[8], D[4], E[2];
    for (int p = 0; p < 8; p++)
        C[p] = _mm512_add_ps(_mm512_shuffle_f32x4(A[2 * p], A[2 * p + 1], 0x44), _mm512_shuffle_f32x4(A[2 * p], A[2 * p + 1], 0xEE));
    for (int m = 0; m < 4; m++)
        D[m] = _mm512_add_ps(_mm512_shuffle_f32x4(C[2 * m], C[2 * m + 1], 0x88), _mm512_shuffle_f32x4(C[2 * m], C[2 * m + 1], 0xDD));
    for (int t = 0; t < 2; t++)
        E[t] = _mm512_add_ps(_mm512_shuffle_ps(D[2 * t], D[2 * t + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(D[2 * t], D[2 * t + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(E[0], E[1], _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(E[0], E[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* 16 elements of a key row at K + off (dtype kdt, a constant where inlined) as f32 */
T static inline __attribute__((always_inline)) __m512 row16(const void *K, int kdt, size_t off)
{
    return kdt == DT_F16 ? vload_f16((const uint16_t *)K + off)
         : kdt == DT_BF16 ? vload_bf16((const uint16_t *)K + off) : vload((const float *)K + off);
}

/* Scores of keys j .. j + KB - 1 for query heads 0 .. HB - 1 of q (HB·KB ≤ 16 accumulators,
 * slot g·KB + r; the rest stay zero): per (head, key) dots_*'s one chain over the 16-element
 * chunks in order (DOT_ACC 1), each key chunk widened once for the HB heads, then hsum16 and ×
 * scale: dots_*'s floats for head_dim a multiple of 16 (no scalar tail). */
T static inline __attribute__((always_inline)) void grp16(float *s, int s_stride, const float *q, const void *K, int kdt,
                                                          int j, int hd, float scale, const int HB, const int KB)
{
    __m512 acc[16];
    for (int k = 0; k < 16; k++) acc[k] = _mm512_setzero_ps();
    for (int i = 0; i < hd; i += 16) {
        __m512 w[8];
        for (int r = 0; r < KB; r++) w[r] = row16(K, kdt, (size_t)(j + r) * hd + i);
        for (int g = 0; g < HB; g++) {
            const __m512 qv = _mm512_loadu_ps(q + (size_t)g * hd + i);
            for (int r = 0; r < KB; r++) acc[g * KB + r] = _mm512_fmadd_ps(qv, w[r], acc[g * KB + r]);
        }
    }
    float out[16];
    _mm512_storeu_ps(out, _mm512_mul_ps(hsum16(acc), _mm512_set1_ps(scale)));   /* (lanes of unused slots: 0) */
    for (int g = 0; g < HB; g++)
        for (int r = 0; r < KB; r++) s[(size_t)g * s_stride + j + r] = out[HSUM16_LANE(g * KB + r)];
}

/* Keys [0, KB·⌊n / KB⌋) of heads g0 .. g0 + HB - 1, KB = GRP16_KB(HB) keys a pass; returns
 * the first key not done. One copy per (HB, dtype), every loop bound a constant. */
#define GRP16_KB(HB) ((HB) == 1 ? 8 : 16 / (HB))   /* keys a pass: 8 at most (grp16's w[8]) */
#define GRP16_RUN(HB, KDT)                                                                                     \
    for (; j + GRP16_KB(HB) <= n; j += GRP16_KB(HB)) grp16(sg, s_stride, qg, K, KDT, j, hd, scale, HB, GRP16_KB(HB))
T static int grp16_keys(float *sg, int s_stride, const float *qg, int hb, const void *K, int kdt, int n, int hd, float scale)
{
    int j = 0;
#define GRP16_DT(HB)                                                       \
    if (kdt == DT_F16) GRP16_RUN(HB, DT_F16);                             \
    else if (kdt == DT_BF16) GRP16_RUN(HB, DT_BF16);                      \
    else GRP16_RUN(HB, DT_F32);                                           \
    break;
    switch (hb) {
    case 1: GRP16_DT(1)
    case 2: GRP16_DT(2)
    case 3: GRP16_DT(3)
    case 4: GRP16_DT(4)
    case 5: GRP16_DT(5)
    case 6: GRP16_DT(6)
    case 7: GRP16_DT(7)
    default: GRP16_DT(8)
    }
#undef GRP16_DT
    return j;
}

/* s[g·s_stride + j] for g < G, j < n: heads up to 8 at a time, 16 / heads keys a pass (grp16;
 * SmolLM2's G = 3: 5 keys × 3 heads, Qwen2.5-0.5B's G = 7: 2 × 7), the last keys of each head
 * block through dots_* per head; head_dim not a multiple of 16, or G = 1: the body's
 * dots_group. The same floats as dots_* head by head (tests/test_kernels_kv.c). */
T static void dots_group_avx512(float *s, int s_stride, const float *q, int G, const void *K, int kdt, int n, int hd,
                                float scale)
{
    if (G < 2 || hd % 16) {
        dots_group(s, s_stride, q, G, K, kdt, n, hd, scale);
        return;
    }
    for (int g0 = 0; g0 < G; g0 += 8) {
        const int hb = G - g0 < 8 ? G - g0 : 8;
        float *sg = s + (size_t)g0 * s_stride;
        const float *qg = q + (size_t)g0 * hd;
        dots_heads(sg, s_stride, qg, hb, K, kdt, grp16_keys(sg, s_stride, qg, hb, K, kdt, n, hd, scale), n, hd, scale);
    }
}
#endif
