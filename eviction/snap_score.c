/* Scoring of the snap family (POLICIES.md §5.3, §12): the candidates of a (layer, KV head),
 * the observation-window attention of the last w queries (kept in a ring), 1-D pooling and the
 * top-k keep-list. Budgets (how many each head keeps) come from snap_alloc.c; the hooks that
 * call these are in policy_snapkv.c. Shared declarations: eviction/snap_internal.h.
 *
 * [DECISION] --rope shifted: the engine hands on_prefill the queries rotated by their rank and
 * the keys as stored (before RoPE), and pre_attn the query before rotation; the observation
 * scores use them as given, without relative rotation (an approximation; the snap-family
 * references use absolute positions, the default). */
#include "eviction/policy_common.h"
#include "eviction/snap_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ pure selection functions */

/* Sort helpers: heapsort of int indices under a strict total order `before` (no allocation). */
typedef int (*snap_before_fn)(const void *ctx, int a, int b);

static void sift_down(int *a, int root, int n, snap_before_fn before, const void *ctx)
{
    for (;;) {
        int child = 2 * root + 1;
        if (child >= n) return;
        /* max-heap of "ranks later": the root is the element that comes last */
        if (child + 1 < n && before(ctx, a[child], a[child + 1])) child++;
        if (!before(ctx, a[root], a[child])) return;
        int t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

static void heap_sort(int *a, int n, snap_before_fn before, const void *ctx)
{
    for (int i = n / 2 - 1; i >= 0; i--) sift_down(a, i, n, before, ctx);
    for (int end = n - 1; end > 0; end--) {
        int t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end, before, ctx);
    }
}

/* Higher score first, then the lower index (older token, §1.6; flat head-major index for the
 * Ada-KV global top-B: score desc, head asc, pos asc). */
static int rank_before(const void *ctx, int a, int b)
{
    const float *s = ctx;
    return s[a] > s[b] || (s[a] == s[b] && a < b);
}

static int index_before(const void *ctx, int a, int b)
{
    (void)ctx;
    return a < b;
}

/* Higher score first, then the lower index (see snap_internal.h). */
void snap_rank_sort(int *a, int n, const float *scores)
{
    heap_sort(a, n, rank_before, scores);
}

/* 1-D pooling of prefix scores (§5.3): out[j] = max (pool 0) or mean with zero padding
 * (pool 1, torch avg_pool1d count_include_pad, SnapKV's code) of x[j−r .. j+r], r = kernel/2,
 * clipped to [0, n). x, out: [n] f32, distinct. kernel: odd ≥ 1. */
void snap_pool(const float *x, int n, int kernel, int pool, float *out)
{
    int r = kernel / 2;
    for (int j = 0; j < n; j++) {
        int lo = j - r < 0 ? 0 : j - r, hi = j + r >= n ? n - 1 : j + r;
        float m = x[lo], sum = 0.0f;
        for (int i = lo; i <= hi; i++) {
            if (x[i] > m) m = x[i];
            sum += x[i];
        }
        out[j] = pool == SNAP_POOL_MAX ? m : sum / (float)kernel;
    }
}

/* Keep-list from pooled prefix scores (§5.3): the top-`budget` of pooled[0..n_prefix) (ties:
 * lower index = older token) in ascending order, then the window n_prefix..n_cand−1.
 * idx: scratch [n_prefix] ints; keep: [n_cand]. Returns the count
 * min(budget, n_prefix) + n_cand − n_prefix. budget < 0 counts as 0. */
int snap_topk_keep(const float *pooled, int n_prefix, int n_cand, int budget, int *idx, int *keep)
{
    int n = 0;
    if (budget >= n_prefix) {
        /* everything in the prefix fits */
        for (int j = 0; j < n_prefix; j++) keep[n++] = j;
    } else if (budget > 0) {
        /* rank the prefix, take the best `budget`, restore position order */
        for (int j = 0; j < n_prefix; j++) idx[j] = j;
        heap_sort(idx, n_prefix, rank_before, pooled);
        heap_sort(idx, budget, index_before, NULL);
        for (int i = 0; i < budget; i++) keep[n++] = idx[i];
    }
    /* the observation window is always kept */
    for (int j = n_prefix; j < n_cand; j++) keep[n++] = j;
    return n;
}

/* SnapKV selection of one head (§5.3): pools scores[0..n_prefix) (kernel, pool as snap_pool)
 * into pooled [n_prefix], then snap_topk_keep. scores: [n_cand] f32 (window entries ignored).
 * idx: [n_prefix]; keep: [n_cand]. Returns the keep count. */
int snap_select(const float *scores, int n_prefix, int n_cand, int budget, int pool, int kernel,
                float *pooled, int *idx, int *keep)
{
    snap_pool(scores, n_prefix, kernel, pool, pooled);
    return snap_topk_keep(pooled, n_prefix, n_cand, budget, idx, keep);
}

/* ------------------------------------------------------------------ candidates and scores */

static const float *cand_key(const snap_cands *c, int j, int d)
{
    return j < c->n_live ? c->live_k + (size_t)j * d : c->new_k + (size_t)(j - c->n_live) * c->new_stride;
}

static int cand_pos(const snap_cands *c, int j)
{
    return j < c->n_live ? c->live_pos[j] : c->pos0 + (j - c->n_live);
}

/* Candidates of (layer, g): its live slots only (decode re-compression). */
snap_cands snap_live_cands(const kv_cache *kv, int layer, int g)
{
    /* the keys as f32: the cache's own rows, or (16-bit cache) widened into the cache's scratch
     * at the region's place, so every head of a layer can be held at once (ada) */
    snap_cands c = {kv_keys_f32(kv, layer, g, kv_len(kv, layer, g)), kv_positions(kv, layer, g),
                    kv_len(kv, layer, g), NULL, 0, 0, kv_len(kv, layer, g)};
    return c;
}

/* Candidates of KV head g for a prefill chunk: its first n_live live slots, then the chunk's
 * tokens. */
snap_cands snap_chunk_cands(const kv_cache *kv, const kv_prefill_chunk *ch, int g, int n_live)
{
    snap_cands c = snap_live_cands(kv, ch->layer, g);
    c.n_live = n_live;
    c.new_k = ch->k_new + (size_t)g * kv->head_dim;
    c.new_stride = (size_t)kv->n_kv_heads * kv->head_dim;
    if (ch->k_live_rot) {
        /* --rope shifted: score against the keys as the attention saw them (rotated by rank,
         * like q_new), see kv_cand_key */
        c.live_k = ch->k_live_rot + (size_t)g * ch->rot_live_stride * kv->head_dim;
        c.new_k = ch->k_new_rot + (size_t)g * ch->rot_new_stride * kv->head_dim;
        c.new_stride = (size_t)kv->head_dim;
    }
    c.pos0 = ch->pos0;
    c.n = n_live + ch->n_new;
    return c;
}

/* Candidates at positions < end − w (the prefix; the rest is the observation window). */
int snap_prefix_len(const snap_state *s, const snap_cands *c, int end)
{
    int n = c->n;
    while (n > 0 && cand_pos(c, n - 1) >= end - s->w) n--;
    return n;
}

/* Observation-window scores of KV head g (§5.3, §12): A[j] = GQA mean (or max, --ada-gqa) over
 * the group's query heads of the mean over the window rows (positions end−w .. end−1, queries
 * from the ring) of the causal softmax of q·k_j/sqrt(d) over the candidates at positions ≤ the
 * row's position (the full row). A: [c->n]. Rows whose query is not in the ring are skipped;
 * with none, A is all zero. */
void snap_obs_scores(snap_state *s, int layer, int g, const snap_cands *c, int end, float *A)
{
    const int d = s->d, n = c->n;
    const float scale = 1.0f / sqrtf((float)d);
    for (int j = 0; j < n; j++) A[j] = 0.0f;
    for (int hl = 0; hl < s->G; hl++) {
        for (int j = 0; j < n; j++) s->acc[j] = 0.0f;
        int rows = 0;
        for (int p = end - s->w < 0 ? 0 : end - s->w; p < end; p++) {
            /* the query of position p, if the ring still holds it */
            int r = p % s->w_flag;
            if (s->ring_pos[((size_t)layer * s->Hkv + g) * s->w_flag + r] != p) continue;
            const float *q = s->ring + (((size_t)layer * s->w_flag + r) * s->H + g * s->G + hl) * d;
            /* causal row: the candidates at positions ≤ p */
            int nv = n;
            while (nv > 0 && cand_pos(c, nv - 1) > p) nv--;
            if (nv == 0) continue;
            /* softmax over the row, accumulated */
            float mx = -INFINITY;
            for (int j = 0; j < nv; j++) {
                const float *k = cand_key(c, j, d);
                float dot = 0.0f;
                for (int i = 0; i < d; i++) dot += q[i] * k[i];
                s->row[j] = dot * scale;
                if (s->row[j] > mx) mx = s->row[j];
            }
            float sum = 0.0f;
            for (int j = 0; j < nv; j++) {
                s->row[j] = expf(s->row[j] - mx);
                sum += s->row[j];
            }
            float inv = 1.0f / sum;
            for (int j = 0; j < nv; j++) s->acc[j] += s->row[j] * inv;
            rows++;
        }
        if (rows == 0) continue;
        /* mean over the window rows, then the group reduction */
        for (int j = 0; j < n; j++) {
            float a = s->acc[j] / (float)rows;
            if (s->gqa == SNAP_GQA_MAX) A[j] = a > A[j] ? a : A[j];
            else A[j] += a;
        }
    }
    if (s->gqa == SNAP_GQA_MEAN)
        for (int j = 0; j < n; j++) A[j] /= (float)s->G;
}

/* Copies the group's queries of position p (q: [G][d]) into ring row p mod w_flag. */
void snap_ring_put(snap_state *s, int layer, int g, int p, const float *q)
{
    int r = p % s->w_flag;
    memcpy(s->ring + (((size_t)layer * s->w_flag + r) * s->H + (size_t)g * s->G) * s->d, q,
           (size_t)s->G * s->d * sizeof(float));
    s->ring_pos[((size_t)layer * s->Hkv + g) * s->w_flag + r] = p;
}

/* Grows the scratch to n candidates per head (prefill only; decode never needs more than the
 * size set in init). Returns 0 or -1 (out of memory). */
int snap_ensure_scratch(snap_state *s, int n)
{
    if (n <= s->max_cand) return 0;
    size_t hm = (size_t)s->Hkv * n;
    int ok = 1;
    EVICT_GROW(s->att, hm, ok);
    EVICT_GROW(s->pooled, hm, ok);
    EVICT_GROW(s->row, n, ok);
    EVICT_GROW(s->acc, n, ok);
    EVICT_GROW(s->idx, hm, ok);
    EVICT_GROW(s->keep, hm, ok);
    if (!ok) return -1;
    s->max_cand = n;
    return 0;
}

/* ------------------------------------------------------------------ selection on the cache */

/* One head: the keep-list (candidate indices) of the candidates c, window ending at `end`,
 * for a total of `target` entries (window included). Scores are computed only when something
 * must go. keep: [c->n]. Returns the count. */
int snap_select_head(snap_state *s, int layer, int g, const snap_cands *c, int end, int target, int *keep)
{
    int n_prefix = snap_prefix_len(s, c, end), budget = target - (c->n - n_prefix);
    if (c->n <= target || budget >= n_prefix) return evict_keep_all(keep, c->n); /* everything fits */
    /* observation scores, pooling, top-(target − window) + the window */
    float *A = s->att + (size_t)g * s->max_cand, *P = s->pooled + (size_t)g * s->max_cand;
    snap_obs_scores(s, layer, g, c, end, A);
    return snap_select(A, n_prefix, c->n, budget, s->pool, s->kernel, P, s->idx, keep);
}
