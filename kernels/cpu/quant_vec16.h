/* The weight decoders of the 16-bit-activation kernels (quant16_body.inc) per vector width (see
 * quant_vec.h, included before this, once per table copy). qpack16_body.inc
 * decodes its panels with its own code (qpack_vec.h).
 *   a step of the 32-element-block dtypes: QL blocks, one per 128-bit lane (the activation's
 *     A32/16 group of 4 blocks: half of it on AVX2, all of it on AVX-512), as 4 vectors of
 *     int16 (V[v] lane k = elements 8v..8v+7 of block k) and their f16 pairs widened, qvh dm;
 *   a K-quant super-block: Q16_NV vectors of int16 in element order (16 ymm / 8 zmm), summed
 *     in two int32 chains (vectors Q16_V0(i) / Q16_V1(i), i < Q16_NV/2) before the f32 scaling;
 *   Q16_TAIL2: a last partial step goes to the second accumulator chain (AVX2) or to the one
 *     after the last full step (AVX-512), as each kernel always did;
 *   Q16_L2: the AVX-512 decode also prefetches into the L2 (QPF_L2, Q8_0 and K-quants). */

#if QW == 256
#define QL 2
#define Q16_NV 16
#define Q16_V0(i) (i)       /* chain 0: the first half super-block, */
#define Q16_V1(i) (8 + (i)) /* chain 1: the second */
#define Q16_TAIL2 1
#define Q16_L2 0
#define QPF_L2 0
typedef __m128 qvh;
#define qh_zero _mm_setzero_ps
#define qh_add _mm_add_ps
#define qh_fma _mm_fmadd_ps
#define qh_load _mm_loadu_ps
#define qh_zext _mm256_zextps128_ps256
#define Q_HSUMH(v) Q(hsum4)(v)
/* d of block k (dm = {d0, x, d1, x}) in lane k's 4 f32 */
#define Q16_DW(dm) _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dm), _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2))
#define Q16_DX(dx) _mm256_set_m128(_mm_set1_ps((dx)[1]), _mm_set1_ps((dx)[0]))
/* the corrections of blocks 0, 1 into lanes 0, 4 */
#define Q16_CORR(c) _mm256_setr_epi32((c)[0], 0, 0, 0, (c)[1], 0, 0, 0)
/* the activations of block b (even): group b/4 (256 bytes), its half (b & 3)/2 */
#define Q16_YG(xr, b) ((xr) + (size_t)64 * ((b) & ~3) + 32 * (((b) & 3) >> 1))

/* Blocks 0..n-1 (n ≤ 2; the other zero) at p, bb bytes apart, as int16: V[v] lane k = elements
 * 8v..8v+7 of block k (the activation's group layout, half of it); dm = {d0, x, d1, x} (x: m for
 * Q4_1/Q5_1, else not to be used). */
T QI void Q(dec)(const int dt, const int n, const uint8_t *p, size_t bb, __m256i V[4], __m128 *dm)
{
    __m128i h = _mm_loadu_si32(p);
    if (n > 1) h = _mm_insert_epi32(h, (int)q_rd32(p + bb), 1);
    *dm = _mm_cvtph_ps(h);
    if (dt == DT_Q8_0) {
        __m256i A = _mm256_loadu_si256((const __m256i *)(p + 2));
        __m256i B = n > 1 ? _mm256_loadu_si256((const __m256i *)(p + bb + 2)) : _mm256_setzero_si256();
        __m256i lo = _mm256_unpacklo_epi64(A, B), hi = _mm256_unpackhi_epi64(A, B);   /* qwords 0 | 2, 1 | 3 */
        V[0] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(lo));
        V[1] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(hi));
        V[2] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(lo, 1));
        V[3] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(hi, 1));
        return;
    }
    const int qo = dt == DT_Q4_0 ? 2 : dt == DT_Q4_1 ? 4 : dt == DT_Q5_0 ? 6 : 8;
    __m256i z = _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(p + qo)));
    if (n > 1) z = _mm256_inserti128_si256(z, _mm_loadu_si128((const __m128i *)(p + bb + qo)), 1);
    const __m256i m4 = _mm256_set1_epi8(0x0F), zero = _mm256_setzero_si256();
    __m256i lo = _mm256_and_si256(z, m4), hi = _mm256_and_si256(_mm256_srli_epi16(z, 4), m4);
    if (dt == DT_Q5_0 || dt == DT_Q5_1) {
        const int ho = dt == DT_Q5_0 ? 2 : 4;
        uint32_t h0 = q_rd32(p + ho), h1 = n > 1 ? q_rd32(p + bb + ho) : 0;
        lo = _mm256_or_si256(lo, Q(bit5)((h0 & 0xFFFF) | h1 << 16));
        hi = _mm256_or_si256(hi, Q(bit5)(h0 >> 16 | (h1 >> 16) << 16));
    }
    V[0] = _mm256_unpacklo_epi8(lo, zero);
    V[1] = _mm256_unpackhi_epi8(lo, zero);
    V[2] = _mm256_unpacklo_epi8(hi, zero);
    V[3] = _mm256_unpackhi_epi8(hi, zero);
}

