/* The weight decoders of the 8-bit-activation kernels (quant_body.inc) per vector width (see
 * quant_vec.h, included before this, once per table copy; the packed GEMMs decode their panels
 * with their own code, qpack_vec.h).
 *   a step of the 32-element-block dtypes: QSB blocks in one qvi (AVX2: one block per ymm;
 *     AVX-512: two per zmm, an odd last block alone in the low half, high half zero);
 *   a chunk of a K-quant super-block: 64 elements in QH vectors (2 ymm / 1 zmm);
 *   QNW: weight rows per prefill register tile (1 / 2);
 *   QKPF: software prefetch in the K-quant decode (AVX-512; the AVX2 kernel never had it).
 * The AVX-512 decode of the nibble dtypes, 4 blocks a step (Q(mv4), Q(mv4row)), has no AVX2
 * counterpart: the same grouping in a ymm would change the avx2 tables' summation order. */

#if QW == 256
#define QSB 1
#define QH 2
#define QNW 1
#define QKPF 0

/* The block at p of a 32-element dtype: the weights as bytes (unsigned unless Q8_0 without
 * VNNI; Q8_0 with VNNI: q + 128) and *dm = {d, m, 0, 0} (m = 0 for the dtypes without one). */
T QI __m256i Q(dec32)(const int dt, const uint8_t *p, __m128 *dm)
{
    if (dt == DT_Q4_1 || dt == DT_Q5_1) *dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)q_rd32(p)));
    else *dm = _mm_cvtph_ps(_mm_cvtsi32_si128(q_rd16(p)));
    return Q(quants32)(dt, p);
}

/* One step (one block) at p; two and bb are for the 512-bit steps. */
T QI __m256i Q(dstep)(const int dt, const int two, const uint8_t *p, size_t bb, __m128 *dm)
{
    return Q(dec32)(dt, p, dm);
}

/* y with the sign of q applied (0 where q = 0), |q| (Q8_0 without VNNI) */
#define Q_SGN(y, q) _mm256_sign_epi8(y, q)
#define Q_ABS(q) _mm256_sign_epi8(q, q)
/* the weight scales of a step (broadcast d), the activation bytes, scales and corrections */
#define Q_DW(dm, hasm, two) _mm256_broadcastss_ps(dm)
#define Q_LDY(p, two) _mm256_loadu_si256((const __m256i *)(p))
#define Q_LDX(p, two) _mm256_broadcast_ss(p)
#define Q_LDC(p, two) _mm256_zextsi128_si256(_mm_loadu_si32(p))

/* bits 2i, 2i+1 (n = 2) or bit b (n = 1) of every byte moved to bit 4 (and 5) */
#define Q_HBITS(v, b, mask) _mm256_and_si256((b) <= 4 ? _mm256_slli_epi16(v, 4 - (b)) : _mm256_srli_epi16(v, (b) - 4), _mm256_set1_epi8(mask))

/* K-quant scale registers: Q6_K the 16 int8 scales (low 128 bits), Q4_K/Q5_K the 8 int16
 * scales in both 128-bit lanes */
#define Q_KPREP6(p) _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(p)))
#define Q_KPREP4(sm) _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm))

/* Chunk c (elements 64c..64c+63) of the super-block at w: the weights (unsigned bytes) as two
 * 32-element slices u[0..1], and their int16 scales (per 32, or per 16 for Q6_K) scv[0..1]. */
T QI void Q(kdec)(const int dt, const uint8_t *w, int c, __m256i sc, __m256i u[2], __m256i scv[2])
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    if (dt == DT_Q6_K) {   /* half c/2; slices 2(c&1), +1: ql & 0x0F (c even) or >> 4, with 2 qh bits */
        const uint8_t *h = w + 64 * (c / 2);
        __m256i ql0 = _mm256_loadu_si256((const __m256i *)h), ql1 = _mm256_loadu_si256((const __m256i *)(h + 32));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * (c / 2)));
        if (c & 1) {
            u[0] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), Q_HBITS(qh, 4, 0x30));
            u[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), Q_HBITS(qh, 6, 0x30));
        } else {
            u[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), Q_HBITS(qh, 0, 0x30));
            u[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), Q_HBITS(qh, 2, 0x30));
        }
        for (int i = 0; i < 2; i++) {   /* int16 scales of the two 16-element halves of slice 2c + i */
            const int s = 2 * c + i;
            __m128i s2 = _mm_shuffle_epi8(_mm256_castsi256_si128(sc), _mm_set_epi64x(0x0101010101010101ll * (2 * s + 1),
                                                                                     0x0101010101010101ll * (2 * s)));
            scv[i] = _mm256_cvtepi8_epi16(s2);
        }
        return;
    }
    const uint8_t *qs = w + (dt == DT_Q4_K ? 16 : 48);
    __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
    u[0] = _mm256_and_si256(q, m4);
    u[1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    if (dt == DT_Q5_K) {
        __m256i qh = _mm256_loadu_si256((const __m256i *)(w + 16));
        u[0] = _mm256_or_si256(u[0], Q_HBITS(qh, 2 * c, 0x10));
        u[1] = _mm256_or_si256(u[1], Q_HBITS(qh, 2 * c + 1, 0x10));
    }
    for (int i = 0; i < 2; i++) {   /* broadcast int16 scale k */
        const int k = 2 * c + i;
        scv[i] = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)(0x0100 * (2 * k + 1) + 2 * k)));
    }
}

