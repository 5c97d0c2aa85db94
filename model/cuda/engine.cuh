/* model/cuda/engine.cuh — the device engine's state, shared by its files (internal to
 * model/cuda): engine_init.cu (set-up, uploads, teardown), engine_linear.cu (the projections:
 * GEMV kernels for one token, cuBLAS GEMMs for a chunk), engine_prefill.cu, engine_decode.cu
 * (one step, captured once as a CUDA graph and replayed), engine_mirror.cu (keeping the device
 * cache in line with the host kv_cache mirror for the policies whose selection runs on the
 * host), engine_policy.cu (the device state of the policies' device decode steps). */
#ifndef LLM_CUDA_ENGINE_CUH
#define LLM_CUDA_ENGINE_CUH

#include "kernels/cuda/kernels_cuda.cuh"

extern "C" {
#include "eviction/kv_device.h"
#include "model/cuda/cuda_engine.h"
#include "kernels/kernels.h"
}

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct dweight {
    void *data; /* device, [rows][cols] in dt (any storage type: block formats stay quantized) */
    int dt, rows, cols;
};
static inline cu_mat cu_of(const dweight &w) { return cu_mat{w.data, w.dt, w.rows, w.cols}; }

struct dlayer {
    float *attn_norm, *ffn_norm;  /* f32 [dim] */
    float *bq, *bk, *bv, *bo;     /* f32 biases (qwen2 q/k/v, llama attention_bias q/k/v/o) or NULL */
    dweight wq, wk, wv, wo, gate, up, down;
};

