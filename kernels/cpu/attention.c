/* CPU attention kernels: decode (one query over the cached slots) and causal prefill
 * (a chunk of queries over the cached slots plus the chunk itself), with the attention
 * statistics eviction policies ask for (POLICIES.md §1.5).
 *
 * Prefill is tiled (FlashAttention-style online softmax, Dao et al. 2022 §3.1): query rows in
 * blocks of ATT_BQ, keys in tiles of ATT_BK transposed once per block so the scores of a row
 * against a tile are ATT_BK-lane FMAs; a thread holds the scores of a few rows against one tile,
 * never a row or the matrix. The family's scores_rows / acc_rows_n take att_rows query rows at
 * once (each tile row and value row loaded once for them; per row the same operations in the
 * same order, so the same floats as row by row). Zen 4, bench/bench_attn --prefill 2000, one
 * head: 14.5 ms row by row in blocks of 32 rows, 7.8 four rows at once, 6.3 in blocks of 128.
 * The column sums need each row's final max and normaliser, so when asked for they take a second
 * pass over the scores (the outputs are the same either way).
 *
 * A KV cache in 16 bits (F16/BF16 K/V rows, --kv-dtype): decode widens each key and value row
 * in registers inside the dot products and row accumulations (simd.h dot_f16, acc_rows_f16,
 * ...); prefill widens a live key as it goes into the transposed tile (the tile is f32 anyway)
 * and the live value rows in registers. Accumulation is f32 throughout, and an F32 cache runs
 * exactly the f32 kernels it always did. */
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

/* q · K_j · scale for j < n, K rows of dtype k_dt (widened in registers). Returns the max. */
static float decode_scores(const cpu_simd_ops *s, const float *q, const void *K, dtype_t k_dt,
                           int n, int head_dim, float scale, float *probs)
{
    if (k_dt == DT_F16) s->dots_f16(probs, q, K, n, head_dim, scale);
    else if (k_dt == DT_BF16) s->dots_bf16(probs, q, K, n, head_dim, scale);
    else s->dots_f32(probs, q, K, n, head_dim, scale);
    return s->max(probs, n);
}

/* o += Σ_j p[j] · row j for rows j0 .. j0+cnt-1 of V (dtype v_dt, [..][head_dim]). */
static void acc_slots(const cpu_simd_ops *s, float *o, const float *p, const void *V, dtype_t v_dt,
                      int j0, int cnt, int head_dim)
{
    if (v_dt == DT_F32) {
        const float *rows[ATT_BK];
        for (int jj = 0; jj < cnt; jj++) rows[jj] = (const float *)V + (size_t)(j0 + jj) * head_dim;
        s->acc_rows(o, p, rows, cnt, head_dim);
        return;
    }
    const uint16_t *rows[ATT_BK];
    for (int jj = 0; jj < cnt; jj++) rows[jj] = (const uint16_t *)V + (size_t)(j0 + jj) * head_dim;
    (v_dt == DT_F16 ? s->acc_rows_f16 : s->acc_rows_bf16)(o, p, rows, cnt, head_dim);
}

void attn_decode_head(const float *q, const void *K, dtype_t k_dt, const void *V, dtype_t v_dt,
                      int n, int head_dim, float scale, float *probs, float *out)
{
    const cpu_simd_ops *s = cpu_simd();
    float mx = decode_scores(s, q, K, k_dt, n, head_dim, scale, probs);
    s->scale(probs, n, 1.0f / s->exp_sum(probs, probs, n, mx));
    memset(out, 0, (size_t)head_dim * sizeof(float));
    for (int j0 = 0; j0 < n; j0 += ATT_BK) {
        int cnt = n - j0 < ATT_BK ? n - j0 : ATT_BK;
        acc_slots(s, out, probs + j0, V, v_dt, j0, cnt, head_dim);
    }
}

/* Keys (and value rows) per inner block of the grouped decode kernels: the block is read from
 * memory once and stays in the L1 while the G query heads of the group go over it (32 rows of
 * head_dim 64: 4 KiB in 16 bits, 8 KiB in f32). */
#define GQA_BLK 32

