/* The 512-bit kernel tables for 16-bit activations (quant.h, quant16.c): "avx512" (AVX-512
 * F/BW/VL/DQ, vpmaddwd + vpaddd) and "avx512vnni" (AVX512-VNNI vpdpwssd), both from
 * quant16_avx512.inc and qpack16_avx512.inc. The activation quantizers are the AVX2 ones
 * (quant16_avx2.c: the scalar ones' bytes). Compiled with target attributes, chosen at run time
 * by dispatch.c. */
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* software prefetch distance in the weight stream of the decode kernels (bytes) */
#define QPF 1024
#define QI static inline __attribute__((always_inline))

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define Q(x) x##_avx512_16
#define QVNNI 0
#include "kernels/cpu/quant16_avx512.inc"
#include "kernels/cpu/qpack16_avx512.inc"
#undef T
#undef Q
#undef QVNNI

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define Q(x) x##_avx512vnni16
#define QVNNI 1
#include "kernels/cpu/quant16_avx512.inc"
#include "kernels/cpu/qpack16_avx512.inc"
#undef T
#undef Q
#undef QVNNI

#define MM_TABLE(S)                                                                            \
    {[DT_Q8_0] = mm_Q8_0_##S, [DT_Q4_0] = mm_Q4_0_##S, [DT_Q4_1] = mm_Q4_1_##S,                \
     [DT_Q5_0] = mm_Q5_0_##S, [DT_Q5_1] = mm_Q5_1_##S, [DT_Q4_K] = mm_Q4_K_##S,                \
     [DT_Q5_K] = mm_Q5_K_##S, [DT_Q6_K] = mm_Q6_K_##S}
#define GEMM_TABLE(S)                                                                          \
    {[DT_Q8_0] = gemm_Q8_0_##S, [DT_Q4_0] = gemm_Q4_0_##S, [DT_Q4_1] = gemm_Q4_1_##S,          \
     [DT_Q5_0] = gemm_Q5_0_##S, [DT_Q5_1] = gemm_Q5_1_##S, [DT_Q4_K] = gemm_Q4_K_##S,          \
     [DT_Q5_K] = gemm_Q5_K_##S, [DT_Q6_K] = gemm_Q6_K_##S}

const cpu_quant_ops cpu_quant_avx512_16 = {
    .name = "avx512",
    .bits = 16,
    .w8 = &cpu_quant_avx512,
    .w16 = &cpu_quant_avx512_16,
    .mm = MM_TABLE(avx512_16),
    .gemm = GEMM_TABLE(avx512_16),
    .gemm_buf = gemm_buf_avx512_16,
    .corr = {[DT_Q4_0] = 8, [DT_Q5_0] = 16},
    .act32 = cpu_quant_act32_16_avx2,
    .act256 = cpu_quant_act256_16_avx2,
};

const cpu_quant_ops cpu_quant_avx512vnni16 = {
    .name = "avx512vnni",
    .bits = 16,
    .w8 = &cpu_quant_avx512vnni,
    .w16 = &cpu_quant_avx512vnni16,
    .mm = MM_TABLE(avx512vnni16),
    .gemm = GEMM_TABLE(avx512vnni16),
    .gemm_buf = gemm_buf_avx512vnni16,
    .corr = {[DT_Q4_0] = 8, [DT_Q5_0] = 16},
    .act32 = cpu_quant_act32_16_avx2,
    .act256 = cpu_quant_act256_16_avx2,
};
#endif
