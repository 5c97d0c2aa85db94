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
#define AI static inline __attribute__((always_inline))

#define GN_RM 8
#define GN_RN 3
/* activation rows per block: [GN_NB_BYTES / (4 K)] rows stay in the L2 */
#define GN_NB_BYTES (1u << 20)

/* The four sums of A, B, C, D's 16 lanes as one 4-float vector, each in the same order
 * whatever the other three are (pairs of lanes, then 128-bit lanes, then halves). */
T AI __m128 gn_sum4(__m512 A, __m512 B, __m512 C, __m512 D)
{
    __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(A, B), _mm512_unpackhi_ps(A, B));
    __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(C, D), _mm512_unpackhi_ps(C, D));
    __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* One tile: RM weight rows (RM ∈ {8, 4, 1}) × RN activation rows (1..3) over columns
 * [0, kc) of rows of stride K. y points at y[j0·ldy + r0]; add: y += the sums, else y = them. */
T AI void gn_tile(int RM, int RN, float *y, int ldy, const float *x, const float *w, int K, int kc, int add)
{
    __m512 acc[GN_RM][GN_RN];
#pragma GCC unroll 8
    for (int a = 0; a < RM; a++)
#pragma GCC unroll 3
        for (int b = 0; b < RN; b++) acc[a][b] = _mm512_setzero_ps();
    int k = 0;
#pragma GCC unroll 2
    for (; k + 16 <= kc; k += 16) {
        __m512 xv[GN_RN];
#pragma GCC unroll 3
        for (int b = 0; b < RN; b++) xv[b] = _mm512_loadu_ps(x + (size_t)b * K + k);
#pragma GCC unroll 8
        for (int a = 0; a < RM; a++) {
            __m512 wv = _mm512_loadu_ps(w + (size_t)a * K + k);
#pragma GCC unroll 3
            for (int b = 0; b < RN; b++) acc[a][b] = _mm512_fmadd_ps(wv, xv[b], acc[a][b]);
        }
    }
    if (k < kc) {   /* the last kc % 16 columns: masked loads, zeros elsewhere */
        __mmask16 m = (__mmask16)((1u << (kc - k)) - 1);
        __m512 xv[GN_RN];
#pragma GCC unroll 3
        for (int b = 0; b < RN; b++) xv[b] = _mm512_maskz_loadu_ps(m, x + (size_t)b * K + k);
#pragma GCC unroll 8
        for (int a = 0; a < RM; a++) {
            __m512 wv = _mm512_maskz_loadu_ps(m, w + (size_t)a * K + k);
#pragma GCC unroll 3
            for (int b = 0; b < RN; b++) acc[a][b] = _mm512_fmadd_ps(wv, xv[b], acc[a][b]);
        }
    }
    const __m512 z = _mm512_setzero_ps();
#pragma GCC unroll 3
    for (int b = 0; b < RN; b++) {
        float *yb = y + (size_t)b * ldy;
        if (RM == 1) {
            float v = _mm_cvtss_f32(gn_sum4(acc[0][b], z, z, z));
            yb[0] = add ? yb[0] + v : v;
        } else {
#pragma GCC unroll 2
            for (int a = 0; a < RM; a += 4) {
                __m128 v = gn_sum4(acc[a][b], acc[a + 1][b], acc[a + 2][b], acc[a + 3][b]);
                _mm_storeu_ps(yb + a, add ? _mm_add_ps(_mm_loadu_ps(yb + a), v) : v);
            }
        }
    }
}

/* Prefetches (into the L2) the share t of T of the next 8-row block's columns [0, kc) (rows of
 * stride K, pf at its first row's first column), so that block does not start from DRAM: its
 * first tile otherwise waits on 8 cold row streams. One thread, weights from DRAM, 2026-11-28
 * quiet host (bench/gemm_nt.c's program, 3 rounds): K = 768 147-150 -> 157-170 GFLOPS, K = 2048 (in
 * chunks) 128-144 -> 126-141; 110M F32 prefill of 128 ids, best of 5 interleaved: 1 thread 635
 * -> 665 tok/s, 2 threads 1250 -> 1423 (OpenBLAS build: 594 / 1158). */
