/* kernels/cuda/kernels_cuda.cuh — the launchers of the CUDA kernels (internal to kernels/cuda;
 * the engine calls them, the C world sees model/cuda/cuda_engine.h only).
 *
 * Conventions (as kernels/kernels.h): activations f32 row-major; a token's heads contiguous,
 * head vectors [head_dim] contiguous. The KV cache keeps K and V in the storage type `kv_dt`
 * (CU_F32/F16/BF16: the host cache's kv->kv_dtype, --kv-dtype) in regions of cap+1 slots per
 * (layer, KV head) at slot offsets off[] (eviction/kv_cache.c layout), live lengths len[].
 * `off`, `len`, `cap`, `pos`, `score`, `ring` below are device pointers to the entries of ONE
 * layer (index g = KV head). Every launcher is asynchronous on stream s and returns the
 * launch's cudaError_t. */
#ifndef LLM_KERNELS_CUDA_CUH
#define LLM_KERNELS_CUDA_CUH

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/evict_modes.h" /* EV_* */

/* ---- elementwise.cu ---- */
/* x[i][:] = embedding row tokens[i] of table [vocab][dim] (storage dt), widened to f32. */
cudaError_t launch_embed(const void *table, int dt, const int *tokens, int n, int dim, float *x,
                         cudaStream_t s);
/* out[n][dim] = x / sqrt(mean(x²) + eps) * w (LLaMA RMSNorm, f32; w f32 [dim]). out may alias x. */
cudaError_t launch_rmsnorm(const float *x, const float *w, float *out, int n, int dim, float eps,
                           cudaStream_t s);
/* RoPE in place on x [n][n_heads][head_dim], token i at table row row0 + i (cos/sin tables
 * [rows][head_dim/2] made by kernels/cpu rope_tables, so both backends rotate by the same
 * numbers); rotate_half pairs (d, d + head_dim/2). */
cudaError_t launch_rope(float *x, int n, int n_heads, int head_dim, const float *cos_t,
                        const float *sin_t, int row0, cudaStream_t s);
/* --rope shifted (POLICIES.md §1.7): RoPE in place on x [n][n_heads][head_dim] at ranks, head h
 * of row i at table row base[h / div] + delta + i (base: device [n_heads / div], e.g. the live
 * lengths len[g] of the KV heads with div = G for queries, 1 for keys). */
cudaError_t launch_rope_rank(float *x, int n, int n_heads, int div, int head_dim,
                             const float *cos_t, const float *sin_t, const int *base, int delta,
                             cudaStream_t s);
/* --rope shifted: kr[off[g] + j] = key slot j of KV head g (kc, stored before RoPE) rotated by
 * its rank among the len[g] live slots in position order (rank = #{i : pos[i] < pos[j]},
 * positions unique in a region), for j < len[g]; kr/kc in kv_dt, the same layout. max_len: an
 * upper bound of len[]. As model/forward.c rotated_live_keys. */
cudaError_t launch_rope_live(void *kr, const void *kc, int kv_dt, const int32_t *pos,
                             const size_t *off, const int *len, int n_kv_heads, int head_dim,
                             const float *cos_t, const float *sin_t, int max_len, cudaStream_t s);
/* gate[i] = silu(gate[i]) * up[i], i < n (SwiGLU). */
cudaError_t launch_swiglu(float *gate, const float *up, size_t n, cudaStream_t s);
/* y[i] += x[i] (residual). */
cudaError_t launch_add(float *y, const float *x, size_t n, cudaStream_t s);
/* y[i] = x[i] rounded to storage dt (round to nearest even), i < n. */
cudaError_t launch_cast(const float *x, void *y, int dt, size_t n, cudaStream_t s);
/* x[i] = x[i] rounded to storage dt and back (the value a cache of dtype dt holds; nothing for
 * CU_F32), i < n, in place (kernels/cpu/ops.c round_elems). */
cudaError_t launch_round(float *x, int dt, size_t n, cudaStream_t s);

/* ---- attn_prefill.cu ---- */
/* Causal attention of a prefill chunk of n tokens that follows the live slots of each KV head:
 * q [n] rows of stride q_stride (query heads, post-RoPE, f32); live keys/values of head g:
 * kc/vc + off[g]*head_dim, len[g] slots (storage kv_dt); the chunk's k_new/v_new [n] rows of
 * stride kv_stride (f32). Query row i of head h (KV head h / G) attends to all live slots of
 * its KV head and to chunk tokens 0..i. Tiled (16 query rows × 16 keys), online softmax.
 * out [n] rows of stride out_stride; lse[h * lse_stride + i] = log Σ_j exp(s_ij) with
 * s_ij = scale · q_i·k_j (the row log-sum-exp, for the column-sum pass). head_dim ≤ 256.
 * head_scale (device [n_kv_heads] or NULL): the scale of KV head g's query heads instead of
 * `scale` (a policy's logit scale, buzz_logn: scale · λ(n_keys), POLICIES.md §4.9). */
cudaError_t launch_attn_prefill(const float *q, int q_stride, const void *kc, const void *vc,
                                int kv_dt, const size_t *off, const int *len, const float *k_new,
                                const float *v_new, int kv_stride, int n, int n_heads, int G,
                                int head_dim, float scale, float *out, int out_stride, float *lse,
                                int lse_stride, cudaStream_t s, const float *head_scale = nullptr);
