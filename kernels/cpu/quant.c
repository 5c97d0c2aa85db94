/* ggml's block formats, scalar: dequantize_row / quantize_row (kernels.h), the activation
 * quantizers (A32 = ggml's Q8_0/Q8_1, A256 = Q8_K; quant.h) and the reference dot-product
 * kernels every SIMD family is tested against (also the path on CPUs without them).
 *
 * The layouts and the arithmetic follow ggml-common.h and ggml-quants.c
 * (dequantize_row_q*, quantize_row_q8_0_ref, quantize_row_q4_0_ref, quantize_row_q8_1_ref,
 * quantize_row_q8_K_ref) operation for operation, so dequantization is bit-identical with ggml
 * and with the gguf Python package (tests/test_quant.c checks both on fixtures). Byte offsets of
 * the blocks (little-endian; f16 = IEEE binary16):
 *   Q8_0 (34 B): f16 d, int8 qs[32]                      x = d·q
 *   Q4_0 (18 B): f16 d, qs[16] (elem j: low nibble of qs[j], elem j+16: high)   x = d·(q − 8)
 *   Q4_1 (20 B): f16 d, f16 m, qs[16]                    x = d·q + m
 *   Q5_0 (22 B): f16 d, qh[4] (bit j: 5th bit of elem j), qs[16]   x = d·(q − 16)
 *   Q5_1 (24 B): f16 d, f16 m, qh[4], qs[16]             x = d·q + m
 *   Q4_K (144 B): f16 d, f16 dmin, scales[12] (8 6-bit scales and mins), qs[128]: elements
 *        64c..64c+31 are the low nibbles of qs[32c..32c+31], 64c+32.. the high; sub-block
 *        j of 32: x = d·sc_j·q − dmin·m_j
 *   Q5_K (176 B): as Q4_K with qh[32] after the scales: bit 2c (low half) / 2c+1 (high half)
 *        of qh[l] is the 5th bit of element 64c + l / 64c + 32 + l
 *   Q6_K (210 B): ql[128], qh[64], int8 scales[16], f16 d: per half h (128 elements), element
 *        32i + l (i < 4) = (4 bits of ql[64h + l + 32(i&1)] (low for i < 2, high for i ≥ 2)
 *        | 2 bits (qh[32h + l] >> 2i) << 4) − 32; x = d·sc[8h + 2i + l/16]·q */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF   /* no fused multiply-adds: bit-identical with ggml (GCC: -std=c11) */
#endif
#include "kernels/cpu/quant.h"

#include <math.h>
#include <string.h>

static float h2f(const uint8_t *p) { return f16_to_f32(q_rd16(p)); }

int quant_act_kind(dtype_t wdt)
{
    switch (wdt) {
    case DT_Q8_0: case DT_Q4_0: case DT_Q4_1: case DT_Q5_0: case DT_Q5_1: return QA_32;
    case DT_Q4_K: case DT_Q5_K: case DT_Q6_K: return QA_256;
    default: return -1;
    }
}

/* ------------------------------------------------------------------ unpacking to integers */

/* The 32 integer quants of a 32-element block (offsets applied: Q4_0 −8, Q5_0 −16). */
void q_unpack32(dtype_t dt, const uint8_t *b, int q[32])
{
    switch (dt) {
    case DT_Q8_0:
        for (int j = 0; j < 32; j++) q[j] = (int8_t)b[2 + j];
        break;
    case DT_Q4_0: case DT_Q4_1: {
        const uint8_t *qs = b + (dt == DT_Q4_0 ? 2 : 4);
        int off = dt == DT_Q4_0 ? 8 : 0;
        for (int j = 0; j < 16; j++) {
            q[j] = (qs[j] & 0x0F) - off;
            q[j + 16] = (qs[j] >> 4) - off;
        }
        break;
    }
    default: {   /* Q5_0, Q5_1 */
        const uint8_t *qh = b + (dt == DT_Q5_0 ? 2 : 4), *qs = qh + 4;
        uint32_t h = q_rd32(qh);
        int off = dt == DT_Q5_0 ? 16 : 0;
        for (int j = 0; j < 16; j++) {
            q[j] = ((qs[j] & 0x0F) | ((h >> j) << 4 & 0x10)) - off;
            q[j + 16] = ((qs[j] >> 4) | ((h >> (j + 12)) & 0x10)) - off;
        }
    }
    }
}

/* Q4_K/Q5_K: the 256 quants (0..31) and the 8 scales and mins of a super-block. */
void q_unpack_k45(dtype_t dt, const uint8_t *b, int q[256], int sc[8], int mn[8])
{
    const uint8_t *qs = b + (dt == DT_Q4_K ? 16 : 48), *qh = b + 16;
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
            if (dt == DT_Q5_K) {
                lo |= (qh[l] >> (2 * c) & 1) << 4;
                hi |= (qh[l] >> (2 * c + 1) & 1) << 4;
            }
            q[64 * c + l] = lo;
            q[64 * c + 32 + l] = hi;
        }
    for (int j = 0; j < 8; j++) {
        uint8_t s, m;
        q_scale_min_k4(j, b + 4, &s, &m);
        sc[j] = s;
        mn[j] = m;
    }
}