/* words of v shifted so bit b lands on bit 4 (bits b, b+1 on 4, 5), masked */
#define Q16_HB(v, b, mask) _mm256_and_si256((b) <= 4 ? _mm256_slli_epi16(v, 4 - (b)) : _mm256_srli_epi16(v, (b) - 4), _mm256_set1_epi16(mask))

T QI __m256i Q(w16)(const uint8_t *p) { return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)); }

/* The 256 quants of super-block wb as 16 vectors of 16 int16 in element order (Q4_K/Q5_K 0..31,
 * Q6_K q − 32), and the int16 scale of each (sc[i]: vector i's). */
T QI void Q(deck)(const int dt, const uint8_t *wb, __m256i V[16], int16_t sc[16])
{
    const __m256i m4 = _mm256_set1_epi16(0x0F);
    if (dt == DT_Q6_K) {
        const __m256i o32 = _mm256_set1_epi16(32);
        for (int h = 0; h < 2; h++)
            for (int t = 0; t < 2; t++) {   /* l = 16t..16t+15 of each 32 */
                __m256i A = Q(w16)(wb + 64 * h + 16 * t), B = Q(w16)(wb + 64 * h + 32 + 16 * t);
                __m256i H = Q(w16)(wb + 128 + 32 * h + 16 * t);
                V[8 * h + t] = _mm256_or_si256(_mm256_and_si256(A, m4), Q16_HB(H, 0, 0x30));
                V[8 * h + 2 + t] = _mm256_or_si256(_mm256_and_si256(B, m4), Q16_HB(H, 2, 0x30));
                V[8 * h + 4 + t] = _mm256_or_si256(_mm256_srli_epi16(A, 4), Q16_HB(H, 4, 0x30));
                V[8 * h + 6 + t] = _mm256_or_si256(_mm256_srli_epi16(B, 4), Q16_HB(H, 6, 0x30));
            }
        for (int i = 0; i < 16; i++) {
            V[i] = _mm256_sub_epi16(V[i], o32);
            sc[i] = (int8_t)wb[192 + i];
        }
        return;
    }
    const uint8_t *qs = wb + (dt == DT_Q4_K ? 16 : 48);
    for (int c = 0; c < 4; c++)
        for (int t = 0; t < 2; t++) {
            __m256i q = Q(w16)(qs + 32 * c + 16 * t);
            V[4 * c + t] = _mm256_and_si256(q, m4);
            V[4 * c + 2 + t] = _mm256_srli_epi16(q, 4);
        }
    if (dt == DT_Q5_K)
        for (int t = 0; t < 2; t++) {
            __m256i qh = Q(w16)(wb + 16 + 16 * t);
            V[0 + t] = _mm256_or_si256(V[0 + t], Q16_HB(qh, 0, 0x10));
            V[2 + t] = _mm256_or_si256(V[2 + t], Q16_HB(qh, 1, 0x10));
            V[4 + t] = _mm256_or_si256(V[4 + t], Q16_HB(qh, 2, 0x10));
            V[6 + t] = _mm256_or_si256(V[6 + t], Q16_HB(qh, 3, 0x10));
            V[8 + t] = _mm256_or_si256(V[8 + t], Q16_HB(qh, 4, 0x10));
            V[10 + t] = _mm256_or_si256(V[10 + t], Q16_HB(qh, 5, 0x10));
            V[12 + t] = _mm256_or_si256(V[12 + t], Q16_HB(qh, 6, 0x10));
            V[14 + t] = _mm256_or_si256(V[14 + t], Q16_HB(qh, 7, 0x10));
        }
    for (int i = 0; i < 16; i++) {
        uint8_t s, m;
        q_scale_min_k4(i / 2, wb + 4, &s, &m);
        sc[i] = s;
    }
}

/* the weights of super-block wb (V, Q16_NV vectors) and each vector's int16 scales (S) */
T QI void Q(kdec16)(const int dt, const uint8_t *wb, __m256i V[16], __m256i S[16])
{
    int16_t sc[16];
    Q(deck)(dt, wb, V, sc);
    for (int i = 0; i < 16; i++) S[i] = _mm256_set1_epi16(sc[i]);
}
#undef Q16_HB

