/* The 512-bit quantized kernel tables (quant.h): "avx512" (AVX-512 F/BW/VL/DQ, vpmaddubsw) and
 * "avx512vnni" (the same code with AVX512-VNNI's vpdpbusd/vpdpwssd), both from
 * quant_body.inc and qpack_body.inc at 512 bits. The activation quantizers are the AVX2 ones (quant_avx2.c: bit-identical
 * with the scalar ones; a small part of the work). Compiled with target attributes, chosen at
 * run time by dispatch.c. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

/* software prefetch distance in the weight stream of the decode kernels (bytes) */
#define QPF ((size_t)cpu_pf.q8)   /* the intel set: 1024 (prefetch.h) */
#define QI static inline __attribute__((always_inline))

#define QPW 512   /* qpack_body.inc: the vector width */
#define QW 512   /* quant_vec.h: the vector width of quant_body.inc */
#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define Q(x) x##_avx512
#define QVNNI 0
#include "kernels/cpu/quant_vec.h"
#include "kernels/cpu/quant_vec8.h"
#include "kernels/cpu/quant_body.inc"
#include "kernels/cpu/qpack_body.inc"
#undef T
#undef Q
#undef QVNNI

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define Q(x) x##_avx512vnni
#define QVNNI 1
#include "kernels/cpu/quant_vec.h"
#include "kernels/cpu/quant_vec8.h"
#include "kernels/cpu/quant_body.inc"
#include "kernels/cpu/qpack_body.inc"
#undef T
#undef Q
#undef QVNNI

const cpu_quant_ops cpu_quant_avx512 =
    CPU_QUANT_OPS("avx512", 8, &cpu_quant_avx512, &cpu_quant_avx512_16, avx512, cpu_quant_act32_avx2, cpu_quant_act256_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16);

const cpu_quant_ops cpu_quant_avx512vnni =
    CPU_QUANT_OPS("avx512vnni", 8, &cpu_quant_avx512vnni, &cpu_quant_avx512vnni16, avx512vnni, cpu_quant_act32_avx2, cpu_quant_act256_avx2, [DT_Q4_0] = 8, [DT_Q5_0] = 16, [DT_Q8_0] = 128);
#endif
