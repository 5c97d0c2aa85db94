/* `snapkv` (POLICIES.md §5) and the machinery shared by the whole snap family: `pyramidkv`
 * (§7), `ada_snapkv` (§6) and `ada_pyramidkv` (§6, §7), with the prefill-only decode phase of
 * §7.6. The other three policy files only declare their flags and call snap_init with their
 * family bits; everything else lives here as non-static snap_* functions.
 *
 * The family in one paragraph: at the end of the prompt, the last w_obs prompt queries (the
 * observation window) attend to every candidate; a candidate's score is that attention averaged
 * over the window rows and over the query heads of its KV group; the prefix scores are smoothed
 * by a 1-D max (or avg) pool; each (layer, KV head) keeps its top-`base` prefix tokens plus the
 * window. pyramidkv gives lower layers a larger base (arithmetic schedule, §7.3); ada_* split a
 * layer's total over its KV heads by a global top-B (§6.2). The decode phase (§7.6) appends;
 * --prefill-only-decode picks how the peak stays within the budget:
 *   reserve (default): the prompt is compressed to C − max_new per head (the layer/head
 *            schedules applied to that prompt budget), so appending max_new tokens ends at C;
 *   capped:  the prompt is compressed to C' = C − R; a ring keeps the last w_obs queries per
 *            layer and, when a head reaches C, the same selection re-runs on the cache → C';
 *   grow:    the papers' behaviour: prompt → C, decode appends (peak C + n_gen, opt-in).
 *
 * Variable per-head capacities (ada_*) and the physical budget:
 * [DECISION] kv_init allocates cap+1 slots per (layer, head) from the capacities set in init,
 * before any score is known, while Ada-KV's per-head split is only known after the prefill
 * scores. Setting each head's cap to the largest budget it could receive would allocate up to
 * about H_kv/2 times the budget, so instead each layer owns one arena of exactly the uniform
 * size T_ℓ = Σ_g (C_ℓ + 1) (the bytes a uniform policy allocates for that layer), and the
 * policy re-partitions that arena among the layer's heads once the split is known
 * (snap_relayout: it moves the live slots and rewrites kv->cap/off of that layer, order
 * preserving). No head's capacity ever exceeds the largest split it can receive, cap_max =
 * ceil((1−α)·H_kv·base_ℓ + α·base_ℓ) + 1 + w + slack, and init already gives head 0 that
 * much (the others share the rest): the engine sizes its per-head scratch (probs, attention
 * rows, shifted-RoPE ranks) from the largest capacity at init, which is thus an upper bound
 * for every later split. Allocated bytes = the uniform budget's bytes, per layer.
 * kv_prefill reads cap[layer][0] before calling on_prefill(g = 0), so head 0's budget is also
 * clamped to that value (between prompt chunks heads ≥ 1 are held small enough that this does
 * not bind), and slots a split leaves over (reference rounding, clamps) go to head 0 first.
 *
 * [DECISION] --rope shifted: the engine hands on_prefill the queries rotated by their rank and
 * the keys as stored (before RoPE), and pre_attn the query before rotation; the observation
 * scores use them as given, without relative rotation (an approximation; the snap-family
 * references use absolute positions, the default). */
#include "eviction/eviction.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SNAP_POOL_MAX, SNAP_POOL_AVG };
enum { SNAP_RESERVE, SNAP_CAPPED, SNAP_GROW };
enum { SNAP_SCHEDULE_CODE, SNAP_SCHEDULE_EXACT };
enum { SNAP_ALLOC_EXACT, SNAP_ALLOC_REFERENCE };
enum { SNAP_GQA_MEAN, SNAP_GQA_MAX };

/* Family bits for snap_init. */
#define SNAP_FAMILY_PYRAMID 1
#define SNAP_FAMILY_ADA 2

typedef struct {
    int pyramid, ada;      /* family bits */
    int w_flag;            /* --snap-window: rows kept in the query ring */
    int w;                 /* effective observation window (§5.2: max(1, P/2) when P ≤ w_obs) */
    int pool, kernel;      /* --snap-pool, --snap-kernel */
    int mode;              /* effective decode mode (after the reserve → capped fallback) */
    int slack;             /* cap − prompt target: max_new (reserve, grow) or R (capped) */
    double alpha;          /* --ada-alpha */
    int alloc, gqa;        /* --ada-alloc, --ada-gqa */
    int L, Hkv, H, G, d;
    int *layer_target;     /* [L] uniform prompt target per head P_ℓ = base_ℓ + w */
    int *target;           /* [L*Hkv] selection target per head (ada: B_g + w of the last split) */
    int *arena;            /* [L] ada: slots of the layer's arena T_ℓ */
    int *cap_max;          /* [L] ada: the largest capacity a head of the layer may get */
    int *keep_max;         /* [L] ada: the largest keep a split may give a head (B_max + w) */
    float *ring;           /* [L][w_flag][H][d] the last queries, row = position mod w_flag */
    int32_t *ring_pos;     /* [L][Hkv][w_flag] position held by each ring row (-1: none) */
    /* scratch, sized for max_cand candidates per head (grown in prefill, never in decode) */
    int max_cand;
    float *att;            /* [Hkv][max_cand] observation scores A_g */
    float *pooled;         /* [Hkv][max_cand] pooled prefix scores Â_g */
    float *row, *acc;      /* [max_cand] one softmax row; per-query-head accumulator */
    int *idx;              /* [Hkv*max_cand] sort scratch */
    int *keep;             /* [Hkv][max_cand] keep-lists (ada: the layer plan) */
    int *n_keep, *n_live_kept, *n_cand, *n_prefix, *counts, *budgets, *caps; /* [Hkv] */
    int plan_layer, plan_pos0; /* ada: the layer and chunk the plan belongs to (-1: none) */
} snap_state;

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