#else
/* ======================================================================== 512 bits */
#define QL 4
#define Q16_NV 8
#define Q16_V0(i) (2 * (i))     /* chain 0: the even vectors, */
#define Q16_V1(i) (2 * (i) + 1) /* chain 1: the odd ones */
#define Q16_TAIL2 0
#define Q16_L2 1
typedef __m256 qvh;
#define qh_zero _mm256_setzero_ps
#define qh_add _mm256_add_ps
#define qh_fma _mm256_fmadd_ps
#define qh_load _mm256_loadu_ps
#define qh_zext _mm512_zextps256_ps512
#define Q_HSUMH(v) Q(hsum8)(v)
#define Q16_I4 _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0)
#define Q16_DW(dm) _mm512_permutexvar_ps(_mm512_add_epi32(Q16_I4, Q16_I4), _mm512_castps256_ps512(dm))
#define Q16_DX(dx) _mm512_permutexvar_ps(Q16_I4, _mm512_castps128_ps512(_mm_loadu_ps(dx)))
/* −c·Σq of block k into lane 4k */
#define Q16_CORR(c) _mm512_maskz_permutexvar_epi32(0x1111, Q16_I4, _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(c))))
/* the activations of block b (a multiple of 4): group b/4 (256 bytes) */
#define Q16_YG(xr, b) ((xr) + (size_t)64 * (b))

/* Blocks 0..n-1 (n ≤ 4; the others zero) at p, bb bytes apart, as int16 in the A32/16 group
 * layout: V[v] lane k = elements 8v..8v+7 of block k (unsigned for the nibble dtypes, signed
 * Q8_0); dm = the f16 pairs at each block's start widened ({d_k, m_k} for Q4_1/Q5_1; for the
 * others d_k and a value not to be used). */
T QI void Q(dec)(const int dt, const int n, const uint8_t *p, size_t bb, __m512i V[4], __m256 *dm)
{
    __m128i h = _mm_loadu_si32(p);
    if (n > 1) h = _mm_insert_epi32(h, (int)q_rd32(p + bb), 1);
    if (n > 2) h = _mm_insert_epi32(h, (int)q_rd32(p + 2 * bb), 2);
    if (n > 3) h = _mm_insert_epi32(h, (int)q_rd32(p + 3 * bb), 3);
    *dm = _mm256_cvtph_ps(h);
    if (dt == DT_Q8_0) {
        __m512i A = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(p + 2))), B = _mm512_setzero_si512();
        if (n > 1) A = _mm512_inserti64x4(A, _mm256_loadu_si256((const __m256i *)(p + bb + 2)), 1);
        if (n > 2) B = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(p + 2 * bb + 2)));
        if (n > 3) B = _mm512_inserti64x4(B, _mm256_loadu_si256((const __m256i *)(p + 3 * bb + 2)), 1);
        /* qword v of each block (elements 8v..8v+7), blocks in order */
        __m512i P01 = _mm512_permutex2var_epi64(A, _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0), B);
        __m512i P23 = _mm512_permutex2var_epi64(A, _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2), B);
        V[0] = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(P01));
        V[1] = _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(P01, 1));
        V[2] = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(P23));
        V[3] = _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(P23, 1));
        return;
    }
    const int qo = dt == DT_Q4_0 ? 2 : dt == DT_Q4_1 ? 4 : dt == DT_Q5_0 ? 6 : 8;
    __m512i z = _mm512_zextsi128_si512(_mm_loadu_si128((const __m128i *)(p + qo)));
    if (n > 1) z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(p + bb + qo)), 1);
    if (n > 2) z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(p + 2 * bb + qo)), 2);
    if (n > 3) z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(p + 3 * bb + qo)), 3);
    const __m512i m4 = _mm512_set1_epi8(0x0F), zero = _mm512_setzero_si512();
    __m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
    if (dt == DT_Q5_0 || dt == DT_Q5_1) {   /* the 5th bits: bit j of qh → element j */
        const int ho = dt == DT_Q5_0 ? 2 : 4;
        uint64_t kl = 0, kh = 0;
        for (int k = 0; k < n; k++) {
            uint64_t hk = q_rd32(p + k * bb + ho);
            kl |= (hk & 0xFFFF) << 16 * k;
            kh |= (hk >> 16) << 16 * k;
        }
        const __m512i b16 = _mm512_set1_epi8(0x10);
        lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(kl), lo, b16);
        hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(kh), hi, b16);
    }
    V[0] = _mm512_unpacklo_epi8(lo, zero);
    V[1] = _mm512_unpackhi_epi8(lo, zero);
    V[2] = _mm512_unpacklo_epi8(hi, zero);
    V[3] = _mm512_unpackhi_epi8(hi, zero);
}