T AI void gn_prefetch(const float *pf, int K, int kc, int t, int nt)
{
    int lpr = (kc + 15) / 16, lines = 8 * lpr;
    for (int i = lines * t / nt; i < lines * (t + 1) / nt; i++)
        _mm_prefetch((const char *)(pf + (size_t)(i / lpr) * K + (size_t)(i % lpr) * 16), _MM_HINT_T1);
}

/* RM weight rows against activation rows [j0, j1), three at a time, columns [k0, k0 + kc);
 * pf (or NULL): the next block's weights (columns [0, pf_kc) of 8 rows), prefetched a share
 * per tile. */
#define GN_ROWS(RM)                                                                                \
    T static void gn_rows##RM(float *y, int ldy, const float *x, const float *w, int j0, int j1, int K, int k0, int kc, \
                              const float *pf, int pf_kc)                                         \
    {                                                                                              \
        int j = j0, add = k0 > 0, t = 0, nt = (j1 - j0 + 2) / 3;                                   \
        x += k0, w += k0;                                                                          \
        for (; j + 3 <= j1; j += 3, t++) {                                                         \
            if (pf) gn_prefetch(pf, K, pf_kc, t, nt);                                              \
            gn_tile(RM, 3, y + (size_t)j * ldy, ldy, x + (size_t)j * K, w, K, kc, add);           \
        }                                                                                          \
        if (pf && j < j1) gn_prefetch(pf, K, pf_kc, t, nt);                                        \
        if (j1 - j == 2) gn_tile(RM, 2, y + (size_t)j * ldy, ldy, x + (size_t)j * K, w, K, kc, add);          \
        else if (j1 - j == 1) gn_tile(RM, 1, y + (size_t)j * ldy, ldy, x + (size_t)j * K, w, K, kc, add);     \
    }
GN_ROWS(8)
GN_ROWS(4)
GN_ROWS(1)

/* Rows longer than GN_KC_MAX columns are taken GN_KC columns at a time, so the 8 weight rows of
 * a block stay in the L1 (8 × 2048 f32 columns would not), each chunk's sums added to y in
 * chunk order. The down projection of the 110M shape (K = 2048, one thread, n = 128, quiet
 * host, 3 rounds): 111-115 GFLOPS whole, 129-132 in chunks of 512 (OpenBLAS 120-127). */
#define GN_KC_MAX 1024
#define GN_KC 512

T void cpu_gemm_nt_f32_avx512(float *y, int ldy, const float *x, int n, const float *W, int r0, int r1, int K)
{
    int nb = (int)(GN_NB_BYTES / ((size_t)K * sizeof(float)));
    nb = nb < GN_RN ? GN_RN : nb / GN_RN * GN_RN;
    int kc_step = K <= GN_KC_MAX ? K : GN_KC;
    for (int j0 = 0; j0 < n; j0 += nb) {
        int j1 = n - j0 < nb ? n : j0 + nb, r = r0;
        for (; r + 8 <= r1; r += 8)
            for (int k0 = 0; k0 < K; k0 += kc_step) {
                /* the block after this one: the next chunk of these rows, else the next 8 rows */
                int nr = k0 + kc_step < K ? r : r + 8, nk = k0 + kc_step < K ? k0 + kc_step : 0;
                const float *pf = nr + 8 <= r1 ? W + (size_t)nr * K + nk : NULL;
                gn_rows8(y + r, ldy, x, W + (size_t)r * K, j0, j1, K, k0, K - k0 < kc_step ? K - k0 : kc_step, pf,
                         K - nk < kc_step ? K - nk : kc_step);
            }
        for (; r + 4 <= r1; r += 4)
            for (int k0 = 0; k0 < K; k0 += kc_step)
                gn_rows4(y + r, ldy, x, W + (size_t)r * K, j0, j1, K, k0, K - k0 < kc_step ? K - k0 : kc_step, NULL, 0);
        for (; r < r1; r++)
            for (int k0 = 0; k0 < K; k0 += kc_step)
                gn_rows1(y + r, ldy, x, W + (size_t)r * K, j0, j1, K, k0, K - k0 < kc_step ? K - k0 : kc_step, NULL, 0);
    }
}
#endif