/* Ada-KV head budgets of one layer (§6.2). scores: [n_heads][stride] pooled prefix scores Â_g,
 * head g valid for j < n[g]; total: B = H_kv·base (window excluded); alpha: safeguard in [0, 1];
 * mode: 0 exact (largest remainder, Σ B_g = B), 1 reference (AdaKV code:
 * round_half_even(c_g(1−α) + floor(α·base)), base = B / H_kv, Σ may be < B).
 * counts[g]: entries of head g in the global top-B (ties: score desc, head asc, pos asc);
 * budgets[g]: B_g, clamped to n[g] [DECISION: with unequal prefix lengths (decode
 * re-compression) α·base can exceed a short head's prefix; the excess is not reassigned].
 * idx: scratch [n_heads*stride] ints. Returns Σ B_g. */
int snap_ada_allocate(const float *scores, int stride, const int *n, int n_heads, int total,
                      double alpha, int mode, int *idx, int *counts, int *budgets)
{
    /* global top-B over the concatenated heads: flat index g*stride + j orders (head, pos) */
    int m = 0;
    for (int g = 0; g < n_heads; g++)
        for (int j = 0; j < n[g]; j++) idx[m++] = g * stride + j;
    heap_sort(idx, m, rank_before, scores);
    for (int g = 0; g < n_heads; g++) counts[g] = 0;
    for (int i = 0; i < m && i < total; i++) counts[idx[i] / stride]++;
    if (mode == SNAP_ALLOC_REFERENCE) {
        /* AdaKV code: torch.round (half to even = rint) of c(1−α) + floor(α·base) */
        int base = total / n_heads;
        double f = floor(alpha * base);
        for (int g = 0; g < n_heads; g++) budgets[g] = (int)rint(counts[g] * (1.0 - alpha) + f);
    } else {
        /* exact: b_g = (1−α)c_g + α·B/H_kv, floors, then +1 for the largest remainders (ties:
         * lower g) so that Σ B_g = B */
        double frac[n_heads > 0 ? n_heads : 1];
        int sum = 0;
        for (int g = 0; g < n_heads; g++) {
            double b = (1.0 - alpha) * counts[g] + alpha * total / n_heads;
            budgets[g] = (int)floor(b + 1e-9);
            frac[g] = b - budgets[g];
            sum += budgets[g];
        }
        for (int rem = total - sum; rem > 0; rem--) {
            int best = -1;
            for (int g = 0; g < n_heads; g++)
                if (frac[g] > -1.0 && (best < 0 || frac[g] > frac[best])) best = g;
            if (best < 0) break;
            budgets[best]++;
            frac[best] = -2.0; /* each head gets at most one */
        }
    }
    int sum = 0;
    for (int g = 0; g < n_heads; g++) {
        if (budgets[g] > n[g]) budgets[g] = n[g];
        if (budgets[g] < 0) budgets[g] = 0;
        sum += budgets[g];
    }
    return sum;
}

/* PyramidKV per-layer prefix budgets (§7.3, AdaKV `pyram_mode`): base = C − w_obs tokens per
 * head on average, n_prefix = N − w_obs, beta = --pyramid-beta, L layers. exact 0 (code):
 * min_b = floor(base/β), max_b = 2·base − min_b, clipped to n_prefix (then min_b = 2·base −
 * max_b), step = floor((max_b − min_b)/(L−1)), out[ℓ] = max_b − ℓ·step (Σ overshoots L·base).
 * exact 1: real-valued step, largest-remainder rounding (ties: lower ℓ) so Σ out = L·base.
 * [DECISION] base ≥ n_prefix (nothing to compress on average) or L = 1: out[ℓ] = base.
 * out: [L]. */
