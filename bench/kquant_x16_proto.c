/* Prototypes, not product kernels: Q4_K and Q6_K decode (n = 1, 16-bit activations) with the
 * weights interleaved 16 rows at a time, timed against the row kernels the product runs
 * (cpu_quant()->mm[dt]: on AVX512-VNNI kernels/cpu/quant16_split_avx512.inc for Q4_K, quant16_body.inc's
 * tilek for Q6_K), to size the
 * gain before building it into the loader, the prefill unpacking and the tests (issue 14: the
 * K-quant decode is instruction-bound on Zen 4; bench/cpu.md, session 14).
 *
 *     make build/bench/kquant_x16_proto && build/bench/kquant_x16_proto [--time S]
 *
 * Q4_K layout of one super-block of a group of 16 rows (2304 bytes = 16 × 144, as the rows):
 *   f16 d[16], f16 dmin[16]; the 12 packed scale bytes transposed (byte i of row r at 16i + r);
 *   32 chunks of 64 bytes, chunk 8c + t holding bytes qs[32c + 4t .. + 4) of each row r at 4r.
 * Kernel: the activation row split once into byte planes (a = 256·hi + lo, as the row kernel);
 * per chunk one 64-byte load, its low nibbles (sub-block 2c) and high ones (2c + 1) through
 * vpdpbusd against 4-byte broadcasts of the planes (L = Σ q·lo, H = Σ q·hi per row lane, exact);
 * per sub-block t = L + 256·H (|t| ≤ 32·15·32768 < 2^24: exact in f32), then f32 fma by the 16
 * rows' scales, and the min term m·Σa; the 16 rows' scales and mins decoded by 8 vector
 * operations per super-block. Q6_K: at pack_x16_q6. Each checked against its row kernel
 * (max |diff| / max |y| printed). The x16 timings include the activation split (scalar here).
 * Prints GB/s of weights, one thread: hot (one matrix, cached) and cold (matrices cycled past
 * the L3). Needs AVX512-VNNI (+BW, VL); says so and exits 0 elsewhere. */
#include "kernels/cpu/quant.h"
#include "kernels/kernels.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef LLM_SIMD_X86
#include <immintrin.h>

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)(rnd() * (2.0 / 4294967296.0) - 1.0); }

/* rows × K random Q4_K (bb 144) or Q6_K (bb 210) blocks (bench_quant's rand_weights) */
static uint8_t *rand_kq(int rows, int K, size_t bb)
{
    size_t n = (size_t)rows * (K / 256) * bb;
    uint8_t *w = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!w) return NULL;
    for (size_t i = 0; i < n; i++) w[i] = (uint8_t)rnd();
    for (size_t b = 0; b < n / bb; b++) {
        uint16_t s1 = f32_to_f16(frand() * 0.02f), s2 = f32_to_f16(frand() * 0.02f);
        if (bb == 210) memcpy(w + b * bb + 208, &s1, 2);
        else memcpy(w + b * bb, &s1, 2), memcpy(w + b * bb + 2, &s2, 2);
    }
    return w;
}

/* ggml rows (rows a multiple of 16) → the layout above */
static void pack_x16(const uint8_t *src, uint8_t *dst, int rows, int K)
{
    const int nk = K / 256;
    for (int g = 0; g < rows / 16; g++)
        for (int b = 0; b < nk; b++) {
            uint8_t *o = dst + ((size_t)g * nk + b) * 2304;
            for (int r = 0; r < 16; r++) {
                const uint8_t *s = src + ((size_t)(16 * g + r) * nk + b) * 144;
                memcpy(o + 2 * r, s, 2);
                memcpy(o + 32 + 2 * r, s + 2, 2);
                for (int i = 0; i < 12; i++) o[64 + 16 * i + r] = s[4 + i];
                for (int q = 0; q < 32; q++) memcpy(o + 256 + 64 * q + 4 * r, s + 16 + 4 * q, 4);
            }
        }
}

