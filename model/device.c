/* Backend selection (--device auto|cpu|cuda) and which eviction policy runs where on the GPU.
 * In a build without CUDA (no LLM_CUDA) the cuda_* entry points are stubs that report
 * "built without CUDA", so everything that calls them compiles and runs the same way.
 *
 * Policies on --device cuda (POLICIES.md §1.4; kept in sync with device_policy_plan below):
 *
 *   policy          decode step                                 prefill selection
 *   --------------  ------------------------------------------  ---------------------------------
 *   full            device (append)                             host keep-list, device gather
 *   local           device (ring victim, swap-last)             host keep-list, device gather
 *   streaming       device (sink + ring victim, swap-last)      host keep-list, device gather
 *   h2o             device (score += probs, argmin with ties    host keep-list from device
 *   (attend-first)  to the older token, swap-last)              column sums, device gather
 *   h2o --h2o-      device, evict-then-attend as l2norm below   as h2o
 *   order evict-    with the score (/ (t − pos) with mean) as
 *   first           the key; score += probs after, the new
 *                   token's score moved into the victim's slot;
 *                   --rope shifted: on the device as l2norm
 *   buzz,           device: append, score += probs (--buzz-score host keep-list from device
 *   buzz_logn       current: score = probs); host: the CPU      column sums, device gather
 *                   post_attn only on round steps (a region
 *                   over capacity), scores copied back, moves
 *                   replayed;
 *                   buzz_logn: scale · λ(n_keys) per (layer,
 *                   KV head) from the policy's logit_scale hook
 *                   on the host into the attention kernels
 *   snapkv,         device (append, as full) on every step      host-assisted: the CPU policy
 *   pyramidkv,      where no hook can act (kv_decode_quiet:     code on the host mirror (real
 *   subgen          no region full; every step of --prefill-    K/V rows, chunk q/k/v copied
 *   (prefill-only   only-decode reserve and grow), the query    back), device gather from the
 *   family, §7.6)   into the device's copy of the snap query    recovered keep-lists
 *                   ring; the host mirror appends by rule. The
 *                   steps where one can (past max_new) run
 *                   host-assisted as below, the mirror's K/V
 *                   rows and ring brought back first
 *                   (ce_refresh_mirror); capped: every step
 *                   on the device, a region that reached C
 *                   re-compressed after the attention
 *                   (snap_recompress.cu from the device's
 *                   ring; subgen: subgen_recompress.cu, its
 *                   k-center), the mirror's lengths by rule
 *   ada_snapkv,     as snapkv; when a hook re-partitions a      the same; a re-partitioned
 *   ada_pyramidkv   layer's regions (kv->cap/off change) the    layer is gathered whole
 *                   device gathers the whole layer into the
 *                   new layout (scratch of one layer's arena)
 *                   and takes the new offsets; capped: every
 *                   step on the device, a layer with a region
 *                   at C re-split over its heads and its
 *                   arena re-partitioned there
 *                   (ada_recompress.cu), the layer's lengths,
 *                   capacities, targets carried back with the
 *                   step's token
 *   l2norm,         device, evict-then-attend: each attention   host-assisted as above
 *   random          piece leaves its best candidate out (the
 *                   largest key norm, norms in the score
 *                   array / the smallest counter-RNG key of
 *                   policy_random.c), the finishing block
 *                   keeps the winner out, puts the others
 *                   back, swap-last of the new token into it;
 *                   --rope shifted: on the device too, the
 *                   victim (same key, same rule) chosen and
 *                   swapped out before the rank rotation, in
 *                   its kernel (select.cu launch_ete_shifted),
 *                   then the attention over the C live slots
 *   tova            device: the layer's last finishing group    host-assisted as above
 *                   averages every head's probabilities and
 *                   evicts the argmin from every KV head
 *   scissorhands    device, evict-then-attend as l2norm with    host-assisted as above
 *                   the slot's importance as the key; the
 *                   kernel pushes every slot's indicator into
 *                   its history (per-slot state on the device,
 *                   the prompt's first entry from the host);
 *                   --rope shifted: on the device as l2norm,
 *                   the histories pushed by the attention
 *   hashevict       device, evict-then-attend as l2norm with   host-assisted as above
 *                   the Hamming distance of the slot's SimHash
 *                   code to the probe codes as the key (codes
 *                   per-slot state on the device); --hash-accum
 *                   mean: the running sum and age per slot
 *                   beside the code (the prompt's from the
 *                   host), every member's advanced at each rule
 *                   evaluation, the largest mean (exact integer
 *                   comparison) evicted; --rope shifted: on
 *                   the device as l2norm (the codes, probes and
 *                   sums in the rank rotation's kernel)
 *   subgen_stream   device: the window's oldest slot goes into   host-assisted (exact attention
 *                   the sketch (a device copy of the policy's   on the device; on_prefill feeds
 *                   arrays; the CPU's cluster choice and        the host's sketch, uploaded
 *                   counter-RNG draws reproduced in double,     before the next device step)
 *                   ss_insert.cu), the new token takes its
 *                   slot, then the estimator over window and
 *                   sketch in place of the attention
 *                   (ss_attend.cu); the sketch comes back with
 *                   the mirror's rows (ce_refresh_mirror)
 *
 *   --rope shifted (POLICIES.md §1.7), every policy above but subgen_stream (which refuses it on
 *   both backends): keys cached before RoPE; per layer a kernel writes the live keys rotated by
 *   their rank in position order into a scratch of the cache's layout (one more K-sized
 *   buffer), queries (and a prefill chunk's keys) are rotated at ranks len + i; host-assisted
 *   prefill hooks get the rotated keys copied back (kv_cand_key), as on the CPU. The
 *   evict-then-attend policies (l2norm, random, h2o evict-first, scissorhands, hashevict) evict
 *   in that kernel before rotating (select.cu launch_ete_shifted: the victim changes the older
 *   keys' ranks; its key does not depend on the step's attention), the attention then evicts
 *   nothing (scissorhands' histories are still pushed there).
 *   Nothing is refused for its policy any more; a policy this function does not know is REFUSED
 *   (one line; --device auto runs it on the CPU).
 */
