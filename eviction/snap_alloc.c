/* Budget allocation of the snap family: how many tokens each (layer, KV head) keeps.
 *   uniform (snapkv, §5): every head of every layer gets the prompt target P;
 *   pyramid (pyramidkv, §7.3): an arithmetic per-layer schedule, lower layers more;
 *   adaptive (ada_*, §6.2): a layer's total H_kv·base_ℓ split over its KV heads by a global
 *   top-B of their pooled observation scores, and the layer's arena re-partitioned to match.
 * The scores come from snap_score.c; the hooks that call these are in policy_snapkv.c.
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
 * not bind), and slots a split leaves over (reference rounding, clamps) go to head 0 first. */
#include "eviction/snap_internal.h"
#include "kernels/cuda/ada_split.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ pure allocation functions */

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
    snap_rank_sort(idx, m, scores);
    for (int g = 0; g < n_heads; g++) counts[g] = 0;
    for (int i = 0; i < m && i < total; i++) counts[idx[i] / stride]++;
    /* AdaKV code (reference): torch.round (half to even = rint) of c(1−α) + floor(α·base);
     * exact: (1−α)c + α·B/H_kv, largest remainders (kernels/cuda/ada_split.h, the device's too) */
    const int ref = mode == SNAP_ALLOC_REFERENCE;
    double frac[n_heads > 0 ? n_heads : 1];
    ada_round_budgets(counts, n, n_heads, total, 1.0 - alpha, ref ? floor(alpha * (total / n_heads)) : alpha * total / n_heads,
                      ref, frac, budgets);
    int sum = 0;
    for (int g = 0; g < n_heads; g++) sum += budgets[g];
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

/* ------------------------------------------------------------------ arena of a layer (ada) */

/* Copies slot src to slot dst (absolute slot indices): K, V, position, score, policy state. */
static void move_abs(kv_cache *kv, size_t dst, size_t src)
{
    size_t row = (size_t)kv->head_dim * kv->kv_es;   /* elements of the cache's dtype */
    memmove((char *)kv->k_data + dst * row, (char *)kv->k_data + src * row, row);
    memmove((char *)kv->v_data + dst * row, (char *)kv->v_data + src * row, row);
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

/* ------------------------------------------------------------------ sizing (init) */

/* Per-layer targets and capacities (§5.2, §7.3, §7.6; see snap_internal.h): the prompt target
 * P per head (window included) for every layer, or the pyramid schedule of its prefix part
 * ([DECISION] §7.6 "scaled the same way": the pyramid schedule is applied to the prompt budget
 * P, and every layer gets the same slack on top). Returns the largest head capacity, or -1. */
int snap_size_layers(kv_cache *kv, snap_state *s, int P, int n_prompt, int max_new, double beta,
                     int schedule)
{
    s->layer_target = calloc((size_t)s->L, sizeof *s->layer_target);
    s->target = calloc((size_t)s->L * s->Hkv, sizeof *s->target);
    s->arena = calloc((size_t)s->L, sizeof *s->arena);
    s->cap_max = calloc((size_t)s->L, sizeof *s->cap_max);
    s->keep_max = calloc((size_t)s->L, sizeof *s->keep_max);
    s->caps = calloc((size_t)s->Hkv, sizeof *s->caps);
    if (!s->layer_target || !s->target || !s->arena || !s->cap_max || !s->keep_max || !s->caps) return -1;
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
    return max_cap;
}

/* ------------------------------------------------------------------ the ada plan */

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
        s->n_prefix[g] = snap_prefix_len(s, &cands[g], end);
        s->budgets[g] = s->n_prefix[g];
        if (s->n_prefix[g] > base) compress = 1;
    }
    /* scores and the split, when some head's prefix exceeds the uniform base */
    int scored = 0;
    if (compress) {
        for (int g = 0; g < s->Hkv; g++) {
            snap_obs_scores(s, layer, g, &cands[g], end, s->att + (size_t)g * M);
            snap_pool(s->att + (size_t)g * M, s->n_prefix[g], s->kernel, s->pool, s->pooled + (size_t)g * M);
        }
        scored = 1;
        snap_ada_allocate(s->pooled, M, s->n_prefix, s->Hkv, s->Hkv * base, s->alpha, s->alloc, s->idx,
                          s->counts, s->budgets);
    }
    /* no head beyond the bound its capacity was sized for (B_max; holds by construction) */
    for (int g = 0; g < s->Hkv; g++)
        if (s->budgets[g] > s->keep_max[layer] - s->w) s->budgets[g] = s->keep_max[layer] - s->w;
    /* [DECISION] reference rounding (rint per head) can sum to more than H_kv·base (three heads
     * 10.7, 10.7, 8.6 → 31 > 30), and the arena holds exactly the uniform split (ada_fill
     * requires Σ (B_g + w + slack + 1) ≤ it): the excess is taken back one entry at a time from
     * the largest budget, ties to the higher head (head 0 gets leftovers first, so it gives
     * last). AdaKV's own code lets its flattened cache grow instead; ours is physical. The
     * device's re-split (kernels/cuda/ada_recompress.cu) does the same. */
    if (compress) ada_give_back_excess(s->budgets, s->Hkv, s->Hkv * base);
    /* without a split every head keeps its prefix and is sized for the uniform base */
    if (!compress)
        for (int g = 0; g < s->Hkv; g++) s->budgets[g] = base;
    /* head 0 must fit the capacity kv_prefill already read */
    int win0 = s->n_cand[0] - s->n_prefix[0], lim0 = cap0_limit - win0;
    if (lim0 < 0) lim0 = 0;
    if (s->budgets[0] > lim0) {
        s->budgets[0] = lim0;
        if (!scored && lim0 < s->n_prefix[0]) {
            snap_obs_scores(s, layer, 0, &cands[0], end, s->att);
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

/* Decode re-compression of a whole ada layer: new split, compaction, new layout. */
void snap_recompress_layer(kv_cache *kv, snap_state *s, int layer, int end)
{
    snap_cands cands[s->Hkv];
    for (int g = 0; g < s->Hkv; g++) cands[g] = snap_live_cands(kv, layer, g);
    ada_plan(s, layer, cands, end, s->arena[layer]);
    for (int g = 0; g < s->Hkv; g++)
        if (s->n_keep[g] < cands[g].n) kv_compact(kv, layer, g, s->keep + (size_t)g * s->max_cand, s->n_keep[g]);
    int want[s->Hkv];
    ada_final_caps(s, layer, want);
    ada_layout(kv, s, layer, want);
}

/* Ada prefill of KV head g: at g = 0 the whole layer is planned (scores of every head, split,
 * compaction of the live slots, new layout); every head then returns its part of the plan.
 * Live slots are already compacted to 0..m−1, so a head's keep-list is 0..m−1 followed by its
 * kept chunk tokens. */
int snap_ada_on_prefill(kv_cache *kv, snap_state *s, const kv_prefill_chunk *c, int g, int n_live,
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
        for (int h = 0; h < s->Hkv; h++) cands[h] = snap_chunk_cands(kv, c, h, kv_len(kv, layer, h));
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
                s->n_keep[h] = snap_select_head(s, layer, h, &cands[h], end, target, s->keep + (size_t)h * M);
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

