/* eviction/ — the KV cache and the eviction policies that decide what it keeps.
 *
 * Contract (../shared/docs/DESIGN.md "The KV cache and the eviction contract", POLICIES.md §1):
 * - Capacity is physical. Each (layer l, KV head g) owns a region of cap[l][g] + 1 slots (one
 *   spare for the token being written); that is what is allocated. Attention reads only the
 *   len[l][g] live slots. Per-head and per-layer capacities may differ.
 * - The engine never indexes cache memory by position: it asks for the slot a new token goes
 *   to (kv_decode_slot), writes it (kv_write), attends over kv_keys/kv_values/kv_len, and then
 *   calls kv_post_attn so the policy may evict.
 * - Prefill: the engine computes the chunk's K/V for one layer into a scratch buffer (shared by
 *   all layers, so it is not part of the budget), attends exactly, and hands the chunk to
 *   kv_prefill, which asks the policy which candidates (live slots, then the chunk's tokens)
 *   to keep and gathers them into the region (stable compaction, POLICIES.md §1.3).
 * - Statistics (attention probabilities etc.) are produced only when the policy asks
 *   (policy_ops.stats), so `full` pays nothing.
 * - Scores are fp32; ties break toward the older token (POLICIES.md §1.6).
 *
 * Layout: keys/values are [slot][head_dim] elements of the cache's dtype kv->kv_dtype (DT_F32,
 * DT_F16 or DT_BF16, --kv-dtype), slots of (l, g) contiguous; keys are stored post-RoPE at their
 * original position (--rope absolute, POLICIES.md §1.7). kv_write / kv_prefill convert the
 * engine's f32 rows (round to nearest even); policies read rows as f32 through kv_key_f32,
 * kv_keys_f32 and friends (for an F32 cache those are the cache's own rows, so results do not
 * change). Byte figures (kv_bytes_per_token, kv_bytes_allocated, kv_stats) count the real
 * element size.
 */
#ifndef LLM_EVICTION_H
#define LLM_EVICTION_H

#include "kernels/kernels.h"

#include <stddef.h>
#include <stdint.h>

/* Statistics a policy may request (bit flags in policy_ops.stats). */
enum {
    KV_STAT_DECODE_PROBS  = 1 << 0, /* per-step p_h(j) over live slots (+ the new token) */
    KV_STAT_PREFILL_COLSUM = 1 << 1, /* Σ_i P[h][i][j] over the chunk's query rows */
};

/* A policy parameter (POLICIES.md §16): a flag `--NAME VALUE` and a key of the JSON presets
 * loaded with --policy-config. */
typedef enum { PARAM_INT, PARAM_FLOAT, PARAM_ENUM } param_type;
typedef struct {
    const char *name;     /* flag without the dashes, e.g. "buzz-s"; also the preset key */
    const char *generic;  /* generic alias it answers to ("sink", "window", "stride",
                             "threshold", "obs-window", "pool-kernel", "lsh-bits") or NULL */
    param_type type;
    const char *def;      /* default, as text ("5", "auto", "sum") — for --list-policies */
    const char *choices;  /* PARAM_ENUM: "sum|mean" */
    const char *help;
} policy_param_def;

#define POLICY_MAX_SET 32

/* What the user asked for: the budget and the policy parameters set on the command line or in
 * a preset (as text; a policy reads them with policy_param_int/_float/_enum in init). */
typedef struct {
    double budget;          /* 0 < β ≤ 1: fraction of L_ref; β > 1: absolute tokens */
    int budget_ref_prompt;  /* 1: L_ref = prompt tokens (H2O); 0: prompt + max_new (default) */
    int budget_tokens;      /* > 0: absolute capacity in tokens (--budget-tokens), overrides budget */
    int rope_shifted;       /* --rope shifted (POLICIES.md §1.7) */
    int kv_dtype;           /* K/V storage (--kv-dtype): DT_F32 (0: what a zeroed struct asks
                               for), DT_F16 or DT_BF16; anything else is a kv_init error */
    uint64_t seed;
    int hooks_always;       /* tests: run the policy's hooks and statistics even when nothing can
                               be evicted (no passthrough), so their bookkeeping can be checked */
    int n_set;
    struct { char name[48]; char value[64]; const char *origin; } set[POLICY_MAX_SET];
                            /* origin: the preset file a value came from (NULL: command line) */
} policy_params;