#include "model/cuda/cuda_engine.h"
#include "eviction/eviction.h"
#include "eviction/kv_device.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int device_policy_plan(const policy_ops *ops, const policy_params *p, const kv_cache *kv,
                       device_policy *dp, char *why, size_t whylen)
{
    memset(dp, 0, sizeof *dp);
    dp->mode = DEV_POLICY_REFUSED;
    dp->want_probs = (ops->stats & KV_STAT_DECODE_PROBS) != 0;
    dp->want_colsum = (ops->stats & KV_STAT_PREFILL_COLSUM) != 0;
    char e[256];
    dp->rope_shifted = p->rope_shifted != 0;
    dp->logit_scale = ops->logit_scale != NULL;
    dp->host_attend = ops->attend != NULL;
    int cap = kv ? kv->cap[0] : 0;
    if (kv && kv->passthrough) {
        /* nothing can be evicted (eviction.h, passthrough): the full-cache path, no statistics */
        dp->mode = DEV_POLICY_DEVICE;
        dp->evict = EV_NONE;
        dp->want_probs = dp->want_colsum = 0;
        dp->host_attend = 0;   /* an attend hook that is exact while nothing leaves the cache */
        return 0;
    }
    if (!strcmp(ops->name, "full")) {
        dp->mode = DEV_POLICY_DEVICE;
        dp->evict = EV_NONE;
    } else if (!strcmp(ops->name, "local")) {
        dp->mode = DEV_POLICY_DEVICE;
        dp->evict = EV_LOCAL;
    } else if (!strcmp(ops->name, "streaming")) {
        /* the same n_sink as eviction/policy_streaming.c: default 4, C/2 when C ≤ 8 */
        int n_sink;
        if (policy_param_int(p, "sink", -1, 0, 1 << 24, &n_sink, e, sizeof e) != 0) {
            snprintf(why, whylen, "%s", e);
            return -1;
        }
        if (n_sink < 0) n_sink = cap <= 8 ? cap / 2 : 4;
        dp->mode = DEV_POLICY_DEVICE;
        dp->evict = EV_STREAMING;
        dp->n_sink = n_sink;
    } else if (!strcmp(ops->name, "h2o")) {
        /* the parameters of eviction/policy_h2o.c; attend-first: append, attend, evict the
         * argmin (EV_H2O); evict-first: the argmin of the history up to t − 1 left out of the
         * attention and overwritten by the new token (EV_H2O_EF, evict-then-attend; --rope
         * shifted: evicted before the rank rotation, select.cu launch_ete_shifted) */
        int n_sink, n_recent, mean, order;
        if (policy_param_int(p, "h2o-sink", 0, 0, 1 << 24, &n_sink, e, sizeof e) != 0 ||
            policy_param_int(p, "h2o-recent", -1, 0, 1 << 24, &n_recent, e, sizeof e) != 0 ||
            policy_param_enum(p, "h2o-score", "sum|mean", 0, &mean, e, sizeof e) != 0 ||
            policy_param_enum(p, "h2o-order", "attend-first|evict-first", 0, &order, e, sizeof e) != 0) {
            snprintf(why, whylen, "%s", e);
            return -1;
        }
        if (n_recent < 0) n_recent = cap - cap / 2;
        dp->mode = DEV_POLICY_DEVICE;
        dp->evict = order != 0 ? EV_H2O_EF : EV_H2O;
        dp->n_sink = n_sink;
        dp->n_recent = n_recent;
        dp->mean = mean == 1;
    } else if (!strcmp(ops->name, "buzz") || !strcmp(ops->name, "buzz_logn")) {
        /* A round (or the degenerate streaming compaction) fires exactly when a region holds
         * more than its capacity (cap = min(k + w + T, run), eviction/policy_buzz.c), and
         * between rounds post_attn only adds the step's probabilities to the scores (--buzz-score
         * current: replaces the scores with them): the device does that, the host acts on round
         * steps. */
        int score_mode;
        if (policy_param_enum(p, "buzz-score", "accum|current", 0, &score_mode, e, sizeof e) != 0) {
            snprintf(why, whylen, "%s", e);
            return -1;
        }
        dp->mode = DEV_POLICY_ROUNDS;
        dp->score_set = score_mode == 1;
    } else if (!strcmp(ops->name, "snapkv") || !strcmp(ops->name, "pyramidkv") ||
               !strcmp(ops->name, "subgen")) {
        /* the prefill-only family (§7.6): host-assisted prefill; decode appends on the device
         * while no region is full (every step of reserve and grow), the hooks run on the host
         * on the steps where one may re-compress; snapkv, pyramidkv and subgen capped: every
         * step on the device, a region that reached C re-compressed there (EV_SNAP,
         * kernels/cuda/snap_recompress.cu; EV_SUBGEN, subgen_recompress.cu) */
        dp->mode = DEV_POLICY_HOST;
        dp->dev_decode = DEV_DECODE_QUIET;
        dp->evict = EV_NONE;
        if (kv && (kv_device_snap_capped(kv, NULL) == 0 || subgen_device_capped(kv, NULL, NULL) == 0)) {
            dp->dev_decode = DEV_DECODE_ALWAYS;
            dp->evict = kv_device_snap_capped(kv, NULL) == 0 ? EV_SNAP : EV_SUBGEN;
        }
    } else if (!strcmp(ops->name, "l2norm") || !strcmp(ops->name, "random")) {
        /* evict-then-attend, one victim per step (POLICIES.md §10.2, §10.4): on the device
         * (kernels/cuda/attn_decode.cu), the parameters of eviction/policy_l2norm.c and
         * policy_random.c (evict_protect_init: --l2-/--rnd-sink 4, -recent 10); prefill
         * host-assisted */
        const char *pre = !strcmp(ops->name, "l2norm") ? "l2" : "rnd";
        char fs[32], fr[32];
        int n_sink, n_recent;
        snprintf(fs, sizeof fs, "%s-sink", pre);
        snprintf(fr, sizeof fr, "%s-recent", pre);
        if (policy_param_int(p, fs, 4, 0, 1 << 20, &n_sink, e, sizeof e) != 0 ||
            policy_param_int(p, fr, 10, 0, 1 << 20, &n_recent, e, sizeof e) != 0) {
            snprintf(why, whylen, "%s", e);
            return -1;
        }
        dp->mode = DEV_POLICY_HOST;
        /* --rope shifted: the victim leaves the ranks of the keys older than it one lower than
         * in an attention over C + 1 slots with it left out (§1.7): the victim (its key does not
         * depend on the step's attention) is evicted before the rank rotation, in its kernel
         * (select.cu launch_ete_shifted), and the attention evicts nothing */
        dp->dev_decode = DEV_DECODE_ALWAYS;
        dp->evict = pre[0] == 'l' ? EV_L2NORM : EV_RANDOM;
        dp->n_sink = n_sink;
        dp->n_recent = n_recent;
        dp->seed = p->seed;
    } else if (!strcmp(ops->name, "tova")) {
        /* layer-wise attend-then-evict (§10.3): on the device; prefill host-assisted */
        dp->mode = DEV_POLICY_HOST;
        dp->dev_decode = DEV_DECODE_ALWAYS;
        dp->evict = EV_TOVA;
    } else if (!strcmp(ops->name, "scissorhands")) {
        /* evict-then-attend with per-slot histories (POLICIES.md §10.1): on the device as
         * l2norm, the key the slot's importance, the histories pushed by the attention kernel
         * (EV_SH); the parameters of eviction/policy_scissorhands.c (--sh-hist 400, --sh-sink /
         * --sh-recent: evict_protect_init's defaults); prefill host-assisted; --rope shifted
         * as l2norm (the victim before the rank rotation; the histories pushed after the
         * attention, which then evicts nothing) */
        int n_sink, n_recent, hist;
        if (policy_param_int(p, "sh-hist", 400, 1, EV_SH_MAX_HIST, &hist, e, sizeof e) != 0 ||
            policy_param_int(p, "sh-sink", 4, 0, 1 << 20, &n_sink, e, sizeof e) != 0 ||
            policy_param_int(p, "sh-recent", 10, 0, 1 << 20, &n_recent, e, sizeof e) != 0) {
            snprintf(why, whylen, "%s", e);
            return -1;
        }
        dp->mode = DEV_POLICY_HOST;
        dp->dev_decode = DEV_DECODE_ALWAYS;
        dp->evict = EV_SH;
        dp->n_sink = n_sink;
        dp->n_recent = n_recent;
        dp->sh_hist = hist;
    } else if (!strcmp(ops->name, "hashevict")) {
        /* evict-then-attend by SimHash distance (POLICIES.md §9): on the device as l2norm, the
         * key the Hamming distance of the slot's code to the step's probe codes (EV_HASH; codes
         * as per-slot state, the policy's projections uploaded); --hash-accum mean (dp->mean):
         * the running sum and age per slot beside the code, advanced for every member at each
         * rule evaluation, the largest mean evicted (exact integer comparison, as the CPU);
         * --rope shifted as l2norm (codes, probes and sums before the rank rotation, the probe
         * queries unrotated as the CPU's pre_attn sees them); prefill host-assisted */
        int bits, n_sink, n_recent, probe, accum;
        if (policy_param_int(p, "hash-bits", 16, 1, 64, &bits, e, sizeof e) != 0 ||
            policy_param_int(p, "hash-sink", 4, 0, 1 << 20, &n_sink, e, sizeof e) != 0 ||
            policy_param_int(p, "hash-recent", 10, 0, 1 << 20, &n_recent, e, sizeof e) != 0 ||
            policy_param_enum(p, "hash-probe", "query|key", 0, &probe, e, sizeof e) != 0 ||
            policy_param_enum(p, "hash-accum", "none|mean", 0, &accum, e, sizeof e) != 0) {
            snprintf(why, whylen, "%s", e);
            return -1;
        }
        dp->mode = DEV_POLICY_HOST;
        dp->dev_decode = DEV_DECODE_ALWAYS;
        dp->evict = EV_HASH;
        dp->n_sink = n_sink;
        dp->n_recent = n_recent;
        dp->he_bits = bits;
        dp->he_probe = probe == 1;
        dp->mean = accum == 1;
    } else if (!strcmp(ops->name, "subgen_stream")) {
        /* the window + sketch estimator (§8.3): decode on the device (EV_SS: the sketch's copy
         * there, kernels/cuda/ss_insert.cu reproduces the CPU's cluster choice and counter-RNG
         * draws, ss_attend.cu the estimator in place of the attention); prefill host-assisted
         * (on_prefill feeds the host's sketch, uploaded before the next device step) */
        dp->mode = DEV_POLICY_HOST;
        dp->dev_decode = DEV_DECODE_ALWAYS;
        dp->evict = EV_SS;
        dp->seed = p->seed;
        /* a window covering prompt + max new tokens (r = C, §8.3) without passthrough (hooks
         * forced on by a test): nothing ever enters the sketch, the attention stays exact and
         * the device appends */
        if (kv && (int64_t)kv->cap[0] >= (int64_t)kv->prompt_tokens + kv->max_new) dp->evict = EV_NONE;
    } else if (!strcmp(ops->name, "ada_snapkv") || !strcmp(ops->name, "ada_pyramidkv")) {
        /* hooks that re-partition a layer's arena among its heads (kv->cap/off change,
         * eviction/snap_alloc.c snap_relayout): the device gathers the whole layer; decode as
         * snapkv (device appends while no region is full); capped: every step on the device, a
         * layer with a region at C re-split and re-partitioned there (EV_ADA,
         * kernels/cuda/ada_recompress.cu), the mirror's lengths, capacities and offsets carried
         * back with the step's token */
        dp->mode = DEV_POLICY_HOST;
        dp->relayout = 1;
        dp->dev_decode = DEV_DECODE_QUIET;
        dp->evict = EV_NONE;
        if (kv && kv_device_ada_capped(kv, 0, NULL) == 0) {
            dp->dev_decode = DEV_DECODE_ALWAYS;
            dp->evict = EV_ADA;
        }
    } else {
        snprintf(why, whylen, "policy %s is not ported to the CUDA backend yet", ops->name);
        return -1;
    }
    /* LLM_CUDA_HOST_DECODE=1: every decode step of a host-assisted policy through the host hooks
     * (the path before device decode steps; tests/cuda_emu/counts.sh checks its counts fail) */
    const char *hd = getenv("LLM_CUDA_HOST_DECODE");
    if (dp->mode == DEV_POLICY_HOST && hd && *hd && strcmp(hd, "0") != 0) dp->dev_decode = DEV_DECODE_NONE;
    if (kv && dp->evict == EV_STREAMING && dp->n_sink >= cap) {
        snprintf(why, whylen, "--sink: %d sink tokens leave no window at capacity %d", dp->n_sink, cap);
        dp->mode = DEV_POLICY_REFUSED;
        return -1;
    }
    return 0;
}