#else
#define QSB 2
#define QH 1
#define QNW 2
#define QKPF 1

/* Blocks b (at p) and, when two, b + 1 (at p + bb) as unsigned bytes (Q8_0 without VNNI:
 * signed) in a zmm (one block: low half, high half zero), and dm = {d0, m0, d1, m1} for
 * Q4_1/Q5_1, {d0, d1, 0, 0} for the others. */
T QI __m512i Q(dec2)(const int dt, const int two, const uint8_t *p, size_t bb, __m128 *dm)
{
    const int hasm = dt == DT_Q4_1 || dt == DT_Q5_1;
    if (hasm) {
        __m128i h = _mm_cvtsi32_si128((int)q_rd32(p));
        if (two) h = _mm_insert_epi32(h, (int)q_rd32(p + bb), 1);
        *dm = _mm_cvtph_ps(h);
    } else *dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)(q_rd16(p) | (two ? (uint32_t)q_rd16(p + bb) << 16 : 0))));
    if (dt == DT_Q8_0) {
        __m512i z = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(p + 2)));
        if (two) z = _mm512_inserti64x4(z, _mm256_loadu_si256((const __m256i *)(p + bb + 2)), 1);
#if QVNNI
        z = _mm512_xor_si512(z, _mm512_set1_epi8((char)0x80));
        if (!two) z = _mm512_zextsi256_si512(_mm512_castsi512_si256(z));
#endif
        return z;
    }
    const int qo = dt == DT_Q4_0 ? 2 : dt == DT_Q4_1 ? 4 : dt == DT_Q5_0 ? 6 : 8;
    /* 128-bit lanes: qs0, qs0, qs1, qs1 → & 0x0F, >> 4 & 0x0F per lane pair */
    __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(p + qo)));
    if (two) z = _mm512_mask_broadcast_i32x4(z, 0xFF00, _mm_loadu_si128((const __m128i *)(p + bb + qo)));
    z = _mm512_and_si512(_mm512_srlv_epi64(z, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0F));
    if (!two) z = _mm512_zextsi256_si512(_mm512_castsi512_si256(z));
    if (dt == DT_Q5_0 || dt == DT_Q5_1) {
        const int ho = dt == DT_Q5_0 ? 2 : 4;
        uint64_t h = q_rd32(p + ho) | (two ? (uint64_t)q_rd32(p + bb + ho) << 32 : 0);
        z = _mm512_mask_add_epi8(z, _cvtu64_mask64(h), z, _mm512_set1_epi8(0x10));
    }
    return z;
}
T QI __m512i Q(dstep)(const int dt, const int two, const uint8_t *p, size_t bb, __m128 *dm)
{
    return Q(dec2)(dt, two, p, bb, dm);
}

#define Q_SGN(y, q) _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(q), _mm512_setzero_si512(), y)
#define Q_ABS(q) _mm512_abs_epi8(q)
/* d of both blocks in lanes 0-7 / 8-15 ({d0, m0, d1, m1}: index 2 for the second, else 1) */
#define Q_DW(dm, hasm, two)                                                                    \
    ((two) ? _mm512_permutexvar_ps(_mm512_set_epi32((hasm) + 1, (hasm) + 1, (hasm) + 1, (hasm) + 1, (hasm) + 1, \
                                                    (hasm) + 1, (hasm) + 1, (hasm) + 1, 0, 0, 0, 0, 0, 0, 0, 0), \
                                   _mm512_castps128_ps512(dm))                                 \
           : _mm512_broadcastss_ps(dm))
#define Q_LDY(p, two) ((two) ? _mm512_loadu_si512(p) : _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(p))))
#define Q_LDX(p, two)                                                                          \
    ((two) ? _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), \
                                   _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double *)(p))))) \
           : _mm512_set1_ps(*(p)))
