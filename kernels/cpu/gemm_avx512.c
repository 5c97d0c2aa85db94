/* Prefill GEMM on f32 rows without packing (AVX-512F), the AVX-512 family's gemm_nt_f32
 * (simd.h): y[j·ldy + r] = x[j·K ..] · W[r·K ..] for j < n, r in [r0, r1).
 *
 * Why not the BLAS: both operands are row-major with K contiguous (activations [n][K], weights
 * [rows][K]), so the product is n × rows dot products. OpenBLAS packs the weights into panels
 * first; at prefill sizes (n ≤ ~200 tokens a chunk) that copy is amortized over too few columns
 * and took 20% of a 2-thread F32 prefill of 128 tokens (perf, 110M shape). Here the weights are
 * read once, straight from their rows: a tile of GN_RM = 8 weight rows (8 × K floats, in the L1
 * for K ≤ 1536, the L2 otherwise) against GN_RN = 3 activation rows at a time, 24 accumulators
 * of 16 lanes each, one FMA per (weight row, activation row, 16 columns); the activations
 * ([NB][K] at a time, ≤ 1 MiB) stay in the L2 while every 8-row block of the weights streams
 * past them once. Measured single-threaded on the 110M shape's matrices (12 layers' worth,
 * weights from DRAM, the program now in bench/gemm_nt.c, Sapphire Rapids VM, 2026-11-28): n = 128 133 GFLOPS
 * against OpenBLAS 0.3.21 (SkylakeX kernels) 117-124; n = 64 124 vs 96; n = 16 66 vs 41;
 * n = 256 134 vs 141 and n = 512 130 vs 154, so matmul.c uses this below GEMM_NT_MAX_N only.
 *
 * Each output is one accumulator per chunk of columns (below) in 16-column steps (a masked step
 * for a tail of < 16), then the same horizontal sum (gn_sum4), chunks added in order; the floats
 * do not depend on n, on [r0, r1) or on where a tile starts, so a thread split of the rows, or
 * of the tokens, gives the same bits. */
#include "kernels/cpu/simd.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>

#define T __attribute__((target("avx512f,avx2,fma")))   /* AVX-512F only, as the family (dispatch.c) */
#define GN(x) gn_##x
#define GN_E float
#define GN_STEP 16
#define GN_V __m512
#define GN_LOAD(p) _mm512_loadu_ps(p)
#define GN_MASKLOAD(k, p) _mm512_maskz_loadu_ps((k), (p))
#define GN_MASK_T __mmask16
#define GN_MAC(acc, w, x) _mm512_fmadd_ps((w), (x), (acc))
/* activation rows per block: [GN_NB_BYTES / (4 K)] rows stay in the L2 */
#define GN_NB_BYTES (1u << 20)
/* Rows longer than GN_KC_MAX columns are taken GN_KC columns at a time, so the 8 weight rows of
 * a block stay in the L1 (8 × 2048 f32 columns would not), each chunk's sums added to y in
 * chunk order. The down projection of the 110M shape (K = 2048, one thread, n = 128, quiet
 * host, 3 rounds): 111-115 GFLOPS whole, 129-132 in chunks of 512 (OpenBLAS 120-127).
 * The next block's weights are prefetched into the L2 a share per tile (body: prefetch). One
 * thread, weights from DRAM, 2026-11-28 quiet host (bench/gemm_nt.c's program, 3 rounds): K = 768
 * 147-150 -> 157-170 GFLOPS, K = 2048 (in chunks) 128-144 -> 126-141; 110M F32 prefill of 128
 * ids, best of 5 interleaved: 1 thread 635 -> 665 tok/s, 2 threads 1250 -> 1423 (OpenBLAS
 * build: 594 / 1158). */
#define GN_KC_MAX 1024
#define GN_KC 512
#define GN_ENTRY cpu_gemm_nt_f32_avx512
#include "kernels/cpu/gemm_nt_body.inc"
#endif