/* Y[16g + r] for every group: X the A256/16 activation row, lo/hi its planes */
T static void mm_x16(float *Y, const uint8_t *W, const uint8_t *X, const uint8_t *lo, const uint8_t *hi, int rows,
                     int K, size_t pf)
{
    const int nk = K / 256;
    const float *xd = (const float *)(X + qa16_off_d256(K)), *bs = (const float *)(X + qa16_off_bs32f(K));
    const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi8(63), m30 = _mm512_set1_epi8(0x30);
    for (int g = 0; g < rows / 16; g++) {
        __m512 acc = _mm512_setzero_ps(), accm = _mm512_setzero_ps();
        for (int b = 0; b < nk; b++) {
            const uint8_t *p = W + ((size_t)g * nk + b) * 2304;
            for (int o = 0; o < 2304; o += 64) _mm_prefetch((const char *)p + pf + o, _MM_HINT_T0);
            const __m512i V0 = _mm512_loadu_si512(p + 64), V1 = _mm512_loadu_si512(p + 128), V2 = _mm512_loadu_si512(p + 192);
            /* sub-blocks 0..3 and 4..7 of the 16 rows, 16 bytes per sub-block */
            const __m512i sc03 = _mm512_and_si512(V0, m6), mn03 = _mm512_and_si512(V1, m6);
            const __m512i sc47 = _mm512_ternarylogic_epi32(V2, _mm512_srli_epi16(V0, 2), m4, 0xE4);   /* m4 ? V2 : V0 >> 2, then &63 */
            const __m512i mn47 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(V2, 4), _mm512_srli_epi16(V1, 2), m4, 0xE4);
            const __m512i sc[2] = {sc03, _mm512_and_si512(sc47, m6)}, mn[2] = {mn03, _mm512_and_si512(mn47, m6)};
            (void)m30;
            __m512 a = _mm512_setzero_ps(), am = _mm512_setzero_ps();
            const uint8_t *l = lo + (size_t)256 * b, *h = hi + (size_t)256 * b;
            for (int c = 0; c < 4; c++) {
                __m512i L0 = _mm512_setzero_si512(), H0 = L0, L1 = L0, H1 = L0;
                for (int t = 0; t < 8; t++) {
                    __m512i v = _mm512_loadu_si512(p + 256 + 64 * (8 * c + t));
                    __m512i q0 = _mm512_and_si512(v, m4), q1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                    int32_t l0, h0, l1, h1;
                    memcpy(&l0, l + 64 * c + 4 * t, 4), memcpy(&h0, h + 64 * c + 4 * t, 4);
                    memcpy(&l1, l + 64 * c + 32 + 4 * t, 4), memcpy(&h1, h + 64 * c + 32 + 4 * t, 4);
                    L0 = _mm512_dpbusd_epi32(L0, _mm512_set1_epi32(l0), q0);
                    H0 = _mm512_dpbusd_epi32(H0, q0, _mm512_set1_epi32(h0));
                    L1 = _mm512_dpbusd_epi32(L1, _mm512_set1_epi32(l1), q1);
                    H1 = _mm512_dpbusd_epi32(H1, q1, _mm512_set1_epi32(h1));
                }
                for (int e = 0; e < 2; e++) {
                    const int j = 2 * c + e;
                    __m512i t = e ? _mm512_add_epi32(L1, _mm512_slli_epi32(H1, 8)) : _mm512_add_epi32(L0, _mm512_slli_epi32(H0, 8));
                    __m128i s8 = _mm512_extracti32x4_epi32(sc[j >> 2], 0), m8 = _mm512_extracti32x4_epi32(mn[j >> 2], 0);
                    switch (j & 3) {   /* the 16 bytes of sub-block j */
                    case 1: s8 = _mm512_extracti32x4_epi32(sc[j >> 2], 1), m8 = _mm512_extracti32x4_epi32(mn[j >> 2], 1); break;
                    case 2: s8 = _mm512_extracti32x4_epi32(sc[j >> 2], 2), m8 = _mm512_extracti32x4_epi32(mn[j >> 2], 2); break;
                    case 3: s8 = _mm512_extracti32x4_epi32(sc[j >> 2], 3), m8 = _mm512_extracti32x4_epi32(mn[j >> 2], 3); break;
                    default: break;
                    }
                    a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(s8)), a);
                    am = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(m8)), _mm512_set1_ps(bs[8 * b + j]), am);
                }
            }
            const __m512 dx = _mm512_set1_ps(xd[b]);
            acc = _mm512_fmadd_ps(a, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)), dx), acc);
            accm = _mm512_fmadd_ps(am, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32))), dx), accm);
        }
        _mm512_storeu_ps(Y + 16 * g, _mm512_sub_ps(acc, accm));
    }
}

/* Q6_K, the same idea: one super-block of 16 rows (3360 bytes = 16 × 210): f16 d[16]; the 16
 * int8 scales transposed (scale j of row r at 16j + r); 32 chunks of ql (chunk 16h + 8s + t: bytes
 * ql[64h + 32s + 4t .. + 4) of each row at 4r); 16 chunks of qh (chunk 8h + t: qh[32h + 4t .. + 4)).
 * Per (h, t): quants 0..63 of the elements 128h + 32e + 4t.. (e = 0..3) from the two ql chunks'
 * nibbles and the qh chunk's bit pairs e; t = Σ q·a (vpdpbusd on the planes), Σ (q − 32)·a =
 * t − 32·Σa per 16-element sub-block (|·| ≤ 16·32·32768 = 2^24: exact in f32); sums in f32 by
 * the sub-block's scale. */
