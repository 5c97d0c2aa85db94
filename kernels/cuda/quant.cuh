/* kernels/cuda/quant.cuh — weights of every storage type read on the device, 8 elements at a
 * time ("units"), dequantized in registers (internal to kernels/cuda).
 *
 * A row of `cols` elements has cols / 8 units. Unit v gives 8 weights as two runs of 4: w[0..4)
 * at elements e0..e0+3 and w[4..8) at e1..e1+3 (e0, e1 multiples of 4, so a run never crosses a
 * multiple of 32). Consecutive units are consecutive bytes of the row, so the 32 lanes of a warp
 * that take units v, v+1, ... read one contiguous span (one 32-element block is 4 units):
 *   F32/F16/BF16: 8 consecutive elements (one 16-byte load for F16/BF16, two for F32; rows of
 *         a multiple of 8 elements — others go through the scalar path of gemv.cu)
 *   Q8_0: 8 consecutive int8 quants;                       Q4_0/Q4_1/Q5_0/Q5_1: 4 quant bytes,
 *         low nibbles (elements 4p..4p+3) and high nibbles (16+4p..), the 5th bits from qh
 *   Q4_K/Q5_K: 4 bytes of qs: elements 64c+4q.. (low nibbles, sub-block 2c) and 64c+32+4q..
 *         (high, sub-block 2c+1) of the super-block, c = u/8, q = u%8 (u = v % 32)
 *   Q6_K: 4 bytes of ql and of qh: elements 128h+32i+l0.. (low nibbles, i = r/8) and
 *         128h+32(i+2)+l0.. (high), h = u/16, r = u%16, l0 = 4(r%8)
 * The arithmetic is kernels/cpu/quant.c dequantize_row's operation for operation (ggml's), with
 * products and sums that are never contracted into FMAs (cu_mul/cu_add/cu_sub), so every weight
 * is the CPU's float bit for bit (tests/cuda_emu/test_kernels_emu.cc checks it against the
 * fixtures of tests/fixtures/quant). Loads: block formats are only 2-byte aligned (18-, 22-, 34-,
 * 210-byte blocks), so their quants are read as 16-bit words, 32-bit where the layout
 * guarantees 4 bytes (Q4_1, Q5_1, Q4_K, Q5_K). */
#ifndef LLM_CUDA_QUANT_CUH
#define LLM_CUDA_QUANT_CUH

#include "kernels/cuda/common.cuh"

__device__ __forceinline__ uint32_t ld16(const uint8_t *p) { return *(const uint16_t *)p; }
__device__ __forceinline__ uint32_t ld32a2(const uint8_t *p) { return ld16(p) | ld16(p + 2) << 16; }
__device__ __forceinline__ uint32_t ld32(const uint8_t *p) { return *(const uint32_t *)p; }
__device__ __forceinline__ float ldh(const uint8_t *p) { return __half2float(__ushort_as_half((unsigned short)ld16(p))); }
__device__ __forceinline__ float byte_of(uint32_t w, int k) { return (float)((w >> (8 * k)) & 0xFF); }

