/* Prefill GEMM on BF16 weights with the activations rounded to BF16 (AVX512-BF16 vdpbf16ps):
 * y[j·ldy + r] = Σ_k bf16(x)[j][k] · W[r][k] in f32, for j < n, r in [r0, r1). The opt-in
 * `--act-bits 8` path of BF16 weights (kernels.h: cpu_quant_act_bits), llama.cpp's precision:
 * its CPU backend rounds the activations of a BF16 matmul to BF16 and uses the same instruction
 * (ggml's vec_dot_type for GGML_TYPE_BF16 is BF16). Our default keeps f32 activations (the
 * weights widened to f32: matmul.c), at half this kernel's multiplies per instruction.
 *
 * Both operands are row-major with K contiguous, so, as in gemm_avx512.c (same tiling: GB_RM = 8
 * weight rows × GB_RN = 3 activation rows, 24 accumulators), no packing: one vdpbf16ps takes 32
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
#define AI static inline __attribute__((always_inline))

#define GB_RM 8
#define GB_RN 3
/* activation rows per block: [GB_NB_BYTES / (2 K)] rows stay in the L2 (half of Zen 4's 1 MiB,
 * room left for the weight stream; 110M BF16 prefill of 512 ids, best of 4 interleaved, Zen 4
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

/* The four sums of A, B, C, D's 16 lanes (gemm_avx512.c's gn_sum4, the same order). */
T AI __m128 gb_sum4(__m512 A, __m512 B, __m512 C, __m512 D)
{
    __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(A, B), _mm512_unpackhi_ps(A, B));
    __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(C, D), _mm512_unpackhi_ps(C, D));
    __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

#define GB_DP(acc, w, x) _mm512_dpbf16_ps((acc), (__m512bh)(w), (__m512bh)(x))

/* One tile: RM weight rows (8, 4 or 1) × RN activation rows (1..3) over columns [0, kc) of rows
 * of stride K. y points at y[j0·ldy + r0]; add: y += the sums, else y = them. */
T AI void gb_tile(int RM, int RN, float *y, int ldy, const uint16_t *x, const uint16_t *w, int K, int kc, int add)
{
    __m512 acc[GB_RM][GB_RN];
#pragma GCC unroll 8
    for (int a = 0; a < RM; a++)
#pragma GCC unroll 3
        for (int b = 0; b < RN; b++) acc[a][b] = _mm512_setzero_ps();
    int k = 0;
#pragma GCC unroll 2
    for (; k + 32 <= kc; k += 32) {
        __m512i xv[GB_RN];
#pragma GCC unroll 3
        for (int b = 0; b < RN; b++) xv[b] = _mm512_loadu_si512(x + (size_t)b * K + k);
#pragma GCC unroll 8
        for (int a = 0; a < RM; a++) {
            __m512i wv = _mm512_loadu_si512(w + (size_t)a * K + k);
#pragma GCC unroll 3
            for (int b = 0; b < RN; b++) acc[a][b] = GB_DP(acc[a][b], wv, xv[b]);
        }
    }
    if (k < kc) {   /* the last kc % 32 columns: masked loads, zeros elsewhere */
        __mmask32 m = (__mmask32)((1u << (kc - k)) - 1);
        __m512i xv[GB_RN];
#pragma GCC unroll 3
        for (int b = 0; b < RN; b++) xv[b] = _mm512_maskz_loadu_epi16(m, x + (size_t)b * K + k);
#pragma GCC unroll 8
        for (int a = 0; a < RM; a++) {
            __m512i wv = _mm512_maskz_loadu_epi16(m, w + (size_t)a * K + k);
#pragma GCC unroll 3
            for (int b = 0; b < RN; b++) acc[a][b] = GB_DP(acc[a][b], wv, xv[b]);
        }
    }
    const __m512 z = _mm512_setzero_ps();
#pragma GCC unroll 3
    for (int b = 0; b < RN; b++) {
        float *yb = y + (size_t)b * ldy;
        if (RM == 1) {
            float v = _mm_cvtss_f32(gb_sum4(acc[0][b], z, z, z));
            yb[0] = add ? yb[0] + v : v;
        } else {
#pragma GCC unroll 2
            for (int a = 0; a < RM; a += 4) {
                __m128 v = gb_sum4(acc[a][b], acc[a + 1][b], acc[a + 2][b], acc[a + 3][b]);
                _mm_storeu_ps(yb + a, add ? _mm_add_ps(_mm_loadu_ps(yb + a), v) : v);
            }
        }
    }
}

