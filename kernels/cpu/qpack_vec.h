/* The vector primitives of the packed-panel prefill GEMMs (qpack_body.inc, 8-bit activations;
 * qpack16_body.inc, 16-bit), one set per vector width. The including .c sets QPW (256: AVX2
 * ymm, 512: AVX-512 zmm) and, per copy of a body, T (target attribute), Q(x) (names) and QVNNI
 * (vpdpbusd/vpdpwssd instead of vpmaddubsw/vpmaddwd + vpaddd); each body includes this file
 * first, so the Q-named part below is made once per copy.
 *
 * The unit is one vector of QP int32/f32 lanes, one lane per weight row of a panel: QP = 8
 * (ymm) or 16 (zmm). A register tile is 4 activation rows × QP_NP panels (1 on AVX2: its 16
 * ymm registers; 2 on AVX-512: 32 zmm), QP_NP_A16 for the 16-bit 32-element tiles (2 on both).
 * The weights are decoded a 32-element block (or a row's 16-element half) at a time in 256-bit
 * code, the same for both widths (a small part of the work: O(rows·K) per call against
 * O(n·rows·K)), then interleaved into panels by qp_tr.
 * Width-only details: the dword transpose (unpack/permute2x128 vs 3 vpermt2d stages), the tail
 * store (memcpy vs a lane mask), and the signed Q8_0 weights without VNNI (AVX2: kept signed,
 * vpsignb at use; AVX-512 has no vpsignb: |q| stored with a sign bit mask per byte, the
 * activation negated under it by a masked vpsubb). */

#ifndef QPACK_VEC_H
#define QPACK_VEC_H
#if QPW == 512
#define QP 16     /* weight rows per panel = lanes per vector */
#define QP_NP 2   /* panels per register tile */
#define QP_NP_A16 QP_NP   /* the same for the 16-bit 32-element tiles */
#define QP_SGNB 4 /* Q8_0 without VNNI: sign-mask bytes per block and row */
typedef __m512 qp_f;
typedef __m512i qp_i;
typedef __mmask64 qp_sg;
#define qp_fzero() _mm512_setzero_ps()
#define qp_izero() _mm512_setzero_si512()
#define qp_fload(p) _mm512_loadu_ps(p)
#define qp_iload(p) _mm512_loadu_si512(p)
#define qp_istore(p, v) _mm512_storeu_si512(p, v)
#define qp_fset1(x) _mm512_set1_ps(x)
#define qp_iset1(x) _mm512_set1_epi32(x)
#define qp_cvt(v) _mm512_cvtepi32_ps(v)
#define qp_mul(a, b) _mm512_mul_ps(a, b)
#define qp_fma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define qp_fnma(a, b, c) _mm512_fnmadd_ps(a, b, c)
#else
#define QP 8
#define QP_NP 1
/* The 16-bit 32-element tiles (qpack16_body.inc ptile32, qpack16_x16.inc) on AVX2 are 4 × 2: 8
 * int32 sums, 2 weight vectors and a broadcast in ymm registers, the 8 f32 sums (touched once a
 * block) left to the stack: half the broadcasts per vpmaddwd of 4 × 1. Zen 3, 2026-11-30
 * (bench/cpu.md session 23): prefill of 512 ids SmolLM2 1.2-1.35× at 1 thread, Qwen2.5
 * 1.07-1.27×; the K-quant tiles, with 16 f32 sums, were not clearly faster as 4 × 2. */
#define QP_NP_A16 2
#define QP_SGNB 0
typedef __m256 qp_f;
typedef __m256i qp_i;
typedef __m256i qp_sg;
#define qp_fzero() _mm256_setzero_ps()
#define qp_izero() _mm256_setzero_si256()
#define qp_fload(p) _mm256_loadu_ps(p)
#define qp_iload(p) _mm256_loadu_si256((const __m256i *)(p))
#define qp_istore(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define qp_fset1(x) _mm256_set1_ps(x)
#define qp_iset1(x) _mm256_set1_epi32(x)
#define qp_cvt(v) _mm256_cvtepi32_ps(v)
#define qp_mul(a, b) _mm256_mul_ps(a, b)
#define qp_fma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define qp_fnma(a, b, c) _mm256_fnmadd_ps(a, b, c)
#endif
/* the bits at b (b = 0..7) of each byte of v moved to bits 4, 5 (& mask): 256-bit decoding */
#define QP_HBITS(v, b, mask) \
    _mm256_and_si256((b) <= 4 ? _mm256_slli_epi16(v, 4 - (b)) : _mm256_srli_epi16(v, (b) - 4), _mm256_set1_epi8(mask))