/* ggml's get_scale_min_k4: 6-bit scale and min j of a Q4_K/Q5_K super-block (q = its scales[12]) */
__device__ __forceinline__ void scale_min_k4(int j, const uint8_t *q, int &sc, int &m)
{
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

template <int DT>
__device__ __forceinline__ void unit_deq(const uint8_t *row, int v, float *w, int &e0, int &e1)
{
    if (DT == CU_F32) {
        const float4 *p = (const float4 *)(row + (size_t)v * 32);
        float4 a = p[0], b = p[1];
        w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
        e0 = 8 * v, e1 = e0 + 4;
    } else if (DT == CU_F16 || DT == CU_BF16) {
        uint4 a = *(const uint4 *)(row + (size_t)v * 16);
        uint32_t u[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            unsigned short lo = (unsigned short)(u[k] & 0xFFFF), hi = (unsigned short)(u[k] >> 16);
            if (DT == CU_F16) {
                w[2 * k] = __half2float(__ushort_as_half(lo));
                w[2 * k + 1] = __half2float(__ushort_as_half(hi));
            } else {
                w[2 * k] = __bfloat162float(__ushort_as_bfloat16(lo));
                w[2 * k + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
            }
        }
        e0 = 8 * v, e1 = e0 + 4;
    } else if (DT == CU_Q8_0) {
        const int b = v >> 2, p = v & 3;
        const uint8_t *blk = row + (size_t)b * 34;
        const float d = ldh(blk);
        const uint8_t *qs = blk + 2 + 8 * p;
        uint32_t q0 = ld32a2(qs), q1 = ld32a2(qs + 4);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            w[k] = cu_mul((float)(int8_t)((q0 >> (8 * k)) & 0xFF), d);
            w[4 + k] = cu_mul((float)(int8_t)((q1 >> (8 * k)) & 0xFF), d);
        }
        e0 = 32 * b + 8 * p, e1 = e0 + 4;
    } else if (DT == CU_Q4_0 || DT == CU_Q4_1 || DT == CU_Q5_0 || DT == CU_Q5_1) {
        const int b = v >> 2, p = v & 3;
        const int bb = DT == CU_Q4_0 ? 18 : DT == CU_Q4_1 ? 20 : DT == CU_Q5_0 ? 22 : 24;
        const uint8_t *blk = row + (size_t)b * bb;
        const float d = ldh(blk);
        const float m = (DT == CU_Q4_1 || DT == CU_Q5_1) ? ldh(blk + 2) : 0.0f;
        uint32_t qs, qh = 0;
        if (DT == CU_Q4_0) qs = ld32a2(blk + 2 + 4 * p);
        else if (DT == CU_Q4_1) qs = ld32(blk + 4 + 4 * p);
        else if (DT == CU_Q5_0) {
            qh = ld32a2(blk + 2);
            qs = ld32a2(blk + 6 + 4 * p);
        } else {
            qh = ld32(blk + 4);
            qs = ld32(blk + 8 + 4 * p);
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int j = 4 * p + k;
            int lo = (qs >> (8 * k)) & 0xF, hi = (qs >> (8 * k + 4)) & 0xF;
            if (DT == CU_Q5_0 || DT == CU_Q5_1) {
                lo |= ((qh >> j) & 1) << 4;
                hi |= ((qh >> (j + 16)) & 1) << 4;
            }
            if (DT == CU_Q4_0) lo -= 8, hi -= 8;
            if (DT == CU_Q5_0) lo -= 16, hi -= 16;
            if (DT == CU_Q4_0 || DT == CU_Q5_0) {
                w[k] = cu_mul((float)lo, d);
                w[4 + k] = cu_mul((float)hi, d);
            } else {
                w[k] = cu_add(cu_mul((float)lo, d), m);
                w[4 + k] = cu_add(cu_mul((float)hi, d), m);
            }
        }
        e0 = 32 * b + 4 * p, e1 = e0 + 16;
    } else if (DT == CU_Q4_K || DT == CU_Q5_K) {
        const int s = v >> 5, u = v & 31, c = u >> 3, q = u & 7;
        const uint8_t *blk = row + (size_t)s * (DT == CU_Q4_K ? 144 : 176);
        const float d = ldh(blk), dmin = ldh(blk + 2);
        const uint32_t qs = ld32(blk + (DT == CU_Q4_K ? 16 : 48) + 32 * c + 4 * q);
        const uint32_t qh = DT == CU_Q5_K ? ld32(blk + 16 + 4 * q) : 0;
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * c, blk + 4, sc0, m0);
        scale_min_k4(2 * c + 1, blk + 4, sc1, m1);
        const float d0 = cu_mul(d, (float)sc0), n0 = cu_mul(dmin, (float)m0);
        const float d1 = cu_mul(d, (float)sc1), n1 = cu_mul(dmin, (float)m1);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            int lo = (qs >> (8 * k)) & 0xF, hi = (qs >> (8 * k + 4)) & 0xF;
            if (DT == CU_Q5_K) {
                uint32_t hb = (qh >> (8 * k)) & 0xFF;
                lo |= ((hb >> (2 * c)) & 1) << 4;
                hi |= ((hb >> (2 * c + 1)) & 1) << 4;
            }
            w[k] = cu_sub(cu_mul(d0, (float)lo), n0);
            w[4 + k] = cu_sub(cu_mul(d1, (float)hi), n1);
        }
        e0 = 256 * s + 64 * c + 4 * q, e1 = e0 + 32;
    } else { /* CU_Q6_K */
        const int s = v >> 5, u = v & 31, h = u >> 4, r = u & 15, i1 = r >> 3, l0 = 4 * (r & 7);
        const uint8_t *blk = row + (size_t)s * 210;
        const float d = ldh(blk + 208);
        const uint32_t ql = ld32a2(blk + 64 * h + 32 * i1 + l0), qh = ld32a2(blk + 128 + 32 * h + l0);
        const float sl = cu_mul(d, (float)(int8_t)blk[192 + 8 * h + 2 * i1 + l0 / 16]);
        const float sh = cu_mul(d, (float)(int8_t)blk[192 + 8 * h + 2 * (i1 + 2) + l0 / 16]);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t lb = (ql >> (8 * k)) & 0xFF, hb = (qh >> (8 * k)) & 0xFF;
            int lo = (int)((lb & 0xF) | ((hb >> (2 * i1)) & 3) << 4) - 32;
            int hi = (int)((lb >> 4) | ((hb >> (2 * (i1 + 2))) & 3) << 4) - 32;
            w[k] = cu_mul(sl, (float)lo);
            w[4 + k] = cu_mul(sh, (float)hi);
        }
        e0 = 256 * s + 128 * h + 32 * i1 + l0, e1 = e0 + 64;
    }
}