void snap_pyramid_schedule(int base, int n_prefix, int L, double beta, int exact, int *out)
{
    if (L <= 1 || base >= n_prefix) {
        for (int l = 0; l < L; l++) out[l] = base;
        return;
    }
    int min_b = (int)floor(base / beta), max_b = 2 * base - min_b;
    if (max_b >= n_prefix) {
        max_b = n_prefix;
        min_b = 2 * base - max_b;
    }
    if (!exact) {
        int step = (max_b - min_b) / (L - 1); /* max_b ≥ min_b here: floor = truncation */
        for (int l = 0; l < L; l++) out[l] = max_b - l * step;
        return;
    }
    /* exact: floors of the real schedule, then +1 for the largest fractional parts */
    double step = (double)(max_b - min_b) / (L - 1), frac[L];
    int rem = L * base;
    for (int l = 0; l < L; l++) {
        double b = max_b - l * step;
        out[l] = (int)floor(b);
        frac[l] = b - out[l];
        rem -= out[l];
    }
    for (; rem > 0; rem--) {
        int best = -1;
        for (int l = 0; l < L; l++)
            if (frac[l] >= 0.0 && (best < 0 || frac[l] > frac[best])) best = l;
        if (best < 0) break;
        out[best]++;
        frac[best] = -1.0; /* each layer gets at most one */
    }
}

/* ------------------------------------------------------------------ candidates and scores */

/* The candidates of one (layer, KV head), in position order: the live slots, then (prefill)
 * the chunk's tokens. */
typedef struct {
    const float *live_k;
    const int32_t *live_pos;
    int n_live;
    const float *new_k;  /* the chunk's key of this head for token 0; rows new_stride apart */
    size_t new_stride;
    int pos0, n;         /* position of chunk token 0; candidates in all */
} snap_cands;

static const float *cand_key(const snap_cands *c, int j, int d)
{
    return j < c->n_live ? c->live_k + (size_t)j * d : c->new_k + (size_t)(j - c->n_live) * c->new_stride;
}

static int cand_pos(const snap_cands *c, int j)
{
    return j < c->n_live ? c->live_pos[j] : c->pos0 + (j - c->n_live);
}

static snap_cands live_cands(const kv_cache *kv, int layer, int g)
{
    snap_cands c = {kv_keys(kv, layer, g), kv_positions(kv, layer, g), kv_len(kv, layer, g), NULL, 0, 0,
                    kv_len(kv, layer, g)};
    return c;
}

