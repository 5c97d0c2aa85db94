/* Host side of a device KV cache: planning its size before allocation and the prefill
 * bookkeeping without K/V. See kv_device.h. */
#include "eviction/kv_device.h"
#include "eviction/policy_common.h"
#include "eviction/snap_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kv_plan_bytes(const policy_ops *ops, const policy_params *p, int n_layers, int n_kv_heads,
                  int n_heads, int head_dim, int n_prompt, int max_new, size_t elem_bytes,
                  size_t *bytes, int *max_cap, char *err, size_t errlen)
{
    /* a capacity-only cache: what ops->init reads and writes (cf. kv_init) */
    kv_cache kv;
    memset(&kv, 0, sizeof kv);
    kv.n_layers = n_layers;
    kv.n_kv_heads = n_kv_heads;
    kv.n_heads = n_heads;
    kv.head_dim = head_dim;
    kv.ops = ops;
    kv.params = *p;
    kv.kv_dtype = (dtype_t)p->kv_dtype;   /* what a policy's init may look at (sizes use elem_bytes) */
    kv.kv_es = dtype_size(kv.kv_dtype);
    kv.prompt_tokens = n_prompt;
    kv.max_new = max_new;
    int n = n_layers * n_kv_heads;
    kv.cap = calloc((size_t)n, sizeof *kv.cap);
    kv.len = calloc((size_t)n, sizeof *kv.len);
    kv.off = calloc((size_t)n, sizeof *kv.off);
    int rc = -1;
    if (!kv.cap || !kv.len || !kv.off) {
        snprintf(err, errlen, "KV cache plan: out of memory");
        goto done;
    }
    if (!(p->budget > 0.0)) {
        snprintf(err, errlen, "--budget: must be > 0 (got %g)", p->budget);
        goto done;
    }
    if (ops->init(&kv, p, n_prompt, max_new, err, errlen) != 0) goto done;
    size_t slots = 0;
    int mc = 0;
    for (int i = 0; i < n; i++) {
        slots += (size_t)(kv.cap[i] > 0 ? kv.cap[i] : 0) + 1;
        if (kv.cap[i] > mc) mc = kv.cap[i];
    }
    *bytes = slots * (size_t)head_dim * 2 * elem_bytes + kv.sketch_bytes;   /* + a sketch policy's state */
    if (max_cap) *max_cap = mc;
    rc = 0;
done:
    if (ops->free_state && kv.pstate) ops->free_state(&kv);
    free(kv.cap);
    free(kv.len);
    free(kv.off);
    return rc;
}

int kv_check_limit(const policy_ops *ops, const policy_params *p, int n_layers, int n_kv_heads,
                   int n_heads, int head_dim, int n_prompt, int max_new, size_t elem_bytes,
                   double limit_bytes, const char *what, char *err, size_t errlen)
{
    size_t need;
    int max_cap;
    if (kv_plan_bytes(ops, p, n_layers, n_kv_heads, n_heads, head_dim, n_prompt, max_new,
                      elem_bytes, &need, &max_cap, err, errlen) != 0)
        return -1;
    if ((double)need <= limit_bytes) return 0;
    /* the largest fractional budget (steps of 0.01) that fits; `full` ignores the budget, so
     * plan with a budgeted policy of the same per-token cost instead */
    const policy_ops *plan_ops = ops;
    const char *hint = "";
    if (!strcmp(ops->name, "full")) {
        plan_ops = policy_find("streaming");
        hint = " with a budgeted policy, e.g. --policy streaming";
    }
    policy_params q = *p;
    q.budget_tokens = 0;
    double best = 0;
    char e2[256];
    for (int b = 99; plan_ops && b >= 1; b--) {
        size_t bytes;
        q.budget = b / 100.0;
        if (kv_plan_bytes(plan_ops, &q, n_layers, n_kv_heads, n_heads, head_dim, n_prompt,
                          max_new, elem_bytes, &bytes, NULL, e2, sizeof e2) != 0)
            continue;
        if ((double)bytes <= limit_bytes) {
            best = q.budget;
            break;
        }
    }
    /* per (layer, KV head) tokens that fit at a uniform capacity */
    double per_slot = (double)n_layers * n_kv_heads * head_dim * 2.0 * (double)elem_bytes;
    long fit_tokens = (long)floor(limit_bytes / per_slot) - 1;
    char sugg[160];
    if (best > 0)
        snprintf(sugg, sizeof sugg, "try --budget %.2f%s", best, hint);
    else if (fit_tokens >= 1)
        snprintf(sugg, sizeof sugg, "try --budget-tokens %ld%s", fit_tokens, hint);
    else
        snprintf(sugg, sizeof sugg, "not even one token per head fits; raise the limit");
    snprintf(err, errlen,
             "KV cache does not fit: policy %s needs %.4g GB (capacity up to %d tokens per "
             "(layer, KV head), %d layers x %d KV heads x head_dim %d, %zu-byte K/V) but %s "
             "allows %.4g GB; %s",
             ops->name, need / 1e9, max_cap, n_layers, n_kv_heads, head_dim, elem_bytes, what,
             limit_bytes / 1e9, sugg);
    return 1;
}

