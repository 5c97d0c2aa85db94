/* kernels/dtype.c — storage types (F32/F16/BF16 and ggml's block formats): sizes, names and
 * the scalar f16/bf16 conversions. Backend-neutral: the CPU kernels, the loaders and the CUDA
 * engine's host side all use these. */
#include "kernels/kernels.h"

#include <string.h>
#include <strings.h>

/* Elements per block and bytes per block, indexed by dtype_t (ggml-common.h's block_q*:
 * Q8_0 = f16 d + 32 int8; Q4_0 = f16 d + 16 B nibbles; Q4_1 = f16 d, m + 16 B; Q5_0 = f16 d +
 * 4 B high bits + 16 B; Q5_1 = f16 d, m + 4 B + 16 B; Q4_K = f16 d, dmin + 12 B scales + 128 B;
 * Q5_K = f16 d, dmin + 12 B + 32 B high bits + 128 B; Q6_K = 128 B low + 64 B high + 16 int8
 * scales + f16 d). */
static const struct { const char *name; int block; size_t bytes; } DT_INFO[DT_COUNT] = {
    [DT_F32] = {"F32", 1, 4},       [DT_F16] = {"F16", 1, 2},     [DT_BF16] = {"BF16", 1, 2},
    [DT_Q8_0] = {"Q8_0", 32, 34},   [DT_Q4_0] = {"Q4_0", 32, 18}, [DT_Q4_1] = {"Q4_1", 32, 20},
    [DT_Q5_0] = {"Q5_0", 32, 22},   [DT_Q5_1] = {"Q5_1", 32, 24}, [DT_Q4_K] = {"Q4_K", 256, 144},
    [DT_Q5_K] = {"Q5_K", 256, 176}, [DT_Q6_K] = {"Q6_K", 256, 210},
};

static int valid(dtype_t dt) { return (int)dt >= 0 && dt < DT_COUNT; }

size_t dtype_size(dtype_t dt) { return valid(dt) && DT_INFO[dt].block == 1 ? DT_INFO[dt].bytes : 0; }
const char *dtype_name(dtype_t dt) { return valid(dt) ? DT_INFO[dt].name : "?"; }
int dtype_block(dtype_t dt) { return valid(dt) ? DT_INFO[dt].block : 0; }
size_t dtype_block_bytes(dtype_t dt) { return valid(dt) ? DT_INFO[dt].bytes : 0; }
int dtype_is_quant(dtype_t dt) { return valid(dt) && DT_INFO[dt].block > 1; }

int dtype_from_name(const char *name) {
    for (int i = 0; name && i < DT_COUNT; i++)
        if (!strcasecmp(name, DT_INFO[i].name)) return i;
    return -1;
}

size_t dtype_row_bytes(dtype_t dt, int64_t n) {
    if (!valid(dt) || n < 0 || n % DT_INFO[dt].block) return 0;
    return (size_t)(n / DT_INFO[dt].block) * DT_INFO[dt].bytes;
}

size_t weight_bytes(const weight_t *w) {
    return (size_t)w->rows * dtype_row_bytes(w->dtype, w->cols);
}

/* ------------------------------------------------------------------- scalar conversions */

static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000 | man << 13);   /* inf, nan */
    if (exp != 0) return bits_f32(sign | (exp + 112) << 23 | man << 13);
    if (man == 0) return bits_f32(sign);                               /* ±0 */
    int e = 113;                                                       /* subnormal: normalize */
    while (!(man & 0x400)) { man <<= 1; e--; }
    return bits_f32(sign | (uint32_t)e << 23 | (man & 0x3ff) << 13);
}

float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)(u >> 16 | 0x40);  /* quiet nan */
    return (uint16_t)((u + 0x7fff + (u >> 16 & 1)) >> 16);
}

uint16_t f32_to_f16(float f) {
    uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffff;
    if (a > 0x7f800000) return (uint16_t)(sign | 0x7e00 | (a >> 13 & 0x3ff));  /* nan */
    if (a >= 0x477ff000) return (uint16_t)(sign | 0x7c00);   /* >= 65520 rounds to inf */
    if (a <= 0x33000000) return (uint16_t)sign;              /* <= 2^-25 rounds to 0 */
    uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000, h, rem, half;
    if (e < 113) {                          /* f16 subnormal: units of 2^-24 */
        uint32_t shift = 126 - e;           /* 14..24 */
        h = m >> shift;
        rem = m & ((1u << shift) - 1);
        half = 1u << (shift - 1);
    } else {
        h = (e - 112) << 10 | (a >> 13 & 0x3ff);
        rem = a & 0x1fff;
        half = 0x1000;
    }
    if (rem > half || (rem == half && (h & 1))) h++;   /* carry into the exponent is right */
    return (uint16_t)(sign | h);
}