static void pack_x16_q6(const uint8_t *src, uint8_t *dst, int rows, int K)
{
    const int nk = K / 256;
    for (int g = 0; g < rows / 16; g++)
        for (int b = 0; b < nk; b++) {
            uint8_t *o = dst + ((size_t)g * nk + b) * 3360;
            for (int r = 0; r < 16; r++) {
                const uint8_t *s = src + ((size_t)(16 * g + r) * nk + b) * 210;
                memcpy(o + 2 * r, s + 208, 2);
                for (int j = 0; j < 16; j++) o[32 + 16 * j + r] = s[192 + j];
                for (int c = 0; c < 32; c++) memcpy(o + 288 + 64 * c + 4 * r, s + 4 * c, 4);
                for (int c = 0; c < 16; c++) memcpy(o + 288 + 2048 + 64 * c + 4 * r, s + 128 + 4 * c, 4);
            }
        }
}

/* as mm_x16, Q6_K; s16: Σ of each 16 activation quants (int32, K/16) */
T static void mm_x16_q6(float *Y, const uint8_t *W, const uint8_t *X, const uint8_t *lo, const uint8_t *hi,
                        const int32_t *s16, int rows, int K, size_t pf)
{
    const int nk = K / 256;
    const float *xd = (const float *)(X + qa16_off_d256(K));
    const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi8(63);
    for (int g = 0; g < rows / 16; g++) {
        __m512 acc = _mm512_setzero_ps();
        for (int b = 0; b < nk; b++) {
            const uint8_t *p = W + ((size_t)g * nk + b) * 3360;
            for (int o = 0; o < 3360; o += 64) _mm_prefetch((const char *)p + pf + o, _MM_HINT_T0);
            __m512 a = _mm512_setzero_ps();
            const uint8_t *l = lo + (size_t)256 * b, *h = hi + (size_t)256 * b;
            for (int hh = 0; hh < 2; hh++)
                for (int is = 0; is < 2; is++) {   /* sub-blocks 8hh + 2e + is, e = 0..3 */
                    __m512i L[4], H[4];
                    for (int e = 0; e < 4; e++) L[e] = H[e] = _mm512_setzero_si512();
                    for (int t = 4 * is; t < 4 * is + 4; t++) {
                        const __m512i v0 = _mm512_loadu_si512(p + 288 + 64 * (16 * hh + t));
                        const __m512i v1 = _mm512_loadu_si512(p + 288 + 64 * (16 * hh + 8 + t));
                        const __m512i qh = _mm512_loadu_si512(p + 288 + 2048 + 64 * (8 * hh + t));
                        __m512i q[4];   /* e = 0: v0 low, qh bits 0-1; 1: v1 low, 2-3; 2: v0 high, 4-5; 3: v1 high, 6-7 */
                        q[0] = _mm512_and_si512(_mm512_ternarylogic_epi32(v0, _mm512_slli_epi16(qh, 4), m4, 0xE4), m6);
                        q[1] = _mm512_and_si512(_mm512_ternarylogic_epi32(v1, _mm512_slli_epi16(qh, 2), m4, 0xE4), m6);
                        q[2] = _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v0, 4), qh, m4, 0xE4), m6);
                        q[3] = _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v1, 4), _mm512_srli_epi16(qh, 2), m4, 0xE4), m6);
                        for (int e = 0; e < 4; e++) {
                            const int k = 128 * hh + 32 * e + 4 * t;
                            int32_t lk, hk;
                            memcpy(&lk, l + k, 4), memcpy(&hk, h + k, 4);
                            L[e] = _mm512_dpbusd_epi32(L[e], _mm512_set1_epi32(lk), q[e]);
                            H[e] = _mm512_dpbusd_epi32(H[e], q[e], _mm512_set1_epi32(hk));
                        }
                    }
                    for (int e = 0; e < 4; e++) {
                        const int j = 8 * hh + 2 * e + is;
                        __m512i tq = _mm512_sub_epi32(_mm512_add_epi32(L[e], _mm512_slli_epi32(H[e], 8)),
                                                      _mm512_set1_epi32(32 * s16[16 * b + j]));
                        __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + 32 + 16 * j))));
                        a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tq), sc, a);
                    }
                }
            acc = _mm512_fmadd_ps(a, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)), _mm512_set1_ps(xd[b])), acc);
        }
        _mm512_storeu_ps(Y + 16 * g, acc);
    }
}

/* the planes of the A256/16 row X (element order) */
static void split(const uint8_t *X, int K, uint8_t *lo, uint8_t *hi, int32_t *s16)
{
    const int16_t *q = (const int16_t *)X;
    for (int k = 0; k < K; k++) {
        lo[k] = (uint8_t)(q[k] & 0xFF);
        hi[k] = (uint8_t)(int8_t)(q[k] >> 8);
        if (k % 16 == 0) s16[k / 16] = 0;
        s16[k / 16] += q[k];
    }
}

