/* The WL_X16 decode kernels of Q4_K and Q6_K (kernels.h; layout: quant_x16.c) for the
 * "avx512vnni" family with 16-bit activations (A256/16, quant.h): lane r of every vector is row
 * r of the group. Why: the row kernels (quant16_split_avx512.inc, quant16_body.inc's tilek) are
 * instruction-bound on Zen 4 (bench/cpu.md, session 14: without any multiply the Q4_K row kernel
 * still took 60% of its time), most of it the per-super-block work of one row (scales and mins
 * unpacked, d and dmin converted); here that work serves 16 rows at once.
 *
 * The activation row is split once per call into byte planes, a = 256·hi + lo (lo unsigned,
 * hi signed; quant16_split_avx512.inc), so each 4-bit or 6-bit quant q stays a byte:
 * per 4 consecutive elements of a sub-block one 64-byte load gives each row lane its 4 quants,
 * and L += Σ_4 q·lo (vpdpbusd: lo a 4-byte broadcast, q signed bytes ≤ 63), H += Σ_4 q·hi
 * (q unsigned, hi signed) exactly in int32; per sub-block t = L + 256·H = Σ q·a exactly
 * (Q4_K: |t| ≤ 32·15·32768 < 2^24; Q6_K: t − 32·Σa = Σ (q − 32)·a, |·| ≤ 16·32·32768 = 2^24, Σa
 * per 16 from the split), so its f32 conversion is exact, and one f32 fma per sub-block applies
 * the 16 rows' scales (Q4_K: the min term m·Σa per 32 in a second f32 sum), then d·d_x per
 * super-block. The f32 rounding is each row's own (the tests' 2e-6·Σ|w·x|), independent of the
 * rows beside it. The scales: Q4_K's 12 packed bytes of the 16 rows are 3 loads, unpacked by
 * 8 vector operations for all 16 rows (ggml's get_scale_min_k4); Q6_K's int8 scales one
 * 16-byte load per sub-block. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"

#ifdef LLM_SIMD_X86
#include <immintrin.h>
#include <string.h>

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define QI static inline __attribute__((always_inline))
/* Software prefetch of the weight streams, QX_PF bytes ahead into the L2. bench_quant --types
 * Q4_K,Q6_K --no-gemm --pf x16k=N, cold, one thread, 896x4864, Zen 4 VM (2026-11-28, two rounds):
 * 4096 21 / 21 GB/s (Q4_K / Q6_K), 6144 21-28 / 22, 12288 25 / 21, 24576 25-26 / 20-21 (F32 31
 * beside it); 1024 12 / 11; into the L1 instead: 6-19. Two groups' streams at a time (x16k_run)
 * measured no better than one here, and are kept as the other WL_X16 kernels have them. Intel
 * Xeon (Emerald Rapids) VM, same bench, two rounds (2026-11-29): 0 10.0-10.6 / 8.6-9.2, 1024
 * 11.5 / 9.1-9.4, 3072 11.8-12.4 / 10.9-11.1, 6144 10.3-12.1 / 9.1-11.5, 12288 12.3-12.7 /
 * 11.0-11.2, 24576 11.6-12.1 / 10.9-11.4 (F32 14.8-15.9 beside it): 12288 there too. */
#define QX_PF ((size_t)cpu_pf.x16k)

/* lo / hi planes of the A256/16 row X in element order; s16[i] = Σ of quants 16i .. 16i + 15. */
T static void x16k_split(const uint8_t *X, int K, uint8_t *lo, uint8_t *hi, int32_t *s16)
{
    const int16_t *q = (const int16_t *)X;
    for (int k = 0; k < K; k += 32) {
        __m512i v = _mm512_loadu_si512(q + k);
        _mm256_storeu_si256((__m256i *)(lo + k), _mm512_cvtepi16_epi8(v));
        _mm256_storeu_si256((__m256i *)(hi + k), _mm512_cvtepi16_epi8(_mm512_srai_epi16(v, 8)));
        if (s16) {
            s16[k / 16] = _mm512_reduce_add_epi32(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(v)));
            s16[k / 16 + 1] = _mm512_reduce_add_epi32(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(v, 1)));
        }
    }
}