/* Prefill column sums (POLICIES.md §1.5) without the N×N matrix: a second QKᵀ pass that uses
 * the row LSE: colsum[g * cand_stride + j] = Σ_{h ∈ group g} Σ_i exp(s_ij − lse_hi) over the
 * chunk's rows i that see candidate j (candidates: the live slots of g, then the chunk's
 * tokens). Fixed summation order (deterministic, no atomics). n_cand_max: the largest
 * len[g] + n. Arguments as launch_attn_prefill (head_scale: the same as there). */
cudaError_t launch_attn_colsum(const float *q, int q_stride, const void *kc, int kv_dt,
                               const size_t *off, const int *len, const float *k_new,
                               int kv_stride, int n, int n_kv_heads, int G, int head_dim,
                               float scale, const float *lse, int lse_stride, int n_cand_max,
                               float *colsum, int cand_stride, cudaStream_t s,
                               const float *head_scale = nullptr);

/* ---- attn_decode.cu ---- */
/* Decode attention (flash-decoding): the query heads q [n_heads][head_dim] of one token over
 * the len[g] live slots of their KV head, split over the cache length in pieces of split_len
 * slots (n_split pieces: enough for the largest capacity + 1). Pass 1 writes per-piece
 * partials (part_acc [n_heads][n_split][head_dim], part_ml [n_heads][n_split][2]) and, when
 * slog is not NULL, the scaled logits slog[h * slog_stride + j]; pass 2 combines the pieces in
 * fixed order into out [n_heads][head_dim] and lse [n_heads]. head_dim ≤ 1024. head_scale
 * (device [n_kv_heads] or NULL): per-KV-head scale instead of `scale` (launch_attn_prefill). */
cudaError_t launch_attn_decode(const float *q, const void *kc, const void *vc, int kv_dt,
                               const size_t *off, const int *len, int n_heads, int G,
                               int head_dim, float scale, int split_len, int n_split,
                               float *part_acc, float *part_ml, float *slog, int slog_stride,
                               float *out, float *lse, cudaStream_t s,
                               const float *head_scale = nullptr);
/* In place: slog[h][j] = exp(slog[h][j] − lse[h]) for j < len[h / G] (the probabilities
 * p_h(j) of the step, POLICIES.md §1.5). max_len: an upper bound of len[]. */
cudaError_t launch_decode_probs(float *slog, int slog_stride, const float *lse, const int *len,
                                int n_heads, int G, int max_len, cudaStream_t s);
/* score[off[g] + j] += Σ_{h ∈ group g} exp(slog[h][j] − lse[h]) for j < len[g] (per-step
 * probabilities accumulated in fp32 into per-slot scores, H2O / BUZZ). */
cudaError_t launch_score_accum(const float *slog, int slog_stride, const float *lse,
                               const size_t *off, const int *len, int n_kv_heads, int G,
                               int max_len, float *score, cudaStream_t s);

/* ---- select.cu ---- */
/* Writes the new token's k, v ([n_kv_heads][head_dim] f32, converted to kv_dt) at position t
 * into slot slot[g] of each KV head, or, when slot is NULL, appends it (slot len[g], then
 * len[g] += 1); a head with slot[g] < 0 is skipped. pos[off[g] + slot] = t; score (if not
 * NULL) = 0. */
cudaError_t launch_kv_write(void *kc, void *vc, int kv_dt, int32_t *pos, float *score,
                            const size_t *off, int *len, const int *slot, const float *k,
                            const float *v, int n_kv_heads, int head_dim, int t, cudaStream_t s);
/* Device eviction after attention (attend-then-evict, POLICIES.md §1.4, §1.3 in-place replace)
 * for every KV head g with len[g] > cap[g]: the victim is
 *   EV_LOCAL:     slot ring[g]                          (oldest, §2.2)
 *   EV_STREAMING: slot n_sink + ring[g]                 (oldest non-sink, §2.3)
 *   EV_H2O:       argmin of score (or score / (t − pos + 1) when mean) over slots with
 *                 n_sink ≤ pos < recent_from, ties → smaller position (§3.4, §1.6)
 * then the last slot moves into the victim (K, V, pos, score) and len[g] −= 1; the rings advance
 * as in eviction/policy_local.c and policy_streaming.c. */
cudaError_t launch_evict(int mode, void *kc, void *vc, int kv_dt, int32_t *pos, float *score,
                         const size_t *off, int *len, const int *cap, int *ring, int n_kv_heads,
                         int head_dim, int n_sink, int recent_from, int mean, int t,
                         cudaStream_t s);
/* Gathers rows into dst (stable compaction, POLICIES.md §1.3): dst row i (i < n) = source row
 * src[i], where src[i] < n_live is live slot src[i] of the region at kc/vc + region_off*head_dim
 * and src[i] ≥ n_live is chunk token src[i] − n_live of k_new/v_new (f32 rows of stride
 * kv_stride, column offset col). dst: kdst/vdst [n][head_dim] in kv_dt (a scratch that does
 * not overlap the region; the caller copies it back). */
cudaError_t launch_kv_gather(void *kdst, void *vdst, const void *kc, const void *vc, int kv_dt,
                             size_t region_off, const int *src, int n, int n_live,
                             const float *k_new, const float *v_new, int kv_stride, int col,
                             int head_dim, cudaStream_t s);

/* ---- sample.cu ---- */
/* out[0] = argmax of x[0..n) (lowest index on ties; NaNs never win), as model/sampler.c. */
cudaError_t launch_argmax(const float *x, int n, int *out, cudaStream_t s);

#endif