/* Default prefill choice (as kv_cache.c): the most recent cap candidates. */
static int keep_recent(int n_cand, int cap, int *keep)
{
    int first = n_cand > cap ? n_cand - cap : 0;
    for (int j = first; j < n_cand; j++) keep[j - first] = j;
    return n_cand - first;
}

int kv_prefill_plan(kv_cache *kv, const kv_prefill_chunk *c, int *keep, int keep_stride,
                    int *n_keep, char *err, size_t errlen)
{
    const int hkv = kv->n_kv_heads;
    const size_t sb = kv->ops->slot_state_bytes;
    for (int g = 0; g < hkv; g++) {
        int idx = kv_idx(kv, c->layer, g);
        int n_live = kv->len[idx], n_cand = n_live + c->n_new, cap = kv->cap[idx];
        int *kg = keep + (size_t)g * keep_stride;
        if (n_cand > keep_stride) {
            snprintf(err, errlen, "KV cache: %d prefill candidates over the keep buffer of %d",
                     n_cand, keep_stride);
            return -1;
        }
        int nk = kv->ops->on_prefill && !kv->passthrough ? kv->ops->on_prefill(kv, c, g, n_live, kg)
                                     : keep_recent(n_cand, cap, kg);
        if (nk < 0 || nk > cap) {
            snprintf(err, errlen, "policy %s: kept %d > capacity %d (layer %d head %d)",
                     kv->ops->name, nk, cap, c->layer, g);
            return -1;
        }
        int32_t *P = kv_positions(kv, c->layer, g);
        float *S = kv_scores(kv, c->layer, g);
        const float *colsum = c->colsum ? c->colsum + (size_t)g * c->cand_stride : NULL;
        /* keep is ascending and live candidates come first: dest ≤ src, forward copy is safe */
        for (int i = 0; i < nk; i++) {
            int j = kg[i];
            if (j < n_live) {
                if (j != i) {
                    P[i] = P[j];
                    if (S) S[i] = S[j];
                    if (sb) memmove(kv_slot_state(kv, c->layer, g, i), kv_slot_state(kv, c->layer, g, j), sb);
                }
            } else {
                P[i] = c->pos0 + (j - n_live);
                if (S) S[i] = 0.0f;
                if (sb) memset(kv_slot_state(kv, c->layer, g, i), 0, sb);
            }
            if (S && colsum) S[i] += colsum[j];
        }
        kv->evictions += n_cand - nk;
        kv->len[idx] = nk;
        n_keep[g] = nk;
    }
    return 0;
}

int kv_moves_from_positions(const int32_t *before, int n0, const int32_t *after, int n1,
                            int *slot_of, int n_pos, int *src)
{
    for (int j = 0; j < n0; j++) {
        if (before[j] < 0 || before[j] >= n_pos) return -1;
        slot_of[before[j]] = j;
    }
    for (int i = 0; i < n1; i++) {
        int p = after[i];
        int j = p >= 0 && p < n_pos ? slot_of[p] : -1;
        /* slot_of may hold a stale entry from an earlier call: confirm it */
        if (j < 0 || j >= n0 || before[j] != p) return -1;
        src[i] = j;
    }
    return 0;
}

int kv_decode_replay(const int32_t *before, int n0, int t, const int32_t *after, int n1,
                     int *slot_of, int n_pos, int32_t *cand, int *src, int *slot)
{
    /* the usual cases: an append at n0, or one slot overwritten, all others in place */
    int diff = -1, n_diff = 0;
    int m = n0 < n1 ? n0 : n1;
    for (int j = 0; j < m && n_diff < 2; j++)
        if (before[j] != after[j]) {
            diff = j;
            n_diff++;
        }
    if (n1 == n0 + 1 && n_diff == 0 && after[n0] == t) {
        *slot = n0;
        return 0;
    }
    if (n1 == n0 && n_diff == 1 && after[diff] == t) {
        *slot = diff;
        return 0;
    }
    /* anything else: a gather over the old slots and the new token (candidate n0) */
    memcpy(cand, before, (size_t)n0 * sizeof *cand);
    cand[n0] = t;
    return kv_moves_from_positions(cand, n0 + 1, after, n1, slot_of, n_pos, src) == 0 ? 1 : -1;
}

/* ---- decode steps a device runs on its own (kv_device.h) ---- */

static int is_snap(const kv_cache *kv) { return kv->ops->pre_attn == snap_pre_attn; }

