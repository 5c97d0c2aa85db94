/* The physically budgeted KV cache: allocation, prefill gathering, decode slots, statistics.
 * See eviction.h for the contract; POLICIES.md §1.2-§1.4 for the rules. */
#include "eviction/eviction.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kv_budget_capacity(const policy_params *p, int n_prompt, int max_new, int c_min)
{
    int l_ref = p->budget_ref_prompt ? n_prompt : n_prompt + max_new;
    double c = p->budget_tokens > 0 ? p->budget_tokens
             : p->budget > 1.0      ? floor(p->budget)
                                    : ceil(p->budget * (double)l_ref - 1e-9);
    int total = n_prompt + max_new > 1 ? n_prompt + max_new : 1;
    if (c < c_min) c = c_min;
    if (c > total) c = total;
    return c < 1 ? 1 : (int)c;
}

int kv_init(kv_cache *kv, const policy_ops *ops, const policy_params *params,
            int n_layers, int n_kv_heads, int n_heads, int head_dim,
            int n_prompt, int max_new, char *err, size_t errlen)
{
    memset(kv, 0, sizeof *kv);
    if (!(params->budget > 0.0)) {
        snprintf(err, errlen, "--budget: must be > 0 (got %g)", params->budget);
        return -1;
    }
    if (params->kv_dtype != DT_F32 && params->kv_dtype != DT_F16 && params->kv_dtype != DT_BF16) {
        snprintf(err, errlen, "--kv-dtype: the KV cache stores f32, f16 or bf16 (got %s)",
                 dtype_name((dtype_t)params->kv_dtype));
        return -1;
    }
    kv->kv_dtype = (dtype_t)params->kv_dtype;
    kv->kv_es = dtype_size(kv->kv_dtype);
    kv->n_layers = n_layers;
    kv->n_kv_heads = n_kv_heads;
    kv->n_heads = n_heads;
    kv->head_dim = head_dim;
    kv->ops = ops;
    kv->params = *params;
    kv->prompt_tokens = n_prompt;
    kv->max_new = max_new;
    int n = n_layers * n_kv_heads;
    kv->cap = calloc((size_t)n, sizeof *kv->cap);
    kv->len = calloc((size_t)n, sizeof *kv->len);
    kv->off = calloc((size_t)n, sizeof *kv->off);
    if (!kv->cap || !kv->len || !kv->off) goto oom;
    if (ops->init(kv, params, n_prompt, max_new, err, errlen) != 0) {
        kv_free(kv);
        return -1;
    }
    size_t total = 0, layer_rows = 0;
    for (int i = 0; i < n; i++) {
        if (kv->cap[i] < 1) {
            snprintf(err, errlen, "policy %s: capacity %d for layer %d head %d is < 1", ops->name,
                     kv->cap[i], i / n_kv_heads, i % n_kv_heads);
            kv_free(kv);
            return -1;
        }
        kv->off[i] = total;
        total += (size_t)kv->cap[i] + 1;
        layer_rows += (size_t)kv->cap[i] + 1;
        if (i % n_kv_heads == n_kv_heads - 1) {
            if (layer_rows > kv->arena_rows) kv->arena_rows = layer_rows;
            layer_rows = 0;
        }
    }
    kv->n_slots = total;
    kv->pos = malloc(total * sizeof *kv->pos);
    kv->k_data = malloc(total * (size_t)head_dim * kv->kv_es);
    kv->v_data = malloc(total * (size_t)head_dim * kv->kv_es);
    if (!kv->pos || !kv->k_data || !kv->v_data) goto oom;
    if (ops->reads_rows && kv->kv_dtype != DT_F32) {
        kv->k32 = malloc(kv->arena_rows * (size_t)head_dim * sizeof(float));
        kv->v32 = malloc(kv->arena_rows * (size_t)head_dim * sizeof(float));
        if (!kv->k32 || !kv->v32) goto oom;
    }
    kv->passthrough = (!ops->attend || ops->attend_exact_when_fits) && !params->hooks_always;
    for (int i = 0; i < n_layers * n_kv_heads; i++)
        if (kv->cap[i] < n_prompt + max_new) kv->passthrough = 0;
    if (ops->stats && !kv->passthrough) {
        kv->score = calloc(total, sizeof *kv->score);
        if (!kv->score) goto oom;
    }
    if (ops->slot_state_bytes) {
        kv->state = calloc(total, ops->slot_state_bytes);
        if (!kv->state) goto oom;
    }
    return 0;
oom:
    snprintf(err, errlen, "KV cache: out of memory (%d layers x %d heads, head_dim %d)", n_layers,
             n_kv_heads, head_dim);
    kv_free(kv);
    return -1;
}

void kv_free(kv_cache *kv)
{
    if (kv->ops && kv->ops->free_state && kv->pstate) kv->ops->free_state(kv);
    free(kv->cap);
    free(kv->len);
    free(kv->off);
    free(kv->pos);
    free(kv->k_data);
    free(kv->v_data);
    free(kv->k32);
    free(kv->v32);
    free(kv->score);
    free(kv->state);
    memset(kv, 0, sizeof *kv);
}