static snap_cands chunk_cands(const kv_cache *kv, const kv_prefill_chunk *ch, int g, int n_live)
{
    snap_cands c = live_cands(kv, ch->layer, g);
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
static int prefix_len(const snap_state *s, const snap_cands *c, int end)
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
static void obs_scores(snap_state *s, int layer, int g, const snap_cands *c, int end, float *A)
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

/* Copies the group's queries of positions p (q: [G][d]) into ring row p mod w_flag. */
static void ring_put(snap_state *s, int layer, int g, int p, const float *q)
{
    int r = p % s->w_flag;
    memcpy(s->ring + (((size_t)layer * s->w_flag + r) * s->H + (size_t)g * s->G) * s->d, q,
           (size_t)s->G * s->d * sizeof(float));
    s->ring_pos[((size_t)layer * s->Hkv + g) * s->w_flag + r] = p;
}

/* Grows the scratch to n candidates per head (prefill only; decode never needs more than the
 * size set in init). Returns 0 or -1 (out of memory). */
static int ensure_scratch(snap_state *s, int n)
{
    if (n <= s->max_cand) return 0;
    size_t h = (size_t)s->Hkv, m = (size_t)n;
    float *att = realloc(s->att, h * m * sizeof(float));
    if (att) s->att = att;
    float *pooled = realloc(s->pooled, h * m * sizeof(float));
    if (pooled) s->pooled = pooled;
    float *row = realloc(s->row, m * sizeof(float));
    if (row) s->row = row;
    float *acc = realloc(s->acc, m * sizeof(float));
    if (acc) s->acc = acc;
    int *idx = realloc(s->idx, h * m * sizeof(int));
    if (idx) s->idx = idx;
    int *keep = realloc(s->keep, h * m * sizeof(int));
    if (keep) s->keep = keep;
    if (!att || !pooled || !row || !acc || !idx || !keep) return -1;
    s->max_cand = n;
    return 0;
}

/* ------------------------------------------------------------------ arena of a layer (ada) */

/* Copies slot src to slot dst (absolute slot indices): K, V, position, score, policy state. */
static void move_abs(kv_cache *kv, size_t dst, size_t src)
{
    size_t d = (size_t)kv->head_dim;
    memmove(kv->k + dst * d, kv->k + src * d, d * sizeof(float));
    memmove(kv->v + dst * d, kv->v + src * d, d * sizeof(float));
    kv->pos[dst] = kv->pos[src];
    if (kv->score) kv->score[dst] = kv->score[src];
    size_t sb = kv->ops->slot_state_bytes;
    if (sb) memmove(kv->state + dst * sb, kv->state + src * sb, sb);
}

/* Re-partitions the arena of `layer` among its KV heads (see the [DECISION] at the top): head
 * g gets cap[g] slots (+1 spare), regions stay in head order from the layer's first slot, live
 * slots move with their data and keep their order. Requires Σ (cap[g] + 1) = the arena's
 * slots and len[g] ≤ cap[g]. Moves are order preserving, so slots moving left are copied in
 * ascending order first and slots moving right in descending order after: no live slot is
 * overwritten before it is copied. */
void snap_relayout(kv_cache *kv, int layer, const int *cap)
{
    const int H = kv->n_kv_heads, base = kv_idx(kv, layer, 0);
    size_t new_off[H > 0 ? H : 1], at = kv->off[base];
    for (int g = 0; g < H; g++) {
        new_off[g] = at;
        at += (size_t)cap[g] + 1;
    }
    /* heads whose region moves left (or stays), ascending */
    for (int g = 0; g < H; g++) {
        size_t o = kv->off[base + g];
        if (new_off[g] < o)
            for (int i = 0; i < kv->len[base + g]; i++) move_abs(kv, new_off[g] + i, o + i);
    }
    /* heads whose region moves right, descending */
    for (int g = H - 1; g >= 0; g--) {
        size_t o = kv->off[base + g];
        if (new_off[g] > o)
            for (int i = kv->len[base + g] - 1; i >= 0; i--) move_abs(kv, new_off[g] + i, o + i);
    }
    for (int g = 0; g < H; g++) {
        kv->off[base + g] = new_off[g];
        kv->cap[base + g] = cap[g];
    }
}

/* Ada capacities of `layer` into caps [Hkv]: each head at least want[g] (≥ 1); the arena's
 * remaining slots go to head 0 first (kv_prefill reads its capacity before the next plan),
 * then to heads 1, 2, … — none above cap_max. Requires Σ (want + 1) ≤ the arena. */
static void ada_fill(const snap_state *s, int layer, const int *want, int *caps)
{
    int spare = s->arena[layer];
    for (int g = 0; g < s->Hkv; g++) {
        caps[g] = want[g] < 1 ? 1 : want[g];
        spare -= caps[g] + 1;
    }
    for (int g = 0; g < s->Hkv && spare > 0; g++) {
        int add = s->cap_max[layer] - caps[g];
        if (add > spare) add = spare;
        if (add > 0) {
            caps[g] += add;
            spare -= add;
        }
    }
}

/* Re-partitions the arena of `layer` for the wanted capacities (ada_fill). */
static void ada_layout(kv_cache *kv, snap_state *s, int layer, const int *want)
{
    ada_fill(s, layer, want, s->caps);
    snap_relayout(kv, layer, s->caps);
}

/* Keeps the ascending slot indices keep[0..n) of (layer, g) without counting evictions (the
 * caller accounts for them). */
static void compact_quiet(kv_cache *kv, int layer, int g, const int *keep, int n)
{
    size_t o = kv->off[kv_idx(kv, layer, g)];
    for (int i = 0; i < n; i++)
        if (keep[i] != i) move_abs(kv, o + i, o + keep[i]);
    kv->len[kv_idx(kv, layer, g)] = n;
}

/* ------------------------------------------------------------------ selection on the cache */

/* One head: the keep-list (candidate indices) of the candidates c, window ending at `end`,
 * for a total of `target` entries (window included). Scores are computed only when something
 * must go. keep: [c->n]. Returns the count. */
static int select_head(snap_state *s, int layer, int g, const snap_cands *c, int end, int target,
                       int *keep)
{
    int n_prefix = prefix_len(s, c, end), budget = target - (c->n - n_prefix);
    if (c->n <= target || budget >= n_prefix) {
        /* everything fits: keep all */
        for (int j = 0; j < c->n; j++) keep[j] = j;
        return c->n;
    }
    /* observation scores, pooling, top-(target − window) + the window */
    float *A = s->att + (size_t)g * s->max_cand, *P = s->pooled + (size_t)g * s->max_cand;
    obs_scores(s, layer, g, c, end, A);
    return snap_select(A, n_prefix, c->n, budget, s->pool, s->kernel, P, s->idx, keep);
}

/* Ada plan of a whole layer (§6.2): per head candidates cands[g], window ending at `end`.
 * Splits H_kv·base_ℓ over the heads when some head must compress (else every head keeps
 * all); head 0's budget is clamped so that its keep count ≤ cap0_limit. Fills s->keep[g],
 * s->n_keep[g], s->budgets[g] (prefix entries kept) and s->n_prefix[g]. */
static void ada_plan(snap_state *s, int layer, const snap_cands *cands, int end, int cap0_limit)
{
    const int M = s->max_cand, base = s->layer_target[layer] - s->w;
    int compress = 0;
    for (int g = 0; g < s->Hkv; g++) {
        s->n_cand[g] = cands[g].n;
        s->n_prefix[g] = prefix_len(s, &cands[g], end);
        s->budgets[g] = s->n_prefix[g];
        if (s->n_prefix[g] > base) compress = 1;
    }
    /* scores and the split, when some head's prefix exceeds the uniform base */
    int scored = 0;
    if (compress) {
        for (int g = 0; g < s->Hkv; g++) {
            obs_scores(s, layer, g, &cands[g], end, s->att + (size_t)g * M);
            snap_pool(s->att + (size_t)g * M, s->n_prefix[g], s->kernel, s->pool, s->pooled + (size_t)g * M);
        }
        scored = 1;
        snap_ada_allocate(s->pooled, M, s->n_prefix, s->Hkv, s->Hkv * base, s->alpha, s->alloc, s->idx,
                          s->counts, s->budgets);
    }
    /* no head beyond the bound its capacity was sized for (B_max; holds by construction) */
    for (int g = 0; g < s->Hkv; g++)
        if (s->budgets[g] > s->keep_max[layer] - s->w) s->budgets[g] = s->keep_max[layer] - s->w;
    /* without a split every head keeps its prefix and is sized for the uniform base */
    if (!compress)
        for (int g = 0; g < s->Hkv; g++) s->budgets[g] = base;
    /* head 0 must fit the capacity kv_prefill already read */
    int win0 = s->n_cand[0] - s->n_prefix[0], lim0 = cap0_limit - win0;
    if (lim0 < 0) lim0 = 0;
    if (s->budgets[0] > lim0) {
        s->budgets[0] = lim0;
        if (!scored && lim0 < s->n_prefix[0]) {
            obs_scores(s, layer, 0, &cands[0], end, s->att);
            snap_pool(s->att, s->n_prefix[0], s->kernel, s->pool, s->pooled);
        }
    }
    /* per-head top-B_g + window */
    for (int g = 0; g < s->Hkv; g++)
        s->n_keep[g] = snap_topk_keep(s->pooled + (size_t)g * M, s->n_prefix[g], s->n_cand[g], s->budgets[g],
                                      s->idx, s->keep + (size_t)g * M);
}

/* Capacities after a split: B_g + w + slack (the target B_g + w is remembered per head). */
static void ada_final_caps(snap_state *s, int layer, int *want)
{
    for (int g = 0; g < s->Hkv; g++) {
        s->target[layer * s->Hkv + g] = s->budgets[g] + s->w;
        want[g] = s->budgets[g] + s->w + s->slack;
    }
}

/* Decode re-compression of one head (capped mode, and the overflow guard): back to its target. */
static void recompress_head(kv_cache *kv, snap_state *s, int layer, int g, int end)
{
    snap_cands c = live_cands(kv, layer, g);
    int *keep = s->keep + (size_t)g * s->max_cand;
    int n = select_head(s, layer, g, &c, end, s->target[layer * s->Hkv + g], keep);
    if (n < c.n) kv_compact(kv, layer, g, keep, n);
}

/* Decode re-compression of a whole ada layer: new split, compaction, new layout. */
static void recompress_layer(kv_cache *kv, snap_state *s, int layer, int end)
{
    snap_cands cands[s->Hkv];
    for (int g = 0; g < s->Hkv; g++) cands[g] = live_cands(kv, layer, g);
    ada_plan(s, layer, cands, end, s->arena[layer]);
    for (int g = 0; g < s->Hkv; g++)
        if (s->n_keep[g] < cands[g].n) kv_compact(kv, layer, g, s->keep + (size_t)g * s->max_cand, s->n_keep[g]);
    int want[s->Hkv];
    ada_final_caps(s, layer, want);
    ada_layout(kv, s, layer, want);
}

/* ------------------------------------------------------------------ hooks */

/* Reads the flags, sizes the capacities (§1.2, §5.2, §7.3, §7.6) and allocates the ring and
 * scratch. family: SNAP_FAMILY_* bits. Returns 0, or -1 with err set. */
int snap_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, int family, char *err,
              size_t errlen)
{
    snap_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    kv->pstate = s;
    s->pyramid = (family & SNAP_FAMILY_PYRAMID) != 0;
    s->ada = (family & SNAP_FAMILY_ADA) != 0;
    s->L = kv->n_layers;
    s->Hkv = kv->n_kv_heads;
    s->H = kv->n_heads;
    s->G = kv->n_heads / kv->n_kv_heads;
    s->d = kv->head_dim;
    s->plan_layer = -1;
    /* flags */
    int mode, R, schedule = SNAP_SCHEDULE_CODE;
    double beta = 20.0;
    if (policy_param_int(p, "snap-window", 32, 1, 1 << 20, &s->w_flag, err, errlen) ||
        policy_param_enum(p, "snap-pool", "max|avg", SNAP_POOL_MAX, &s->pool, err, errlen) ||
        policy_param_int(p, "snap-kernel", 7, 1, 1 << 20, &s->kernel, err, errlen) ||
        policy_param_enum(p, "prefill-only-decode", "reserve|capped|grow", SNAP_RESERVE, &mode, err, errlen) ||
        policy_param_int(p, "snap-recompress", 32, 1, 1 << 30, &R, err, errlen))
        return -1;
    if (s->kernel % 2 == 0) {
        snprintf(err, errlen, "--snap-kernel: must be odd (got %d)", s->kernel);
        return -1;
    }
    if (s->pyramid &&
        (policy_param_float(p, "pyramid-beta", 20.0, 1.0, 1e9, &beta, err, errlen) ||
         policy_param_enum(p, "pyramid-schedule", "code|exact", SNAP_SCHEDULE_CODE, &schedule, err, errlen)))
        return -1;
    if (s->ada &&
        (policy_param_float(p, "ada-alpha", 0.5, 0.0, 1.0, &s->alpha, err, errlen) ||
         policy_param_enum(p, "ada-alloc", "exact|reference", SNAP_ALLOC_EXACT, &s->alloc, err, errlen) ||
         policy_param_enum(p, "ada-gqa", "mean|max", SNAP_GQA_MEAN, &s->gqa, err, errlen)))
        return -1;

    /* capacity C per head (C_min = window + 1) and the prompt target P per mode (§7.6) */
    int C = kv_budget_capacity(p, n_prompt, max_new, s->w_flag + 1), P;
    if (max_new < 0) max_new = 0;
    if (C >= n_prompt + max_new) {
        /* nothing can be evicted: reserve sizing keeps the prompt whole and the cache at C */
        mode = SNAP_RESERVE;
    } else if (mode == SNAP_RESERVE && C - max_new < s->w_flag + 1) {
        /* the prompt budget would not hold the window + 1: fall back to capped */
        mode = SNAP_CAPPED;
    }
    if (mode == SNAP_CAPPED) {
        /* [DECISION] R is clamped to C/2 so that C' = C − R keeps at least half the cache (at
         * the smallest C = 33, R = 32 would leave one token) */
        if (R > C / 2) R = C / 2 > 0 ? C / 2 : 1;
        P = C - R;
        s->slack = R;
    } else if (mode == SNAP_GROW) {
        P = C;
        s->slack = max_new;
    } else {
        P = C - max_new;
        s->slack = max_new;
    }
    s->mode = mode;
    /* effective window (§5.2: P ≤ w_obs → max(1, P/2)) and the per-layer prompt targets
     * ([DECISION] §7.6 "scaled the same way": the pyramid schedule is applied to the prompt
     * budget P, and every layer gets the same slack on top) */
    s->w = P > s->w_flag ? s->w_flag : (P / 2 > 1 ? P / 2 : 1);
    s->layer_target = calloc((size_t)s->L, sizeof *s->layer_target);
    s->target = calloc((size_t)s->L * s->Hkv, sizeof *s->target);
    s->arena = calloc((size_t)s->L, sizeof *s->arena);
    s->cap_max = calloc((size_t)s->L, sizeof *s->cap_max);
    s->keep_max = calloc((size_t)s->L, sizeof *s->keep_max);
    s->caps = calloc((size_t)s->Hkv, sizeof *s->caps);
    if (!s->layer_target || !s->target || !s->arena || !s->cap_max || !s->keep_max || !s->caps) goto oom;
    if (s->pyramid) snap_pyramid_schedule(P - s->w, n_prompt - s->w, s->L, beta, schedule, s->layer_target);
    else
        for (int l = 0; l < s->L; l++) s->layer_target[l] = P - s->w;
    int max_cap = 1;
    for (int l = 0; l < s->L; l++) {
        s->layer_target[l] += s->w;
        int cap = s->layer_target[l] + s->slack;
        s->arena[l] = s->Hkv * (cap + 1);
        for (int g = 0; g < s->Hkv; g++) {
            s->target[l * s->Hkv + g] = s->layer_target[l];
            kv->cap[l * s->Hkv + g] = cap;
        }
        if (s->ada) {
            /* ada: the largest split a head can get, B_max = ceil((1−α)·min(H_kv·base,
             * tokens) + α·base) + 1 (rounding), bounds every head's capacity; until the split is
             * known head 0 holds that much (see the top) */
            int base = s->layer_target[l] - s->w;
            double hb = (double)s->Hkv * base, tokens = (double)n_prompt + max_new;
            int bmax = (int)ceil((1.0 - s->alpha) * (hb < tokens ? hb : tokens) + s->alpha * base) + 1;
            s->keep_max[l] = bmax + s->w;
            s->cap_max[l] = s->keep_max[l] + s->slack;
            if (s->cap_max[l] < cap) s->cap_max[l] = cap;
            if (s->cap_max[l] > s->arena[l] - 2 * (s->Hkv - 1) - 1) s->cap_max[l] = s->arena[l] - 2 * (s->Hkv - 1) - 1;
            int want[s->Hkv];
            for (int g = 0; g < s->Hkv; g++) want[g] = 1;
            ada_fill(s, l, want, kv->cap + l * s->Hkv);
        }
        for (int g = 0; g < s->Hkv; g++)
            if (kv->cap[l * s->Hkv + g] > max_cap) max_cap = kv->cap[l * s->Hkv + g];
    }
    /* the query ring and the scratch (decode needs at most max_cap + 1 candidates per head) */
    s->ring = calloc((size_t)s->L * s->w_flag * s->H * s->d, sizeof(float));
    s->ring_pos = malloc((size_t)s->L * s->Hkv * s->w_flag * sizeof(int32_t));
    s->n_keep = calloc((size_t)s->Hkv * 6, sizeof(int));
    if (!s->ring || !s->ring_pos || !s->n_keep || ensure_scratch(s, max_cap + 1 + (n_prompt > 0 ? n_prompt : 1)))
        goto oom;
    for (size_t i = 0; i < (size_t)s->L * s->Hkv * s->w_flag; i++) s->ring_pos[i] = -1;
    s->n_live_kept = s->n_keep + s->Hkv;
    s->n_cand = s->n_keep + 2 * s->Hkv;
    s->n_prefix = s->n_keep + 3 * s->Hkv;
    s->counts = s->n_keep + 4 * s->Hkv;
    s->budgets = s->n_keep + 5 * s->Hkv;
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory for the policy state", kv->ops->name);
    return -1;
}