typedef struct kv_cache kv_cache;

/* A prefill chunk of one layer, handed to the policy. Candidates of KV head g are indexed
 * j = 0..n_live-1 (the live slots, in slot order) then n_live..n_live+n_new-1 (the chunk's
 * tokens in position order). */
typedef struct {
    int layer;
    int n_new;             /* tokens in the chunk */
    int pos0;              /* position of the chunk's first token */
    const float *q_new;    /* [n_new][n_heads][head_dim] post-RoPE queries (observation window) */
    const float *k_new;    /* [n_new][n_kv_heads][head_dim] f32 (the engine passes them already
                              rounded to the cache's dtype; kv_prefill converts what it keeps) */
    const float *v_new;    /* [n_new][n_kv_heads][head_dim] f32, likewise */
    const float *colsum;   /* [n_kv_heads][cand_stride] when KV_STAT_PREFILL_COLSUM, else NULL:
                              column sums over the chunk's query rows of the attention
                              probabilities, summed over the G query heads of KV head g,
                              indexed by candidate */
    int cand_stride;       /* row stride of colsum (≥ n_live + n_new for every head) */
    /* --rope shifted only (else NULL): the keys as the attention sees them, rotated by rank —
     * live slots [n_kv_heads][rot_live_stride][head_dim], chunk [n_kv_heads][rot_new_stride]
     * [head_dim]. q_new is rotated the same way. Use kv_cand_key(). */
    const float *k_live_rot, *k_new_rot;
    int rot_live_stride, rot_new_stride;
} kv_prefill_chunk;

typedef struct policy_ops {
    const char *name;       /* --policy NAME */
    const char *paper;      /* source, for --list-policies */
    const char *params;     /* parameters with defaults, for --list-policies */
    const policy_param_def *param_defs; /* terminated by {NULL}; NULL when none */
    unsigned stats;         /* KV_STAT_* this policy needs */
    size_t slot_state_bytes; /* per-slot policy state (kv->state), moved with its slot */
    int reads_rows;         /* 1: hooks read whole regions of cached K/V (kv_keys_f32 /
                               kv_values_f32); a 16-bit cache then gets an f32 scratch of one
                               layer's arena for them (not part of the KV bytes) */
    /* Capacities: fill kv->cap[l*n_kv_heads+g] from params and lengths. Returns 0 or -1+err. */
    int (*init)(kv_cache *kv, const policy_params *p, int n_prompt, int max_new,
                char *err, size_t errlen);
    /* Choose the candidates of (layer, g) to keep after a prefill chunk: write ascending
     * candidate indices into keep and return their count (≤ cap). NULL: keep the most recent
     * cap candidates. */
    int (*on_prefill)(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep);
    /* Decode: the slot the token at position t goes to in (layer, g): kv_len (append) or a
     * victim slot to overwrite (evict-then-attend policies). q: [G][head_dim] the group's
     * post-RoPE queries; k, v: [head_dim] the new token's key (as stored) and value.
     * NULL: append. */
    int (*pre_attn)(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                    const float *v);
    /* Decode, after attention over the live slots: may evict. probs[h*stride + j] for the G
     * query heads h of group g and live slots j < len when KV_STAT_DECODE_PROBS, else NULL. */
    void (*post_attn)(kv_cache *kv, int layer, int g, int t, const float *probs, int stride);
    /* Optional engine hooks for policies that change the attention itself: */
    /* Factor on the 1/sqrt(d) logit scale for an attention call over n_keys keys
     * (buzz_logn, POLICIES.md §4.9). NULL: 1. */
    float (*logit_scale)(const kv_cache *kv, int n_keys);
    /* Decode attention of the G query heads q [G][head_dim] of group g, replacing the exact
     * attention over the live slots (subgen_stream's estimator, §8.3); out [G][head_dim]. */
    void (*attend)(kv_cache *kv, int layer, int g, const float *q, float scale, float *out);
    /* 1: attend is exactly the engine's attention while nothing has left the cache
     * (subgen_stream with an empty sketch), so a run where nothing can be evicted skips it
     * (passthrough). logit_scale never blocks passthrough: the engine applies it either way. */
    int attend_exact_when_fits;
    /* Decode, after every group's post_attn: layer-wise eviction (tova, §10.3). probs[h*stride+j]
     * for all n_heads query heads when KV_STAT_DECODE_PROBS. */
    void (*post_attn_layer)(kv_cache *kv, int layer, int t, const float *probs, int stride);
    void (*free_state)(kv_cache *kv);
} policy_ops;