void attn_decode_scores(const float *q, int G, const void *K, dtype_t k_dt, int j0, int j1, int head_dim,
                        float scale, float *probs, int probs_stride)
{
    const cpu_simd_ops *s = cpu_simd();
    const size_t es = k_dt == DT_F32 ? sizeof(float) : sizeof(uint16_t);
    if (s->dots_group) {   /* the family's fused kernel: each key widened once for the G heads */
        s->dots_group(probs + j0, probs_stride, q, G, (const char *)K + (size_t)j0 * head_dim * es, (int)k_dt,
                      j1 - j0, head_dim, scale);
        return;
    }
    for (int b = j0; b < j1; b += GQA_BLK) {
        int cnt = j1 - b < GQA_BLK ? j1 - b : GQA_BLK;
        const void *Kb = (const char *)K + (size_t)b * head_dim * es;
        for (int g = 0; g < G; g++) {
            float *out = probs + (size_t)g * probs_stride + b;
            const float *qg = q + (size_t)g * head_dim;
            if (k_dt == DT_F16) s->dots_f16(out, qg, Kb, cnt, head_dim, scale);
            else if (k_dt == DT_BF16) s->dots_bf16(out, qg, Kb, cnt, head_dim, scale);
            else s->dots_f32(out, qg, Kb, cnt, head_dim, scale);
        }
    }
}

void attn_decode_softmax(float *p, int n)
{
    const cpu_simd_ops *s = cpu_simd();
    s->scale(p, n, 1.0f / s->exp_sum(p, p, n, s->max(p, n)));
}

void attn_decode_values(const float *probs, int probs_stride, int G, const void *V, dtype_t v_dt, int n,
                        int head_dim, int d0, int d1, float *out)
{
    const cpu_simd_ops *s = cpu_simd();
    for (int g = 0; g < G; g++) memset(out + (size_t)g * head_dim + d0, 0, (size_t)(d1 - d0) * sizeof(float));
    if (s->acc_group && (d1 - d0) % 16 == 0) {   /* fused: each value row widened once for the G heads */
        const size_t es = v_dt == DT_F32 ? sizeof(float) : sizeof(uint16_t);
        s->acc_group(out + d0, probs, probs_stride, G, (const char *)V + (size_t)d0 * es, (int)v_dt, n, head_dim,
                     d1 - d0);
        return;
    }
    for (int b = 0; b < n; b += GQA_BLK) {
        int cnt = n - b < GQA_BLK ? n - b : GQA_BLK;
        if (v_dt == DT_F32) {
            const float *rows[GQA_BLK];
            for (int jj = 0; jj < cnt; jj++) rows[jj] = (const float *)V + (size_t)(b + jj) * head_dim + d0;
            for (int g = 0; g < G; g++)
                s->acc_rows(out + (size_t)g * head_dim + d0, probs + (size_t)g * probs_stride + b, rows, cnt, d1 - d0);
        } else {
            const uint16_t *rows[GQA_BLK];
            for (int jj = 0; jj < cnt; jj++) rows[jj] = (const uint16_t *)V + (size_t)(b + jj) * head_dim + d0;
            for (int g = 0; g < G; g++)
                (v_dt == DT_F16 ? s->acc_rows_f16 : s->acc_rows_bf16)(out + (size_t)g * head_dim + d0,
                                                                       probs + (size_t)g * probs_stride + b,
                                                                       rows, cnt, d1 - d0);
        }
    }
}

int attn_decode_dsplit(int head_dim)
{
    return head_dim % 32 == 0 ? 32 : head_dim;
}

size_t attn_prefill_scratch_floats(int head_dim)
{
    /* a transposed key tile, the scores of up to ATT_QR_MAX rows against it, the rows' max and
     * normaliser, one widened key row */
    return (size_t)head_dim * ATT_BK + ATT_QR_MAX * ATT_BK + 2 * ATT_BQ + (size_t)head_dim;
}

/* o[r·o_stride] += Σ_j p[r·ATT_BK + j] · row j for rows j0 .. j0+cnt-1 of V (dtype v_dt), r < nr:
 * acc_slots per query row, each value row read once for the nr rows where the family can. */