const float *kv_key_f32(const kv_cache *kv, int layer, int g, int j, float *buf)
{
    size_t d = (size_t)kv->head_dim;
    if (kv->kv_dtype == DT_F32) return kv_keys(kv, layer, g) + (size_t)j * d;
    widen_elems(kv->kv_dtype, (const char *)kv_key_data(kv, layer, g) + (size_t)j * d * kv->kv_es, buf, d);
    return buf;
}

const float *kv_value_f32(const kv_cache *kv, int layer, int g, int j, float *buf)
{
    size_t d = (size_t)kv->head_dim;
    if (kv->kv_dtype == DT_F32) return kv_values(kv, layer, g) + (size_t)j * d;
    widen_elems(kv->kv_dtype, (const char *)kv_value_data(kv, layer, g) + (size_t)j * d * kv->kv_es, buf, d);
    return buf;
}

/* The rows of (layer, g) widened into scratch (k32 or v32) at the region's place in the arena
 * of its layer; src: the cache's region (k_data or v_data base). */
static const float *widen_region(const kv_cache *kv, int layer, int g, int n, const void *base,
                                 float *scratch)
{
    if (!scratch) return NULL;
    size_t d = (size_t)kv->head_dim, o = kv->off[kv_idx(kv, layer, g)];
    float *dst = scratch + (o - kv->off[kv_idx(kv, layer, 0)]) * d;
    widen_elems(kv->kv_dtype, (const char *)base + o * d * kv->kv_es, dst, (size_t)n * d);
    return dst;
}

const float *kv_keys_f32(const kv_cache *kv, int layer, int g, int n)
{
    if (kv->kv_dtype == DT_F32) return kv_keys(kv, layer, g);
    return widen_region(kv, layer, g, n, kv->k_data, kv->k32);
}

const float *kv_values_f32(const kv_cache *kv, int layer, int g, int n)
{
    if (kv->kv_dtype == DT_F32) return kv_values(kv, layer, g);
    return widen_region(kv, layer, g, n, kv->v_data, kv->v32);
}

/* Copies slot src of region `idx` to slot dst (K, V, position, score, policy state). */
static void move_slot(kv_cache *kv, int idx, int dst, int src)
{
    size_t row = (size_t)kv->head_dim * kv->kv_es, o = kv->off[idx];
    memmove((char *)kv->k_data + (o + dst) * row, (char *)kv->k_data + (o + src) * row, row);
    memmove((char *)kv->v_data + (o + dst) * row, (char *)kv->v_data + (o + src) * row, row);
    kv->pos[o + dst] = kv->pos[o + src];
    if (kv->score) kv->score[o + dst] = kv->score[o + src];
    size_t sb = kv->ops->slot_state_bytes;
    if (sb) memmove(kv->state + (o + dst) * sb, kv->state + (o + src) * sb, sb);
}

/* Default prefill choice: the most recent cap candidates. */
static int keep_recent(int n_cand, int cap, int *keep)
{
    int first = n_cand > cap ? n_cand - cap : 0;
    for (int j = first; j < n_cand; j++) keep[j - first] = j;
    return n_cand - first;
}

int kv_prefill(kv_cache *kv, const kv_prefill_chunk *c, char *err, size_t errlen)
{
    const int d = kv->head_dim, hkv = kv->n_kv_heads;
    int max_cand = 0;
    for (int g = 0; g < hkv; g++) {
        int n = kv_len(kv, c->layer, g) + c->n_new;
        if (n > max_cand) max_cand = n;
    }
    int *keep = malloc((size_t)(max_cand > 0 ? max_cand : 1) * sizeof *keep);
    if (!keep) {
        snprintf(err, errlen, "KV cache: out of memory in prefill");
        return -1;
    }
    for (int g = 0; g < hkv; g++) {
        int idx = kv_idx(kv, c->layer, g);
        int n_live = kv->len[idx], n_cand = n_live + c->n_new, cap = kv->cap[idx];
        int n_keep = kv->ops->on_prefill && !kv->passthrough ? kv->ops->on_prefill(kv, c, g, n_live, keep)
                                                             : keep_recent(n_cand, cap, keep);
        if (n_keep < 0 || n_keep > cap) {
            snprintf(err, errlen, "policy %s: kept %d > capacity %d (layer %d head %d)",
                     kv->ops->name, n_keep, cap, c->layer, g);
            free(keep);
            return -1;
        }
        char *K = kv_key_data(kv, c->layer, g), *V = kv_value_data(kv, c->layer, g);
        size_t row = (size_t)d * kv->kv_es;
        int32_t *P = kv_positions(kv, c->layer, g);
        float *S = kv->score ? kv->score + kv->off[idx] : NULL;
        const float *colsum = c->colsum ? c->colsum + (size_t)g * c->cand_stride : NULL;
        /* keep is ascending and live candidates come first, so dest ≤ src for live slots:
         * a forward in-place copy is safe. */
        for (int i = 0; i < n_keep; i++) {
            int j = keep[i];
            if (j < n_live) {
                if (j != i) move_slot(kv, idx, i, j);
            } else {
                int r = j - n_live;
                narrow_elems(kv->kv_dtype, c->k_new + ((size_t)r * hkv + g) * d, K + i * row, (size_t)d);
                narrow_elems(kv->kv_dtype, c->v_new + ((size_t)r * hkv + g) * d, V + i * row, (size_t)d);
                P[i] = c->pos0 + r;
                if (S) S[i] = 0.0f;
                if (kv->state) memset(kv_slot_state(kv, c->layer, g, i), 0, kv->ops->slot_state_bytes);
            }
            if (S && colsum) S[i] += colsum[j];
        }
        kv->evictions += n_cand - n_keep;
        kv->len[idx] = n_keep;
    }
    free(keep);
    return 0;
}