/* Q6_K: the 256 quants (−32..31) of a super-block. */
void q_unpack_q6k(const uint8_t *b, int q[256])
{
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        for (int l = 0; l < 32; l++) {
            q[128 * h + l] = ((ql[l] & 0xF) | ((qh[l] >> 0 & 3) << 4)) - 32;
            q[128 * h + l + 32] = ((ql[l + 32] & 0xF) | ((qh[l] >> 2 & 3) << 4)) - 32;
            q[128 * h + l + 64] = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
            q[128 * h + l + 96] = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
        }
    }
}

/* ---------------------------------------------------------------------- dequantization */

void dequantize_row(dtype_t dt, const void *src, float *dst, int64_t n)
{
    const uint8_t *b = src;
    int bk = dtype_block(dt);
    if (bk <= 0 || n < 0 || n % bk) return;
    size_t bb = dtype_block_bytes(dt);
    int q[256], sc[8], mn[8];
    for (int64_t i = 0; i < n; i += bk, b += bb, dst += bk) {
        switch (dt) {
        case DT_F32: memcpy(dst, b, 4); break;
        case DT_F16: dst[0] = f16_to_f32(q_rd16(b)); break;
        case DT_BF16: dst[0] = bf16_to_f32(q_rd16(b)); break;
        case DT_Q8_0: case DT_Q4_0: case DT_Q5_0: {       /* y = q·d */
            float d = h2f(b);
            q_unpack32(dt, b, q);
            for (int j = 0; j < 32; j++) dst[j] = (float)q[j] * d;
            break;
        }
        case DT_Q4_1: case DT_Q5_1: {                      /* y = q·d + m */
            float d = h2f(b), m = h2f(b + 2);
            q_unpack32(dt, b, q);
            for (int j = 0; j < 32; j++) dst[j] = (float)q[j] * d + m;
            break;
        }
        case DT_Q4_K: case DT_Q5_K: {                      /* y = (d·sc)·q − dmin·m */
            float d = h2f(b), dmin = h2f(b + 2);
            q_unpack_k45(dt, b, q, sc, mn);
            for (int j = 0; j < 8; j++) {
                float d1 = d * (float)sc[j], m1 = dmin * (float)mn[j];
                for (int l = 0; l < 32; l++) dst[32 * j + l] = d1 * (float)q[32 * j + l] - m1;
            }
            break;
        }
        case DT_Q6_K: {                                    /* y = (d·sc)·q */
            float d = h2f(b + 208);
            q_unpack_q6k(b, q);
            for (int j = 0; j < 256; j++) dst[j] = d * (float)(int8_t)b[192 + j / 16] * (float)q[j];
            break;
        }
        default: return;
        }
    }
}

/* ------------------------------------------------------------------------ quantization */

