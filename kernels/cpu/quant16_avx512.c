/* The 512-bit kernel tables for 16-bit activations (quant.h, quant16.c): "avx512" (AVX-512
 * F/BW/VL/DQ, vpmaddwd + vpaddd) and "avx512vnni" (AVX512-VNNI vpdpwssd), both from
 * quant16_body.inc and qpack16_body.inc at 512 bits (+ quant16_split_avx512.inc). The activation quantizers are the AVX2 ones
 * (quant16_avx2.c: the scalar ones' bytes). Compiled with target attributes, chosen at run time
 * by dispatch.c. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* software prefetch distance in the weight stream of the decode kernels (bytes). From DRAM, one
 * thread, Sapphire Rapids VM (bench_quant --types Q4_1,Q8_0,Q4_K,Q6_K, 896x4864 and 4864x896,
 * two interleaved rounds, 2026-11-25): 2048 gave 3-5% more than 1024 on every type (Q4_1 14.4-14.7
 * vs 13.5-14.3 GB/s, Q8_0 15.2-16.1 vs 14.7-15.0), 3072 the same as 2048, 4096 less (11-13). */
#define QPF ((size_t)cpu_pf.q16)   /* the intel set: 2048 (prefetch.h) */
/* and into the L2 (Q6_K, Q8_0 only): same bench, 3 interleaved rounds (2026-11-27), ratio to
 * F32 in the same run at 896x4864: Q6_K 0.90-0.91 without, 0.94-0.95 with L2 at 4096 (L1 at
 * 1024 instead: 0.91-0.97); Q8_0 1.00-1.04 → 1.07-1.09; Q4_1 at 4864x896 lost (0.88-0.91 →
 * 0.87-0.88), so not for the other A32 dtypes. */
#define QPF_L2 ((size_t)cpu_pf.q16_l2)   /* the intel set: 4096 */
#define QI static inline __attribute__((always_inline))

#define QPW 512   /* qpack16_body.inc: the vector width */
#define QW 512   /* quant_vec.h: the vector width of quant16_body.inc */
#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define Q(x) x##_avx512_16
#define QVNNI 0
#include "kernels/cpu/quant_vec.h"
#include "kernels/cpu/quant_vec16.h"
#include "kernels/cpu/quant16_body.inc"
#include "kernels/cpu/qpack16_body.inc"
#include "kernels/cpu/qpack16_x16.inc"
#undef T
#undef Q
#undef QVNNI

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define Q(x) x##_avx512vnni16
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
qgemm_fn cpu_quant_x16_gemm_512(const cpu_quant_ops *ops, dtype_t dt)
{
    return ops == &cpu_quant_avx512vnni16 ? gemmx_avx512vnni16(dt) : ops == &cpu_quant_avx512_16 ? gemmx_avx512_16(dt) : NULL;
}

const cpu_quant_ops cpu_quant_avx512_16 =
    CPU_QUANT_OPS("avx512", 16, &cpu_quant_avx512, &cpu_quant_avx512_16, avx512_16, cpu_quant_act32_16_avx2, cpu_quant_act256_16_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16);

const cpu_quant_ops cpu_quant_avx512vnni16 =
    CPU_QUANT_OPS("avx512vnni", 16, &cpu_quant_avx512vnni, &cpu_quant_avx512vnni16, avx512vnni16, cpu_quant_act32_16_avx2, cpu_quant_act256_16_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16);
#endif
