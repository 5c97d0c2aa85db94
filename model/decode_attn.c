/* model/decode_attn.c — the CPU decode step's attention over the KV cache (forward.c's
 * decode_cpu calls model_decode_attention once per layer), split over the threads. */
#include "model/internal.h"

#include "eviction/eviction.h"
#include "kernels/kernels.h"

#include <stddef.h>

float model_logit_factor(const struct kv_cache *kv, int n_keys)
{
    return kv->ops->logit_scale ? kv->ops->logit_scale(kv, n_keys) : 1.0f;
}

/* Keys per work item of the decode scores (a thread's share of one KV head's cache). */
#define DEC_KEYS_ITEM 256

/* Query heads [H·t/T, H·(t+1)/T) of layer l, each head's three phases on this thread
 * (consecutive heads of a KV group in one call): the short-cache split of decode_attention. */
static void attn_heads_share(engine *e, int l, float scale, int t, int T)
{
    const model_config *c = &e->w->cfg;
    kv_cache *kv = e->kv;
    const int hd = c->head_dim, H = c->n_heads, G = H / c->n_kv_heads;
    const dtype_t k_dt = e->shifted ? DT_F32 : kv->kv_dtype, v_dt = kv->kv_dtype;
    const int ds = attn_decode_dsplit(hd);
    for (int h = H * t / T, h1 = H * (t + 1) / T; h < h1;) {
        int g = h / G, he = (g + 1) * G < h1 ? (g + 1) * G : h1, len = kv_len(kv, l, g);
        const void *K = e->shifted ? e->kr_live + (size_t)g * e->probs_stride * hd : kv_key_data(kv, l, g);
        float *pr = e->probs + (size_t)h * e->probs_stride;
        attn_decode_scores(e->q + (size_t)h * hd, he - h, K, k_dt, 0, len, hd, scale * model_logit_factor(kv, len), pr,
                           e->probs_stride);
        for (int i = 0; i < he - h; i++) attn_decode_softmax(pr + (size_t)i * e->probs_stride, len);
        for (int d0 = 0; d0 < hd; d0 += ds)
            attn_decode_values(pr, e->probs_stride, he - h, kv_value_data(kv, l, g), v_dt, len, hd, d0, d0 + ds,
                               e->att + (size_t)h * hd);
        h = he;
    }
}

/* Phase ph (1 scores, 2 softmax, 3 values) of the long-cache split of decode_attention for
 * thread t of T; n_items: the (KV head, key block) items of phase 1. */
static void attn_phase_share(engine *e, int l, float scale, int ph, int n_items, int t, int T)
{
    const model_config *c = &e->w->cfg;
    kv_cache *kv = e->kv;
    const int hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, G = H / Hkv;
    const dtype_t k_dt = e->shifted ? DT_F32 : kv->kv_dtype, v_dt = kv->kv_dtype;
    const int ds = attn_decode_dsplit(hd), nd = hd / ds;
    if (ph == 1) {   /* scores: items (g, key block) in order, contiguous shares */
        int i0 = n_items * t / T, i1 = n_items * (t + 1) / T, base = 0;
        for (int g = 0; g < Hkv && base < i1; g++) {
            int len = kv_len(kv, l, g), nb = (len + DEC_KEYS_ITEM - 1) / DEC_KEYS_ITEM;
            int a = i0 > base ? i0 - base : 0, b = i1 - base < nb ? i1 - base : nb;
            if (a < b) {
                const void *K = e->shifted ? e->kr_live + (size_t)g * e->probs_stride * hd : kv_key_data(kv, l, g);
                int j1 = b * DEC_KEYS_ITEM < len ? b * DEC_KEYS_ITEM : len;
                attn_decode_scores(e->q + (size_t)g * G * hd, G, K, k_dt, a * DEC_KEYS_ITEM, j1, hd,
                                   scale * model_logit_factor(kv, len), e->probs + (size_t)g * G * e->probs_stride,
                                   e->probs_stride);
            }
            base += nb;
        }
    } else if (ph == 2) {   /* softmax per query head */
        for (int h = H * t / T; h < H * (t + 1) / T; h++)
            attn_decode_softmax(e->probs + (size_t)h * e->probs_stride, kv_len(kv, l, h / G));
    } else {   /* values: items (g, column block) */
        for (int it = Hkv * nd * t / T; it < Hkv * nd * (t + 1) / T; it++) {
            int g = it / nd, d0 = it % nd * ds;
            attn_decode_values(e->probs + (size_t)g * G * e->probs_stride, e->probs_stride, G,
                               kv_value_data(kv, l, g), v_dt, kv_len(kv, l, g), hd, d0, d0 + ds,
                               e->att + (size_t)g * G * hd);
        }
    }
}