void snap_free(kv_cache *kv)
{
    snap_state *s = kv->pstate;
    if (!s) return;
    free(s->layer_target);
    free(s->target);
    free(s->arena);
    free(s->cap_max);
    free(s->keep_max);
    free(s->caps);
    free(s->ring);
    free(s->ring_pos);
    free(s->att);
    free(s->pooled);
    free(s->row);
    free(s->acc);
    free(s->idx);
    free(s->keep);
    free(s->n_keep);
    free(s);
    kv->pstate = NULL;
}

/* Ada prefill of KV head g: at g = 0 the whole layer is planned (scores of every head, split,
 * compaction of the live slots, new layout); every head then returns its part of the plan.
 * Live slots are already compacted to 0..m−1, so a head's keep-list is 0..m−1 followed by its
 * kept chunk tokens. */
static int ada_on_prefill(kv_cache *kv, snap_state *s, const kv_prefill_chunk *c, int g, int n_live,
                          int *keep, int final)
{
    const int layer = c->layer, M = s->max_cand, end = c->pos0 + c->n_new;
    if (g == 0 || s->plan_layer != layer || s->plan_pos0 != c->pos0) {
        if (g != 0) {
            /* [DECISION] not reached with kv_prefill (g = 0 comes first); if a caller skips
             * head 0, this head keeps its most recent candidates within its capacity */
            int n_cand = n_live + c->n_new, cap = kv->cap[kv_idx(kv, layer, g)];
            int first = n_cand > cap ? n_cand - cap : 0;
            for (int j = first; j < n_cand; j++) keep[j - first] = j;
            return n_cand - first;
        }
        /* plan: candidates of every head (live slots + the chunk) */
        snap_cands cands[s->Hkv];
        for (int h = 0; h < s->Hkv; h++) cands[h] = chunk_cands(kv, c, h, kv_len(kv, layer, h));
        int cap0 = kv->cap[kv_idx(kv, layer, 0)];
        if (final) {
            ada_plan(s, layer, cands, end, cap0);
        } else {
            /* [DECISION] between chunks the heads select uniformly (the split needs the real
             * observation window); heads ≥ 1 are held below P_ℓ when needed so that head 0's
             * region can take the largest keep the final split may give it (keep_max) */
            int P = s->layer_target[layer], lim = P;
            if (s->Hkv > 1) {
                lim = (s->arena[layer] - 1 - s->keep_max[layer]) / (s->Hkv - 1) - 1;
                if (lim > P) lim = P;
                if (lim < (s->w < P ? s->w : P)) lim = s->w < P ? s->w : P;
            }
            for (int h = 0; h < s->Hkv; h++) {
                int target = h == 0 ? (P < cap0 ? P : cap0) : lim;
                s->n_cand[h] = cands[h].n;
                s->n_keep[h] = select_head(s, layer, h, &cands[h], end, target, s->keep + (size_t)h * M);
            }
        }
        /* compact the kept live slots of every head in place (kv_prefill counts head 0's
         * evictions with the n_live it read; the others' are counted here) */
        for (int h = 0; h < s->Hkv; h++) {
            int *kh = s->keep + (size_t)h * M, m = 0;
            while (m < s->n_keep[h] && kh[m] < cands[h].n_live) m++;
            s->n_live_kept[h] = m;
            compact_quiet(kv, layer, h, kh, m);
            if (h > 0) kv->evictions += cands[h].n_live - m;
        }
        /* new layout: after the prompt B_g + w + slack per head; between chunks, heads ≥ 1
         * hold exactly what they keep so that head 0 (whose capacity kv_prefill reads first)
         * has the most room for the next chunk */
        int want[s->Hkv];
        if (final) ada_final_caps(s, layer, want);
        else
            for (int h = 0; h < s->Hkv; h++) want[h] = s->n_keep[h];
        ada_layout(kv, s, layer, want);
        s->plan_layer = layer;
        s->plan_pos0 = c->pos0;
    }
    /* this head's part: live slots 0..m−1, then its kept chunk tokens */
    const int *kh = s->keep + (size_t)g * M;
    int n_cand_plan = s->n_cand[g], live_plan = n_cand_plan - c->n_new, m = s->n_live_kept[g], n = 0;
    for (int i = 0; i < m; i++) keep[n++] = i;
    for (int i = m; i < s->n_keep[g]; i++) keep[n++] = n_live + (kh[i] - live_plan);
    return n;
}