struct cuda_engine {
    const model_weights *w;
    kv_cache *kv;
    device_policy dp;
    int max_chunk, sync_each;
    int n_sm, gemv_blocks; /* multiprocessors; the GEMV grid cap (persistent blocks) */
    int mirror_stale; /* decode steps ran with the positions/scores on the device only
                         (DEV_POLICY_DEVICE, DEV_POLICY_ROUNDS): a prefill copies them back first */
    cudaStream_t st;
    cublasHandle_t blas;
    int blas_ok, stream_ok;
    size_t dev_bytes;
    void **dev_allocs, **host_allocs;
    int n_dev, n_host, cap_dev, cap_host;
    /* weights */
    dlayer *layers;
    dweight embed, lm_head;
    float *final_norm;
    /* KV cache (device), kc/vc in kv_dt */
    int kv_dt;
    size_t kv_es;
    void *kc, *vc;
    int32_t *pos;
    float *score; /* device policies that score (h2o) */
    size_t *off;
    int *len, *cap, *ring;
    int max_cap;
    /* RoPE tables [n_rope][head_dim/2] */
    float *rope_cos, *rope_sin;
    int n_rope;
    /* activations and scratch (device) */
    float *x, *xb, *q, *k, *v, *att, *hb, *hb2, *lse, *logits;
    void *cast;       /* prefill GEMM input as hi + lo 16-bit halves: 2 × [rows][widest] */
    size_t cast_elems;
    void *wtile;      /* prefill: block-format weights dequantized to f16, tile_rows rows */
    int tile_rows;
    int logit_rows;
    /* decode step parameters: step_d [2 + n_layers·n_kv_heads] words = token, position, then the
     * logit scales of every (layer, KV head) (buzz_logn); h_step the pinned source a graph's
     * first node copies from */
    int *step_d, *h_step;
    int *counter_d;   /* [n_kv_heads] arrival counters of the attention step kernel */
    int *h_len;       /* pinned [n_layers·n_kv_heads]: the device's lengths, read back */
    float *h_logits;  /* pinned [vocab]: a graph step's logits row */
    cudaGraphExec_t graph[2]; /* the decode step without / with the logits row copied back */
    int use_graphs;
    float *slog, *part_acc, *part_ml, *colsum;
    int slog_stride, split_len, n_split, cand_stride;
    int *tok_d, *src_d, *slot_d, *next_d;
    void *tmpk, *tmpv; /* [max(cap+1, chunk)][head_dim] gather scratch, kv_dt */
    /* host (pinned) */
    int *h_tok, *h_next, *h_slots, *h_keep, *h_nkeep, *h_nlive, *h_src;
    int32_t *h_cand; /* [max_cap + 2] candidate positions of a decode replay */
    float *h_colsum, *h_probs, *h_qkv;
    /* host-assisted policies: the chunk's q/k/v for the CPU hooks, positions before a hook */
    float *h_pq, *h_pk, *h_pv;  /* [max_chunk][qdim], [max_chunk][kvdim] x2 */
    int32_t *h_pos_before;      /* [n_kv_heads][cand_stride] */
    int *slot_of;               /* [n_rope] position → slot map */
    /* --rope shifted: kr = the keys rotated by rank (the cache's layout, f32), krn = the
     * chunk's keys rotated by rank [max_chunk][kvdim]; the RoPE tables have n_rope_rows ≥ the
     * largest rank + 1 rows. Host-assisted prefill: h_krl [n_kv_heads][max_cap + 1][head_dim],
     * h_krn [n_kv_heads][max_chunk][head_dim] f32. */
    float *kr; /* f32 */
    float *krn;
    int n_rope_rows;
    float *h_krl, *h_krn;
    /* policies with a logit scale: h_hscale [n_layers][n_kv_heads] (pinned, h_step + 2),
     * hscale_d (device, step_d + 2) */
    float *h_hscale, *hscale_d;
    /* re-laying out policies (dp.relayout): the offsets of a layer's regions before a host
     * hook [n_kv_heads]; relayout_pending: ce_host_prefill saw the layout change */
    size_t *h_off_before;
    int relayout_pending;
    size_t tmp_rows; /* rows of tmpk/tmpv */
    float *h_att;    /* dp.host_attend: [n_heads * head_dim] the host attention's output */
    /* dp.dev_decode (host-assisted policies with device decode steps): host_step = this step runs
     * the host hooks; kv_fresh [n_layers·n_kv_heads] = the leading rows of each region whose K/V
     * the host mirror holds (device steps append or move rows it does not see); rows_stale: some
     * region's rows or the query ring are behind the device (ce_refresh_mirror brings them back
     * before the host next reads them). qring: the device copy of the snap family's query ring
     * (kv_device_query_ring, h_qring its host original, qring_rows rows per layer). */
    int host_step, rows_stale;
    int *kv_fresh;
    float *qring, *h_qring;
    int qring_rows;
    void *ev_part; /* evict-then-attend (EV_IS_ETE): [n_heads][n_split] ev_cand, the pieces' candidates */
    /* EV_SH / EV_HASH device steps: the per-slot policy state ([n_slots][sstate_words], the host
     * mirror's kv->state bytes: scissorhands' histories, hashevict's codes and --hash-accum
     * mean sums and ages); sstate_dirty: the mirror's are newer (a prefill ran), uploaded before
     * the next device step (kv_device_prepare_decode first); ce_refresh_mirror takes them back.
     * he_R: hashevict's projections [n_layers][bits][head_dim] */
    unsigned long long *sstate;
    int sstate_dirty, sstate_words;
    float *he_R;
    /* EV_SS device steps (subgen_stream, §8.3): ss_h the host policy's sketch arrays
     * (kernels/cuda/ss_sketch.h), ss_d the device copy (the same layout); ss_dirty: the host's are
     * newer (a prefill or a host step ran), uploaded before the next device step; ce_refresh_mirror
     * takes them back. ss_cw [n][m_max], ss_mwt [n][s]: the f32 estimator weights;
     * ss_scratch [n_heads][ss_stride] f32: the attention's logits and weights */
    ss_sketch ss_h, ss_d;
    int ss_dirty;
    float *ss_cw, *ss_mwt, *ss_scratch;
    size_t ss_stride;
    /* EV_SNAP device steps (capped snapkv / pyramidkv, §7.6): the policy's re-compression
     * parameters (snap.target the host's), snap_target_d [n_layers · n_kv_heads] its targets on
     * the device; EV_SUBGEN (capped subgen, §8.2): sg_target, sg_recent. rc_scratch
     * [n_kv_heads][4 · (max_cap + 1)] f32 (EV_SNAP; EV_SUBGEN: [n_kv_heads][max_cap + 1] f64 in
     * the same bytes) and rc_map int [n_kv_heads][max_cap + 1]: the re-compression kernels'
     * scratch */
    kv_snap_capped snap;
    /* EV_ADA device steps (capped ada_snapkv / ada_pyramidkv, §6.2): each layer's parameters
     * [n_layers] (targets in snap_target_d, scratch as EV_SNAP's, sized for a layer's arena);
     * next_words: the words of next_d / h_next, the step's copy back (1: the token; EV_ADA: then
     * the lengths, capacities and targets of every (layer, KV head), [3][n_layers · n_kv_heads]) */
    kv_ada_capped *ada;
    int next_words, ada_dirty; /* ada_dirty: a prefill set the host's targets, uploaded before the next device step */
    int *snap_target_d, *rc_map;
    int sg_target, sg_recent;
    float *rc_scratch;
};