/* The GEMM of one dtype (quant.h's qgemm_fn) from its PACK and TILE: rows in groups of 2
 * panels (pack them into buf, then every activation row over them in groups of 4, up to NPM
 * panels a tile). */
#define QP_CASES(TILE, DT, NP)                                                                   \
    switch (nx - j0) {                                                                           \
    case 1: TILE(DT, 1, NP, Y + (size_t)j0 * ldy + r0 + QP * p0, ldy, m - QP * p0, buf + p0 * pstride, pstride, X + (size_t)j0 * xs, xs, K); break; \
    case 2: TILE(DT, 2, NP, Y + (size_t)j0 * ldy + r0 + QP * p0, ldy, m - QP * p0, buf + p0 * pstride, pstride, X + (size_t)j0 * xs, xs, K); break; \
    case 3: TILE(DT, 3, NP, Y + (size_t)j0 * ldy + r0 + QP * p0, ldy, m - QP * p0, buf + p0 * pstride, pstride, X + (size_t)j0 * xs, xs, K); break; \
    default: TILE(DT, 4, NP, Y + (size_t)j0 * ldy + r0 + QP * p0, ldy, m - QP * p0, buf + p0 * pstride, pstride, X + (size_t)j0 * xs, xs, K); break; \
    }
#define QP_GEMM(DT, PACK, TILE, NPM)                                                             \
    T static void Q(pack_##DT)(uint8_t *P, const uint8_t *W, size_t ws, int m, int K)            \
    {                                                                                            \
        PACK(DT_##DT, P, W, ws, m, K);   /* one copy per dtype, dt a constant */                \
    }                                                                                            \
    T static void Q(gemm_##DT)(float *Y, size_t ldy, const uint8_t *W, size_t ws, const uint8_t *X, \
                               size_t xs, int nr, int nx, int K, uint8_t *buf)                   \
    {                                                                                            \
        const size_t pstride = (size_t)(K / dtype_block(DT_##DT)) * Q(pblk)(DT_##DT);           \
        for (int r0 = 0; r0 < nr; r0 += 2 * QP) {                                                \
            int m = nr - r0 < 2 * QP ? nr - r0 : 2 * QP;                                         \
            Q(pack_##DT)(buf, W + (size_t)r0 * ws, ws, m < QP ? m : QP, K);                     \
            if (m > QP) Q(pack_##DT)(buf + pstride, W + (size_t)(r0 + QP) * ws, ws, m - QP, K);  \
            for (int p0 = 0; p0 * QP < m; p0 += NPM)                                             \
                for (int j0 = 0; j0 < nx; j0 += 4) {                                             \
                    if (NPM > 1 && m - QP * p0 > QP) QP_CASES(TILE, DT_##DT, 2)                  \
                    else QP_CASES(TILE, DT_##DT, 1)                                              \
                }                                                                                \
        }                                                                                        \
    }
#define QP_GEMMS(PACK32, TILE32, NP32, PACKK, TILEK, NPK)                                        \
    QP_GEMM(Q8_0, PACK32, TILE32, NP32) QP_GEMM(Q4_0, PACK32, TILE32, NP32)                       \
    QP_GEMM(Q4_1, PACK32, TILE32, NP32) QP_GEMM(Q5_0, PACK32, TILE32, NP32)                       \
    QP_GEMM(Q5_1, PACK32, TILE32, NP32)                                                          \
    QP_GEMM(Q4_K, PACKK, TILEK, NPK) QP_GEMM(Q5_K, PACKK, TILEK, NPK) QP_GEMM(Q6_K, PACKK, TILEK, NPK)
#endif

/* ------------------------------------------------------- per copy (T, Q, QVNNI) */

/* acc + Σ of each 4 adjacent u8·s8 products */
T QI qp_i Q(qp_dp)(qp_i acc, qp_i u, qp_i s)
{
#if QPW == 512 && QVNNI
    return _mm512_dpbusd_epi32(acc, u, s);
#elif QPW == 512
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#elif QVNNI
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* acc + Σ of each 2 adjacent s16·s16 products */
T QI qp_i Q(qp_dpw)(qp_i acc, qp_i a, qp_i b)
{
#if QPW == 512 && QVNNI
    return _mm512_dpwssd_epi32(acc, a, b);
#elif QPW == 512
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#elif QVNNI
    return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

/* the 4 bytes at p in every dword lane */
T QI qp_i Q(qp_bcast)(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return qp_iset1(v);
}

/* y[0..m) = the first m lanes of v (m ≥ QP: all QP) */
T QI void Q(qp_store)(float *y, qp_f v, int m)
{
#if QPW == 512
    if (m >= 16) _mm512_storeu_ps(y, v);
    else _mm512_mask_storeu_ps(y, (__mmask16)((1u << m) - 1), v);
#else
    if (m >= 8) _mm256_storeu_ps(y, v);
    else {
        float t[8];
        _mm256_storeu_ps(t, v);
        memcpy(y, t, (size_t)m * 4);
    }
#endif
}

/* R[r] = row r of a QP × 8 dword matrix → O[c] = column c (lane r = R[r] dword c) */
T QI void Q(qp_tr)(const __m256i R[QP], qp_i O[8])
{
#if QPW == 512
    static const int32_t t1[2][16] = {{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27},
                                      {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31}};
    static const int32_t t2[2][16] = {{0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29},
                                      {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31}};
    static const int32_t t3[2][16] = {{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30},
                                      {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}};
    __m512i X[8], A[4][2], B[2][4];   /* X[k] = rows 2k (low half), 2k + 1 (high half) */
    for (int k = 0; k < 8; k++) X[k] = _mm512_inserti64x4(_mm512_castsi256_si512(R[2 * k]), R[2 * k + 1], 1);
    for (int i = 0; i < 2; i++) {
        __m512i i1 = _mm512_loadu_si512(t1[i]);
        for (int m = 0; m < 4; m++) A[m][i] = _mm512_permutex2var_epi32(X[2 * m], i1, X[2 * m + 1]);
    }
    for (int q = 0; q < 4; q++)
        for (int p = 0; p < 2; p++)
            B[p][q] = _mm512_permutex2var_epi32(A[2 * p][q / 2], _mm512_loadu_si512(t2[q % 2]), A[2 * p + 1][q / 2]);
    for (int c = 0; c < 8; c++) O[c] = _mm512_permutex2var_epi32(B[0][c / 2], _mm512_loadu_si512(t3[c % 2]), B[1][c / 2]);
#else
    __m256i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(R[2 * i], R[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(R[2 * i], R[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) {   /* rows 0-3, 4-7 */
        u[4 * h + 0] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);
        u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]);
        u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
        u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
    }
    for (int c = 0; c < 4; c++) {
        O[c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20);
        O[c + 4] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31);
    }
#endif
}

/* Signed Q8_0 weights without VNNI (u8·s8 products need an unsigned side). Packing: *w (group g
 * of a panel block at o, signed) becomes what qp_sgn_abs wants, with its signs kept; use: s =
 * qp_sgn_get(block, g, w), then |w| · y·sign(w) = qp_sgn_abs(w) · qp_sgn_apply(y, s). */
T QI void Q(qp_sgn_pack)(uint8_t *o, int g, qp_i *w)
{
#if QPW == 512
    __mmask64 s = _mm512_movepi8_mask(*w);
    memcpy(o + 36 * QP + 8 * g, &s, 8);
    *w = _mm512_abs_epi8(*w);
#endif
}

T QI qp_sg Q(qp_sgn_get)(const uint8_t *o, int g, qp_i w)
{
#if QPW == 512
    __mmask64 s;
    memcpy(&s, o + 36 * QP + 8 * g, 8);
    return s;
#else
    return w;
#endif
}

T QI qp_i Q(qp_sgn_abs)(qp_i w)
{
#if QPW == 512
    return w;
#else
    return _mm256_sign_epi8(w, w);
#endif
}

T QI qp_i Q(qp_sgn_apply)(qp_i y, qp_sg s)
{
#if QPW == 512
    return _mm512_mask_sub_epi8(y, s, _mm512_setzero_si512(), y);
#else
    return _mm256_sign_epi8(y, s);
#endif
}

/* ------------------------------------------- weight decoding (256-bit, both widths) */

/* The 256 quants of the K-quant super-block at wb as unsigned bytes in element order (Q6_K
 * 0..63, not yet − 32), at t (32-byte aligned). */
T QI void Q(qp_deck)(const int dt, const uint8_t *wb, uint8_t *t)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    if (dt == DT_Q6_K) {
        for (int h = 0; h < 2; h++, t += 128) {
            __m256i ql0 = _mm256_loadu_si256((const __m256i *)(wb + 64 * h));
            __m256i ql1 = _mm256_loadu_si256((const __m256i *)(wb + 64 * h + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)(wb + 128 + 32 * h));
            _mm256_store_si256((__m256i *)t, _mm256_or_si256(_mm256_and_si256(ql0, m4), QP_HBITS(qh, 0, 0x30)));
            _mm256_store_si256((__m256i *)(t + 32), _mm256_or_si256(_mm256_and_si256(ql1, m4), QP_HBITS(qh, 2, 0x30)));
            _mm256_store_si256((__m256i *)(t + 64), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), QP_HBITS(qh, 4, 0x30)));
            _mm256_store_si256((__m256i *)(t + 96), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), QP_HBITS(qh, 6, 0x30)));
        }
        return;
    }
    const uint8_t *qs = wb + (dt == DT_Q4_K ? 16 : 48);
    __m256i qh = dt == DT_Q5_K ? _mm256_loadu_si256((const __m256i *)(wb + 16)) : _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (dt == DT_Q5_K) {
            switch (c) {   /* constant shifts */
            case 0: lo = _mm256_or_si256(lo, QP_HBITS(qh, 0, 0x10)); hi = _mm256_or_si256(hi, QP_HBITS(qh, 1, 0x10)); break;
            case 1: lo = _mm256_or_si256(lo, QP_HBITS(qh, 2, 0x10)); hi = _mm256_or_si256(hi, QP_HBITS(qh, 3, 0x10)); break;
            case 2: lo = _mm256_or_si256(lo, QP_HBITS(qh, 4, 0x10)); hi = _mm256_or_si256(hi, QP_HBITS(qh, 5, 0x10)); break;
            default: lo = _mm256_or_si256(lo, QP_HBITS(qh, 6, 0x10)); hi = _mm256_or_si256(hi, QP_HBITS(qh, 7, 0x10)); break;
            }
        }
        _mm256_store_si256((__m256i *)(t + 64 * c), lo);
        _mm256_store_si256((__m256i *)(t + 64 * c + 32), hi);
    }
}

/* The float scales of row r of a K-quant super-block at wb into a panel of QP rows: dsc[QP·s + r]
 * = d·sc_s (S = 8 sub-blocks of 32, Q6_K 16 of 16), Q4_K/Q5_K dmn[QP·s + r] = dmin·m_s; wb NULL:
 * a zero row. */
T QI void Q(qp_kscales)(const int dt, const uint8_t *wb, int r, float *dsc, float *dmn)
{
    if (dt == DT_Q6_K) {
        float d = wb ? _cvtsh_ss(q_rd16(wb + 208)) : 0.0f;
        for (int s = 0; s < 16; s++) dsc[QP * s + r] = wb ? d * (float)(int8_t)wb[192 + s] : 0.0f;
        return;
    }
    float d = wb ? _cvtsh_ss(q_rd16(wb)) : 0.0f, dmin = wb ? _cvtsh_ss(q_rd16(wb + 2)) : 0.0f;
    for (int s = 0; s < 8; s++) {
        uint8_t sc = 0, mm = 0;
        if (wb) q_scale_min_k4(s, wb + 4, &sc, &mm);
        dsc[QP * s + r] = d * (float)sc;
        dmn[QP * s + r] = dmin * (float)mm;
    }
}