/* Calls F<DT>(args) for a runtime dtype (any CU_* value); an invalid one: `bad`. */
#define CU_DISPATCH_ALL(dt, bad, F, ...)                                                        \
    ((dt) == CU_F32    ? F<CU_F32>(__VA_ARGS__)                                                 \
     : (dt) == CU_F16  ? F<CU_F16>(__VA_ARGS__)                                                 \
     : (dt) == CU_BF16 ? F<CU_BF16>(__VA_ARGS__)                                                \
     : (dt) == CU_Q8_0 ? F<CU_Q8_0>(__VA_ARGS__)                                                \
     : (dt) == CU_Q4_0 ? F<CU_Q4_0>(__VA_ARGS__)                                                \
     : (dt) == CU_Q4_1 ? F<CU_Q4_1>(__VA_ARGS__)                                                \
     : (dt) == CU_Q5_0 ? F<CU_Q5_0>(__VA_ARGS__)                                                \
     : (dt) == CU_Q5_1 ? F<CU_Q5_1>(__VA_ARGS__)                                                \
     : (dt) == CU_Q4_K ? F<CU_Q4_K>(__VA_ARGS__)                                                \
     : (dt) == CU_Q5_K ? F<CU_Q5_K>(__VA_ARGS__)                                                \
     : (dt) == CU_Q6_K ? F<CU_Q6_K>(__VA_ARGS__)                                                \
                       : (bad))

/* Element e of a row of a plain dtype (F32/F16/BF16) as f32 (the scalar path). */
__device__ __forceinline__ float plain_elem(const uint8_t *row, int dt, int e)
{
    return kv_load(row, dt, (size_t)e);
}

/* Padded shared-memory index of element e of an activation vector: one float of padding per 32
 * (the lanes of a warp read elements 32 apart in the quantized units: without the padding they
 * would all hit one bank). */
__device__ __forceinline__ int xpad(int e) { return e + (e >> 5); }

#endif