T QI __m512i x16k_bcast(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* The 16 bytes of sub-block j (0..3) of a vector of four as 16 f32 */
T QI __m512 x16k_lane(__m512i v, int j)
{
    __m128i b = j == 0 ? _mm512_extracti32x4_epi32(v, 0) : j == 1 ? _mm512_extracti32x4_epi32(v, 1)
              : j == 2 ? _mm512_extracti32x4_epi32(v, 2) : _mm512_extracti32x4_epi32(v, 3);
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
}

/* Q4_K super-block b of one group (its group-block at p): acc += the sums, accm += the min terms */
T QI void x16k_q4k_sb(const uint8_t *p, int b, const float *xd, const float *bs, const uint8_t *lo, const uint8_t *hi,
                      __m512 *acc, __m512 *accm)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi8(63);
    for (int o = 0; o < 2304; o += 64) _mm_prefetch((const char *)p + QX_PF + o, _MM_HINT_T1);
    /* scale bytes i = 0..3, 4..7, 8..11 of the 16 rows; sub-blocks 0..3 and 4..7 */
    const __m512i V0 = _mm512_loadu_si512(p + 64), V1 = _mm512_loadu_si512(p + 128), V2 = _mm512_loadu_si512(p + 192);
    const __m512i sc[2] = {_mm512_and_si512(V0, m6),   /* m4 ? V2 : V0 >> 2 (bits 4-5 the 6-bit high pair) */
                           _mm512_and_si512(_mm512_ternarylogic_epi32(V2, _mm512_srli_epi16(V0, 2), m4, 0xE4), m6)};
    const __m512i mn[2] = {_mm512_and_si512(V1, m6),
                           _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(V2, 4), _mm512_srli_epi16(V1, 2), m4, 0xE4), m6)};
    __m512 a = _mm512_setzero_ps(), am = _mm512_setzero_ps();
    const uint8_t *l = lo + (size_t)QKK * b, *h = hi + (size_t)QKK * b;
    for (int c = 0; c < 4; c++) {   /* qs[32c .. 32c + 32): sub-blocks 2c (low nibbles), 2c + 1 (high) */
        __m512i L0 = _mm512_setzero_si512(), H0 = L0, L1 = L0, H1 = L0;
        for (int t = 0; t < 8; t++) {
            const __m512i v = _mm512_loadu_si512(p + 256 + 64 * (8 * c + t));
            const __m512i q0 = _mm512_and_si512(v, m4), q1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            const int k0 = 64 * c + 4 * t, k1 = k0 + 32;
            L0 = _mm512_dpbusd_epi32(L0, x16k_bcast(l + k0), q0);
            H0 = _mm512_dpbusd_epi32(H0, q0, x16k_bcast(h + k0));
            L1 = _mm512_dpbusd_epi32(L1, x16k_bcast(l + k1), q1);
            H1 = _mm512_dpbusd_epi32(H1, q1, x16k_bcast(h + k1));
        }
        const int j0 = 2 * c, j1 = 2 * c + 1;
        a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(L0, _mm512_slli_epi32(H0, 8))), x16k_lane(sc[j0 >> 2], j0 & 3), a);
        a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(L1, _mm512_slli_epi32(H1, 8))), x16k_lane(sc[j1 >> 2], j1 & 3), a);
        am = _mm512_fmadd_ps(x16k_lane(mn[j0 >> 2], j0 & 3), _mm512_set1_ps(bs[8 * b + j0]), am);
        am = _mm512_fmadd_ps(x16k_lane(mn[j1 >> 2], j1 & 3), _mm512_set1_ps(bs[8 * b + j1]), am);
    }
    const __m512 dx = _mm512_set1_ps(xd[b]);
    *acc = _mm512_fmadd_ps(a, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)), dx), *acc);
    *accm = _mm512_fmadd_ps(am, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32))), dx), *accm);
}