int main(int argc, char **argv)
{
    double tmin = 0.2;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--time") && i + 1 < argc) tmin = atof(argv[++i]);
    if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl")) {
        printf("kquant_x16_proto: this CPU has no AVX512-VNNI; nothing to time\n");
        return 0;
    }
    cpu_set_threads(1);
    const cpu_quant_ops *ops = cpu_quant();
    const int shapes[][2] = {{576, 1536}, {896, 4864}};
    printf("K-quant decode, 1 thread, GB/s of weights (best of 9); row kernels: %s, %d-bit activations\n\n", ops->name, ops->bits);
    printf("| type | rows x K | hot: rows | hot: x16 | cold: rows | cold: x16 | max|diff| / max|y| |\n|---|---|---|---|---|---|---|\n");
    for (int six = 0; six < 2; six++)
        for (int s = 0; s < 2; s++) {
            const int rows = shapes[s][0], K = shapes[s][1];
            const dtype_t dt = six ? DT_Q6_K : DT_Q4_K;
            const size_t bb = six ? 210 : 144, bytes = (size_t)rows * (K / 256) * bb;
            const int nm = (int)(96e6 / bytes) + 1;   /* cold: cycle past a 32 MiB L3 */
            uint8_t **Wr = malloc(nm * sizeof *Wr), **Wx = malloc(nm * sizeof *Wx);
            for (int m = 0; m < nm; m++) {
                Wr[m] = rand_kq(rows, K, bb);
                Wx[m] = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
                if (!Wr[m] || !Wx[m]) return 1;
                if (six) pack_x16_q6(Wr[m], Wx[m], rows, K);
                else pack_x16(Wr[m], Wx[m], rows, K);
            }
            float *x = malloc((size_t)K * 4), *y1 = malloc((size_t)rows * 4), *y2 = malloc((size_t)rows * 4);
            for (int k = 0; k < K; k++) x[k] = frand();
            qact_fmt f = quant_act_fmt(ops, dt);
            uint8_t *X = aligned_alloc(64, qact_row_bytes(f, K) + 64), *lo = aligned_alloc(64, K), *hi = aligned_alloc(64, K);
            int32_t *s16 = malloc((size_t)K / 16 * 4);
            quant_act_row(ops, f, X, x, K);
            split(X, K, lo, hi, s16);
            ops->mm[dt](y1, 1, Wr[0], bytes / rows, X, 0, rows, 1, K);
            if (six) mm_x16_q6(y2, Wx[0], X, lo, hi, s16, rows, K, 1024);
            else mm_x16(y2, Wx[0], X, lo, hi, rows, K, 1024);
            double dmax = 0, ymax = 0;
            for (int r = 0; r < rows; r++) {
                double d = y1[r] > y2[r] ? y1[r] - y2[r] : y2[r] - y1[r], a = y1[r] < 0 ? -y1[r] : y1[r];
                if (d > dmax) dmax = d;
                if (a > ymax) ymax = a;
            }
            double gb[4];
            for (int kind = 0; kind < 4; kind++) {   /* hot rows, hot x16, cold rows, cold x16 */
                const int cold = kind >= 2, x16 = kind & 1, cyc = cold ? nm : 1;
                double best = 1e30;
                int m = 0;
                for (int rep = 0; rep < 9; rep++) {
                    long calls = 0;
                    double t0 = now_s(), t;
                    do {
                        if (x16) {
                            split(X, K, lo, hi, s16);   /* per call, as a product kernel would (scalar here) */
                            if (six) mm_x16_q6(y2, Wx[m], X, lo, hi, s16, rows, K, 1024);
                            else mm_x16(y2, Wx[m], X, lo, hi, rows, K, 1024);
                        } else ops->mm[dt](y1, 1, Wr[m], bytes / rows, X, 0, rows, 1, K);
                        m = m + 1 < cyc ? m + 1 : 0;
                        calls++;
                    } while ((t = now_s() - t0) < tmin / 9);
                    if (t / calls < best) best = t / calls;
                }
                gb[kind] = bytes / best / 1e9;
            }
            printf("| %s | %dx%d | %.1f | %.1f | %.1f | %.1f | %.1e |\n", six ? "Q6_K" : "Q4_K", rows, K, gb[0], gb[1], gb[2], gb[3],
                   dmax / ymax);
            for (int m = 0; m < nm; m++) free(Wr[m]), free(Wx[m]);
            free(Wr), free(Wx), free(x), free(y1), free(y2), free(X), free(lo), free(hi), free(s16);
        }
    return 0;
}
#else
int main(void)
{
    printf("kquant_x16_proto: x86 only\n");
    return 0;
}
#endif