int kv_decode_quiet(const kv_cache *kv)
{
    const int n = kv->n_layers * kv->n_kv_heads;
    int slack; /* quiet iff len + slack < cap in every region */
    if (is_snap(kv)) {
        const snap_state *s = kv->pstate;
        slack = s->mode == SNAP_CAPPED ? 1 : 0;
    } else if (!strcmp(kv->ops->name, "subgen")) {
        slack = 0; /* post_attn acts when len + 1 > cap, i.e. not len + 1 ≤ cap = len < cap */
    } else {
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (kv->len[i] + slack >= kv->cap[i]) return 0;
    return 1;
}

void kv_device_append(kv_cache *kv, int layer, int t)
{
    const size_t sb = kv->ops->slot_state_bytes;
    snap_state *s = is_snap(kv) ? kv->pstate : NULL;
    for (int g = 0; g < kv->n_kv_heads; g++) {
        int idx = kv_idx(kv, layer, g), slot = kv->len[idx];
        size_t o = kv->off[idx] + (size_t)slot;
        kv->pos[o] = t;
        if (kv->score) kv->score[o] = 0.0f;
        if (sb) memset(kv->state + o * sb, 0, sb);
        kv->len[idx] = slot + 1;
        if (s) s->ring_pos[((size_t)layer * s->Hkv + g) * s->w_flag + t % s->w_flag] = t;
    }
}

int kv_device_snap_capped(const kv_cache *kv, kv_snap_capped *out)
{
    if (!is_snap(kv) || !kv->pstate) return -1;
    const snap_state *s = kv->pstate;
    if (s->mode != SNAP_CAPPED || s->ada) return -1;
    if (out) *out = (kv_snap_capped){s->w, s->kernel, s->pool == SNAP_POOL_AVG, s->gqa == SNAP_GQA_MAX, s->target};
    return 0;
}

int kv_device_ada_capped(const kv_cache *kv, int layer, kv_ada_capped *out)
{
    if (!is_snap(kv) || !kv->pstate) return -1;
    const snap_state *s = kv->pstate;
    if (s->mode != SNAP_CAPPED || !s->ada || layer < 0 || layer >= s->L) return -1;
    if (out) {
        const int base = s->layer_target[layer] - s->w, total = s->Hkv * base;
        out->c = (kv_snap_capped){s->w, s->kernel, s->pool == SNAP_POOL_AVG, s->gqa == SNAP_GQA_MAX, s->target};
        out->base = base, out->arena = s->arena[layer], out->cap_max = s->cap_max[layer];
        out->keep_max = s->keep_max[layer], out->slack = s->slack, out->alloc_ref = s->alloc == SNAP_ALLOC_REFERENCE;
        /* snap_ada_allocate's expressions, evaluated the same way */
        out->oma = 1.0 - s->alpha;
        out->a_share = s->alpha * total / s->Hkv;
        out->a_floor = floor(s->alpha * (total / s->Hkv));
    }
    return 0;
}

int kv_device_ada_recompressed(kv_cache *kv, int layer, const int *len, const int *cap, const int *target,
                               int *moved)
{
    snap_state *s = kv->pstate;
    const int H = kv->n_kv_heads, i0 = kv_idx(kv, layer, 0);
    int full = 0, slots = 0;
    for (int g = 0; g < H; g++) {
        full |= kv->len[i0 + g] >= kv->cap[i0 + g]; /* snap_post_attn's condition */
        if (len[g] < 0 || cap[g] < 1 || len[g] > cap[g] || len[g] > kv->len[i0 + g]) return -1;
        slots += cap[g] + 1;
    }
    if (!full) return 0;
    if (slots != s->arena[layer]) return -1;
    size_t at = kv->off[i0];
    for (int g = 0; g < H; g++) {
        kv->evictions += kv->len[i0 + g] - len[g];
        kv->len[i0 + g] = len[g];
        kv->cap[i0 + g] = cap[g];
        kv->off[i0 + g] = at;
        at += (size_t)cap[g] + 1;
        s->target[i0 + g] = target[g];
        if (moved) moved[g] = 0;
    }
    return 0;
}

void kv_device_recompressed(kv_cache *kv, int layer, int *moved)
{
    const snap_state *s = is_snap(kv) ? kv->pstate : NULL;
    int sg_target = 0;
    if (!s && subgen_device_capped(kv, &sg_target, NULL) != 0) return;
    for (int g = 0; g < kv->n_kv_heads; g++) {
        int idx = kv_idx(kv, layer, g), target = s ? s->target[idx] : sg_target;
        /* snap_post_attn acts at len ≥ cap, sg_post_attn past it */
        if (kv->len[idx] < kv->cap[idx] + (s ? 0 : 1) || kv->len[idx] <= target) continue;
        kv->evictions += kv->len[idx] - target;
        kv->len[idx] = target;
        if (moved) moved[g] = 0;
    }
}

float *kv_device_query_ring(kv_cache *kv, int *rows)
{
    *rows = 0;
    if (!is_snap(kv) || !kv->pstate) return NULL;
    snap_state *s = kv->pstate;
    *rows = s->w_flag;
    return s->ring;
}

void kv_device_prepare_decode(kv_cache *kv)
{
    if (kv->passthrough) return;
    if (!strcmp(kv->ops->name, "scissorhands")) scissorhands_prompt_history_all(kv);
    if (!strcmp(kv->ops->name, "hashevict")) hashevict_refresh_all(kv);
}

void kv_device_reset_state(kv_cache *kv)
{
    if (kv->state && kv->ops->slot_state_bytes) memset(kv->state, 0, kv->n_slots * kv->ops->slot_state_bytes);
}
