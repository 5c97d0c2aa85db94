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
#include "kernels/cuda/ss_sketch.h"     /* ss_sketch: subgen_stream's sketch */

/* ---- elementwise.cu ---- */
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
/* --rope shifted: kr[off[g] + j] (f32) = key slot j of KV head g (kc in kv_dt, stored before
 * RoPE) rotated by its rank among the L = len[g] + n_extra live slots in position order
 * (rank = #{i : pos[i] < pos[j]}, positions unique in a region), for j < L; kr has the cache's
 * layout. max_len: an upper bound of L. As model/forward.c rotated_live_keys (widen, rotate). */
cudaError_t launch_rope_live(float *kr, const void *kc, int kv_dt, const int32_t *pos,
                             const size_t *off, const int *len, int n_extra, int n_kv_heads,
                             int head_dim, const float *cos_t, const float *sin_t, int max_len,
                             cudaStream_t s);
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
 * kc/vc + off[g]*head_dim, len[g] slots (storage k_dt / v_dt: both the cache's type, or f32
 * keys — the rank-rotated scratch of --rope shifted — with 16-bit values); the chunk's
 * k_new/v_new [n] rows of stride kv_stride (f32; with a 16-bit cache, values of the cache's type,
 * as the engine's launch_round leaves them: the tensor-core kernel reads them as that type). Query row i of head h (KV head h / G) attends to
 * all live slots of its KV head and to chunk tokens 0..i. Tiled (16 query rows × 16 keys),
 * online softmax (with a 16-bit cache and head_dim a multiple of 16 up to 128 on tensor cores:
 * attn_prefill_uses_tc). out [n] rows of stride out_stride; lse[h * lse_stride + i] = log Σ_j exp(s_ij)
 * with s_ij = scale · q_i·k_j (the row log-sum-exp, for the column-sum pass). head_dim ≤ 256.
 * head_scale (device [n_kv_heads] or NULL): the scale of KV head g's query heads instead of
 * `scale` (a policy's logit scale, buzz_logn: scale · λ(n_keys), POLICIES.md §4.9). */
cudaError_t launch_attn_prefill(const float *q, int q_stride, const void *kc, int k_dt, const void *vc,
                                int v_dt, const size_t *off, const int *len, const float *k_new,
                                const float *v_new, int kv_stride, int n, int n_heads, int G,
                                int head_dim, float scale, float *out, int out_stride, float *lse,
                                int lse_stride, cudaStream_t s, const float *head_scale = nullptr);
/* 1 when launch_attn_prefill takes the tensor-core kernel for these storage types and head size
 * (k_dt == v_dt, CU_F16 or CU_BF16; head_dim a multiple of 16, 16..128). */
int attn_prefill_uses_tc(int k_dt, int v_dt, int head_dim);
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
/* The attention of one decode step over the live slots of every KV head, in one launch
 * (flash-decoding: grid n_heads × n_split pieces of split_len slots, the last block of each KV
 * head finishing it): for query heads q [n_heads][head_dim] (f32) over the L = len[g] + n_extra
 * slots of their KV head g (n_extra = 1: slot len[g] holds this step's token, written by
 * launch_gemv's append, and len[g] grows at the end), keys kc in k_dt (the cache, or the f32
 * rank-rotated scratch of --rope shifted), values vc in v_dt. Writes out [n_heads][head_dim]
 * and lse [n_heads] (log Σ_j exp(s_j), s_j = scale · q·k_j; L = 0: out 0, lse −inf); when
 * slog is given, the logits slog[h * slog_stride + j], turned into the probabilities
 * p_h(j) = exp(s_j − lse_h) when probs_out; score (may be NULL) += Σ_{h ∈ group} p_h(j) in head
 * order (H2O/BUZZ; with score_set, = instead of +=: BUZZ --buzz-score current); then with evict ≠ EV_NONE, a region over its capacity cap[g] loses its victim
 * (kernels/cuda/evict.cuh: ring[g] for local/streaming, the lowest score outside the n_sink
 * sinks and the n_recent most recent positions for h2o, t = step[1]) by swap-last in kw/vw (the
 * cache, kv_dt), pos and score. head_scale (device [n_kv_heads] or NULL): per-KV-head scale
 * instead of `scale` (buzz_logn). rope_cos/rope_sin (NULL, or --rope shifted): the query is
 * first rotated at table row L − 1 (its rank). counter: [n_kv_heads] ints, zero before the
 * launch and left zero ([n_kv_heads + 1] with EV_TOVA: the layer's arrival counter last).
 * Evict-then-attend (POLICIES.md §1.4, §10.2, §10.4) with EV_L2NORM / EV_RANDOM: when L > cap[g]
 * the victim — among slots j < L − 1 with n_sink ≤ pos < t − n_recent, the largest key norm
 * knorm[j] (l2norm) or the smallest u = U(seed; "RNDDEC", layer, g, t, pos) (random, the
 * counter RNG of eviction/policy_common.c), ties → smaller position — is left out of the
 * attention (each piece leaves out its own best candidate and keeps it aside in ev_part
 * [n_heads][n_split]; the finishing block puts back all but the winner's) and then takes the new
 * token (swap-last); knorm[L − 1] = ‖k_new‖₂ as stored (double sum, as policy_l2norm.c).
 * EV_H2O_EF (h2o --h2o-order evict-first, eviction/policy_h2o.c pre_attn): the same with the
 * candidates' key score[j] (score[j] / (t − pos) when mean: the queries up to t − 1), the
 * smallest evicted; score (required) then gets the step's probabilities of the C slots attended,
 * and the victim's slot the new token's score (0 from the append + its probability).
 * EV_SH (scissorhands, eviction/policy_scissorhands.c): the key is the slot's importance
 * ones / max(1, min(n_push, sh_hist)) from sstate (the least important evicted); after the
 * attention every live slot (the new one's state zeroed first, when n_extra) pushes the indicator
 * [Σ_h p_h(j) / G ≥ 1 / n] (n: the live slots after the step) into its ring, and the new
 * token's state moves into the victim's slot. The prompt tokens' first entry is the host's
 * (kv_device_prepare_decode) before the first device step.
 * EV_HASH (hashevict, eviction/policy_hashevict.c): the key is the slot's SimHash code's
 * Hamming distance d to the step's probe codes (the G queries, or the new key with he_probe),
 * summed, the largest evicted; codes are he_R · x ≥ 0 per bit, summed in fp32 in order; the new
 * key's code (as stored) goes into its state (sstate, EV_HASH_WORDS per slot), which moves into
 * the victim's slot. With mean (--hash-accum mean) every rule evaluation (a step with L > cap)
 * adds d to each of the L − 1 members' sums acc and counts it in their ages (protected slots
 * too), and the victim is the candidate with the largest acc / age after that, compared exactly
 * in integers (policy_hashevict.c rule_victim), ties → smaller position; the prompt's sums and
 * ages are the host's (kv_device_prepare_decode) before the first device step.
 * EV_TOVA (§10.3): the layer's last finishing group averages the probabilities (in slog) of
 * all n_heads heads per slot and evicts the argmin over the L slots (ties → smaller position)
 * from every KV head (same positions in every head). q_ring (NULL, or the snap family's query ring of this layer,
 * [q_ring_rows][n_heads][head_dim]): the query as given is copied to row step[1] mod q_ring_rows
 * (eviction/kv_device.h kv_device_query_ring). head_dim ≤ 1024, split_len ≤ 1024, G ≤ 32,
 * n_split pieces cover the largest capacity + 1. */
struct attn_step_args {
    const float *q;
    const void *kc, *vc;
    int k_dt, v_dt;
    const size_t *off;
    int *len;
    const int *cap;
    int *ring;
    int n_extra, n_heads, G, head_dim;
    float scale;
    const float *head_scale;
    int split_len, n_split;
    float *part_acc, *part_ml; /* [n_heads][n_split][head_dim], [n_heads][n_split][2] */
    float *slog;
    int slog_stride, probs_out;
    float *score;
    int evict, n_sink, n_recent, mean; /* mean: h2o --h2o-score mean; EV_HASH: --hash-accum mean */
    const int *step;
    void *kw, *vw;
    int kv_dt;
    int32_t *pos;
    const float *rope_cos, *rope_sin;
    float *out, *lse;
    int *counter;
    float *q_ring;
    int q_ring_rows;
    float *knorm;             /* EV_L2NORM: per-slot key norms (the cache's layout); EV_SH: the
                                 scores, only moved with their slots */
    void *ev_part;            /* EV_L2NORM / EV_RANDOM / EV_H2O_EF: [n_heads][n_split] ev_cand */
    int layer;                /* EV_RANDOM: the layer (RNG key) */
    unsigned long long seed;  /* EV_RANDOM: --seed */
    int score_set;            /* 1: score = Σ_{h ∈ group} p_h(j) (buzz --buzz-score current), not += */
    unsigned long long *sstate; /* EV_SH: [slots][EV_SH_WORDS] scissorhands' per-slot history */
    int sh_hist;              /* EV_SH: --sh-hist (1..EV_SH_MAX_HIST) */
    const float *he_R;        /* EV_HASH: this layer's projection [he_bits][head_dim] */
    int he_bits, he_probe;    /* EV_HASH: --hash-bits (1..64); 1: --hash-probe key */
};
/* one piece's best eviction candidate (the evict-then-attend modes): key (lower is evicted
 * first; EV_HASH with mean: the running sum, the largest mean v / w first), the logit left out,
 * the slot (-1: none), w (EV_HASH with mean: the age, the mean's denominator) */
struct ev_cand {
    unsigned long long v;
    float logit;
    int j;
    unsigned w;
};
/* l2 norms of the live keys of n_kv_heads regions (off, len; the cache kc in kv_dt) into
 * knorm[off + j]: common.cuh cu_key_norm (eviction/policy_l2norm.c's value) */
cudaError_t launch_key_norms(const void *kc, int kv_dt, const size_t *off, const int *len, float *knorm,
                             int n_kv_heads, int head_dim, cudaStream_t s);
cudaError_t launch_attn_step(const attn_step_args *a, cudaStream_t s);

/* ---- gemv.cu ---- */
/* A weight matrix on the device: [rows][cols] of storage type dt (CU_*; block formats: rows of
 * cols / block blocks). */
struct cu_mat {
    const void *w;
    int dt, rows, cols;
};
enum { GV_STORE = 0, GV_ADD = 1, GV_SWIGLU = 2, GV_QKV = 3 };
/* the attention input epilogue (GV_QKV) */
struct gv_qkv {
    const float *bias[3];         /* q, k, v biases (f32) or NULL */
    const float *cos_t, *sin_t;   /* RoPE tables [rows][head_dim/2], NULL: none (--rope shifted) */
    const int *step;              /* device: step[1] = the position (table row, stored position) */
    int head_dim, kv_dt;          /* k and v rounded to kv_dt */
    void *kc, *vc;                /* non-NULL: k, v appended at slot len[g] of KV head g (off) */
    int32_t *pos;                 /* with the position, and score 0 (score may be NULL) */
    float *score;
    const size_t *off;
    const int *len;
};
/* One token through m[0..nm) (same cols), input x [cols] (f32), RMSNorm'ed first when norm_w
 * (f32 [cols], eps): per epi
 *   GV_STORE:  y[0][r] = m0·x (+ bias[r])          GV_ADD: y[0][r] += m0·x (+ bias[r])
 *   GV_SWIGLU: y[0][r] = silu(m0·x) · (m1·x)
 *   GV_QKV:    y[i] = m_i·x + qkv.bias[i] for q, k, v (i = 0, 1, 2); q and k rotated by RoPE at
 *              step[1] (rotate_half pairs); k and v rounded to kv_dt; appended when qkv.kc.
 * Weights in any storage type, dequantized in registers; f32 activations and accumulation.
 * max_blocks: a grid cap (≤ 0: one block per 8 rows). gemv_prepare(the widest cols) once before
 * (shared memory above 48 KiB). */
struct gv_args {
    cu_mat m[3];
    int nm, epi;
    const float *x, *norm_w;
    float eps;
    float *y[3];
    const float *bias;
    gv_qkv qkv;
};
cudaError_t gemv_prepare(int max_cols);
cudaError_t launch_gemv(const gv_args *a, int max_blocks, cudaStream_t s);

/* ---- dequant.cu ---- */
/* x[i][:] = embedding row tokens[i] (device ids) of table [vocab][dim] (any storage type) as f32. */
cudaError_t launch_embed(const void *table, int dt, const int *tokens, int n, int dim, float *x,
                         cudaStream_t s);
/* out[i][:] = row r0 + i of w [*][cols] (dtype dt) as out_dt (CU_F32/F16/BF16), i < nr. */
cudaError_t launch_dequant_rows(const void *w, int dt, int cols, int r0, int nr, void *out, int out_dt,
                                cudaStream_t s);
/* hi[i] = x[i] rounded to dt (CU_F16/BF16), lo[i] = (x[i] − hi[i]) rounded to dt, i < n. */
cudaError_t launch_split_hilo(const float *x, size_t n, int dt, void *hi, void *lo, cudaStream_t s);
/* y[r][i] += bias[i], r < n, i < dim. */
cudaError_t launch_add_bias(float *y, const float *bias, int n, int dim, cudaStream_t s);

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
/* --rope shifted (POLICIES.md §1.7) with an evict-then-attend policy (EV_L2NORM, EV_RANDOM,
 * EV_H2O_EF, EV_SH, EV_HASH): the decode step's eviction BEFORE the rank rotation, in place of
 * launch_rope_live (the victim changes the ranks of the keys older than it, so it must be gone
 * before they are rotated). For every KV head g, with L = len[g] + 1 slots (slot L − 1 holds this step's token,
 * appended at position t = step[1] by launch_gemv's GV_QKV) and C = cap[g]:
 *   - EV_L2NORM: score[off + L − 1] = ‖k_new‖₂ as stored (cu_key_norm, policy_l2norm.c); EV_SH:
 *     the new slot's history (sstate, EV_SH_WORDS words per slot) emptied; EV_HASH: the new
 *     key's code (he_R · k ≥ 0 per bit, fp32 in order, as attn_decode.cu) as its state
 *     (EV_HASH_WORDS per slot; sum 0, age 0), and the probe codes: the G queries q of the
 *     group ([n_kv_heads · G][head_dim] as given, unrotated), or the new key (he_probe);
 *   - when L > C, the victim among slots j < L − 1 with n_sink ≤ pos < t − n_recent: the largest
 *     key norm score[j] (l2norm), the smallest u = U(seed; "RNDDEC", layer, g, t, pos) (random,
 *     policy_random.c), the smallest score[j] (h2o evict-first; score[j] / (t − pos) when
 *     mean), the least importance ones / max(1, min(n_push, sh_hist)) of the slot's history
 *     (scissorhands, policy_scissorhands.c) or the largest summed Hamming distance d of the
 *     slot's code to the probe codes (hashevict; with mean the largest (acc + d) / (age + 1),
 *     exact, after which every member's acc += d and age += 1, policy_hashevict.c rule_victim),
 *     ties → smaller position; no candidate: the oldest slot before L − 1 — the same rule
 *     as attn_decode.cu's evict-then-attend — takes the new token by swap-last (K, V in the
 *     cache kc/vc of kv_dt, pos, score, the per-slot state) and len[g] = L − 1; else
 *     len[g] = L;
 *   - then kr[off + j] (f32) = key slot j rotated by its rank among the len[g] live slots in
 *     position order (as launch_rope_live; tables [rows][head_dim/2], rows > the capacity).
 * The attention then runs over len[g] slots with n_extra 0 and no eviction (score += the step's
 * probabilities there: h2o's new token gets 0 + its probability in the victim's slot, as
 * policy_h2o.c; scissorhands: its mode kept, every live slot pushes its indicator there and the
 * new slot's history is not emptied again). One block per KV head (grid n_kv_heads, 128
 * threads). head_dim even. Errors: cudaErrorInvalidValue for another mode or a missing array. */
struct ete_shift_args {
    void *kc, *vc;
    int kv_dt, head_dim, n_kv_heads;
    float *kr;
    int32_t *pos;
    float *score;                 /* EV_L2NORM: the key norms; EV_H2O_EF: the h2o scores (both
                                     required); else NULL or a per-slot value moved with its slot
                                     (scissorhands' prefill scores) */
    const size_t *off;
    int *len;
    const int *cap;
    const int *step;              /* device: step[1] = t */
    int evict, n_sink, n_recent, mean, layer;
    unsigned long long seed;
    const float *cos_t, *sin_t;
    unsigned long long *sstate;   /* EV_SH / EV_HASH: [slots][EV_SH_WORDS / EV_HASH_WORDS] state */
    int sh_hist;                  /* EV_SH: --sh-hist (1..EV_SH_MAX_HIST) */
    const float *q;               /* EV_HASH: the queries [n_kv_heads · G][head_dim] (f32) */
    int G;                        /* EV_HASH: query heads per KV head (≤ EV_HASH_MAX_G) */
    const float *he_R;            /* EV_HASH: this layer's projection [he_bits][head_dim] */
    int he_bits, he_probe;        /* EV_HASH: --hash-bits (1..64); 1: --hash-probe key */
};
cudaError_t launch_ete_shifted(const ete_shift_args *a, cudaStream_t s);
/* Gathers rows into dst (stable compaction, POLICIES.md §1.3): dst row i (i < n) = source row
 * src[i], where src[i] < n_live is live slot src[i] of the region at kc/vc + region_off*head_dim
 * and src[i] ≥ n_live is chunk token src[i] − n_live of k_new/v_new (f32 rows of stride
 * kv_stride, column offset col). dst: kdst/vdst [n][head_dim] in kv_dt (a scratch that does
 * not overlap the region; the caller copies it back). */
cudaError_t launch_kv_gather(void *kdst, void *vdst, const void *kc, const void *vc, int kv_dt,
                             size_t region_off, const int *src, int n, int n_live,
                             const float *k_new, const float *v_new, int kv_stride, int col,
                             int head_dim, cudaStream_t s);

/* ---- ss_insert.cu, ss_attend.cu: subgen_stream's decode step (POLICIES.md §8.3) ----
 * The window is the cache (regions of capacity r), the sketch sk the device copy of the host
 * policy's arrays (kernels/cuda/ss_sketch.h, index layer · n_kv_heads + g); the GEMV kernel has
 * written the new token at slot len[g] (with its position).
 * launch_ss_insert (grid n_kv_heads, 128 threads): ss_pre_attn + sketch_insert of
 * eviction/policy_subgen_stream.c bit for bit — while len[g] < cap[g] the token is appended
 * (len[g] + 1); else the oldest window slot (smallest position, ties → lower slot) goes into the
 * sketch (nearest representative in double ℓ2, within δ or at m_max: joins it, else a new
 * cluster; the t cluster and s value-norm reservoirs drawn with the counter RNG of §1.6 in the
 * CPU's double arithmetic; μ += ‖v‖²) and the new token (slot len[g]) takes its slot (K, V,
 * position, score when non-NULL), len[g] unchanged. Then, every step, the region's estimator
 * weights in f32 for the attention: cw[i] = n_i / t, mwt[j] = μ / (s · w2_j) (0 for an empty or
 * zero-norm sample). Doubles only here (the CPU's draws and cluster choice need its rounding).
 * launch_ss_attend (grid n_heads, 128 threads): out [n_heads][head_dim] = ss_attend's estimator
 * for query head h of group g = h / G over the len[g] window slots, the m · t cluster samples
 * and (once the sketch holds a token) the s value-norm samples, in f32 (logits as the CPU's
 * dotf, e^{l − m*} by expf; the CPU sums in double: within float rounding); an empty sketch is
 * softmax attention over the window. scratch: f32 [n_heads][scratch_stride ≥ cap + m_max · t +
 * s]. head_dim ≤ 256. */
struct ss_step_args {
    void *kc, *vc;
    int kv_dt, head_dim, n_kv_heads, layer;
    int32_t *pos;
    float *score;                 /* NULL or a per-slot value moved with its slot */
    const size_t *off;            /* this layer's entries */
    int *len;
    const int *cap;
    unsigned long long seed;      /* --seed: the counter RNG's key */
    ss_sketch sk;                 /* device arrays */
    float *cw, *mwt;              /* [n][m_max], [n][s]: the f32 estimator weights */
    /* launch_ss_attend */
    const float *q;               /* [n_heads][head_dim] */
    float *out;                   /* [n_heads][head_dim] */
    int G;
    float scale;
    float *scratch;
    size_t scratch_stride;
};
cudaError_t launch_ss_insert(const ss_step_args *a, cudaStream_t s);
cudaError_t launch_ss_attend(const ss_step_args *a, cudaStream_t s);

/* ---- snap_recompress.cu ---- */
/* The capped decode re-compression of snapkv / pyramidkv (POLICIES.md §7.6, selection §5.3), one
 * layer, after the step's attention appended the new token (position t = step[1]):
 * launch_snap_recompress (grid n_kv_heads, 128 threads) does nothing in a region with
 * len[g] < cap[g]; one that reached its capacity is re-compressed to target[g] entries as
 * eviction/snap_score.c snap_select_head with the window ending at t + 1: the observation scores
 * of the ring's queries (rows t + 1 − w .. t, the group's G query heads, [q_ring_rows][n_heads]
 * [head_dim] f32, row = position mod q_ring_rows) against the region's keys (causal rows, fp32 in
 * the CPU's order; GQA mean, or max with gqa_max), pooled over the prefix (max, or the
 * zero-padded mean with pool_avg; odd kernel), the top-(target − window) of it (ties → the
 * older token) and the window are kept: K, V (kv_dt), positions and score (NULL: none) compacted
 * in place in position order, len[g] = their count. Slot positions must ascend in each region (the
 * family's invariant). scratch: f32 [n_kv_heads][4 · stride], map: int [n_kv_heads][stride],
 * stride ≥ the largest cap + 1. Errors: cudaErrorInvalidValue for a missing array, w < 1,
 * q_ring_rows < w or another kv_dt. */
struct snap_rc_args {
    void *kc, *vc;
    int kv_dt, head_dim, n_kv_heads, n_heads, G;
    int32_t *pos;
    float *score;                 /* NULL or a per-slot value moved with its slot */
    const size_t *off;            /* this layer's entries */
    int *len;
    const int *cap, *target;
    const int *step;              /* [0] token, [1] position t */
    const float *q_ring;          /* this layer's ring */
    int q_ring_rows;
    int w, kernel, pool_avg, gqa_max; /* observation window, --snap-kernel, --snap-pool avg, --ada-gqa max */
    float scale;                  /* 1 / sqrt(head_dim) */
    float *scratch;
    int *map;
    size_t stride;
};
cudaError_t launch_snap_recompress(const snap_rc_args *a, cudaStream_t s);

/* ---- ada_recompress.cu ---- */
/* The capped decode re-compression of ada_snapkv / ada_pyramidkv (POLICIES.md §6.2, §7.6), one
 * layer, after the step's attention appended position t = step[1]: launch_ada_recompress (one
 * block of 128 threads) does nothing unless some region of the layer has len[g] ≥ cap[g]; then
 * the whole layer as eviction/snap_alloc.c snap_recompress_layer with the window ending at t + 1:
 * every head's observation scores and pooling (as launch_snap_recompress), the Ada-KV split of
 * H_kv·base over the heads when some head's prefix exceeds base (the global top-B, ties score
 * desc, head asc, position asc; budgets exact — oma = 1 − α, a_share = α·B/H_kv — or reference
 * — a_floor = floor(α·base) —, clamped to the prefix, then to keep_max − w; no split: base),
 * head 0 clamped to the arena, per head the top-B_g + the window compacted in place, targets
 * B_g + w, capacities B_g + w + slack with the arena's spare slots to heads 0, 1, … up to
 * cap_max, and the arena re-partitioned (off, cap rewritten; rows, positions, scores moved in
 * snap_relayout's order). Always: rep_len/rep_cap/rep_target[g] = the layer's final len, cap,
 * target (for the step's copy back); rep_cap[g] = 0 when the capacities would exceed the arena
 * (--ada-alloc reference's rounding can give Σ B_g > B): the layer is then left unpartitioned.
 * off/len/cap/target/rep_*: this layer's entries. scratch:
 * f32 [n_kv_heads][4 · stride], map: int [n_kv_heads][stride], stride ≥ the arena's slots.
 * Errors: cudaErrorInvalidValue for a missing array, n_kv_heads > AR_MAX_HEADS, w < 1,
 * q_ring_rows < w or another kv_dt. */
#define AR_MAX_HEADS 128
struct ada_rc_args {
    void *kc, *vc;
    int kv_dt, head_dim, n_kv_heads, n_heads, G;
    int32_t *pos;
    float *score;
    size_t *off;
    int *len, *cap, *target;
    const int *step;
    const float *q_ring;
    int q_ring_rows;
    int w, kernel, pool_avg, gqa_max;
    float scale;
    int base, arena, cap_max, keep_max, slack, alloc_ref; /* the layer's (eviction/snap_internal.h) */
    double oma, a_share, a_floor;
    float *scratch;
    int *map;
    size_t stride;
    int *rep_len, *rep_cap, *rep_target;
};
cudaError_t launch_ada_recompress(const ada_rc_args *a, cudaStream_t s);

/* ---- subgen_recompress.cu ---- */
/* subgen's decode re-compression (POLICIES.md §8.2, §7.6), one layer, after the step's attention
 * appended the new token: launch_subgen_recompress (grid n_kv_heads, 128 threads) does nothing
 * in a region with len[g] ≤ cap[g]; one past its capacity keeps its `recent` last slots and
 * target − recent greedy k-center representatives of the others (eviction/policy_subgen.c
 * subgen_select: the first the oldest slot, then the farthest from the centers so far in ℓ2²
 * summed in double as evict_dist2, ties → the lower slot), K, V (kv_dt), positions and score
 * (NULL: none) compacted in place in position order, len[g] = target. Slot positions must ascend
 * in each region. dist: f64 [n_kv_heads][stride], map: int [n_kv_heads][stride], stride ≥ the
 * largest cap + 1. Errors: cudaErrorInvalidValue for a missing array, target < 1, recent outside
 * [0, target) or another kv_dt. */
struct subgen_rc_args {
    void *kc, *vc;
    int kv_dt, head_dim, n_kv_heads;
    int32_t *pos;
    float *score;                 /* NULL or a per-slot value moved with its slot */
    const size_t *off;            /* this layer's entries */
    int *len;
    const int *cap;
    int target, recent;           /* C', r (policy_subgen.c recent_for) */
    double *dist;
    int *map;
    size_t stride;
};
cudaError_t launch_subgen_recompress(const subgen_rc_args *a, cudaStream_t s);

/* ---- sample.cu ---- */
/* out[0] = argmax of x[0..n) (lowest index on ties; NaNs never win), as model/sampler.c. */
cudaError_t launch_argmax(const float *x, int n, int *out, cudaStream_t s);

#endif