/* the corrections of the step's blocks into lanes 0 (and 8) */
#define Q_LDC(p, two) ((two) ? _mm512_maskz_expandloadu_epi32(0x0101, p) : _mm512_zextsi128_si512(_mm_loadu_si32(p)))

/* Decode, one row, nibble dtypes: blocks b..b+3 with the low and the high half of each block in
 * the same int32 lanes (lanes 4i..4i+3: block i), so the f32 scaling runs once per 4 blocks
 * per zmm: weights [q0 | q1 | q2 | q3] & 0x0F and >> 4, activations regrouped to match (lows,
 * highs of the 4 blocks) with two vshufi64x2 (AVX-512 only, see the top). */
T QI void Q(mv4)(const int dt, const uint8_t *w, size_t bb, const uint8_t *xr, int b, int K, __m512 *acc,
                 __m256 *accm)
{
    const int hasm = dt == DT_Q4_1 || dt == DT_Q5_1, five = dt == DT_Q5_0 || dt == DT_Q5_1;
    const int qo = dt == DT_Q4_0 ? 2 : dt == DT_Q4_1 ? 4 : dt == DT_Q5_0 ? 6 : 8;
    __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(w + qo)));
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(w + bb + qo)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(w + 2 * bb + qo)), 2);
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(w + 3 * bb + qo)), 3);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
    if (five) {
        const int ho = dt == DT_Q5_0 ? 2 : 4;
        uint64_t h0 = q_rd32(w + ho), h1 = q_rd32(w + bb + ho), h2 = q_rd32(w + 2 * bb + ho), h3 = q_rd32(w + 3 * bb + ho);
        uint64_t kl = (h0 & 0xFFFF) | (h1 & 0xFFFF) << 16 | (h2 & 0xFFFF) << 32 | (h3 & 0xFFFF) << 48;
        uint64_t kh = h0 >> 16 | (h1 >> 16) << 16 | (h2 >> 16) << 32 | (h3 >> 16) << 48;
        const __m512i b16 = _mm512_set1_epi8(0x10);
        lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(kl), lo, b16);
        hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(kh), hi, b16);
    }
    __m512i ya = _mm512_loadu_si512(xr + 32 * b), yb = _mm512_loadu_si512(xr + 32 * b + 64);
    __m512i p = _mm512_setzero_si512();
    if (!hasm)   /* −c·Σy of block i into lane 4i */
        p = _mm512_maskz_permutexvar_epi32(0x1111, _mm512_set_epi32(0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0),
                                           _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)((const int32_t *)(xr + qa_off_corr(K)) + b))));
    p = Q(dp)(p, lo, _mm512_shuffle_i64x2(ya, yb, 0x88));
    p = Q(dp)(p, hi, _mm512_shuffle_i64x2(ya, yb, 0xDD));
    /* the first 4 bytes of each block: {d, m} (Q4_1/Q5_1) or d and 2 bytes not used */
    __m128i h01 = _mm_unpacklo_epi32(_mm_loadu_si32(w), _mm_loadu_si32(w + bb));
    __m128i h23 = _mm_unpacklo_epi32(_mm_loadu_si32(w + 2 * bb), _mm_loadu_si32(w + 3 * bb));
    __m256 dm = _mm256_cvtph_ps(_mm_unpacklo_epi64(h01, h23));   /* d0 m0 d1 m1 d2 m2 d3 m3 */
    const __m512i i4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    __m512 dw = _mm512_permutexvar_ps(_mm512_add_epi32(i4, i4), _mm512_castps256_ps512(dm));
    if (hasm) *accm = _mm256_fmadd_ps(dm, _mm256_loadu_ps((const float *)(xr + qa_off_s2(K)) + 2 * b), *accm);
    __m512 dx = _mm512_permutexvar_ps(i4, _mm512_castps128_ps512(_mm_loadu_ps((const float *)(xr + qa_off_d(K)) + b)));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, dx), *acc);
}

/* One decode row's blocks from 0 in steps of 4 (two accumulator chains, a prefetch QPF bytes
 * ahead) into *acc / *accm (zero on entry); returns the first block not done. */
