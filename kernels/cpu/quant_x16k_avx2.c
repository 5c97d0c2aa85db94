/* The WL_X16 decode kernels of Q4_K and Q6_K (kernels.h; layout: quant_x16.c) for the 256-bit
 * families with 16-bit activations: "avx2" (vpmaddubsw + vpmaddwd) and "avxvnni" (AVX-VNNI
 * vpdpbusd), from quant_x16k_body256.inc (the method: quant_x16k_avx512.c). Why: the row
 * kernels of these dtypes (quant16_body.inc's tilek: every weight times its sub-block scale by
 * vpmullw, the scales unpacked per row) ran at 6.3 (Q4_K) and 10-11 (Q6_K) GB/s on a Zen 3
 * core where F32 streams 16-19 (bench/cpu.md, session 16). Compiled with target attributes,
 * chosen at run time with their family (dispatch.c). */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* prefetch of the weight stream, into the L2 (the x16k distance of prefetch.h) */
#define QX_PF ((size_t)cpu_pf.x16k)
#define QK_HINT _MM_HINT_T1

#define T __attribute__((target("avx2,fma,f16c")))
#define Q(x) x##_avx2k
#define QK_VNNI 0
#include "kernels/cpu/quant_x16k_body256.inc"
#undef T
#undef Q
#undef QK_VNNI

#define T __attribute__((target("avx2,fma,f16c,avxvnni")))
#define Q(x) x##_avxvnnik
#define QK_VNNI 1
#include "kernels/cpu/quant_x16k_body256.inc"
#undef T
#undef Q
#undef QK_VNNI

qmm_fn cpu_quant_x16k_256(const cpu_quant_ops *ops, dtype_t dt)
{
    const int v = ops == &cpu_quant_avxvnni16 ? 1 : ops == &cpu_quant_avx2_16 ? 0 : -1;
    if (v < 0) return NULL;
    if (dt == DT_Q4_K) return v ? mm_x16k_Q4_K_avxvnnik : mm_x16k_Q4_K_avx2k;
    if (dt == DT_Q6_K) return v ? mm_x16k_Q6_K_avxvnnik : mm_x16k_Q6_K_avx2k;
    return NULL;
}
#endif
