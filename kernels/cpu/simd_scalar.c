/* The portable kernel family: plain C, one accumulator in index order. It is the reference
 * the SIMD families are tested against and the path on CPUs without them (and non-x86). */
#include "kernels/cpu/simd.h"

#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

static void matvec_f32(float *y, const float *W, const float *x, int r0, int r1, int cols)
{
    for (int r = r0; r < r1; r++) {
        const float *w = W + (size_t)r * cols;
        float s = 0.0f;
        for (int i = 0; i < cols; i++) s += w[i] * x[i];
        y[r] = s;
    }
}

static void matvec_f16(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols)
{
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * cols;
        float s = 0.0f;
        for (int i = 0; i < cols; i++) s += f16_to_f32(w[i]) * x[i];
        y[r] = s;
    }
}

static void matvec_bf16(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols)
{
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * cols;
        float s = 0.0f;
        for (int i = 0; i < cols; i++) s += bf16_to_f32(w[i]) * x[i];
        y[r] = s;
    }
}

static void widen_f16(float *out, const uint16_t *in, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = f16_to_f32(in[i]);
}

static void widen_bf16(float *out, const uint16_t *in, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = bf16_to_f32(in[i]);
}

static void narrow_f16(uint16_t *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = f32_to_f16(in[i]);
}

static void narrow_bf16(uint16_t *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = f32_to_bf16(in[i]);
}

static float dot(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy(float *y, float a, const float *x, int n)
{
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

static void acc_rows(float *o, const float *p, const float *const *rows, int n, int head_dim)
{
    for (int j = 0; j < n; j++)
        for (int d = 0; d < head_dim; d++) o[d] += p[j] * rows[j][d];
}

static float vec_max(const float *x, int n)
{
    float m = -INFINITY;
    for (int j = 0; j < n; j++)
        if (x[j] > m) m = x[j];
    return m;
}

static void vec_scale(float *x, int n, float a)
{
    for (int j = 0; j < n; j++) x[j] *= a;
}

static float exp_sum(float *p, const float *s, int n, float m)
{
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        p[j] = expf(s[j] - m);
        sum += p[j];
    }
    return sum;
}

static void swiglu_rows(float *gate, const float *up, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

static void scores_tile(float *s, const float *q, const float *Kt, int head_dim, float scale)
{
    float acc[ATT_BK];
    memset(acc, 0, sizeof acc);
    for (int d = 0; d < head_dim; d++) {
        const float *k = Kt + (size_t)d * ATT_BK;
        float qd = q[d];
        for (int j = 0; j < ATT_BK; j++) acc[j] += qd * k[j];
    }
    for (int j = 0; j < ATT_BK; j++) s[j] = acc[j] * scale;
}

static float dot_f16(const float *a, const uint16_t *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * f16_to_f32(b[i]);
    return s;
}

static float dot_bf16(const float *a, const uint16_t *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * bf16_to_f32(b[i]);
    return s;
}

static void acc_rows_f16(float *o, const float *p, const uint16_t *const *rows, int n, int head_dim)
{
    for (int j = 0; j < n; j++)
        for (int d = 0; d < head_dim; d++) o[d] += p[j] * f16_to_f32(rows[j][d]);
}

static void acc_rows_bf16(float *o, const float *p, const uint16_t *const *rows, int n, int head_dim)
{
    for (int j = 0; j < n; j++)
        for (int d = 0; d < head_dim; d++) o[d] += p[j] * bf16_to_f32(rows[j][d]);
}

static void dots_f32(float *s, const float *q, const float *K, int n, int head_dim, float scale)
{
    for (int j = 0; j < n; j++) s[j] = dot(q, K + (size_t)j * head_dim, head_dim) * scale;
}

static void dots_f16(float *s, const float *q, const uint16_t *K, int n, int head_dim, float scale)
{
    for (int j = 0; j < n; j++) s[j] = dot_f16(q, K + (size_t)j * head_dim, head_dim) * scale;
}

static void dots_bf16(float *s, const float *q, const uint16_t *K, int n, int head_dim, float scale)
{
    for (int j = 0; j < n; j++) s[j] = dot_bf16(q, K + (size_t)j * head_dim, head_dim) * scale;
}

const cpu_simd_ops cpu_simd_scalar = {
    .name = "scalar",
    .matvec_f32 = matvec_f32,
    .matvec_f16 = matvec_f16,
    .matvec_bf16 = matvec_bf16,
    .widen_f16 = widen_f16,
    .widen_bf16 = widen_bf16,
    .narrow_f16 = narrow_f16,
    .narrow_bf16 = narrow_bf16,
    .dot = dot,
    .axpy = axpy,
    .max = vec_max,
    .scale = vec_scale,
    .exp_sum = exp_sum,
    .swiglu = swiglu_rows,
    .acc_rows = acc_rows,
    .scores_tile = scores_tile,
    .dot_f16 = dot_f16,
    .dot_bf16 = dot_bf16,
    .acc_rows_f16 = acc_rows_f16,
    .acc_rows_bf16 = acc_rows_bf16,
    .dots_f32 = dots_f32,
    .dots_f16 = dots_f16,
    .dots_bf16 = dots_bf16,
};