T QI int Q(mv4row)(const int dt, const uint8_t *w, size_t bb, const uint8_t *xr, int nb, int K, __m512 *acc,
                   __m128 *accm)
{
    __m512 acc2 = _mm512_setzero_ps();
    __m256 am = _mm256_setzero_ps(), am2 = _mm256_setzero_ps();
    int b = 0;
    for (; b + 8 <= nb; b += 8) {
        for (int o = 0; o < (int)(8 * bb); o += 64) _mm_prefetch((const char *)w + (size_t)b * bb + QPF + o, _MM_HINT_T0);
        Q(mv4)(dt, w + (size_t)b * bb, bb, xr, b, K, acc, &am);
        Q(mv4)(dt, w + (size_t)(b + 4) * bb, bb, xr, b + 4, K, &acc2, &am2);
    }
    for (; b + 4 <= nb; b += 4) Q(mv4)(dt, w + (size_t)b * bb, bb, xr, b, K, acc, &am);
    *acc = _mm512_add_ps(*acc, acc2);
    am = _mm256_add_ps(am, am2);
    *accm = _mm_add_ps(_mm256_castps256_ps128(am), _mm256_extractf128_ps(am, 1));
    return b;
}

/* int16 lane pattern: lanes 16i..16i+15 ← element c·2 + i (Q4_K/Q5_K: scale per 32), or lanes
 * 8i.. ← element 4c + i (Q6_K: scale per 16) */
#define Q_IDX32(c) _mm512_set_epi16(2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1, \
    2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1,2*(c)+1, 2*(c),2*(c),2*(c),2*(c),2*(c),2*(c), \
    2*(c),2*(c),2*(c),2*(c),2*(c),2*(c),2*(c),2*(c),2*(c),2*(c))
#define Q_IDX16(c) _mm512_set_epi16(4*(c)+3,4*(c)+3,4*(c)+3,4*(c)+3,4*(c)+3,4*(c)+3,4*(c)+3,4*(c)+3, \
    4*(c)+2,4*(c)+2,4*(c)+2,4*(c)+2,4*(c)+2,4*(c)+2,4*(c)+2,4*(c)+2, 4*(c)+1,4*(c)+1,4*(c)+1,4*(c)+1, \
    4*(c)+1,4*(c)+1,4*(c)+1,4*(c)+1, 4*(c),4*(c),4*(c),4*(c),4*(c),4*(c),4*(c),4*(c))

T QI __m512i Q(sidx)(const int six, int c)
{
    switch (c) {
    case 0: return six ? Q_IDX16(0) : Q_IDX32(0);
    case 1: return six ? Q_IDX16(1) : Q_IDX32(1);
    case 2: return six ? Q_IDX16(2) : Q_IDX32(2);
    default: return six ? Q_IDX16(3) : Q_IDX32(3);
    }
}

/* weights of chunk c (elements 64c..64c+63) of the super-block at w and its int16 scales */
T QI __m512i Q(deck)(const int dt, const uint8_t *w, int c, __m512i sc16, __m512i *scv)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    if (dt == DT_Q6_K) {   /* half h = c/2; c even: ql & 0x0F | qh bits 0-1 / 2-3, odd: ql >> 4 | bits 4-5 / 6-7 */
        int h = c / 2;
        __m512i ql = _mm512_loadu_si512(w + 64 * h);
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w + 128 + 32 * h)));
        __m512i lo, hb;
        if (c & 1) {
            lo = _mm512_and_si512(_mm512_srli_epi16(ql, 4), m4);
            hb = _mm512_srlv_epi64(qh, _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0));
        } else {
            lo = _mm512_and_si512(ql, m4);
            hb = _mm512_sllv_epi64(qh, _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4));
        }
        *scv = _mm512_permutexvar_epi16(Q(sidx)(1, c), sc16);
        return _mm512_ternarylogic_epi32(lo, hb, _mm512_set1_epi8(0x30), 0xF8);   /* lo | (hb & 0x30) */
    }
    const uint8_t *qs = w + (dt == DT_Q4_K ? 16 : 48);
    __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * c)));
    q = _mm512_and_si512(_mm512_srlv_epi64(q, _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0)), m4);
    if (dt == DT_Q5_K) {
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w + 16)));
        __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * c))), _mm256_set1_epi8((char)(2 << (2 * c))), 1);
        q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(qh, bit), q, _mm512_set1_epi8(0x10));
    }
    *scv = _mm512_permutexvar_epi16(Q(sidx)(0, c), sc16);
    return q;
}

/* K-quant scale registers: the int16 scales (Q6_K: 16 per 16, Q4_K/Q5_K: 8 per 32) */
#define Q_KPREP6(p) _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p))))
#define Q_KPREP4(sm) _mm512_zextsi128_si512(_mm_cvtepu8_epi16(sm))

T QI void Q(kdec)(const int dt, const uint8_t *w, int c, __m512i sc, __m512i u[1], __m512i scv[1])
{
    u[0] = Q(deck)(dt, w, c, sc, scv);
}
#endif
