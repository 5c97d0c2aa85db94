/* placeholder (being written) */
#include "kernels/cpu/quant.h"
#ifdef LLM_SIMD_X86
const cpu_quant_ops cpu_quant_avx512 = {.name = "avx512"};
const cpu_quant_ops cpu_quant_avx512vnni = {.name = "avx512vnni"};
#endif