/* words of v shifted so bit `b` lands on bit 4 (5: bits b, b+1 on 4, 5), masked */
#define Q16_HB(v, b, mask) _mm512_and_si512((b) <= 4 ? _mm512_slli_epi16(v, 4 - (b)) : _mm512_srli_epi16(v, (b) - 4), _mm512_set1_epi16(mask))

/* The 256 quants of super-block wb as 8 vectors of 32 int16 in element order (Q4_K/Q5_K 0..31,
 * Q6_K q − 32), and the int16 scale of each vector's words (sc: Q4_K/Q5_K the 8 scales as
 * words 0..7; Q6_K the 16 as words 0..15). */
T QI void Q(deck)(const int dt, const uint8_t *wb, __m512i V[8], __m512i S[8])
{
    const __m512i m4 = _mm512_set1_epi16(0x0F);
    if (dt == DT_Q6_K) {
        __m512i sc = _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wb + 192))));
        const __m512i o32 = _mm512_set1_epi16(32), c30 = _mm512_set1_epi16(0x30);
        for (int h = 0; h < 2; h++) {
            __m512i A = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(wb + 64 * h)));
            __m512i B = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(wb + 64 * h + 32)));
            __m512i H = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(wb + 128 + 32 * h)));
            V[4 * h + 0] = _mm512_ternarylogic_epi32(_mm512_and_si512(A, m4), _mm512_slli_epi16(H, 4), c30, 0xF8);
            V[4 * h + 1] = _mm512_ternarylogic_epi32(_mm512_and_si512(B, m4), _mm512_slli_epi16(H, 2), c30, 0xF8);
            V[4 * h + 2] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(A, 4), H, c30, 0xF8);
            V[4 * h + 3] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(B, 4), _mm512_srli_epi16(H, 2), c30, 0xF8);
            for (int v = 0; v < 4; v++) {   /* vector 4h + v: scales 2(4h+v) (words 0..15), +1 */
                int i = 2 * (4 * h + v);
                V[4 * h + v] = _mm512_sub_epi16(V[4 * h + v], o32);
                S[4 * h + v] = _mm512_permutexvar_epi16(_mm512_inserti64x4(_mm512_set1_epi16((short)i), _mm256_set1_epi16((short)(i + 1)), 1), sc);
            }
        }
        return;
    }
    __m512i sc = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(Q(k4scales)(wb + 4)));
    const uint8_t *qs = wb + (dt == DT_Q4_K ? 16 : 48);
    __m512i qh = dt == DT_Q5_K ? _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(wb + 16))) : _mm512_setzero_si512();
    for (int c = 0; c < 4; c++) {
        __m512i t = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(qs + 32 * c)));
        V[2 * c] = _mm512_and_si512(t, m4);
        V[2 * c + 1] = _mm512_srli_epi16(t, 4);
        if (dt == DT_Q5_K) {
            switch (c) {   /* constant shifts: bit 2c → element 64c + l, bit 2c + 1 → 64c + 32 + l */
            case 0: V[0] = _mm512_or_si512(V[0], Q16_HB(qh, 0, 0x10)); V[1] = _mm512_or_si512(V[1], Q16_HB(qh, 1, 0x10)); break;
            case 1: V[2] = _mm512_or_si512(V[2], Q16_HB(qh, 2, 0x10)); V[3] = _mm512_or_si512(V[3], Q16_HB(qh, 3, 0x10)); break;
            case 2: V[4] = _mm512_or_si512(V[4], Q16_HB(qh, 4, 0x10)); V[5] = _mm512_or_si512(V[5], Q16_HB(qh, 5, 0x10)); break;
            default: V[6] = _mm512_or_si512(V[6], Q16_HB(qh, 6, 0x10)); V[7] = _mm512_or_si512(V[7], Q16_HB(qh, 7, 0x10)); break;
            }
        }
    }
    for (int s = 0; s < 8; s++) S[s] = _mm512_permutexvar_epi16(_mm512_set1_epi16((short)s), sc);
}
#undef Q16_HB

T QI void Q(kdec16)(const int dt, const uint8_t *wb, __m512i V[8], __m512i S[8]) { Q(deck)(dt, wb, V, S); }
#endif
