/* The 512-bit quantized kernel tables (quant.h): "avx512" (AVX-512 F/BW/VL/DQ, vpmaddubsw) and
 * "avx512vnni" (the same code with AVX512-VNNI's vpdpbusd/vpdpwssd), both from
 * quant_avx512.inc. The activation quantizers are the AVX2 ones (quant_avx2.c: bit-identical
 * with the scalar ones; a small part of the work). Compiled with target attributes, chosen at
 * run time by dispatch.c. */
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* software prefetch distance in the weight stream of the decode kernels (bytes) */
#define QPF 1024
#define QI static inline __attribute__((always_inline))

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define Q(x) x##_avx512
#define QVNNI 0
#include "kernels/cpu/quant_avx512.inc"
#include "kernels/cpu/qpack_avx512.inc"
#undef T
#undef Q
#undef QVNNI

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define Q(x) x##_avx512vnni
#define QVNNI 1
#include "kernels/cpu/quant_avx512.inc"
#include "kernels/cpu/qpack_avx512.inc"
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

const cpu_quant_ops cpu_quant_avx512 = {
    .name = "avx512",
    .bits = 8,
    .w8 = &cpu_quant_avx512,
    .w16 = &cpu_quant_avx512_16,
    .mm = MM_TABLE(avx512),
    .gemm = GEMM_TABLE(avx512),
    .gemm_buf = gemm_buf_avx512,
    .corr = {[DT_Q4_0] = 8, [DT_Q5_0] = 16},
    .act32 = cpu_quant_act32_avx2,
    .act256 = cpu_quant_act256_avx2,
};

const cpu_quant_ops cpu_quant_avx512vnni = {
    .name = "avx512vnni",
    .bits = 8,
    .w8 = &cpu_quant_avx512vnni,
    .w16 = &cpu_quant_avx512vnni16,
    .mm = MM_TABLE(avx512vnni),
    .gemm = GEMM_TABLE(avx512vnni),
    .gemm_buf = gemm_buf_avx512vnni,
    .corr = {[DT_Q4_0] = 8, [DT_Q5_0] = 16, [DT_Q8_0] = 128},
    .act32 = cpu_quant_act32_avx2,
    .act256 = cpu_quant_act256_avx2,
};
#endif
