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

#include "kernels/cpu/quant.h"

#include <stdio.h>

/* fail the test when |a - b| > tol, naming the case */
static int close_or_fail(double a, double b, double tol, const char *what, const char *tag, const cpu_quant_ops *q,
                         dtype_t dt, int K, int rows, int nx, int j, int r)
{
    if (fabs(a - b) <= tol) return 1;
    print_error("%s%s %s K %d rows %d nx %d: %s y[%d][%d]: %.9g vs %.9g (diff %.3g > tol %.3g)\n", q->name, tag,
                dtype_name(dt), K, rows, nx, what, j, r, a, b, fabs(a - b), tol);
    fail();
    return 0;
}

int ts_quant_check_vs_scalar(const cpu_quant_ops *ref, const cpu_quant_ops *q, int dt_, int rows, int K,
                             const int *nxs, int n_nx, const char *tag, uint64_t *st)
{
    dtype_t dt = (dtype_t)dt_;
    int nxmax = 0;
    for (int i = 0; i < n_nx; i++) nxmax = nxs[i] > nxmax ? nxs[i] : nxmax;
    uint8_t *W = ts_rand_blocks(dt, rows, K, st);
    float *x = malloc((size_t)nxmax * K * 4);
    assert_non_null(x);
    for (size_t i = 0; i < (size_t)nxmax * K; i++) x[i] = ts_xorshift_float(st);
    for (int k = 0; k < K; k++) x[k] *= 40.0f;   /* row 0 of another scale */
    qact_fmt f0 = quant_act_fmt(ref, dt), f1 = quant_act_fmt(q, dt);
    size_t xs0 = qact_row_bytes(f0, K), xs1 = qact_row_bytes(f1, K), rb = dtype_row_bytes(dt, K);
    uint8_t *X0 = malloc(xs0 * nxmax), *X1 = malloc(xs1 * nxmax);
    float *wf = malloc((size_t)rows * K * 4), *y[4];
    assert_true(X0 && X1 && wf);
    for (int j = 0; j < nxmax; j++) {
        quant_act_row(ref, f0, X0 + j * xs0, x + (size_t)j * K, K);
        quant_act_row(q, f1, X1 + j * xs1, x + (size_t)j * K, K);
    }
    dequantize_row(dt, W, wf, (int64_t)rows * K);
    for (int i = 0; i < 4; i++) assert_non_null(y[i] = malloc((size_t)nxmax * rows * 4));
    uint8_t *buf = q->gemm[dt] ? ts_aligned(q->gemm_buf(dt, K)) : NULL;
    for (int ni = 0; ni < n_nx; ni++) {
        int nx = nxs[ni];
        ref->mm[dt](y[0], rows, W, rb, X0, xs0, rows, nx, K);
        q->mm[dt](y[1], rows, W, rb, X1, xs1, rows, nx, K);
        if (buf) q->gemm[dt](y[3], rows, W, rb, X1, xs1, rows, nx, K, buf);
        for (int j = 0; j < nx; j++)   /* nx·rows separate 1x1 matvecs */
            for (int r = 0; r < rows; r++)
                q->mm[dt](y[2] + (size_t)j * rows + r, 0, W + r * rb, rb, X1 + j * xs1, 0, 1, 1, K);
        for (int j = 0; j < nx; j++)
            for (int r = 0; r < rows; r++) {
                double tol = 1e-5 * ts_mag(wf + (size_t)r * K, x + (size_t)j * K, K) + 1e-30;
                size_t o = (size_t)j * rows + r;
                close_or_fail(y[1][o], y[0][o], tol, "mm vs scalar", tag, q, dt, K, rows, nx, j, r);
                close_or_fail(y[2][o], y[0][o], tol, "matvec vs scalar", tag, q, dt, K, rows, nx, j, r);
                close_or_fail(y[1][o], y[2][o], tol, "mm vs matvec", tag, q, dt, K, rows, nx, j, r);
                if (buf) close_or_fail(y[3][o], y[0][o], tol, "packed GEMM vs scalar", tag, q, dt, K, rows, nx, j, r);
            }
    }
    free(W), free(x), free(X0), free(X1), free(wf), free(buf);
    for (int i = 0; i < 4; i++) free(y[i]);
    return n_nx;
}
