/* CPU attention kernels: decode (one query over the cached slots) and causal prefill
 * (a chunk of queries over the cached slots plus the chunk itself), with the attention
 * statistics eviction policies ask for (POLICIES.md §1.5). */
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

static inline float dot(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static inline void axpy(float *y, float a, const float *x, int n)
{
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* p[0..n) = softmax(p[0..n)) in place. */
static void softmax_inplace(float *p, int n)
{
    float mx = -INFINITY;
    for (int j = 0; j < n; j++)
        if (p[j] > mx) mx = p[j];
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        p[j] = expf(p[j] - mx);
        sum += p[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < n; j++) p[j] *= inv;
}

void attn_decode_head(const float *q, const float *K, const float *V, int n, int head_dim,
                      float scale, float *probs, float *out)
{
    for (int j = 0; j < n; j++) probs[j] = dot(q, K + (size_t)j * head_dim, head_dim) * scale;
    softmax_inplace(probs, n);
    memset(out, 0, (size_t)head_dim * sizeof(float));
    for (int j = 0; j < n; j++) axpy(out, probs[j], V + (size_t)j * head_dim, head_dim);
}

void attn_prefill_head(const float *q, int q_stride, const float *K_live, const float *V_live,
                       int n_live, const float *K_new, int k_stride, const float *V_new,
                       int v_stride, int n_new, int head_dim, float scale, float *out,
                       int out_stride, float *colsum, float *scratch)
{
    for (int i = 0; i < n_new; i++) {
        const float *qi = q + (size_t)i * q_stride;
        int n = n_live + i + 1;
        for (int j = 0; j < n_live; j++)
            scratch[j] = dot(qi, K_live + (size_t)j * head_dim, head_dim) * scale;
        for (int j = 0; j <= i; j++)
            scratch[n_live + j] = dot(qi, K_new + (size_t)j * k_stride, head_dim) * scale;
        softmax_inplace(scratch, n);
        float *o = out + (size_t)i * out_stride;
        memset(o, 0, (size_t)head_dim * sizeof(float));
        for (int j = 0; j < n_live; j++) axpy(o, scratch[j], V_live + (size_t)j * head_dim, head_dim);
        for (int j = 0; j <= i; j++) axpy(o, scratch[n_live + j], V_new + (size_t)j * v_stride, head_dim);
        if (colsum)
            for (int j = 0; j < n; j++) colsum[j] += scratch[j];
    }
}
