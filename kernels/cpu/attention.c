/* CPU attention kernels: decode (one query over the cached slots) and causal prefill
 * (a chunk of queries over the cached slots plus the chunk itself), with the attention
 * statistics eviction policies ask for (POLICIES.md §1.5).
 *
 * Prefill is tiled (FlashAttention-style online softmax, Dao et al. 2022 §3.1): query rows in
 * blocks of ATT_BQ, keys in tiles of ATT_BK transposed once per block so the scores of a row
 * against a tile are ATT_BK-lane FMAs; a thread holds one tile of scores, never a row or the
 * matrix. The column sums need each row's final max and normaliser, so when asked for they
 * take a second pass over the scores (the outputs are the same either way). */
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

void attn_decode_head(const float *q, const float *K, const float *V, int n, int head_dim,
                      float scale, float *probs, float *out)
{
    const cpu_simd_ops *s = cpu_simd();
    float mx = -INFINITY;
    for (int j = 0; j < n; j++) {
        probs[j] = s->dot(q, K + (size_t)j * head_dim, head_dim) * scale;
        if (probs[j] > mx) mx = probs[j];
    }
    float inv = 1.0f / s->exp_sum(probs, probs, n, mx);
    for (int j = 0; j < n; j++) probs[j] *= inv;
    memset(out, 0, (size_t)head_dim * sizeof(float));
    const float *rows[ATT_BK];
    for (int j0 = 0; j0 < n; j0 += ATT_BK) {
        int cnt = n - j0 < ATT_BK ? n - j0 : ATT_BK;
        for (int jj = 0; jj < cnt; jj++) rows[jj] = V + (size_t)(j0 + jj) * head_dim;
        s->acc_rows(out, probs + j0, rows, cnt, head_dim);
    }
}

size_t attn_prefill_scratch_floats(int head_dim)
{
    return (size_t)head_dim * ATT_BK + ATT_BK + 2 * ATT_BQ;
}

/* Kt [head_dim][ATT_BK] = keys t0..t0+cnt-1 (live slots, then the chunk) transposed; columns
 * past cnt are zero. */
static void load_tile(float *Kt, const float *K_live, int n_live, const float *K_new, int k_stride,
                      int t0, int cnt, int head_dim)
{
    for (int jj = 0; jj < ATT_BK; jj++) {
        int j = t0 + jj;
        if (jj >= cnt) {
            for (int d = 0; d < head_dim; d++) Kt[(size_t)d * ATT_BK + jj] = 0.0f;
            continue;
        }
        const float *k = j < n_live ? K_live + (size_t)j * head_dim : K_new + (size_t)(j - n_live) * k_stride;
        for (int d = 0; d < head_dim; d++) Kt[(size_t)d * ATT_BK + jj] = k[d];
    }
}

void attn_prefill_head(const float *q, int q_stride, const float *K_live, const float *V_live,
                       int n_live, const float *K_new, int k_stride, const float *V_new,
                       int v_stride, int n_new, int head_dim, float scale, float *out,
                       int out_stride, float *colsum, float *scratch)
{
    const cpu_simd_ops *s = cpu_simd();
    float *Kt = scratch, *sc = Kt + (size_t)head_dim * ATT_BK, *m = sc + ATT_BK, *l = m + ATT_BQ;
    const float *vrows[ATT_BK];
    for (int i0 = 0; i0 < n_new; i0 += ATT_BQ) {
        int i1 = i0 + ATT_BQ < n_new ? i0 + ATT_BQ : n_new;
        int n_keys = n_live + i1;   /* keys the block's last row sees */
        for (int i = i0; i < i1; i++) {
            m[i - i0] = -INFINITY;
            l[i - i0] = 0.0f;
            memset(out + (size_t)i * out_stride, 0, (size_t)head_dim * sizeof(float));
        }
        /* pass 1: online softmax and the outputs */
        for (int t0 = 0; t0 < n_keys; t0 += ATT_BK) {
            int cnt = n_keys - t0 < ATT_BK ? n_keys - t0 : ATT_BK;
            load_tile(Kt, K_live, n_live, K_new, k_stride, t0, cnt, head_dim);
            for (int jj = 0; jj < cnt; jj++) {
                int j = t0 + jj;
                vrows[jj] = j < n_live ? V_live + (size_t)j * head_dim : V_new + (size_t)(j - n_live) * v_stride;
            }
            for (int i = i0; i < i1; i++) {
                int lim = n_live + i + 1 - t0;  /* keys of this tile row i sees */
                if (lim <= 0) continue;
                if (lim > cnt) lim = cnt;
                s->scores_tile(sc, q + (size_t)i * q_stride, Kt, head_dim, scale);
                float mt = -INFINITY;
                for (int jj = 0; jj < lim; jj++)
                    if (sc[jj] > mt) mt = sc[jj];
                float *o = out + (size_t)i * out_stride, *mi = &m[i - i0], *li = &l[i - i0];
                if (mt > *mi) {
                    float corr = expf(*mi - mt);   /* 0 on the first tile */
                    if (*li != 0.0f)
                        for (int d = 0; d < head_dim; d++) o[d] *= corr;
                    *li *= corr;
                    *mi = mt;
                }
                *li += s->exp_sum(sc, sc, lim, *mi);
                s->acc_rows(o, sc, vrows, lim, head_dim);
            }
        }
        for (int i = i0; i < i1; i++) {
            float inv = 1.0f / l[i - i0], *o = out + (size_t)i * out_stride;
            for (int d = 0; d < head_dim; d++) o[d] *= inv;
        }
        if (!colsum) continue;
        /* pass 2: colsum[j] += p_i(j) = exp(s_ij - m_i) / l_i with the rows' final m, l */
        for (int t0 = 0; t0 < n_keys; t0 += ATT_BK) {
            int cnt = n_keys - t0 < ATT_BK ? n_keys - t0 : ATT_BK;
            load_tile(Kt, K_live, n_live, K_new, k_stride, t0, cnt, head_dim);
            for (int i = i0; i < i1; i++) {
                int lim = n_live + i + 1 - t0;
                if (lim <= 0) continue;
                if (lim > cnt) lim = cnt;
                s->scores_tile(sc, q + (size_t)i * q_stride, Kt, head_dim, scale);
                s->exp_sum(sc, sc, lim, m[i - i0]);
                float inv = 1.0f / l[i - i0];
                for (int jj = 0; jj < lim; jj++) colsum[t0 + jj] += sc[jj] * inv;
            }
        }
    }
}