/* on_prefill (§5.3, §6.2, §7.3): compress (layer, g) to its prompt target, with the window
 * ending at the chunk's end; after the last prompt chunk ada layers are split, after an
 * earlier chunk (--prefill-chunk) their heads select uniformly. Records the group's last
 * queries in the ring first. Returns the keep count, or -1 (out of memory). */
int snap_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    snap_state *s = kv->pstate;
    const int layer = c->layer, end = c->pos0 + c->n_new, final = end >= kv->prompt_tokens;
    /* remember the queries of the chunk's last w_flag rows: this group's, or every group's
     * when head 0 of an ada layer plans the whole layer */
    int all = s->ada && g == 0;
    for (int h = all ? 0 : g; h < (all ? s->Hkv : g + 1); h++)
        for (int r = c->n_new > s->w_flag ? c->n_new - s->w_flag : 0; r < c->n_new; r++)
            ring_put(s, layer, h, c->pos0 + r, c->q_new + ((size_t)r * s->H + (size_t)h * s->G) * s->d);
    /* scratch for this chunk's candidates (ada: every head's, before the plan is made) */
    int most = n_live;
    if (all)
        for (int h = 0; h < s->Hkv; h++)
            if (kv_len(kv, layer, h) > most) most = kv_len(kv, layer, h);
    if ((!s->ada || all) && ensure_scratch(s, most + c->n_new + 1) != 0) return -1;
    if (s->ada) return ada_on_prefill(kv, s, c, g, n_live, keep, final);
    /* uniform heads: select within the prompt target after every chunk ([DECISION] not the
     * capacity between chunks: the peak of a chunked prefill stays that of a single pass, also
     * when the pyramid code schedule overshoots the uniform total) */
    snap_cands cands = chunk_cands(kv, c, g, n_live);
    return select_head(s, layer, g, &cands, end, s->target[layer * s->Hkv + g], keep);
}

