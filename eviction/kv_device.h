/* eviction/kv_device.h — the parts of the KV cache a device backend (kernels/cuda) needs on the
 * host: sizing the cache BEFORE anything is allocated (--kv-mem-limit, with a budget that fits),
 * and the prefill bookkeeping of kv_prefill (positions, scores, per-slot state, lengths) without
 * touching K/V, whose rows live on the device and are gathered there from the keep-lists.
 * Same contract as eviction.h; CPU-only builds use the sizing part too. */
#ifndef LLM_KV_DEVICE_H
#define LLM_KV_DEVICE_H

#include "eviction/eviction.h"
#include "kernels/cuda/ss_sketch.h"

/* The bytes the KV cache would allocate for this policy and budget: Σ over (layer, KV head) of
 * (cap + 1) slots × head_dim × 2 (K and V) × elem_bytes, where cap comes from ops->init run on a
 * capacity-only cache (nothing K/V-sized is allocated), plus the sketch a policy keeps beside the
 * slots (kv->sketch_bytes, subgen_stream). max_cap (may be NULL): the largest cap.
 * Returns 0, or -1 with the policy's one-line error (bad parameters). */
int kv_plan_bytes(const policy_ops *ops, const policy_params *p, int n_layers, int n_kv_heads,
                  int n_heads, int head_dim, int n_prompt, int max_new, size_t elem_bytes,
                  size_t *bytes, int *max_cap, char *err, size_t errlen);

/* --kv-mem-limit: checks the planned KV bytes against limit_bytes (> 0). Returns 0 when they
 * fit; 1 when they do not, with one line in err: the bytes needed, the limit (`what` names it,
 * e.g. "--kv-mem-limit 2 GB"), and the largest budget in steps of 0.01 that fits (for `full`,
 * which ignores the budget, the budget of a budgeted policy such as streaming), or the
 * capacity in tokens when no fraction fits; -1 on a policy error. */
int kv_check_limit(const policy_ops *ops, const policy_params *p, int n_layers, int n_kv_heads,
                   int n_heads, int head_dim, int n_prompt, int max_new, size_t elem_bytes,
                   double limit_bytes, const char *what, char *err, size_t errlen);

/* kv_prefill without K/V: asks the policy for each KV head's keep-list exactly as kv_prefill
 * does (ops->on_prefill, else the most recent cap candidates) and applies it to positions,
 * scores (+ colsum), per-slot state, lengths and the eviction count. keep: [n_kv_heads]
 * [keep_stride] ints (keep_stride ≥ the largest len + c->n_new) receives the ascending
 * candidate indices, n_keep [n_kv_heads] their counts; the caller moves the K/V rows
 * (candidate j < n_live: live slot j, else chunk token j − n_live). kv->k_data/v_data are not read or
 * written. Policies whose on_prefill reads keys or queries need c->q_new / c->k_new and, with
 * live slots, the cached keys: a device backend must not use this for them (see
 * model/device.c). Errors: a keep-list over capacity. */
int kv_prefill_plan(kv_cache *kv, const kv_prefill_chunk *c, int *keep, int keep_stride,
                    int *n_keep, char *err, size_t errlen);

/* The slot moves a host-side hook made in one region, recovered from the positions before
 * (before[0..n0)) and after (after[0..n1)) it: src[i] = the old slot that held after[i]
 * (positions are unique within a region), so a device copy of the region is brought in line by
 * gathering rows src[0..n1). slot_of: scratch [n_pos], positions must lie in [0, n_pos).
 * Returns 0, or -1 when a position after the hook was not in the region before it (a hook that
 * writes K/V of its own, which a device backend cannot replay). */
int kv_moves_from_positions(const int32_t *before, int n0, const int32_t *after, int n1,
                            int *slot_of, int n_pos, int *src);

/* Decode, host-assisted policies: what the device must do after the host ran kv_decode_slot +
 * kv_write for the token at position t in one region. before[0..n0): positions before the
 * hook; after[0..n1): after it (the new token included). Returns 0 with *slot = the slot to
 * write the new token's K/V to when nothing else moved (an append, or an overwrite of one
 * victim); 1 when other slots moved: src[0..n1) then names, for each slot, candidate j < n0 (old
 * slot j) or j = n0 (the new token) to gather; -1 when a position cannot be explained.
 * slot_of: scratch [n_pos]; positions in [0, n_pos). cand: scratch [n0 + 1]. */
int kv_decode_replay(const int32_t *before, int n0, int t, const int32_t *after, int n1,
                     int *slot_of, int n_pos, int32_t *cand, int *src, int *slot);


/* ---- Decode steps a device runs on its own for a host-assisted policy (model/device.c) ----
 * The prefill-only family (snapkv, pyramidkv, ada_snapkv, ada_pyramidkv, subgen; POLICIES.md
 * §7.6) only appends during decode until a region fills: such steps need no hook on the host.
 *
 * kv_decode_quiet: 1 when, for the next decode step, the policy's hooks would only append in
 * every region (snap family: pre_attn re-compresses at len ≥ cap, post_attn in capped mode at
 * len + 1 ≥ cap; subgen: post_attn at len + 1 > cap), so a device may append on its own; 0 when a
 * hook may act somewhere (the step must run the hooks); -1 for a policy outside the family. */