static void acc_slots_rows(const cpu_simd_ops *s, float *o, int o_stride, const float *p, int nr, const void *V,
                           dtype_t v_dt, int j0, int cnt, int head_dim)
{
    if (nr == 1 || !s->acc_rows_n) {
        for (int r = 0; r < nr; r++) acc_slots(s, o + (size_t)r * o_stride, p + (size_t)r * ATT_BK, V, v_dt, j0, cnt, head_dim);
        return;
    }
    if (v_dt == DT_F32) {
        const float *rows[ATT_BK];
        for (int jj = 0; jj < cnt; jj++) rows[jj] = (const float *)V + (size_t)(j0 + jj) * head_dim;
        s->acc_rows_n(o, o_stride, p, ATT_BK, nr, rows, cnt, head_dim);
        return;
    }
    const uint16_t *rows[ATT_BK];
    for (int jj = 0; jj < cnt; jj++) rows[jj] = (const uint16_t *)V + (size_t)(j0 + jj) * head_dim;
    (v_dt == DT_F16 ? s->acc_rows_n_f16 : s->acc_rows_n_bf16)(o, o_stride, p, ATT_BK, nr, rows, cnt, head_dim);
}

/* The scores of query rows i .. i + nr - 1 against the tile Kt: sc[r·ATT_BK + j]. */
static void tile_scores(const cpu_simd_ops *s, float *sc, const float *q, int q_stride, int i, int nr, const float *Kt,
                        int head_dim, float scale)
{
    if (nr > 1 && s->scores_rows) s->scores_rows(sc, q + (size_t)i * q_stride, q_stride, nr, Kt, head_dim, scale);
    else
        for (int r = 0; r < nr; r++) s->scores_tile(sc + (size_t)r * ATT_BK, q + (size_t)(i + r) * q_stride, Kt, head_dim, scale);
}

/* Kt [head_dim][ATT_BK] = keys t0..t0+cnt-1 (live slots of dtype k_dt, then the chunk)
 * transposed; columns past cnt are zero. row: [head_dim] scratch for a widened live key. */
static void load_tile(const cpu_simd_ops *s, float *Kt, const void *K_live, dtype_t k_dt, int n_live,
                      const float *K_new, int k_stride, int t0, int cnt, int head_dim, float *row)
{
    for (int jj = 0; jj < ATT_BK; jj++) {
        int j = t0 + jj;
        if (jj >= cnt) {
            for (int d = 0; d < head_dim; d++) Kt[(size_t)d * ATT_BK + jj] = 0.0f;
            continue;
        }
        const float *k;
        if (j >= n_live) k = K_new + (size_t)(j - n_live) * k_stride;
        else if (k_dt == DT_F32) k = (const float *)K_live + (size_t)j * head_dim;
        else {
            const uint16_t *kh = (const uint16_t *)K_live + (size_t)j * head_dim;
            if (k_dt == DT_F16) s->widen_f16(row, kh, (size_t)head_dim);
            else s->widen_bf16(row, kh, (size_t)head_dim);
            k = row;
        }
        for (int d = 0; d < head_dim; d++) Kt[(size_t)d * ATT_BK + jj] = k[d];
    }
}