struct kv_cache {
    int n_layers, n_kv_heads, n_heads, head_dim;
    const policy_ops *ops;
    policy_params params;
    void *pstate;            /* policy-private state */
    int *cap;                /* [n_layers*n_kv_heads] capacity C_{l,g} */
    int *len;                /* [n_layers*n_kv_heads] live slots */
    size_t *off;             /* [n_layers*n_kv_heads] first slot of the region */
    size_t n_slots;          /* Σ (cap + 1) */
    int32_t *pos;            /* [n_slots] original position of each slot */
    dtype_t kv_dtype;        /* element type of k_data/v_data: DT_F32, DT_F16 or DT_BF16 */
    size_t kv_es;            /* its bytes per element (4 or 2) */
    void *k_data, *v_data;   /* [n_slots][head_dim] elements of kv_dtype */
    float *k32, *v32;        /* 16-bit caches of reads_rows policies: [arena_rows][head_dim] f32
                                scratch of kv_keys_f32 / kv_values_f32; else NULL */
    size_t arena_rows;       /* the most slots of one layer (Σ_g cap + 1) */
    float *score;            /* [n_slots] per-slot fp32 score (policies that keep one), or NULL */
    unsigned char *state;    /* [n_slots][ops->slot_state_bytes] or NULL; zeroed on write */
    /* run statistics (mean over (l, g) of live slots, sampled after every token) */
    int64_t evictions;
    double live_sum;         /* Σ over samples of the mean live slots */
    int64_t live_samples;
    double live_peak;        /* max over samples of Σ_{l,g} len */
    int prompt_tokens, max_new;
    size_t sketch_bytes;     /* bytes a policy keeps of K/V-derived data outside the slots
                                (subgen_stream's clusters and samples, §8.3): counted in every
                                KV byte figure (kv_bytes_allocated, kv_stats) */
    int passthrough;         /* every capacity covers prompt + max new and the policy has no
                                attend of its own (or one that is exact while nothing left the
                                cache): nothing can ever be evicted, so no hook runs and no
                                statistic is computed (issue 17: such a run costs what `full`
                                costs, plus a logit_scale where the policy has one) */
};

/* Parameter access for policies (in init). The value set by the user, else def. A value that
 * does not parse or is out of [lo, hi] is an error (-1, message names --NAME). */
int policy_param_int(const policy_params *p, const char *name, int def, int lo, int hi, int *out,
                     char *err, size_t errlen);
int policy_param_float(const policy_params *p, const char *name, double def, double lo, double hi,
                       double *out, char *err, size_t errlen);
/* ENUM: index of the value in choices "a|b|c" (def is an index). */
int policy_param_enum(const policy_params *p, const char *name, const char *choices, int def,
                      int *out, char *err, size_t errlen);
/* Records NAME=VALUE for policy ops: NAME may be the policy's own parameter or a generic alias
 * (resolved here). Errors: the policy has no such parameter; too many. */
int policy_params_set(policy_params *p, const policy_ops *ops, const char *name,
                      const char *value, char *err, size_t errlen);
/* Loads a JSON preset {"policy": "buzz", "budget": 0.4, "buzz-s": 5, ...} (keys: "policy",
 * "budget", "budget-ref", "rope", "seed", or the policy's parameter names, generic aliases
 * included). *ops is set from "policy" when present (else must be given). */
int policy_preset_load(const char *path, const policy_ops **ops, policy_params *p, char *err,
                       size_t errlen);
/* The same on the preset's text already in memory, text[0..len) (no NUL needed). path names
 * the input in errors and is kept in p->set[].origin: it must outlive p. */
int policy_preset_parse(const char *text, size_t len, const char *path, const policy_ops **ops,
                        policy_params *p, char *err, size_t errlen);

/* Looks a policy up by name; NULL when unknown. */
const policy_ops *policy_find(const char *name);
/* NULL-terminated list of all policies (for --list-policies). */
const policy_ops *const *policy_all(void);

/* Sizes and allocates the cache: calls ops->init for the capacities, then allocates the
 * regions (cap + 1 slots each) in params->kv_dtype. Errors: bad budget/parameters (one line),
 * a kv_dtype other than DT_F32/DT_F16/DT_BF16 ("--kv-dtype ..."), allocation failure.
 * The caller fills params (budget > 0 required). */