/* Q6_K super-block b of one group (its group-block at p): acc += the sums; s16 from x16k_split */
T QI void x16k_q6k_sb(const uint8_t *p, int b, const float *xd, const int32_t *s16, const uint8_t *lo, const uint8_t *hi,
                      __m512 *acc)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi8(63);
    for (int o = 0; o < 3360; o += 64) _mm_prefetch((const char *)p + QX_PF + o, _MM_HINT_T1);
    __m512 a = _mm512_setzero_ps();
    const uint8_t *l = lo + (size_t)QKK * b, *h = hi + (size_t)QKK * b;
    for (int hh = 0; hh < 2; hh++)   /* elements 128hh + 32e + l: ql[64hh + l] (e = 0, 2), ql[64hh + 32 + l] (1, 3) */
        for (int is = 0; is < 2; is++) {   /* l in 16is .. 16is + 15: sub-blocks 8hh + 2e + is */
            __m512i L[4], H[4];
            for (int e = 0; e < 4; e++) L[e] = H[e] = _mm512_setzero_si512();
            for (int t = 4 * is; t < 4 * is + 4; t++) {
                const __m512i v0 = _mm512_loadu_si512(p + x16k_q6_run(hh, t, 0)), v1 = _mm512_loadu_si512(p + x16k_q6_run(hh, t, 1));
                const __m512i qh = _mm512_loadu_si512(p + x16k_q6_run(hh, t, 2));
                __m512i q[4];   /* the low 4 bits (m4 ? nibble : qh bits), then & 63 */
                q[0] = _mm512_and_si512(_mm512_ternarylogic_epi32(v0, _mm512_slli_epi16(qh, 4), m4, 0xE4), m6);
                q[1] = _mm512_and_si512(_mm512_ternarylogic_epi32(v1, _mm512_slli_epi16(qh, 2), m4, 0xE4), m6);
                q[2] = _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v0, 4), qh, m4, 0xE4), m6);
                q[3] = _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v1, 4), _mm512_srli_epi16(qh, 2), m4, 0xE4), m6);
                for (int e = 0; e < 4; e++) {
                    const int k = 128 * hh + 32 * e + 4 * t;
                    L[e] = _mm512_dpbusd_epi32(L[e], x16k_bcast(l + k), q[e]);
                    H[e] = _mm512_dpbusd_epi32(H[e], q[e], x16k_bcast(h + k));
                }
            }
            for (int e = 0; e < 4; e++) {
                const int j = 8 * hh + 2 * e + is;
                __m512i tq = _mm512_sub_epi32(_mm512_add_epi32(L[e], _mm512_slli_epi32(H[e], 8)), _mm512_set1_epi32(32 * s16[16 * b + j]));
                __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + 32 + 16 * j))));
                a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tq), sc, a);
            }
        }
    *acc = _mm512_fmadd_ps(a, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)), _mm512_set1_ps(xd[b])), *acc);
}

/* Y[16g + r] for the ng groups at W (group-blocks of gb bytes): groups g and g + ng/2 together,
 * super-block by super-block (two streams of weights in flight, as quant_x16_body.inc), then
 * a last odd one alone. */
T QI void x16k_run(const int six, float *Y, const uint8_t *W, const uint8_t *X, const uint8_t *lo, const uint8_t *hi,
                   const int32_t *s16, int ng, int K)
{
    const int nk = K / QKK, half = ng / 2;
    const size_t gs = (size_t)nk * (six ? 3360 : 2304);
    const float *xd = (const float *)(X + qa16_off_d256(K)), *bs = (const float *)(X + qa16_off_bs32f(K));
    for (int g = 0; g < half + (ng & 1); g++) {
        const int two = g < half;
        const uint8_t *p0 = W + (size_t)(two ? g : ng - 1) * gs, *p1 = W + (size_t)(g + half) * gs;
        __m512 a0 = _mm512_setzero_ps(), m0 = a0, a1 = a0, m1 = a0;
        for (int b = 0; b < nk; b++) {
            const size_t o = (size_t)b * (six ? 3360 : 2304);
            if (six) {
                x16k_q6k_sb(p0 + o, b, xd, s16, lo, hi, &a0);
                if (two) x16k_q6k_sb(p1 + o, b, xd, s16, lo, hi, &a1);
            } else {
                x16k_q4k_sb(p0 + o, b, xd, bs, lo, hi, &a0, &m0);
                if (two) x16k_q4k_sb(p1 + o, b, xd, bs, lo, hi, &a1, &m1);
            }
        }
        _mm512_storeu_ps(Y + 16 * (two ? g : ng - 1), _mm512_sub_ps(a0, m0));
        if (two) _mm512_storeu_ps(Y + 16 * (g + half), _mm512_sub_ps(a1, m1));
    }
}

/* The qmm_fn calls (quant.h: cpu_quant_x16): nr a multiple of 16, one activation row. */
#define X16K_MM(DT, SIX)                                                                          \
    T static void mm_x16k_##DT(float *Y, size_t ldy, const uint8_t *W, size_t ws, const uint8_t *X, size_t xs, \
                               int nr, int nx, int K)                                             \
    {                                                                                             \
        (void)ldy, (void)ws, (void)xs, (void)nx;                                                  \
        uint8_t planes[2 * K + 64] __attribute__((aligned(64)));                                  \
        int32_t s16[K / 16 + 1];                                                                  \
        x16k_split(X, K, planes, planes + K, SIX ? s16 : NULL);                                   \
        x16k_run(SIX, Y, W, X, planes, planes + K, s16, nr / 16, K);                              \
    }
X16K_MM(Q4_K, 0)
X16K_MM(Q6_K, 1)
#undef X16K_MM

qmm_fn cpu_quant_x16k_512(const cpu_quant_ops *ops, dtype_t dt)
{
    if (ops != &cpu_quant_avx512vnni16) return NULL;
    return dt == DT_Q4_K ? mm_x16k_Q4_K : dt == DT_Q6_K ? mm_x16k_Q6_K : NULL;
}
#endif
