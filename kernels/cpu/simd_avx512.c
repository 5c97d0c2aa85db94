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
/* 32 zmm registers: one accumulator per dot row, four rows per pass in dots_*, 4 keys × 4
 * heads in dots_group (16 accumulators), 8 heads × 2 in acc_group (16 accumulators). */
#define SIMD_GROUPED 1
#define SIMD_GEMM_NT cpu_gemm_nt_f32_avx512   /* gemm_avx512.c */
#define DOT_ACC 1
#define DOTS_ROWS 4
#define GRP_KEYS 4
#define GRP_HEADS 4
#define ACCG_HEADS 8

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

#include "kernels/cpu/simd_body.inc"
#endif
