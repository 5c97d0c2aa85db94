/* Vector-width primitives of the quantized decode / small-tile kernels (quant_body.inc: 8-bit
 * activations; quant16_body.inc: 16-bit), for QW = 256 (quant_avx2.c, quant16_avx2.c: the
 * "avx2" and "avxvnni" tables) or QW = 512 (quant_avx512.c, quant16_avx512.c: "avx512",
 * "avx512vnni"): the vector types and the integer / f32 operations the bodies use, and the
 * 256-bit decoding of a 32-element block that those kernels and the packed GEMMs (qpack_vec.h)
 * share; the other weight decoders of each activation width are in quant_vec8.h /
 * quant_vec16.h. Included once per
 * table copy, after T (the target attribute), Q(x) (the copy's name suffix) and QVNNI (1:
 * vpdpbusd/vpdpwssd, 0: vpmaddubsw / vpmaddwd + vpaddd) are set, hence no include guard.
 *   qvi / qvf: one vector of int32 / f32 lanes (ymm or zmm);
 *   QSUM4: the decode row sums are reduced 4 rows at a time (AVX-512: the order those tables
 *     always had; AVX2 reduces each row alone, and keeps that so its results stay the same). */

/* ------------------------------------------------------------------ shared by both widths */

/* Σ of the 4 lanes of s */
T QI float Q(hsum4)(__m128 s)
{
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 8 scales (bytes 0..7) and mins (8..15) of a Q4_K/Q5_K super-block (ggml's unpacking of
 * the 12 scale bytes at s). */
T QI __m128i Q(k4scales)(const uint8_t *s)
{
    /* q = the 12 scale bytes (+ 4 more of the block, not used); sc_j = q_j & 63, m_j = q_{j+4} & 63
     * (j < 4); sc_j = q_{j+4} & 15 | (q_{j-4} >> 6) << 4, m_j = q_{j+4} >> 4 | (q_j >> 6) << 4 */
    __m128i q = _mm_loadu_si128((const __m128i *)s);
    __m128i t1 = _mm_shuffle_epi8(q, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    __m128i t2 = _mm_shuffle_epi8(q, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    __m128i r = _mm_and_si128(t1, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
    r = _mm_or_si128(r, _mm_and_si128(_mm_srli_epi16(t1, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    return _mm_or_si128(r, _mm_and_si128(_mm_srli_epi16(t2, 2), _mm_set1_epi8(0x30)));
}

/* Σ of the 8 lanes of v */
T QI float Q(hsum8)(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 256-bit decoding of one 32-element block, used at both widths by the 8-bit decode kernels
 * (quant_vec8.h), the 16-bit ones (quant_vec16.h: bit5) and the packed GEMMs (qpack_vec.h). */

/* 0x10 in byte k where bit k of h is set */
T QI __m256i Q(bit5)(uint32_t h)
{
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), shuf), sel);
    return _mm256_and_si256(_mm256_cmpeq_epi8(b, sel), _mm256_set1_epi8(0x10));
}

/* The 32 nibbles of 16 bytes in element order (low nibbles, then high). */
T QI __m256i Q(nib32)(const uint8_t *p)
{
    __m128i q = _mm_loadu_si128((const __m128i *)p);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

/* The quants of the 32-element block at p (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) as bytes in element
 * order: unsigned (Q4_0 0..15, Q5_0 0..31, ...), Q8_0 signed, or with VNNI q + 128 (unsigned). */
T QI __m256i Q(quants32)(const int dt, const uint8_t *p)
{
    switch (dt) {
    case DT_Q8_0: {
        __m256i u = _mm256_loadu_si256((const __m256i *)(p + 2));
        return QVNNI ? _mm256_xor_si256(u, _mm256_set1_epi8((char)0x80)) : u;
    }
    case DT_Q4_0: return Q(nib32)(p + 2);
    case DT_Q4_1: return Q(nib32)(p + 4);
    case DT_Q5_0: return _mm256_or_si256(Q(nib32)(p + 6), Q(bit5)(q_rd32(p + 2)));
    default: return _mm256_or_si256(Q(nib32)(p + 8), Q(bit5)(q_rd32(p + 4)));   /* Q5_1 */
    }
}

#if QW == 256
/* ======================================================================== 256 bits */
typedef __m256i qvi;
typedef __m256 qvf;
#define QSUM4 0
#define qv_zero _mm256_setzero_si256
#define qv_add _mm256_add_epi32
#define qv_sub _mm256_sub_epi32
#define qv_madd _mm256_madd_epi16
#define qv_maddubs _mm256_maddubs_epi16
#define qv_load(p) _mm256_loadu_si256((const __m256i *)(p))
#define qv_from256(v) (v)
#define qf_zero _mm256_setzero_ps
#define qf_add _mm256_add_ps
#define qf_sub _mm256_sub_ps
#define qf_mul _mm256_mul_ps
#define qf_fma _mm256_fmadd_ps
#define qf_cvt _mm256_cvtepi32_ps
#define qf_set1 _mm256_set1_ps
#define qf_zext128 _mm256_zextps128_ps256
#define qf_zext256(v) (v)
#define qv_mullo16 _mm256_mullo_epi16

T QI float Q(hsumv)(__m256 v) { return Q(hsum8)(v); }

/* acc + Σ of each 4 adjacent u8·s8 products (u ≤ 63, or 255 with VNNI) */
T QI __m256i Q(dp)(__m256i acc, __m256i u, __m256i s)
{
#if QVNNI
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* acc + Σ of each 2 adjacent s16·s16 products */
T QI __m256i Q(dpw)(__m256i acc, __m256i a, __m256i b)
{
#if QVNNI
    return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

#else
/* ======================================================================== 512 bits */
typedef __m512i qvi;
typedef __m512 qvf;
#define QSUM4 1
#define qv_zero _mm512_setzero_si512
#define qv_add _mm512_add_epi32
#define qv_sub _mm512_sub_epi32
#define qv_madd _mm512_madd_epi16
#define qv_maddubs _mm512_maddubs_epi16
#define qv_load(p) _mm512_loadu_si512(p)
#define qv_from256 _mm512_zextsi256_si512
#define qf_zero _mm512_setzero_ps
#define qf_add _mm512_add_ps
#define qf_sub _mm512_sub_ps
#define qf_mul _mm512_mul_ps
#define qf_fma _mm512_fmadd_ps
#define qf_cvt _mm512_cvtepi32_ps
#define qf_set1 _mm512_set1_ps
#define qf_zext128 _mm512_zextps128_ps512
#define qf_zext256 _mm512_zextps256_ps512
#define qv_mullo16 _mm512_mullo_epi16

T QI float Q(hsumv)(__m512 v) { return _mm512_reduce_add_ps(v); }

/* acc + Σ of each 4 adjacent u8·s8 products (u ≤ 63, or 255 with VNNI) */
T QI __m512i Q(dp)(__m512i acc, __m512i u, __m512i s)
{
#if QVNNI
    return _mm512_dpbusd_epi32(acc, u, s);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}

/* acc + Σ of each 2 adjacent s16·s16 products */
T QI __m512i Q(dpw)(__m512i acc, __m512i a, __m512i b)
{
#if QVNNI
    return _mm512_dpwssd_epi32(acc, a, b);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

/* {Σ v[0], Σ v[1], Σ v[2], Σ v[3]} */
T QI __m128 Q(sum4)(const __m512 v[4])
{
    __m512 t0 = _mm512_add_ps(_mm512_unpacklo_ps(v[0], v[1]), _mm512_unpackhi_ps(v[0], v[1]));
    __m512 t1 = _mm512_add_ps(_mm512_unpacklo_ps(v[2], v[3]), _mm512_unpackhi_ps(v[2], v[3]));
    __m512 u = _mm512_add_ps(_mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(u), _mm512_extractf32x8_ps(u, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

#endif