int device_resolve(const char *want, const policy_ops *ops, const void *params, int *use_cuda,
                   char *msg, size_t msglen)
{
    const policy_params *p = params;
    char why[256] = "";
    device_policy dp;
    *use_cuda = 0;
    msg[0] = '\0';
    if (!strcmp(want, "cpu")) return 0;
    int n = cuda_device_count(why, sizeof why);
    if (!strcmp(want, "cuda")) {
        if (n < 1) {
            snprintf(msg, msglen, "--device cuda: no usable CUDA device (%s)", why);
            return -1;
        }
        if (device_policy_plan(ops, p, NULL, &dp, why, sizeof why) != 0) {
            snprintf(msg, msglen, "--device cuda: %s; use --device cpu", why);
            return -1;
        }
        *use_cuda = 1;
        return 0;
    }
    if (strcmp(want, "auto") != 0) {
        snprintf(msg, msglen, "--device (or $LLM_DEVICE): expected auto, cpu or cuda, got '%s'", want);
        return -1;
    }
    if (n < 1) return 0; /* auto without a GPU: the CPU, silently */
    if (device_policy_plan(ops, p, NULL, &dp, why, sizeof why) != 0) {
        snprintf(msg, msglen, "note: running on the CPU: %s", why);
        return 0;
    }
    *use_cuda = 1;
    return 0;
}