/* pre_attn: records the group's query of position t in the ring and appends. A head with no
 * room left (only when decoding past max_new in reserve/grow mode, or with an unfinished
 * prompt) is re-compressed first, window ending at t. */
int snap_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k, const float *v)
{
    snap_state *s = kv->pstate;
    ring_put(s, layer, g, t, q);
    if (s->ada && g == 0) {
        /* ada: the layer is re-split before any of its heads appends */
        for (int h = 0; h < s->Hkv; h++)
            if (kv_len(kv, layer, h) >= kv->cap[kv_idx(kv, layer, h)]) {
                recompress_layer(kv, s, layer, t);
                break;
            }
    }
    if (kv_len(kv, layer, g) >= kv->cap[kv_idx(kv, layer, g)]) recompress_head(kv, s, layer, g, t);
    return kv_len(kv, layer, g);
}

/* post_attn (capped mode, §7.6): a head that reached its capacity is re-compressed to its
 * target C' = C − R from the ring queries (window ending at t, included); ada re-splits its
 * whole layer. Other modes never evict here. */
void snap_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    snap_state *s = kv->pstate;
    if (s->mode != SNAP_CAPPED) return;
    if (s->ada) {
        for (int h = 0; h < s->Hkv; h++)
            if (kv_len(kv, layer, h) >= kv->cap[kv_idx(kv, layer, h)]) {
                recompress_layer(kv, s, layer, t + 1);
                return;
            }
        return;
    }
    if (kv_len(kv, layer, g) >= kv->cap[kv_idx(kv, layer, g)]) recompress_head(kv, s, layer, g, t + 1);
}