int kv_init(kv_cache *kv, const policy_ops *ops, const policy_params *params,
            int n_layers, int n_kv_heads, int n_heads, int head_dim,
            int n_prompt, int max_new, char *err, size_t errlen);
void kv_free(kv_cache *kv);

/* Capacity from the budget (POLICIES.md §1.2): budget_tokens if set, else β ≤ 1 →
 * ceil(β·L_ref), β > 1 → β tokens; at least c_min; never more than n_prompt + max_new (nothing
 * beyond that can be used). L_ref = n_prompt (budget_ref_prompt) or n_prompt + max_new. */
int kv_budget_capacity(const policy_params *p, int n_prompt, int max_new, int c_min);

static inline int kv_idx(const kv_cache *kv, int layer, int g) { return layer * kv->n_kv_heads + g; }
static inline int kv_len(const kv_cache *kv, int layer, int g) { return kv->len[kv_idx(kv, layer, g)]; }
/* The raw K/V of (layer, g): cap + 1 rows [head_dim] of kv->kv_dtype (the attention kernels
 * read them as they are). */
static inline void *kv_key_data(const kv_cache *kv, int layer, int g)
{ return (char *)kv->k_data + kv->off[kv_idx(kv, layer, g)] * (size_t)kv->head_dim * kv->kv_es; }
static inline void *kv_value_data(const kv_cache *kv, int layer, int g)
{ return (char *)kv->v_data + kv->off[kv_idx(kv, layer, g)] * (size_t)kv->head_dim * kv->kv_es; }
/* The K/V of (layer, g) as f32 rows [cap + 1][head_dim] when the cache is F32; NULL for a
 * 16-bit cache (use the _f32 readers below). */
static inline float *kv_keys(const kv_cache *kv, int layer, int g)
{ return kv->kv_dtype == DT_F32 ? (float *)kv_key_data(kv, layer, g) : NULL; }
static inline float *kv_values(const kv_cache *kv, int layer, int g)
{ return kv->kv_dtype == DT_F32 ? (float *)kv_value_data(kv, layer, g) : NULL; }
static inline int32_t *kv_positions(const kv_cache *kv, int layer, int g)
{ return kv->pos + kv->off[kv_idx(kv, layer, g)]; }
static inline float *kv_scores(const kv_cache *kv, int layer, int g)
{ return kv->score ? kv->score + kv->off[kv_idx(kv, layer, g)] : NULL; }
static inline unsigned char *kv_slot_state(const kv_cache *kv, int layer, int g, int slot)
{ return kv->state + (kv->off[kv_idx(kv, layer, g)] + (size_t)slot) * kv->ops->slot_state_bytes; }

/* Slot j of (layer, g) as f32 [head_dim]: the cache's own row for an F32 cache, else widened
 * into buf [head_dim] (returned). */
const float *kv_key_f32(const kv_cache *kv, int layer, int g, int j, float *buf);
const float *kv_value_f32(const kv_cache *kv, int layer, int g, int j, float *buf);
/* Slots 0..n-1 of (layer, g) as f32 rows [n][head_dim]: the cache's own rows for an F32 cache,
 * else widened into kv->k32 / kv->v32 at the region's place in its layer's arena (so the
 * regions of one layer can be held at once; a call for another layer reuses the scratch).
 * A 16-bit cache needs ops->reads_rows (else NULL). n ≤ cap + 1. */
const float *kv_keys_f32(const kv_cache *kv, int layer, int g, int n);
const float *kv_values_f32(const kv_cache *kv, int layer, int g, int n);

/* The key of prefill candidate j of KV head g as the attention scored it against c->q_new
 * (post-RoPE at its position; in --rope shifted mode rotated by its rank). [head_dim] f32.
 * For a live slot of a 16-bit cache (not rotated) that is NULL: use kv_cand_key_f32. */
static inline const float *kv_cand_key(const kv_cache *kv, const kv_prefill_chunk *c, int g,
                                       int n_live, int j)
{
    size_t d = (size_t)kv->head_dim;
    if (c->k_live_rot)
        return j < n_live ? c->k_live_rot + ((size_t)g * c->rot_live_stride + j) * d
                          : c->k_new_rot + ((size_t)g * c->rot_new_stride + (j - n_live)) * d;
    if (j < n_live) {
        const float *K = kv_keys(kv, c->layer, g);
        return K ? K + (size_t)j * d : NULL;
    }
    return c->k_new + ((size_t)(j - n_live) * kv->n_kv_heads + g) * d;
}
/* kv_cand_key for any cache dtype: a live slot of a 16-bit cache is widened into buf
 * [head_dim] (returned); otherwise the same pointer as kv_cand_key. */
