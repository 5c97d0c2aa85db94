/* Prefill GEMM on BF16 weights with the activations rounded to BF16 (AVX512-BF16 vdpbf16ps):
 * y[j·ldy + r] = Σ_k bf16(x)[j][k] · W[r][k] in f32, for j < n, r in [r0, r1). The opt-in
 * `--act-bits 8` path of BF16 weights (kernels.h: cpu_quant_act_bits), llama.cpp's precision:
 * its CPU backend rounds the activations of a BF16 matmul to BF16 and uses the same instruction
 * (ggml's vec_dot_type for GGML_TYPE_BF16 is BF16). Our default keeps f32 activations (the
 * weights widened to f32: matmul.c), at half this kernel's multiplies per instruction.
 *
 * Both operands are row-major with K contiguous, so, as in gemm_avx512.c (the same tiles and
 * driver: gemm_nt_body.inc, 8 weight rows × 3 activation rows), no packing: one vdpbf16ps takes 32
 * columns of a weight row and of an activation row and adds the 16 pair products (columns 2i,
 * 2i + 1) to lane i, in f32 (products exact: 8-bit × 8-bit significands; each lane's sum rounds
 * per instruction as an FMA pair would, up to the instruction's own order inside the pair and
 * its flushing of denormal inputs and outputs). The weights are read as stored (no widening:
 * half the bytes of the f32 path's tiles). Each output: one accumulator per column chunk,
 * 32-column steps (a masked step for a tail), the same horizontal sum as gemm_avx512.c, chunks
 * added in order: the floats do not depend on n, [r0, r1) or where a tile starts, so any thread
 * split of the rows or tokens gives the same bits. */
#include "kernels/cpu/simd.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))
/* activation rows per block: [GB_NB_BYTES / (2 K)] rows stay in the L2 (half of Zen 4's 1 MiB,
 * room left for the weight stream; 110M BF16 prefill of 512 ids, llm-run --prompt-ids -n 1
 * --act-bits 8 --json with the two values alternating (bench/cpu.md, session 14), best of 4, Zen 4
 * VM: 1 MiB 593 / 984 tok/s at 1 / 2 threads, 512 KiB 616 / 1107) */
#define GB_NB_BYTES (1u << 19)
/* Rows longer than GB_KC_MAX columns are taken GB_KC at a time, so a block's 8 weight rows stay
 * in the L1 (32 KiB of bf16), as gemm_avx512.c's 1024 / 512 f32 columns. */
#define GB_KC_MAX 2048
#define GB_KC 1024

int cpu_has_avx512bf16(void)
{
    static int has = -1;
    int v = __atomic_load_n(&has, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
        __atomic_store_n(&has, v, __ATOMIC_RELAXED);
    }
    return v;
}

T void cpu_round_bf16_avx512bf16(uint16_t *out, const float *in, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        _mm512_storeu_si512(out + i, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + i + 16), _mm512_loadu_ps(in + i)));
    for (; i < n; i += 16) {   /* the tail through the same instruction (its rounding and flushing) */
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
        _mm256_mask_storeu_epi16(out + i, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, in + i)));
    }
}

#define GN(x) gb_##x
#define GN_E uint16_t
#define GN_STEP 32
#define GN_V __m512i
#define GN_LOAD(p) _mm512_loadu_si512(p)
#define GN_MASKLOAD(k, p) _mm512_maskz_loadu_epi16((k), (p))
#define GN_MASK_T __mmask32
#define GN_MAC(acc, w, x) _mm512_dpbf16_ps((acc), (__m512bh)(w), (__m512bh)(x))
#define GN_NB_BYTES GB_NB_BYTES
#define GN_KC_MAX GB_KC_MAX
#define GN_KC GB_KC
#define GN_ENTRY cpu_gemm_nt_bf16_avx512bf16
#include "kernels/cpu/gemm_nt_body.inc"
#else
int cpu_has_avx512bf16(void) { return 0; }
#endif