static int snapkv_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
                       size_t errlen)
{
    return snap_init(kv, p, n_prompt, max_new, 0, err, errlen);
}

static const policy_param_def snapkv_params[] = {
    {"snap-window", "obs-window", PARAM_INT, "32", NULL,
     "observation window: the last N prompt tokens score the prefix and are always kept"},
    {"snap-pool", NULL, PARAM_ENUM, "max", "max|avg", "pooling of the prefix scores"},
    {"snap-kernel", "pool-kernel", PARAM_INT, "7", NULL, "pooling kernel (odd)"},
    {"prefill-only-decode", NULL, PARAM_ENUM, "reserve", "reserve|capped|grow",
     "decode: reserve max_new slots (peak C), re-compress every R steps (peak C), or grow (peak C + n_gen)"},
    {"snap-recompress", NULL, PARAM_INT, "32", NULL, "capped: slots freed by each re-compression (R)"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

const policy_ops policy_snapkv = {
    .name = "snapkv",
    .paper = "SnapKV (Li et al. 2024), baseline in Ada-KV §4.1; POLICIES.md §5, §7.6",
    .params = "top-(C − 32) prompt tokens by max-pooled (7) observation-window attention + the last 32 "
              "prompt tokens; decode reserves max_new slots",
    .param_defs = snapkv_params,
    .stats = 0,
    .init = snapkv_init,
    .on_prefill = snap_on_prefill,
    .pre_attn = snap_pre_attn,
    .post_attn = snap_post_attn,
    .free_state = snap_free,
};