int engine_init_cuda(engine *e, const model_weights *w, kv_cache *kv, int max_chunk, char *err,
                     size_t errlen)
{
    memset(e, 0, sizeof *e);
    e->w = w;
    e->kv = kv;
    e->max_chunk = max_chunk < 1 ? 1 : max_chunk;
    e->n_threads = 1;
    e->next = -1;
    e->want_logits = 1;
    device_policy dp;
    char why[256];
    if (device_policy_plan(kv->ops, &kv->params, kv, &dp, why, sizeof why) != 0) {
        snprintf(err, errlen, "--device cuda: %s", why);
        return -1;
    }
    e->logits = malloc((size_t)w->cfg.vocab_size * sizeof *e->logits);
    if (!e->logits) {
        snprintf(err, errlen, "out of memory allocating the logits row");
        return -1;
    }
    cuda_engine *ce = NULL;
    if (cuda_engine_init(&ce, w, kv, e->max_chunk, &dp, err, errlen) != 0) {
        free(e->logits);
        e->logits = NULL;
        return -1;
    }
    e->dev = ce;
    return 0;
}

#ifndef LLM_CUDA
/* ---- CPU-only build: the CUDA entry points report that they are not there ---- */
int cuda_device_count(char *why, size_t whylen)
{
    snprintf(why, whylen, "llm-run was built without CUDA; rebuild with make CUDA=1");
    return 0;
}

int cuda_engine_init(cuda_engine **out, const model_weights *w, kv_cache *kv, int max_chunk,
                     const device_policy *dp, char *err, size_t errlen)
{
    *out = NULL;
    snprintf(err, errlen, "llm-run was built without CUDA; rebuild with make CUDA=1");
    return -1;
}

int cuda_engine_prefill(cuda_engine *ce, const int *tokens, int n, int pos0, float *logits_all,
                        float *logits_last, char *err, size_t errlen)
{
    snprintf(err, errlen, "llm-run was built without CUDA");
    return -1;
}

int cuda_engine_decode(cuda_engine *ce, int token, int pos, float *logits, int *next, char *err,
                       size_t errlen)
{
    snprintf(err, errlen, "llm-run was built without CUDA");
    return -1;
}

size_t cuda_engine_device_bytes(const cuda_engine *ce) { return 0; }

void cuda_engine_free(cuda_engine *ce) {}
#endif
