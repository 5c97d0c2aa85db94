/* The WL_X16 decode kernels (kernels.h, quant_x16.c) of the two 512-bit 16-bit-activation
 * families, "avx512" (vpmaddwd + vpaddd) and "avx512vnni" (vpdpwssd), from quant_x16_body.inc;
 * quant_x16.c's cpu_quant_x16 hands them to quant_gemm.c. Compiled with target attributes, chosen at run time
 * with their family (dispatch.c). */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* software prefetch of the weight stream: QX_PF bytes ahead, into the L2. bench_quant --types
 * F32,Q4_1,Q5_0 --no-gemm, cold, two interleaved rounds (2026-11-28, Sapphire Rapids VM): Q4_1
 * 1 thread 14.0-14.4 GB/s at 3072 or 2048 into the L2, 12.4-14.5 at 2048 into the L1, 13.2-13.7
 * at 4096 and 6144 into the L2, 10.2-12.6 at 4096 into the L1. Zen 4 VM (session 13): Q8_0 18-20
 * GB/s at 3072, 28-34 at 0-1024; Q4_1 24-25, 28-29 at 1024 (bench_quant --pf to try others). */
#define QX_PF ((size_t)cpu_pf.x16)   /* the intel set: 3072 (prefetch.h) */
#ifndef QX_HINT
#define QX_HINT _MM_HINT_T1
#endif

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define Q(x) x##_avx512_16
#define QX_DPW(s, a, b) _mm512_add_epi32((s), _mm512_madd_epi16((a), (b)))
#include "kernels/cpu/quant_x16_body.inc"
#undef T
#undef Q
#undef QX_DPW

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define Q(x) x##_avx512vnni16
#define QX_DPW(s, a, b) _mm512_dpwssd_epi32((s), (a), (b))
#include "kernels/cpu/quant_x16_body.inc"
#undef T
#undef Q
#undef QX_DPW

qmm_fn cpu_quant_x16_512(const cpu_quant_ops *ops, dtype_t dt)
{
    int v = ops == &cpu_quant_avx512vnni16 ? 1 : ops == &cpu_quant_avx512_16 ? 0 : -1;
    if (v < 0) return NULL;
    switch (dt) {
    case DT_Q4_K: case DT_Q6_K: return cpu_quant_x16k_512(ops, dt);
    case DT_Q8_0: return v ? mm_x16_Q8_0_avx512vnni16 : mm_x16_Q8_0_avx512_16;
    case DT_Q4_0: return v ? mm_x16_Q4_0_avx512vnni16 : mm_x16_Q4_0_avx512_16;
    case DT_Q4_1: return v ? mm_x16_Q4_1_avx512vnni16 : mm_x16_Q4_1_avx512_16;
    case DT_Q5_0: return v ? mm_x16_Q5_0_avx512vnni16 : mm_x16_Q5_0_avx512_16;
    case DT_Q5_1: return v ? mm_x16_Q5_1_avx512vnni16 : mm_x16_Q5_1_avx512_16;
    default: return NULL;
    }
}
#endif
