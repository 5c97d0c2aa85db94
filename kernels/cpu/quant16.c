/* 16-bit activations for ggml's block weights, scalar: the activation quantizers (A32/16 and
 * A256/16, quant.h) and the reference dot products every 16-bit SIMD family is tested against
 * (also the path on CPUs without them).
 *
 * Why 16 bits: with llama.cpp's 8-bit activations (Q8_0/Q8_1/Q8_K, quant.c) every matmul adds
 * about 2⁻⁸ relative noise per block, and over a model's 200+ matmuls SmolLM2-135M's prompt
 * logits left transformers' (f32 on the dequantized weights) top-1 at 3-8% of the positions;
 * 16-bit quants cut that noise by 2⁸ while the weights stay in their block format (the kernels
 * multiply int16 × int16 pairs: vpdpwssd / vpmaddwd).
 *
 * Quantizer (every family writes these bytes): per block of 32 (A32/16) or 256 (A256/16),
 * amax = max |x|; d = amax / 32767 (f32); q = round to nearest even of x · (32767 / amax) (f32
 * product), so |q| ≤ 32767; a block with amax < 2⁻¹⁰⁰ (or 0) is all zero with d = 0 (its
 * 32767 / amax would overflow). Block sums: Σq in int32 (exact), s = d · Σq (f32) for the
 * Q4_1/Q5_1 min term, −c·Σq for kernels that offset the weights to unsigned, Σq of each 32 as f32
 * (exact: |Σq| ≤ 2^20) for the Q4_K/Q5_K mins.
 *
 * Reference dot product (one weight row · one activation row): per 32-element block the integer
 * sum Σ q_w·q_x in int32 (|·| ≤ 32 · 128 · 32767 < 2^28), scaled in f32 as (d_w·d_x)·Σ [+ m·s];
 * K-quants: per sub-block the int32 sum Σ q·q_x, the scaled sum Σ_j sc_j·Σ_j in int64 (it can
 * pass 2^31: 8 · 63 · 31 · 32 · 32767 for Q5_K, 16 · 128 · 32 · 16 · 32767 for Q6_K), then
 * (d·d_x) · that − (dmin·d_x) · Σ_j m_j · Σq_j. Blocks summed in order in f32. */
#include "kernels/cpu/quant.h"

#include <math.h>
#include <string.h>

static int q16(float v)
{
    float r = rintf(v);   /* nearest even (the default rounding mode), as vcvtps2dq */
    return r > 32767.0f ? 32767 : r < -32767.0f ? -32767 : (int)r;
}

/* A32/16 row (quant.h). */
static void act32_16_scalar(uint8_t *row, const float *x, int K, int c)
{
    int16_t *qs = (int16_t *)row;
    float *dd = (float *)(row + qa16_off_d32(K)), *s2 = (float *)(row + qa16_off_s2(K));
    int32_t *corr = (int32_t *)(row + qa16_off_corr(K));
    int nb = K / QK32, nbp = 4 * qa16_groups(K);
    for (int b = 0; b < nbp; b++) {
        const float *xb = x + (size_t)(b < nb ? b : 0) * QK32;
        float amax = 0.0f, id = 0.0f, d = 0.0f;
        if (b < nb) {
            for (int j = 0; j < QK32; j++) amax = fmaxf(amax, fabsf(xb[j]));
            d = qa16_scale(amax, &id);
        }
        int sum = 0;
        for (int j = 0; j < QK32; j++) {
            int q = id != 0.0f ? q16(xb[j] * id) : 0;
            qs[qa16_idx32(b, j)] = (int16_t)q;
            sum += q;
        }
        dd[b] = d;
        s2[2 * b] = 0.0f;
        s2[2 * b + 1] = d * (float)sum;
        if (c) corr[b] = -c * sum;
    }
}

/* A256/16 row (quant.h). */
static void act256_16_scalar(uint8_t *row, const float *x, int K)
{
    int16_t *qs = (int16_t *)row;
    float *dd = (float *)(row + qa16_off_d256(K)), *bs = (float *)(row + qa16_off_bs32f(K));
    for (int b = 0; b < K / QKK; b++, x += QKK, qs += QKK) {
        float amax = 0.0f, id;
        for (int j = 0; j < QKK; j++) amax = fmaxf(amax, fabsf(x[j]));
        dd[b] = qa16_scale(amax, &id);
        for (int s = 0; s < QKK / 32; s++) {
            int sum = 0;
            for (int j = 32 * s; j < 32 * s + 32; j++) {
                qs[j] = (int16_t)(id != 0.0f ? q16(x[j] * id) : 0);
                sum += qs[j];
            }
            bs[8 * b + s] = (float)sum;
        }
    }
}

static float h2f(const uint8_t *p) { return f16_to_f32(q_rd16(p)); }

/* One weight row · one 16-bit activation row (the header's reference). */
static float dot16_scalar(dtype_t dt, const uint8_t *w, const uint8_t *xr, int K)
{
    const int16_t *y = (const int16_t *)xr;
    int q[256], sc[8], mn[8];
    float sum = 0.0f;
    if (quant_act_kind(dt) == QA_32) {
        const float *dx = (const float *)(xr + qa16_off_d32(K)), *s2 = (const float *)(xr + qa16_off_s2(K));
        size_t bb = dtype_block_bytes(dt);
        for (int b = 0; b < K / QK32; b++, w += bb) {
            q_unpack32(dt, w, q);
            int32_t si = 0;
            for (int j = 0; j < QK32; j++) si += q[j] * y[qa16_idx32(b, j)];
            sum += h2f(w) * dx[b] * (float)si;
            if (dt == DT_Q4_1 || dt == DT_Q5_1) sum += h2f(w + 2) * s2[2 * b + 1];
        }
        return sum;
    }
    const float *dx = (const float *)(xr + qa16_off_d256(K)), *bs = (const float *)(xr + qa16_off_bs32f(K));
    for (int b = 0; b < K / QKK; b++, y += QKK, bs += 8) {
        int64_t si = 0;
        float d;
        if (dt == DT_Q6_K) {
            q_unpack_q6k(w, q);
            for (int j = 0; j < 16; j++) {
                int32_t s = 0;
                for (int l = 0; l < 16; l++) s += q[16 * j + l] * y[16 * j + l];
                si += (int64_t)(int8_t)w[192 + j] * s;
            }
            d = h2f(w + 208);
            w += 210;
        } else {
            q_unpack_k45(dt, w, q, sc, mn);
            float sm = 0.0f;
            for (int j = 0; j < 8; j++) {
                int32_t s = 0;
                for (int l = 0; l < 32; l++) s += q[32 * j + l] * y[32 * j + l];
                si += (int64_t)sc[j] * s;
                sm += (float)mn[j] * bs[j];
            }
            d = h2f(w);
            sum -= h2f(w + 2) * dx[b] * sm;
            w += dt == DT_Q4_K ? 144 : 176;
        }
        sum += d * dx[b] * (float)si;
    }
    return sum;
}

CPU_QUANT_SCALAR_MM(scalar16, dot16_scalar)

const cpu_quant_ops cpu_quant_scalar16 =
    CPU_QUANT_SCALAR_OPS("scalar", 16, &cpu_quant_scalar, &cpu_quant_scalar16, scalar16, act32_16_scalar, act256_16_scalar);
