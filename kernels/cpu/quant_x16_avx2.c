/* The WL_X16 decode kernels (kernels.h, quant_x16.c) of the two 256-bit 16-bit-activation
 * families, "avx2" (vpmaddwd + vpaddd) and "avxvnni" (AVX-VNNI vpdpwssd), from
 * quant_x16_body256.inc; quant_x16.c's cpu_quant_x16 hands them to quant_gemm.c. Compiled with
 * target attributes, chosen at run time with their family (dispatch.c). */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* prefetch of the weight stream: the distance cpu_pf.x16; the hint cpu_pf.x16nta's, the L1
 * without the L2 (prefetchnta: the AMD set) or the L2 (prefetcht1, as quant_x16_avx512.c). On
 * a Zen 3 VM non-temporal made 2-thread SmolLM2 steps 2.2-2.6% faster, one thread 0.2-1.9%,
 * Qwen2.5 0.3-1.3% (alternating steps, bench/cpu.md session 30): the stream no longer pushes
 * the step's small hot data (the KV cache, activations, norms) out of the L2. */
#define QX_PF ((size_t)cpu_pf.x16)
#define QX_PREFETCH(a)                                 \
    do {                                               \
        if (cpu_pf.x16nta) _mm_prefetch((a), _MM_HINT_NTA); \
        else _mm_prefetch((a), _MM_HINT_T1);           \
    } while (0)

#define T __attribute__((target("avx2,fma,f16c")))
#define Q(x) x##_avx2_16
#define QX_DPW(s, a, b) _mm256_add_epi32((s), _mm256_madd_epi16((a), (b)))
#include "kernels/cpu/quant_x16_body256.inc"
#undef T
#undef Q
#undef QX_DPW

#define T __attribute__((target("avx2,fma,f16c,avxvnni")))
#define Q(x) x##_avxvnni16
#define QX_DPW(s, a, b) _mm256_dpwssd_avx_epi32((s), (a), (b))
#include "kernels/cpu/quant_x16_body256.inc"
#undef T
#undef Q
#undef QX_DPW

qmm_fn cpu_quant_x16_256(const cpu_quant_ops *ops, dtype_t dt)
{
    int v = ops == &cpu_quant_avxvnni16 ? 1 : ops == &cpu_quant_avx2_16 ? 0 : -1;
    if (v < 0) return NULL;
    switch (dt) {
    case DT_Q8_0: return v ? mm_x16_Q8_0_avxvnni16 : mm_x16_Q8_0_avx2_16;
    case DT_Q4_0: return v ? mm_x16_Q4_0_avxvnni16 : mm_x16_Q4_0_avx2_16;
    case DT_Q4_1: return v ? mm_x16_Q4_1_avxvnni16 : mm_x16_Q4_1_avx2_16;
    case DT_Q5_0:
        if (x16_planes_now()) return v ? mm_x16p_Q5_0_avxvnni16 : mm_x16p_Q5_0_avx2_16;
        return v ? mm_x16_Q5_0_avxvnni16 : mm_x16_Q5_0_avx2_16;
    case DT_Q5_1:
        if (x16_planes_now()) return v ? mm_x16p_Q5_1_avxvnni16 : mm_x16p_Q5_1_avx2_16;
        return v ? mm_x16_Q5_1_avxvnni16 : mm_x16_Q5_1_avx2_16;
    case DT_Q4_K: case DT_Q6_K: return cpu_quant_x16k_256(ops, dt);
    default: return NULL;
    }
}
#endif