void attn_prefill_head(const float *q, int q_stride, const void *K_live, dtype_t k_live_dt,
                       const void *V_live, dtype_t v_live_dt, int n_live, const float *K_new,
                       int k_stride, const float *V_new, int v_stride, int n_new, int head_dim,
                       float scale, float *out, int out_stride, float *colsum, float *scratch)
{
    const cpu_simd_ops *s = cpu_simd();
    float *Kt = scratch, *sc = Kt + (size_t)head_dim * ATT_BK, *m = sc + ATT_QR_MAX * ATT_BK, *l = m + ATT_BQ;
    float *krow = l + ATT_BQ;
    const float *vrows[ATT_BK];
    const int QR = s->scores_rows && s->att_rows > 1 ? (s->att_rows < ATT_QR_MAX ? s->att_rows : ATT_QR_MAX) : 1;
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
            load_tile(s, Kt, K_live, k_live_dt, n_live, K_new, k_stride, t0, cnt, head_dim, krow);
            /* value rows: a 16-bit cache's live rows go through acc_slots, the rest (the
             * chunk's f32 rows; every row of an f32 cache) through vrows */
            int n_lv = v_live_dt == DT_F32 ? 0 : n_live - t0 < 0 ? 0 : n_live - t0 < cnt ? n_live - t0 : cnt;
            for (int jj = n_lv; jj < cnt; jj++) {
                int j = t0 + jj;
                vrows[jj] = j < n_live ? (const float *)V_live + (size_t)j * head_dim
                                       : V_new + (size_t)(j - n_live) * v_stride;
            }
            /* rows that see this tile (lim = n_live + i + 1 - t0 > 0), QR at a time: their
             * scores together, then each row's online softmax, then the value rows they all
             * see together (the live ones: every row sees all n_lv of them, lim > n_lv or
             * lim = cnt = n_lv), each row's last ones alone: per row the same operations in
             * the same order as one row at a time */
            const int ib = t0 - n_live > i0 ? t0 - n_live : i0;
            for (int ia = ib; ia < i1; ia += QR) {
                const int nr = i1 - ia < QR ? i1 - ia : QR;
                tile_scores(s, sc, q, q_stride, ia, nr, Kt, head_dim, scale);
                int lims[ATT_QR_MAX];
                for (int r = 0; r < nr; r++) {
                    const int i = ia + r;
                    int lim = n_live + i + 1 - t0;   /* keys of this tile row i sees (> 0) */
                    if (lim > cnt) lim = cnt;
                    lims[r] = lim;
                    float *scr = sc + (size_t)r * ATT_BK;
                    const float mt = s->max(scr, lim);
                    float *o = out + (size_t)i * out_stride, *mi = &m[i - i0], *li = &l[i - i0];
                    if (mt > *mi) {
                        float corr = expf(*mi - mt);   /* 0 on the first tile */
                        if (*li != 0.0f) s->scale(o, head_dim, corr);
                        *li *= corr;
                        *mi = mt;
                    }
                    *li += s->exp_sum(scr, scr, lim, *mi);
                }
                float *o = out + (size_t)ia * out_stride;
                const int nl = n_lv < lims[0] ? n_lv : lims[0];   /* in slot order: live rows, then the chunk */
                if (nl > 0) acc_slots_rows(s, o, out_stride, sc, nr, V_live, v_live_dt, t0, nl, head_dim);
                if (lims[0] > nl) {   /* the chunk's rows every one of the nr sees (lims grow with i) */
                    if (nr > 1 && s->acc_rows_n) s->acc_rows_n(o, out_stride, sc + nl, ATT_BK, nr, vrows + nl, lims[0] - nl, head_dim);
                    else
                        for (int r = 0; r < nr; r++)
                            s->acc_rows(o + (size_t)r * out_stride, sc + (size_t)r * ATT_BK + nl, vrows + nl, lims[0] - nl, head_dim);
                }
                for (int r = 1; r < nr; r++)
                    if (lims[r] > lims[0])
                        s->acc_rows(o + (size_t)r * out_stride, sc + (size_t)r * ATT_BK + lims[0], vrows + lims[0], lims[r] - lims[0],
                                    head_dim);
            }
        }
        for (int i = i0; i < i1; i++) s->scale(out + (size_t)i * out_stride, head_dim, 1.0f / l[i - i0]);
        if (!colsum) continue;
        /* pass 2: colsum[j] += p_i(j) = exp(s_ij - m_i) / l_i with the rows' final m, l */
        for (int t0 = 0; t0 < n_keys; t0 += ATT_BK) {
            int cnt = n_keys - t0 < ATT_BK ? n_keys - t0 : ATT_BK;
            load_tile(s, Kt, K_live, k_live_dt, n_live, K_new, k_stride, t0, cnt, head_dim, krow);
            const int ib = t0 - n_live > i0 ? t0 - n_live : i0;
            for (int ia = ib; ia < i1; ia += QR) {
                const int nr = i1 - ia < QR ? i1 - ia : QR;
                tile_scores(s, sc, q, q_stride, ia, nr, Kt, head_dim, scale);
                for (int r = 0; r < nr; r++) {
                    const int i = ia + r;
                    int lim = n_live + i + 1 - t0;
                    if (lim > cnt) lim = cnt;
                    float *scr = sc + (size_t)r * ATT_BK;
                    s->exp_sum(scr, scr, lim, m[i - i0]);
                    float inv = 1.0f / l[i - i0];
                    for (int jj = 0; jj < lim; jj++) colsum[t0 + jj] += scr[jj] * inv;
                }
            }
        }
    }
}