/* Prefetches (into the L2) the share t of T of the next 8-row block's columns [0, kc) (rows of
 * stride K, pf at its first row's first column): gemm_avx512.c's gn_prefetch for 2-byte rows. */
T AI void gb_prefetch(const uint16_t *pf, int K, int kc, int t, int nt)
{
    int lpr = (kc + 31) / 32, lines = 8 * lpr;
    for (int i = lines * t / nt; i < lines * (t + 1) / nt; i++)
        _mm_prefetch((const char *)(pf + (size_t)(i / lpr) * K + (size_t)(i % lpr) * 32), _MM_HINT_T1);
}

/* RM weight rows against activation rows [j0, j1), three at a time, columns [k0, k0 + kc). */
#define GB_ROWS(RM)                                                                                \
    T static void gb_rows##RM(float *y, int ldy, const uint16_t *x, const uint16_t *w, int j0, int j1, int K, int k0, \
                              int kc, const uint16_t *pf, int pf_kc)                              \
    {                                                                                              \
        int j = j0, add = k0 > 0, t = 0, nt = (j1 - j0 + 2) / 3;                                   \
        x += k0, w += k0;                                                                          \
        for (; j + 3 <= j1; j += 3, t++) {                                                         \
            if (pf) gb_prefetch(pf, K, pf_kc, t, nt);                                              \
            gb_tile(RM, 3, y + (size_t)j * ldy, ldy, x + (size_t)j * K, w, K, kc, add);           \
        }                                                                                          \
        if (pf && j < j1) gb_prefetch(pf, K, pf_kc, t, nt);                                        \
        if (j1 - j == 2) gb_tile(RM, 2, y + (size_t)j * ldy, ldy, x + (size_t)j * K, w, K, kc, add);          \
        else if (j1 - j == 1) gb_tile(RM, 1, y + (size_t)j * ldy, ldy, x + (size_t)j * K, w, K, kc, add);     \
    }
GB_ROWS(8)
GB_ROWS(4)
GB_ROWS(1)

T void cpu_gemm_nt_bf16_avx512bf16(float *y, int ldy, const uint16_t *x, int n, const uint16_t *W, int r0, int r1, int K)
{
    int nb = (int)(GB_NB_BYTES / ((size_t)K * sizeof(uint16_t)));
    nb = nb < GB_RN ? GB_RN : nb / GB_RN * GB_RN;
    int kc_step = K <= GB_KC_MAX ? K : GB_KC;
    for (int j0 = 0; j0 < n; j0 += nb) {
        int j1 = n - j0 < nb ? n : j0 + nb, r = r0;
        for (; r + 8 <= r1; r += 8)
            for (int k0 = 0; k0 < K; k0 += kc_step) {
                int nr = k0 + kc_step < K ? r : r + 8, nk = k0 + kc_step < K ? k0 + kc_step : 0;
                const uint16_t *pf = nr + 8 <= r1 ? W + (size_t)nr * K + nk : NULL;
                gb_rows8(y + r, ldy, x, W + (size_t)r * K, j0, j1, K, k0, K - k0 < kc_step ? K - k0 : kc_step, pf,
                         K - nk < kc_step ? K - nk : kc_step);
            }
        for (; r + 4 <= r1; r += 4)
            for (int k0 = 0; k0 < K; k0 += kc_step)
                gb_rows4(y + r, ldy, x, W + (size_t)r * K, j0, j1, K, k0, K - k0 < kc_step ? K - k0 : kc_step, NULL, 0);
        for (; r < r1; r++)
            for (int k0 = 0; k0 < K; k0 += kc_step)
                gb_rows1(y + r, ldy, x, W + (size_t)r * K, j0, j1, K, k0, K - k0 < kc_step ? K - k0 : kc_step, NULL, 0);
    }
}
#else
int cpu_has_avx512bf16(void) { return 0; }
#endif