int quantize_row(dtype_t dt, const float *x, void *dst, int64_t n)
{
    if ((dt != DT_Q8_0 && dt != DT_Q4_0) || n < 0 || n % QK32) return -1;
    uint8_t *y = dst;
    for (int64_t i = 0; i < n; i += QK32, x += QK32) {
        if (dt == DT_Q8_0) {                     /* quantize_row_q8_0_ref */
            float amax = 0.0f;
            for (int j = 0; j < QK32; j++) amax = fmaxf(amax, fabsf(x[j]));
            const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
            uint16_t h = f32_to_f16(d);
            memcpy(y, &h, 2);
            for (int j = 0; j < QK32; j++) y[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
            y += 34;
        } else {                                 /* quantize_row_q4_0_ref */
            float amax = 0.0f, max = 0.0f;
            for (int j = 0; j < QK32; j++)
                if (amax < fabsf(x[j])) {
                    amax = fabsf(x[j]);
                    max = x[j];
                }
            const float d = max / -8, id = d ? 1.0f / d : 0.0f;
            uint16_t h = f32_to_f16(d);
            memcpy(y, &h, 2);
            for (int j = 0; j < 16; j++) {
                int8_t a = (int8_t)(x[j] * id + 8.5f), b = (int8_t)(x[16 + j] * id + 8.5f);
                uint8_t x0 = a < 15 ? (uint8_t)a : 15, x1 = b < 15 ? (uint8_t)b : 15;
                y[2 + j] = (uint8_t)(x0 | x1 << 4);
            }
            y += 18;
        }
    }
    return 0;
}

/* ggml's nearest_int: round to nearest even through the f32 mantissa (|f| ≤ 2^22). */
static int nearest_int(float f)
{
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* A32 row: quantize_row_q8_1_ref (its quants and d are quantize_row_q8_0_ref's). */
static void act32_scalar(uint8_t *row, const float *x, int K, int c)
{
    int8_t *qs = (int8_t *)row;
    float *dd = (float *)(row + qa_off_d(K)), *s2 = (float *)(row + qa_off_s2(K));
    int32_t *corr = (int32_t *)(row + qa_off_corr(K));
    for (int b = 0; b < K / QK32; b++, x += QK32, qs += QK32) {
        float amax = 0.0f;
        for (int j = 0; j < QK32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < QK32; j++) {
            qs[j] = (int8_t)roundf(x[j] * id);
            sum += qs[j];
        }
        dd[b] = f16_to_f32(f32_to_f16(d));
        s2[2 * b] = 0.0f;
        s2[2 * b + 1] = f16_to_f32(f32_to_f16((float)sum * d));
        if (c) corr[b] = -c * sum;
    }
}

/* A256 row: quantize_row_q8_K_ref. */
static void act256_scalar(uint8_t *row, const float *x, int K)
{
    int8_t *qs = (int8_t *)row;
    float *dd = (float *)(row + qa_off_d(K));
    int16_t *bs16 = (int16_t *)(row + qa_off_bs16(K)), *bs32 = (int16_t *)(row + qa_off_bs32(K));
    float *bs32f = (float *)(row + qa_off_bs32f(K));
    int32_t *c16 = (int32_t *)(row + qa_off_c16(K));
    for (int b = 0; b < K / QKK; b++, x += QKK, qs += QKK) {
        float max = 0, amax = 0;
        for (int j = 0; j < QKK; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        if (!amax) {
            dd[b] = 0;
            memset(qs, 0, QKK);
        } else {
            const float iscale = -127.f / max;
            for (int j = 0; j < QKK; j++) {
                int v = nearest_int(iscale * x[j]);
                qs[j] = (int8_t)(v < 127 ? v : 127);
            }
            dd[b] = 1 / iscale;
        }
        for (int j = 0; j < QKK / 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += qs[16 * j + l];
            bs16[b * 16 + j] = (int16_t)sum;
            c16[b * 16 + j] = -32 * sum;
            if (j & 1) {
                bs32[b * 8 + j / 2] = (int16_t)(bs16[b * 16 + j - 1] + sum);
                bs32f[b * 8 + j / 2] = (float)bs32[b * 8 + j / 2];
            }
        }
    }
}

/* ---------------------------------------------------------------- reference dot products */

/* One weight row · one activation row, as llama.cpp's generic vec_dot_<w>_q8_<x> defines it:
 * per block, the integer dot product of the quants, scaled in f32 (A32: (dw·dx)·Σqy [+ m·s];
 * A256: (d·dx)·Σ_j sc_j Σqy − (dmin·dx)·Σ_j m_j bsum_j), blocks summed in order. */
static float dot_scalar(dtype_t dt, const uint8_t *w, const uint8_t *xr, int K)
{
    const int8_t *y = (const int8_t *)xr;
    const float *dx = (const float *)(xr + qa_off_d(K));
    int q[256], sc[8], mn[8];
    float sum = 0.0f;
    if (quant_act_kind(dt) == QA_32) {
        const float *s2 = (const float *)(xr + qa_off_s2(K));
        size_t bb = dtype_block_bytes(dt);
        for (int b = 0; b < K / QK32; b++, w += bb, y += QK32) {
            q_unpack32(dt, w, q);
            int si = 0;
            for (int j = 0; j < QK32; j++) si += q[j] * y[j];
            sum += h2f(w) * dx[b] * (float)si;
            if (dt == DT_Q4_1 || dt == DT_Q5_1) sum += h2f(w + 2) * s2[2 * b + 1];
        }
        return sum;
    }
    const int16_t *bs16 = (const int16_t *)(xr + qa_off_bs16(K));
    for (int b = 0; b < K / QKK; b++, y += QKK, bs16 += 16) {
        int si = 0, sm = 0;
        float d;
        if (dt == DT_Q6_K) {
            q_unpack_q6k(w, q);
            for (int j = 0; j < 16; j++) {
                int s = 0;
                for (int l = 0; l < 16; l++) s += q[16 * j + l] * y[16 * j + l];
                si += (int8_t)w[192 + j] * s;
            }
            d = h2f(w + 208);
            w += 210;
        } else {
            q_unpack_k45(dt, w, q, sc, mn);
            for (int j = 0; j < 8; j++) {
                int s = 0;
                for (int l = 0; l < 32; l++) s += q[32 * j + l] * y[32 * j + l];
                si += sc[j] * s;
                sm += mn[j] * (bs16[2 * j] + bs16[2 * j + 1]);
            }
            d = h2f(w);
            sum -= h2f(w + 2) * dx[b] * (float)sm;
            w += dt == DT_Q4_K ? 144 : 176;
        }
        sum += d * dx[b] * (float)si;
    }
    return sum;
}

CPU_QUANT_SCALAR_MM(scalar, dot_scalar)

const cpu_quant_ops cpu_quant_scalar =
    CPU_QUANT_SCALAR_OPS("scalar", 8, &cpu_quant_scalar, &cpu_quant_scalar16, scalar, act32_scalar, act256_scalar);