int kv_decode_slot(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                   const float *v)
{
    int idx = kv_idx(kv, layer, g);
    int slot = kv->ops->pre_attn && !kv->passthrough ? kv->ops->pre_attn(kv, layer, g, t, q, k, v) : kv->len[idx];
    if (slot == kv->len[idx]) kv->len[idx]++;
    return slot;
}

void kv_write(kv_cache *kv, int layer, int g, int slot, int t, const float *k, const float *v)
{
    size_t d = (size_t)kv->head_dim, row = d * kv->kv_es;
    narrow_elems(kv->kv_dtype, k, (char *)kv_key_data(kv, layer, g) + (size_t)slot * row, d);
    narrow_elems(kv->kv_dtype, v, (char *)kv_value_data(kv, layer, g) + (size_t)slot * row, d);
    kv_positions(kv, layer, g)[slot] = t;
    if (kv->score) kv->score[kv->off[kv_idx(kv, layer, g)] + slot] = 0.0f;
    if (kv->state) memset(kv_slot_state(kv, layer, g, slot), 0, kv->ops->slot_state_bytes);
}

void kv_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    if (kv->ops->post_attn && !kv->passthrough) kv->ops->post_attn(kv, layer, g, t, probs, stride);
}

void kv_sample_stats(kv_cache *kv)
{
    int n = kv->n_layers * kv->n_kv_heads;
    double total = 0;
    for (int i = 0; i < n; i++) total += kv->len[i];
    kv->live_sum += total / n;
    kv->live_samples++;
    if (total > kv->live_peak) kv->live_peak = total;
}

void kv_evict_swap_last(kv_cache *kv, int layer, int g, int victim)
{
    int idx = kv_idx(kv, layer, g), last = kv->len[idx] - 1;
    if (victim != last) move_slot(kv, idx, victim, last);
    kv->len[idx] = last;
    kv->evictions++;
}

void kv_compact(kv_cache *kv, int layer, int g, const int *keep, int n)
{
    int idx = kv_idx(kv, layer, g);
    for (int i = 0; i < n; i++)
        if (keep[i] != i) move_slot(kv, idx, i, keep[i]);
    kv->evictions += kv->len[idx] - n;
    kv->len[idx] = n;
}

size_t kv_bytes_per_token(const kv_cache *kv)
{
    return (size_t)kv->n_layers * kv->n_kv_heads * kv->head_dim * 2 * kv->kv_es;
}

size_t kv_bytes_allocated(const kv_cache *kv)
{
    return kv->n_slots * (size_t)kv->head_dim * 2 * kv->kv_es + kv->sketch_bytes;
}

int kv_set_protected_capacity(kv_cache *kv, const policy_params *p, int n_prompt,
                              int max_new, int sink, int recent)
{
    int cap = kv_budget_capacity(p, n_prompt, max_new, sink + recent + 1);
    kv_set_uniform_capacity(kv, cap);
    return cap;
}

void kv_stats_get(const kv_cache *kv, int n_prompt, int n_decode_steps, kv_stats *s)
{
    int n_lh = kv->n_layers * kv->n_kv_heads;
    s->bytes_per_token = kv_bytes_per_token(kv);
    s->peak_tokens = n_lh ? kv->live_peak / n_lh : 0;
    s->avg_tokens = kv->live_samples ? kv->live_sum / kv->live_samples : 0;
    s->sketch_bytes = kv->sketch_bytes;
    s->peak_bytes = s->peak_tokens * (double)s->bytes_per_token + (double)kv->sketch_bytes;
    s->avg_bytes = s->avg_tokens * (double)s->bytes_per_token + (double)kv->sketch_bytes;
    s->full_tokens = n_prompt + n_decode_steps;
    /* prompt, then +1 per decode step */
    s->full_avg_tokens = n_prompt + n_decode_steps / 2.0;
    s->full_bytes = (double)s->full_tokens * s->bytes_per_token;
    s->full_avg_bytes = s->full_avg_tokens * s->bytes_per_token;
}
