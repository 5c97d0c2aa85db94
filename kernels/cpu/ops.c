/* CPU kernels: threads, RMSNorm, RoPE, SwiGLU, residuals, KV-row conversions (matmul:
 * matmul.c). */
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <unistd.h>

/* Prefill-sized RMSNorm, SwiGLU, RoPE and residual adds (at least this many elements) split their rows / elements
 * over the OpenMP threads: each element is computed exactly as on one thread, so the results
 * do not change; decode-sized calls (one token) stay on the calling thread (no fork). */
#define OPS_PAR_MIN (1 << 16)

/* OpenBLAS (any threading flavour) exports this. */
void openblas_set_num_threads(int num_threads);

void cpu_set_threads(int n)
{
    if (n < 1) n = 1;
    omp_set_num_threads(n);
    /* matmul splits the work over the OpenMP threads and calls the BLAS from each: a second,
     * spinning thread pool inside the BLAS would only compete with them */
    openblas_set_num_threads(1);
}

int cpu_num_cores(void)
{
    /* physical cores among the CPUs this process may run on: distinct (package, core) pairs
     * (hyper-threads share a core's FMA units and caches; decode is memory-bound, prefill
     * compute-bound: one thread per core is the better default either way) */
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return online > 0 ? (int)online : 1;
    int n = 0, seen = 0;
    long keys[1024];
    for (int c = 0; c < CPU_SETSIZE && c < 1024; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        seen++;
        char path[128];
        long pkg = 0, core = c;
        FILE *f;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        if ((f = fopen(path, "r"))) { if (fscanf(f, "%ld", &pkg) != 1) pkg = 0; fclose(f); }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        if ((f = fopen(path, "r"))) { if (fscanf(f, "%ld", &core) != 1) core = c; fclose(f); }
        long key = pkg << 20 | core;
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= keys[i] == key;
        if (!dup) keys[n++] = key;
    }
    if (n > 0) return n;
    return seen > 0 ? seen : online > 0 ? (int)online : 1;
}

/* Element i of a 1-D weight in any dtype, as f32. */
static inline float weight_at(const weight_t *w, int i)
{
    switch (w->dtype) {
    case DT_F16: return f16_to_f32(((const uint16_t *)w->data)[i]);
    case DT_BF16: return bf16_to_f32(((const uint16_t *)w->data)[i]);
    default: return ((const float *)w->data)[i];
    }
}

/* One row of rmsnorm: w the f32 weights, or NULL to read weight's elements. */
static void rmsnorm_row(float *o, const float *xr, const weight_t *weight, const float *w, int dim, float eps)
{
    float ss = cpu_simd()->dot(xr, xr, dim);   /* vector lanes: the scalar chain was 4 cycles an element */
    float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    if (w)
        for (int i = 0; i < dim; i++) o[i] = w[i] * (xr[i] * inv);
    else
        for (int i = 0; i < dim; i++) o[i] = weight_at(weight, i) * (xr[i] * inv);
}

void rmsnorm(float *out, const float *x, const weight_t *weight, int n, int dim, float eps)
{
    const float *w = weight->dtype == DT_F32 ? (const float *)weight->data : NULL;
    if (dtype_is_quant(weight->dtype)) {   /* block formats: the row dequantized once per call */
        static _Thread_local float *wq;
        static _Thread_local int wq_cap;
        if (dim > wq_cap || dim % dtype_block(weight->dtype)) {
            float *p = dim % dtype_block(weight->dtype) ? NULL : realloc(wq, (size_t)dim * sizeof *p);
            if (!p) {   /* no memory, or not whole blocks */
                for (size_t i = 0; i < (size_t)n * dim; i++) out[i] = __builtin_nanf("");
                return;
            }
            wq = p;
            wq_cap = dim;
        }
        dequantize_row(weight->dtype, weight->data, wq, dim);
        w = wq;
    }
    if ((size_t)n * dim < OPS_PAR_MIN) {   /* decode: no OpenMP region at all (a team of one costs too) */
        for (int r = 0; r < n; r++) rmsnorm_row(out + (size_t)r * dim, x + (size_t)r * dim, weight, w, dim, eps);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) rmsnorm_row(out + (size_t)r * dim, x + (size_t)r * dim, weight, w, dim, eps);
}

