/* quant_data.c — random ggml blocks and the helpers the quantized-kernel tests share
 * (tests/support/support.h, "quantized blocks"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "tests/support/support.h"

uint32_t ts_xorshift(uint64_t *st)
{
    *st ^= *st << 13;
    *st ^= *st >> 7;
    *st ^= *st << 17;
    return (uint32_t)(*st >> 32);
}

float ts_xorshift_float(uint64_t *st) { return (float)(ts_xorshift(st) * (2.0 / 4294967296.0) - 1.0); }

void *ts_aligned(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    assert_non_null(p);
    return p;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

uint8_t *ts_rand_blocks(int dt_, int rows, int K, uint64_t *st)
{
    dtype_t dt = (dtype_t)dt_;
    size_t rb = dtype_row_bytes(dt, K), bb = dtype_block_bytes(dt);
    uint8_t *w = malloc(rb * rows);   /* the exact size: ASan sees any read past the last block */
    assert_non_null(w);
    for (size_t i = 0; i < rb * rows; i++) w[i] = (uint8_t)ts_xorshift(st);
    for (size_t b = 0; b < rb * rows / bb; b++) {
        uint8_t *p = w + b * bb;
        uint16_t s1 = f32_to_f16(ts_xorshift_float(st) * 0.02f), s2 = f32_to_f16(ts_xorshift_float(st) * 0.02f);
        if (dt == DT_Q6_K) put16(p + 208, s1);
        else {
            put16(p, s1);
            if (dt == DT_Q4_1 || dt == DT_Q5_1 || dt == DT_Q4_K || dt == DT_Q5_K) put16(p + 2, s2);
        }
    }
    return w;
}

double ts_mag(const float *w, const float *x, int K)
{
    double m = 0;
    for (int k = 0; k < K; k++) m += fabs((double)w[k] * x[k]);
    return m;
}