/* model_decode_attention's shares (cpu_team_run) */
typedef struct {
    engine *e;
    int l, n_items;
    float scale;
} da_job;

static void da_heads_share(void *arg, int t, int T)
{
    const da_job *j = arg;
    attn_heads_share(j->e, j->l, j->scale, t, T);
}

static void da_phases_share(void *arg, int t, int T)
{
    const da_job *j = arg;
    attn_phase_share(j->e, j->l, j->scale, 1, j->n_items, t, T);
    cpu_team_barrier();
    attn_phase_share(j->e, j->l, j->scale, 2, j->n_items, t, T);
    cpu_team_barrier();
    attn_phase_share(j->e, j->l, j->scale, 3, j->n_items, t, T);
}

/* The split model_decode_attention uses for layer l: the threads of the heads split (1 below
 * 2^11 key elements), or 0 for the phases split (2^15 and more); *n_items: phase 1's items. */
static int heads_split(const engine *e, int l, int n_threads, int *n_items)
{
    const model_config *c = &e->w->cfg;
    const int H = c->n_heads, Hkv = c->n_kv_heads;
    int max_len = 0;
    *n_items = 0;
    for (int g = 0; g < Hkv; g++) {
        int len = kv_len(e->kv, l, g);
        *n_items += (len + DEC_KEYS_ITEM - 1) / DEC_KEYS_ITEM;
        if (len > max_len) max_len = len;
    }
    const long long work = (long long)max_len * Hkv * c->head_dim;
    if (work >= (1 << 15)) return 0;
    return work < (1 << 11) ? 1 : n_threads < H ? n_threads : H;
}

/* Decode attention of layer l, grouped by KV head (kernels.h attn_decode_*): each KV head's
 * K and V are read once for its G query heads. Short caches (< 2^15 key elements): the query
 * heads split over the threads, one team run and no barrier (one thread below 2^11). Longer ones:
 * threads split (1) the scores by blocks of DEC_KEYS_ITEM keys of every KV head, (2) the
 * softmax by query head, (3) the weighted sum of the values by column blocks of every KV head,
 * with a barrier between. The floats are the same for any thread count (and the same as
 * attn_decode_head per head). The shares run on the decode team (cpu_team_run). */
void model_decode_attention(engine *e, int l, float scale, int n_threads)
{
    da_job j = {.e = e, .l = l, .scale = scale};
    const int nh = heads_split(e, l, n_threads, &j.n_items);
    if (nh) {
        cpu_team_run(nh, da_heads_share, &j);
        return;
    }
    cpu_team_run(n_threads, da_phases_share, &j);
}

void model_decode_attention_hint(const engine *e, int l, int n_threads)
{
    const model_config *c = &e->w->cfg;
    const int H = c->n_heads, G = H / c->n_kv_heads, hd = c->head_dim;
    int n_items, T = heads_split(e, l, n_threads, &n_items);
    const size_t es = dtype_size(e->kv->kv_dtype);
    /* attn_heads_share's heads of thread t, their KV groups' keys (with the values too, Qwen2.5
     * steps were 0.7-1.4% slower in alternating-step runs, keys alone -0.3..+0.4%; bench/cpu.md
     * session 30): the scores read them first, the values come while the softmax computes */
    for (int t = 1; t < T; t++)
        for (int g = H * t / T / G; g <= (H * (t + 1) / T - 1) / G; g++)
            matmul_next_hint_bytes(t, kv_key_data(e->kv, l, g), (size_t)(kv_len(e->kv, l, g) + 1) * hd * es);
}