int kv_decode_quiet(const kv_cache *kv);

/* The host mirror's side of such a step in layer `layer` at position t: every region appends t
 * (position, score 0, per-slot state zeroed, length + 1, as kv_write) and the policy's own
 * bookkeeping of the step is done (the snap family's query-ring positions: the queries are the
 * device's, see kv_device_query_ring). K/V rows are not written (the device holds them). */
void kv_device_append(kv_cache *kv, int layer, int t);

/* The snap family's ring of the last queries, [n_layers][rows][n_heads][head_dim] f32, row =
 * position mod rows (the layout a device keeps its copy in); NULL (and *rows = 0) for a policy
 * without one. */
float *kv_device_query_ring(kv_cache *kv, int *rows);

/* --prefill-only-decode capped of snapkv and pyramidkv (POLICIES.md §7.6) on a device: the
 * parameters of the re-compression a region gets when it reaches its capacity C after a step's
 * append (snap_post_attn: back to target[i] = C' entries, window w, pooling; gqa_max: --ada-gqa
 * max). target: the policy's own [n_layers · n_kv_heads] array. Returns 0 and fills *out (may be
 * NULL) for those; -1 for another policy or mode (ada_*: kv_device_ada_capped). */
typedef struct {
    int w, kernel, pool_avg, gqa_max;
    const int *target;
} kv_snap_capped;
int kv_device_snap_capped(const kv_cache *kv, kv_snap_capped *out);

/* ada_snapkv / ada_pyramidkv in --prefill-only-decode capped (POLICIES.md §6.2, §7.6): a layer
 * with a region at its capacity after a step's append is re-split (snap_recompress_layer). The
 * parameters of layer `layer` for a device doing it (kernels/cuda/ada_recompress.cu): the common
 * ones as kv_snap_capped (target: the policy's [n_layers · n_kv_heads] targets), and the layer's
 * base (prefix budget per head), arena, cap_max, keep_max, the slack R, the --ada-alloc mode
 * (alloc_ref: reference) and the split's constants as snap_ada_allocate computes them
 * (oma = 1 − α, a_share = α·B/H_kv with B = H_kv·base, a_floor = floor(α·base)). Returns 0 and
 * fills *out (may be NULL); -1 for another policy or mode. layer: 0 .. n_layers − 1. */
typedef struct {
    kv_snap_capped c;
    int base, arena, cap_max, keep_max, slack, alloc_ref;
    double oma, a_share, a_floor;
} kv_ada_capped;
int kv_device_ada_capped(const kv_cache *kv, int layer, kv_ada_capped *out);

/* The host mirror's side of such a step in layer `layer`, after kv_device_append: len, cap,
 * target [n_kv_heads] are the layer's values after the device's re-compression (carried back
 * with the step's token). A layer that had a region at its capacity takes them (lengths, the
 * eviction count, capacities, the offsets of the re-partitioned arena, the targets) and its
 * moved[g] (may be NULL) become 0: its rows moved on the device. Returns 0, or -1 when the
 * values do not fit the layer's arena (the mirror is left unchanged). */
int kv_device_ada_recompressed(kv_cache *kv, int layer, const int *len, const int *cap, const int *target,
                               int *moved);

/* subgen in --prefill-only-decode capped (or reserve's capped fallback, POLICIES.md §8.2, §7.6):
 * the target C' a region past its capacity goes back to (sg_post_attn) and the recent slots r
 * kept exactly (clamped below C'); 0, or -1 for another policy or mode. target, recent: may be
 * NULL. */
int subgen_device_capped(const kv_cache *kv, int *target, int *recent);

/* The host mirror's side of such a step (capped snapkv / pyramidkv, capped subgen) in layer
 * `layer`, after kv_device_append: every region the policy re-compresses after the append (snap:
 * len ≥ cap; subgen: len > cap) holds its target entries (lengths and the eviction count by rule;
 * positions and K/V rows are the device's, brought back before the host next reads them).
 * moved (may be NULL): [n_kv_heads], set to 0 for each region re-compressed (its rows moved). */
void kv_device_recompressed(kv_cache *kv, int layer, int *moved);

/* Before a device runs decode steps on its own after the host last ran the policy's hooks or a
 * prefill: the per-slot state the hooks would create lazily at their next call is created now, on
 * the host mirror, so the device can take the mirror's state (scissorhands: the prompt tokens'
 * first history entry; hashevict: the codes of the slots written since). Nothing for other
 * policies. */
void kv_device_prepare_decode(kv_cache *kv);

/* hashevict's projections [n_layers][bits][head_dim] (fp32, the policy's own, policy_hashevict.c)
 * and their bits, for a device that computes its codes; NULL before its init. */
const float *hashevict_device_proj(const kv_cache *kv, int *bits);

/* subgen_stream's sketch arrays (kernels/cuda/ss_sketch.h: the host policy's own, the layout a
 * device keeps its copy in) into *out; -1 for another policy or before its init. */
int subgen_stream_device_sketch(const kv_cache *kv, ss_sketch *out);

/* Zeroes the per-slot policy state of every slot (the state is recomputed from the cached rows
 * at the next hook: l2norm's norms) — after a device moved slots the host did not follow. */
void kv_device_reset_state(kv_cache *kv);

#endif
