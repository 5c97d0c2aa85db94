/* matmul for F32, F16 and BF16 weights.
 * Decode (n = 1): our matrix-vector kernels (simd.h), threaded with OpenMP over the output
 * rows in static contiguous chunks, one pass over each weight row, weights read as stored
 * (F16/BF16 widened in registers: half the bytes of F32). No allocation.
 * Prefill (n > 1): matrix-matrix through the BLAS (cblas_sgemm); F16/BF16 weights are widened
 * one tile of rows at a time into a per-thread buffer kept between calls. */
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>

/* Below this many weights a matrix-vector product runs on one thread (the fork costs more). */
#define MATVEC_PAR_MIN (1 << 15)
/* Widened F16/BF16 tile for prefill: about this many bytes of f32 (fits the L2/L3). */
#define TILE_BYTES (2u << 20)

static void matvec_rows(const cpu_simd_ops *s, float *y, const float *x, const weight_t *w, int r0, int r1)
{
    switch (w->dtype) {
    case DT_F32: s->matvec_f32(y, w->data, x, r0, r1, w->cols); break;
    case DT_F16: s->matvec_f16(y, w->data, x, r0, r1, w->cols); break;
    case DT_BF16: s->matvec_bf16(y, w->data, x, r0, r1, w->cols); break;
    }
}

static void matvec(float *y, const float *x, const weight_t *w)
{
    const cpu_simd_ops *s = cpu_simd();
    int rows = w->rows;
    if ((size_t)rows * w->cols < MATVEC_PAR_MIN || omp_get_max_threads() == 1 || omp_in_parallel()) {
        matvec_rows(s, y, x, w, 0, rows);
        return;
    }
#pragma omp parallel
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int r0 = (int)((long long)rows * t / nt), r1 = (int)((long long)rows * (t + 1) / nt);
        matvec_rows(s, y, x, w, r0, r1);
    }
}

static _Thread_local float *tile_buf;
static _Thread_local size_t tile_cap;

void matmul(float *y, const float *x, const weight_t *w, int n)
{
    if (n == 1) {
        matvec(y, x, w);
        return;
    }
    int rows = w->rows, cols = w->cols;
    if (w->dtype == DT_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rows, cols, 1.0f, x, cols,
                    (const float *)w->data, cols, 0.0f, y, rows);
        return;
    }
    /* F16/BF16: widen a tile of rows, multiply it, next tile */
    const cpu_simd_ops *s = cpu_simd();
    int tr = (int)(TILE_BYTES / sizeof(float) / (size_t)cols);
    tr = tr < 64 ? 64 : tr & ~15;
    if (tr > rows) tr = rows;
    size_t need = (size_t)tr * cols;
    if (need > tile_cap) {
        float *nb = realloc(tile_buf, need * sizeof(float));
        if (!nb) {
            /* out of memory for the tile: fall back to one row at a time (no buffer) */
            for (int i = 0; i < n; i++) matvec(y + (size_t)i * rows, x + (size_t)i * cols, w);
            return;
        }
        tile_buf = nb;
        tile_cap = need;
    }
    const uint16_t *W = w->data;
    float *buf = tile_buf;
    for (int r0 = 0; r0 < rows; r0 += tr) {
        int m = rows - r0 < tr ? rows - r0 : tr;
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
        for (int r = 0; r < m; r++) {
            const uint16_t *src = W + (size_t)(r0 + r) * cols;
            if (w->dtype == DT_F16) s->widen_f16(buf + (size_t)r * cols, src, (size_t)cols);
            else s->widen_bf16(buf + (size_t)r * cols, src, (size_t)cols);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, cols, 1.0f, x, cols, buf, cols,
                    0.0f, y + r0, rows);
    }
}

void widen_row(float *out, const weight_t *w, int row)
{
    size_t cols = (size_t)w->cols;
    switch (w->dtype) {
    case DT_F32: {
        const float *src = (const float *)w->data + (size_t)row * cols;
        for (size_t i = 0; i < cols; i++) out[i] = src[i];
        break;
    }
    case DT_F16: cpu_simd()->widen_f16(out, (const uint16_t *)w->data + (size_t)row * cols, cols); break;
    case DT_BF16: cpu_simd()->widen_bf16(out, (const uint16_t *)w->data + (size_t)row * cols, cols); break;
    }
}
