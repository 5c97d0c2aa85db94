/* matmul for F32, F16 and BF16 weights.
 * Decode (n = 1): our matrix-vector kernels (simd.h), threaded with OpenMP over the output
 * rows in static contiguous chunks, one pass over each weight row, weights read as stored
 * (F16/BF16 widened in registers: half the bytes of F32). No allocation.
 * Prefill (n > 1): matrix-matrix through the BLAS (cblas_sgemm), the output rows split over the
 * OpenMP threads; F16/BF16 weights are widened one tile of rows at a time into a per-thread
 * buffer kept between calls. */
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>

/* Below this many weights a matrix-vector product runs on one thread (the fork costs more). */
#define MATVEC_PAR_MIN (1 << 15)
/* Widened F16/BF16 tile for prefill: about this many bytes of f32 per thread (fits the L2). */
#define TILE_BYTES (1u << 20)

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

/* Per-thread widening buffers of the F16/BF16 prefill, kept between calls (globals, so they
 * stay reachable; grown on demand, never per token). */
#define MAX_TILE_THREADS 1024
static float *tile_buf[MAX_TILE_THREADS];
static size_t tile_cap[MAX_TILE_THREADS];

/* y[:, r0:r1) = x · W[r0:r1)ᵀ on the calling thread (single-threaded BLAS). Returns -1 when the
 * widening buffer cannot be allocated. */
static int matmul_rows(float *y, const float *x, const weight_t *w, int n, int r0, int r1, int tid)
{
    int rows = w->rows, cols = w->cols;
    if (w->dtype == DT_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, r1 - r0, cols, 1.0f, x, cols,
                    (const float *)w->data + (size_t)r0 * cols, cols, 0.0f, y + r0, rows);
        return 0;
    }
    const cpu_simd_ops *s = cpu_simd();
    int tr = (int)(TILE_BYTES / sizeof(float) / (size_t)cols);
    tr = tr < 16 ? 16 : tr & ~15;
    if (tr > r1 - r0) tr = r1 - r0;
    size_t need = (size_t)tr * cols;
    if (tid >= MAX_TILE_THREADS) return -1;
    if (need > tile_cap[tid]) {
        float *nb = realloc(tile_buf[tid], need * sizeof(float));
        if (!nb) return -1;
        tile_buf[tid] = nb;
        tile_cap[tid] = need;
    }
    float *buf = tile_buf[tid];
    const uint16_t *W = w->data;
    for (int t0 = r0; t0 < r1; t0 += tr) {
        int m = r1 - t0 < tr ? r1 - t0 : tr;
        if (w->dtype == DT_F16) s->widen_f16(buf, W + (size_t)t0 * cols, (size_t)m * cols);
        else s->widen_bf16(buf, W + (size_t)t0 * cols, (size_t)m * cols);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, cols, 1.0f, x, cols, buf, cols,
                    0.0f, y + t0, rows);
    }
    return 0;
}

void matmul(float *y, const float *x, const weight_t *w, int n)
{
    if (n == 1) {
        matvec(y, x, w);
        return;
    }
    /* prefill: the OpenMP threads split the output rows (contiguous, 16-aligned) and each runs
     * the BLAS on its slice; the BLAS itself runs single-threaded (cpu_set_threads), so one
     * thread pool serves both and none spins while the other works */
    int rows = w->rows, failed = 0;
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if ((size_t)n * rows * w->cols < (1u << 20)) nt = 1;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        int blocks = (rows + 15) / 16;
        int r0 = (int)((long long)blocks * t / k) * 16, r1 = (int)((long long)blocks * (t + 1) / k) * 16;
        if (r1 > rows) r1 = rows;
        if (r0 < r1 && matmul_rows(y, x, w, n, r0, r1, t) != 0) failed = 1;
    }
    if (failed)   /* no memory for a widening buffer: one row of x at a time, no buffer */
        for (int i = 0; i < n; i++) matvec(y + (size_t)i * rows, x + (size_t)i * w->cols, w);
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
