/* model/cuda/cuda_engine.h — the C interface of the CUDA backend (kernels/cuda/ .cu files).
 *
 * The device engine keeps the weights (in their file dtype: F32/F16/BF16), the activations
 * (f32), and the KV cache (K/V in the dtype of k_proj, regions of cap+1 slots per (layer,
 * KV head) at the offsets of eviction/kv_cache.c) on the GPU. Projections and the LM head run
 * through cublasGemmEx (fp32 compute); everything else is our kernels. The host kv_cache stays
 * the bookkeeping mirror: capacities, offsets, lengths, statistics; positions/scores/state for
 * host-assisted policies (see model/device.c for which policy runs where).
 *
 * Built only with `make CUDA=1` (LLM_CUDA); model/device.c has stubs otherwise. Errors: one line
 * "FILE:LINE: CALL: message" in err, -1 returned; nothing exits. */
#ifndef LLM_MODEL_CUDA_ENGINE_H
#define LLM_MODEL_CUDA_ENGINE_H

#ifdef __cplusplus
extern "C" {
#endif

#include "eviction/eviction.h"
#include "model/model.h"
#include "kernels/cuda/evict_modes.h" /* EV_*: device_policy.evict */


/* Where a policy runs on --device cuda (model/device.c device_policy_plan). */
enum { DEV_POLICY_REFUSED = -1, DEV_POLICY_DEVICE = 0, DEV_POLICY_HOST = 1, DEV_POLICY_ROUNDS = 2 };
/* Decode steps a DEV_POLICY_HOST policy runs on the device on its own (device_policy.dev_decode):
 * none; the steps where kv_decode_quiet says no hook can act (the prefill-only family: the device
 * appends); every step (the policy's decode eviction ported to the device: dp.evict). */
enum { DEV_DECODE_NONE = 0, DEV_DECODE_QUIET = 1, DEV_DECODE_ALWAYS = 2 };

typedef struct {
    int mode;          /* DEV_POLICY_DEVICE: the decode step never waits on the host;
                          DEV_POLICY_HOST: decode hooks run on the host (probabilities copied
                          back every step), K/V moves are replayed on the device;
                          DEV_POLICY_ROUNDS: the device appends and accumulates the scores
                          every step, the host runs the policy's post_attn only on the steps
                          where a region is over capacity (a BUZZ round), with the scores
                          copied back, and the device replays the moves */
    int evict;         /* EV_* (DEV_POLICY_DEVICE, and the device steps of dev_decode) */
    int dev_decode;    /* DEV_DECODE_* (DEV_POLICY_HOST): the decode steps that run on the device
                          as a DEV_POLICY_DEVICE step (one sync per token); the others, the
                          prefill and the mirror's K/V rows stay host-assisted */
    int n_sink;        /* streaming / h2o: protected positions < n_sink */
    int n_recent;      /* h2o: R most recent protected (new token included); l2norm, random: the
                          positions ≥ t − n_recent protected (--l2-recent / --rnd-recent) */
    unsigned long long seed; /* random: --seed (the counter RNG's key) */
    int mean;          /* h2o --h2o-score mean; hashevict --hash-accum mean (EV_HASH) */
    int score_set;     /* buzz --buzz-score current: the step's probabilities replace the
                          scores instead of adding to them */
    int sh_hist;       /* scissorhands --sh-hist (EV_SH) */
    int he_bits, he_probe; /* hashevict --hash-bits, --hash-probe key (1) (EV_HASH) */
    int want_probs;    /* KV_STAT_DECODE_PROBS */
    int want_colsum;   /* KV_STAT_PREFILL_COLSUM */
    int rope_shifted;  /* --rope shifted: keys stored before RoPE, rotated by rank in the
                          attention (a rotated-key scratch, POLICIES.md §1.7) */
    int logit_scale;   /* the policy's logit_scale hook (buzz_logn): per-(layer, KV head)
                          scales computed on the host, passed to the attention kernels */
    int relayout;      /* host-assisted policies whose hooks re-partition a layer's regions
                          (kv->cap/off change: ada_*): the device gathers the whole layer into
                          the new layout */
    int host_attend;   /* the policy's own decode attention (ops->attend, subgen_stream): on a
                          host step (LLM_CUDA_HOST_DECODE=1) run on the host mirror with the
                          query copied back, the output uploaded; device steps: EV_SS */
} device_policy;

/* Which policy runs where on the GPU (model/device.c: the table there). kv: NULL before
 * kv_init (then only mode is meaningful), else the initialised cache (capacity-dependent
 * parameters). Returns 0, or -1 with one line in why (not ported, bad parameter). */
int device_policy_plan(const policy_ops *ops, const policy_params *p, const kv_cache *kv,
                       device_policy *dp, char *why, size_t whylen);

typedef struct cuda_engine cuda_engine;

/* Number of usable CUDA devices; 0 with the reason in why (no driver, no device, built without
 * CUDA). */
int cuda_device_count(char *why, size_t whylen);

/* Uploads the weights and allocates the device KV cache and scratch for prefill chunks of up to
 * max_chunk tokens. kv: initialised (kv_init) — its capacities and offsets size the device
 * regions. Checks the free device memory BEFORE allocating the cache and fails with the
 * "does not fit, try --budget X" line of kv_check_limit when it does not fit.
 * Errors: head_dim > 256, allocation or upload failure, cuBLAS init. */
int cuda_engine_init(cuda_engine **out, const model_weights *w, kv_cache *kv, int max_chunk,
                     const device_policy *dp, char *err, size_t errlen);
/* As engine_prefill: tokens[0..n) at positions pos0.. ; logits of the last row to
 * logits_last [vocab] (host) and, when logits_all is not NULL, all rows [n][vocab]. */
int cuda_engine_prefill(cuda_engine *ce, const int *tokens, int n, int pos0, float *logits_all,
                        float *logits_last, char *err, size_t errlen);
/* As engine_decode: one token at position pos. The greedy choice (device argmax) goes to
 * *next; the logits row is copied to logits (host) only when logits is not NULL. */
int cuda_engine_decode(cuda_engine *ce, int token, int pos, float *logits, int *next,
                       char *err, size_t errlen);
/* Device memory allocated by the engine (weights, cache, scratch), bytes. */
size_t cuda_engine_device_bytes(const cuda_engine *ce);
void cuda_engine_free(cuda_engine *ce);

#ifdef __cplusplus
}
#endif

#endif