#define LAUNCH(expr)                                                                           \
    do {                                                                                       \
        CUDA_TRY(expr);                                                                        \
        if (ce->sync_each) CUDA_TRY(cudaStreamSynchronize(ce->st));                            \
    } while (0)

/* engine_linear.cu: y[n][w.rows] = x[n][w.cols] · wᵀ (+ bias; add: y += instead of y =): one
 * row through the GEMV kernel, more through cuBLAS (see there). */
int ce_linear(cuda_engine *ce, float *y, const float *x, const dweight *w, int n, const float *bias,
              int add, char *err, size_t errlen);
/* engine_init.cu: ce_setup; ce_dalloc / ce_halloc a recorded device / pinned allocation (freed
 * by cuda_engine_free), DALLOC / HALLOC those in a function returning -1 with err set */
int ce_setup(cuda_engine *ce, char *err, size_t errlen);
int ce_dalloc(cuda_engine *ce, void **p, size_t bytes, char *err, size_t errlen);
int ce_halloc(cuda_engine *ce, void **p, size_t bytes, char *err, size_t errlen);
#define DALLOC(ptr, bytes)                                                                     \
    do {                                                                                       \
        void *p_;                                                                              \
        if (ce_dalloc(ce, &p_, (bytes), err, errlen) != 0) return -1;                             \
        (ptr) = (decltype(ptr))p_;                                                             \
    } while (0)
#define HALLOC(ptr, bytes)                                                                     \
    do {                                                                                       \
        void *p_;                                                                              \
        if (ce_halloc(ce, &p_, (bytes), err, errlen) != 0) return -1;                             \
        (ptr) = (decltype(ptr))p_;                                                             \
    } while (0)
/* engine_policy.cu: the device state of the policies' device decode steps (ce_setup, after the
 * step buffers and max_cap are known) */
int ce_setup_policy(cuda_engine *ce, char *err, size_t errlen);
/* engine_prefill.cu / engine_decode.cu: the logit scales of layer l (buzz_logn) to the device,
 * n_keys = the host mirror's length + extra; NULL without a logit scale (err set on failure). */
const float *ce_head_scales(cuda_engine *ce, int l, int extra, float scale, char *err, size_t errlen);

/* engine_mirror.cu (documented there). */
int ce_gather_region(cuda_engine *ce, int l, int g, const int *src, int n, int n_live, char *err,
                     size_t errlen);
int ce_upload_layer_meta(cuda_engine *ce, int l, char *err, size_t errlen);
int ce_host_prefill(cuda_engine *ce, kv_prefill_chunk *c, char *err, size_t errlen);
int ce_host_pre_attn(cuda_engine *ce, int l, int pos, char *err, size_t errlen);
int ce_host_post_attn(cuda_engine *ce, int l, int pos, char *err, size_t errlen);
int ce_gather_layer(cuda_engine *ce, int l, const size_t *old_off, const int *src, int stride,
                    const int *n, const int *n_live, char *err, size_t errlen);
int ce_upload_layer_pos(cuda_engine *ce, int l, char *err, size_t errlen);
int ce_rounds_post_attn(cuda_engine *ce, int l, int pos, char *err, size_t errlen);
int ce_rounds_append(cuda_engine *ce, int l, int pos);
int ce_refresh_mirror(cuda_engine *ce, char *err, size_t errlen);
int ce_upload_qring(cuda_engine *ce, char *err, size_t errlen);
/* subgen_stream's sketch: host → device (to_dev) or back (EV_SS device steps) */
int ce_ss_copy(cuda_engine *ce, int to_dev, char *err, size_t errlen);
/* The sketch's CE_SS_ARRAYS arrays: the host's (ce->ss_h), where the device copy's pointer lives
 * (ce->ss_d, its scalars copied from ss_h first) and their bytes, for ce_setup's allocation and
 * ce_ss_copy */
#define CE_SS_ARRAYS 9
typedef struct {
    void *host, **dev;
    size_t bytes;
} ce_ss_array;
void ce_ss_arrays(cuda_engine *ce, ce_ss_array a[CE_SS_ARRAYS]);

#endif