static inline const float *kv_cand_key_f32(const kv_cache *kv, const kv_prefill_chunk *c, int g,
                                           int n_live, int j, float *buf)
{
    if (!c->k_live_rot && j < n_live) return kv_key_f32(kv, c->layer, g, j, buf);
    return kv_cand_key(kv, c, g, n_live, j);
}

/* Prefill: keep what the policy chooses among live slots + the chunk (see kv_prefill_chunk). */
int kv_prefill(kv_cache *kv, const kv_prefill_chunk *c, char *err, size_t errlen);

/* Decode: returns the slot (0..cap) where the token at position t is written in (layer, g);
 * when it is kv_len, the live length grows by one. */
int kv_decode_slot(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                   const float *v);
/* Writes k, v ([head_dim] f32, converted to the cache's dtype: round to nearest even) and
 * position t into slot of (layer, g). */
void kv_write(kv_cache *kv, int layer, int g, int slot, int t, const float *k, const float *v);
/* Decode, after attention: lets the policy evict. probs as in policy_ops.post_attn. */
void kv_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride);
/* After each token (prefill chunk or decode step): samples the live-slot statistics. */
void kv_sample_stats(kv_cache *kv);

/* Helpers for policies. */
/* Removes slot `victim` of (layer, g) by moving the last live slot into it (O(d)); per-slot
 * state moves with its slot. */
void kv_evict_swap_last(kv_cache *kv, int layer, int g, int victim);
/* Keeps only the ascending slot indices keep[0..n-1] of (layer, g), in that order. */
void kv_compact(kv_cache *kv, int layer, int g, const int *keep, int n);

/* Gives every (layer, KV head) the same capacity (uniform policies' init). */
static inline void kv_set_uniform_capacity(kv_cache *kv, int cap)
{
    for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++) kv->cap[i] = cap;
}

/* Capacity of a policy that protects `sink` first and `recent` newest tokens (scissorhands,
 * l2norm, hashevict, random): the budgeted capacity (kv_budget_capacity), raised to
 * C_min = sink + recent + 1 so one slot is always evictable and no flag combination is an
 * error (POLICIES.md §1.2; the raised capacity shows in the reported peak). Sets it uniformly
 * for every (layer, KV head) and returns it. */
int kv_set_protected_capacity(kv_cache *kv, const policy_params *p, int n_prompt,
                              int max_new, int sink, int recent);

/* The --kv-dtype spelling of a cache dtype: "f32", "f16", "bf16" ("?" for anything else). */
static inline const char *kv_dtype_name(dtype_t dt)
{ return dt == DT_F32 ? "f32" : dt == DT_F16 ? "f16" : dt == DT_BF16 ? "bf16" : "?"; }

/* Bytes of K and V for one token in all layers and heads (kv->kv_es bytes per element). */
size_t kv_bytes_per_token(const kv_cache *kv);
/* What a finished run held, as llm-run and eval report it (README "KV-cache eviction"). */
typedef struct {
    size_t bytes_per_token;     /* K and V of one token in all layers and heads */
    double peak_tokens;         /* live tokens per (layer, KV head), mean over them, at the peak */
    double avg_tokens;          /* ... time average over the samples (prefill, every decode step) */
    double peak_bytes, avg_bytes; /* live slots x bytes_per_token + sketch_bytes */
    size_t sketch_bytes;        /* kv->sketch_bytes (0 but for sketching policies) */
    int full_tokens;            /* what the full cache would hold at the end: n_prompt + decode steps */
    double full_avg_tokens;     /* the full cache's time average over the same samples */
    double full_bytes, full_avg_bytes;
} kv_stats;

/* Fills s for a run of n_prompt prompt tokens and n_decode_steps decode steps. */
void kv_stats_get(const kv_cache *kv, int n_prompt, int n_decode_steps, kv_stats *s);

/* Allocated KV bytes (all regions, real element size, plus kv->sketch_bytes; the reads_rows
 * scratch not counted). */
size_t kv_bytes_allocated(const kv_cache *kv);

#endif