void rope_tables(float *cos_t, float *sin_t, const int *pos, int n, int head_dim, float theta,
                 float scaling_factor)
{
    rope_tables_freq(cos_t, sin_t, pos, n, head_dim, theta, scaling_factor, NULL);
}

void rope_tables_freq(float *cos_t, float *sin_t, const int *pos, int n, int head_dim, float theta,
                      float scaling_factor, const float *freq_factors)
{
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        /* HF: 1 / base ** (arange(0, d, 2).float() / d), in f32 */
        float inv_freq = (float)(1.0 / pow((double)theta, (double)(float)(2 * i) / head_dim));
        if (freq_factors) inv_freq = inv_freq / freq_factors[i];   /* llama3 scaling, GGUF rope_freqs */
        for (int r = 0; r < n; r++) {
            float t = (float)pos[r] / scaling_factor;
            float ang = t * inv_freq;
            cos_t[(size_t)r * half + i] = (float)cos((double)ang);
            sin_t[(size_t)r * half + i] = (float)sin((double)ang);
        }
    }
}

/* The n_heads heads of one row, rotate-half pairs (i, i + half). */
static void rope_row(float *x, int n_heads, int head_dim, const float *c, const float *s)
{
    const int half = head_dim / 2;
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < half; i++) {
            float a = v[i], b = v[i + half];
            v[i] = a * c[i] - b * s[i];
            v[i + half] = b * c[i] + a * s[i];
        }
    }
}

void rope_apply(float *x, int n, int n_heads, int head_dim, const float *cos_t, const float *sin_t)
{
    int half = head_dim / 2;
    if ((size_t)n * n_heads * head_dim < OPS_PAR_MIN) {
        for (int r = 0; r < n; r++)
            rope_row(x + (size_t)r * n_heads * head_dim, n_heads, head_dim, cos_t + (size_t)r * half, sin_t + (size_t)r * half);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++)
        rope_row(x + (size_t)r * n_heads * head_dim, n_heads, head_dim, cos_t + (size_t)r * half, sin_t + (size_t)r * half);
}

void swiglu(float *gate, const float *up, size_t n)
{
    const cpu_simd_ops *s = cpu_simd();
    if (n < OPS_PAR_MIN) {
        s->swiglu(gate, up, n);
        return;
    }
#pragma omp parallel
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        size_t a = n * t / T, b = n * (t + 1) / T;
        s->swiglu(gate + a, up + a, b - a);
    }
}

void add_inplace(float *y, const float *x, size_t n)
{
    if (n < OPS_PAR_MIN) {
        for (size_t i = 0; i < n; i++) y[i] += x[i];
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void add_bias(float *y, const weight_t *bias, int n, int dim)
{
    for (int r = 0; r < n; r++) {
        float *row = y + (size_t)r * dim;
        for (int i = 0; i < dim; i++) row[i] += weight_at(bias, i);
    }
}

void widen_elems(dtype_t dt, const void *src, float *dst, size_t n)
{
    const cpu_simd_ops *s = cpu_simd();
    if (dt == DT_F32) memcpy(dst, src, n * sizeof(float));
    else if (dt == DT_F16) s->widen_f16(dst, src, n);
    else if (dt == DT_BF16) s->widen_bf16(dst, src, n);
}

void narrow_elems(dtype_t dt, const float *src, void *dst, size_t n)
{
    if (dt == DT_F32) memcpy(dst, src, n * sizeof(float));
    else if (dt == DT_F16) cpu_simd()->narrow_f16(dst, src, n);
    else if (dt == DT_BF16) cpu_simd()->narrow_bf16(dst, src, n);
}

void round_elems(dtype_t dt, float *x, size_t n)
{
    if (dt != DT_F16 && dt != DT_BF16) return;
    const cpu_simd_ops *s = cpu_simd();
    uint16_t h[256];   /* narrowed and widened back a chunk at a time */
    for (size_t i = 0; i < n; i += 256) {
        size_t m = n - i < 256 ? n - i : 256;
        if (dt == DT_F16) {
            s->narrow_f16(h, x + i, m);
            s->widen_f16(x + i, h, m);
        } else {
            s->narrow_bf16(h, x + i, m);
            s->widen_bf16(x + i, h, m);
        }
    }
}
