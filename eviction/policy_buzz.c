/* `buzz`: BeeHive sampling with sink + sliding window + threshold buffering (POLICIES.md §4).
 *
 * Per (layer, KV head) the slots are kept in position order:
 *   [ sink: k ][ old: n_old ][ new: tokens that left the window since the last round ][ window: w ]
 *               \__________________________ middle (M = |S| - k - w) ________________________/
 * Nothing is evicted until the middle holds more than T tokens; then one round keeps every ŝ-th
 * old token (ŝ = floor((s+1)/2)) and the highest-scoring new token of every hive of s
 * (accumulated attention, as in H2O), and everything kept becomes old. Rounds compact the region
 * with kv_compact and new tokens are appended at the end, so the regions are slot ranges.
 * The capacity is k + w + T (peak mode, §4.6), mapped from the budget by the T/w theorem (§4.5).
 *
 * `buzz_logn` (policy_buzz_logn.c) reuses the hooks below through their non-static names.
 */
#include "eviction/policy_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Private per-run state (kv->pstate). */
typedef struct {
    int k, s, w, T;          /* sink, big stride, window, threshold on the middle */
    int streaming;           /* degenerate capacity (C < k + s + 2): streaming with n_sink = k */
    int new_sampler;         /* 0: local max (default), 1: interval (ablation, §4.7) */
    int swap_strides;        /* 1: new tokens get ŝ and old tokens get s (ablation, §4.7) */
    int score_current;       /* 1: score = the current forward pass's attention only (§4.7) */
    int *n_old;              /* [n_layers] old samples in the middle (equal for all heads) */
    int64_t *event;          /* [n_layers] key of the last hook that set n_old (see n_old_at) */
    int *n_old_before;       /* [n_layers] n_old before that hook */
    int *iscr;               /* [scr_len] kept middle indices of a round */
    int *keep;               /* [scr_len] keep-list handed to kv_compact in decode */
    float *fscr;             /* [scr_len] scores of the new region during prefill */
    int scr_len;
    double aux;              /* variant parameter (buzz_logn: the log base), see buzz_aux */
} buzz_state;

/* ---- pure selection functions (exposed for the golden tests) ---- */

/* ŝ = floor((s+1)/2) = ceil(s/2), the small stride used for old tokens (§4.5, §14.4). */
int buzz_shat(int s) { return (s + 1) / 2; }

/* T/w ratio of Theorem 3.1 (§4.5): (s²+1)/(s+1) for odd s, s−1 for even s. */
double buzz_theorem_ratio(int s)
{
    return s % 2 ? ((double)s * s + 1) / ((double)s + 1) : (double)s - 1;
}

/* Interval sampling (§4.3): indices 0, stride, 2·stride, ... < n into out (ascending).
 * Returns ceil(n / stride). stride ≥ 1. */
int buzz_interval_sample(int n, int stride, int *out)
{
    int c = 0;
    for (int i = 0; i < n; i += stride) out[c++] = i;
    return c;
}

/* Local-max sampling (§4.3): hives [i, min(i+stride, n)) for i = 0, stride, ...; for each hive
 * writes the index (0..n-1) of its largest score[] into out, ascending. Ties: the first (lowest
 * position) maximum wins, like torch.max. score NULL: all tied (= interval sampling).
 * Returns ceil(n / stride). */
int buzz_local_max_sample(const float *score, int n, int stride, int *out)
{
    int c = 0;
    for (int i = 0; i < n; i += stride) {
        int end = i + stride < n ? i + stride : n, best = i;
        for (int j = i + 1; score && j < end; j++)
            if (score[j] > score[best]) best = j;
        out[c++] = best;
    }
    return c;
}

/* One BUZZ round over a middle of M = n_old + n_new entries in position order (§4.4): old
 * entries 0..n_old-1 by interval sampling with ŝ, new entries n_old..M-1 by local max over
 * new_score[0..n_new-1] with s (new_sampler 1: interval with s; swap_strides: the strides are
 * exchanged). Then, while more than T entries remain (T ≥ 1; T < 0 disables), all of them are
 * old and are interval-sampled again with the old stride (§4.4 prefill loop; in decode this is
 * a guard that only fires when T is tiny, see [DECISION] in round_keep).
 * Writes the kept middle indices (ascending, 0..M-1) into out[M]; returns their count. */
int buzz_round_select(int n_old, int n_new, const float *new_score, int s, int new_sampler,
                      int swap_strides, int T, int *out)
{
    int old_stride = swap_strides ? s : buzz_shat(s), new_stride = swap_strides ? buzz_shat(s) : s;
    /* old tokens: interval sampling */
    int c = buzz_interval_sample(n_old, old_stride, out);
    /* new tokens: local max per hive (or interval for the ablation), shifted past the old ones */
    int cn = new_sampler ? buzz_interval_sample(n_new, new_stride, out + c)
                         : buzz_local_max_sample(new_score, n_new, new_stride, out + c);
    for (int i = c; i < c + cn; i++) out[i] += n_old;
    c += cn;
    /* everything kept is old now: shrink further until the middle fits under T */
    while (T >= 0 && c > T && c > 1) {
        int m = 0;
        for (int i = 0; i < c; i += old_stride) out[m++] = out[i];
        c = m;
    }
    return c;
}

/* Budget → (w, T) for sink k and stride s (§4.6). mode 0 (peak): w = max(1, floor((C−k)/(1+r))),
 * T = C − k − w, so k + w + T = C. mode 1 (avg): w = max(1, floor((C−k)/(1.5 + r/2))),
 * T = round(r·w), so the time-average occupancy is ≈ C and the peak k + w + T exceeds it.
 * r = buzz_theorem_ratio(s), evaluated in exact integer arithmetic (no float floor drift).
 * Returns 1 when C < k + s + 2 (degenerate: behave as streaming with n_sink = k; w, T untouched),
 * else 0. */
int buzz_map_budget(int C, int k, int s, int mode, int *w, int *T)
{
    if (C < k + s + 2) return 1;
    long long room = (long long)C - k;
    /* r = rn / rd exactly */
    long long rn = s % 2 ? (long long)s * s + 1 : s - 1, rd = s % 2 ? s + 1 : 1;
    long long ww;
    if (mode == 0) {
        /* (C−k)/(1 + rn/rd) = (C−k)·rd / (rd + rn) */
        ww = room * rd / (rd + rn);
    } else {
        /* (C−k)/(1.5 + rn/(2rd)) = 2(C−k)·rd / (3rd + rn) */
        ww = 2 * room * rd / (3 * rd + rn);
    }
    if (ww < 1) ww = 1;
    *w = (int)ww;
    /* peak: the rest of the capacity; avg: T = round(r·w), halves up */
    *T = mode == 0 ? (int)(room - ww) : (int)((2 * ww * rn + rd) / (2 * rd));
    return 0;
}

/* ---- per-layer n_old bookkeeping ---- */

/* n_old of `layer` as it was before the hook identified by `key` (a decode step or a prefill
 * chunk). The hook runs once per KV head; all heads of a layer see the same sizes, so the first
 * head's round decides the new n_old and the later heads of the same hook must still read the
 * old value. */
static int n_old_at(const buzz_state *st, int layer, int64_t key)
{
    return st->event[layer] == key ? st->n_old_before[layer] : st->n_old[layer];
}

static void n_old_set(buzz_state *st, int layer, int64_t key, int n_old)
{
    if (st->event[layer] != key) {
        st->n_old_before[layer] = st->n_old[layer];
        st->event[layer] = key;
    }
    st->n_old[layer] = n_old;
}

static int64_t key_decode(int t) { return 2 * (int64_t)t; }
static int64_t key_prefill(int pos0) { return 2 * (int64_t)pos0 + 1; }

/* ---- parameters ---- */

/* 1 when NAME was set to something other than "auto" (the default text of buzz-w and buzz-T). */
static int param_given(const policy_params *p, const char *name)
{
    for (int i = p->n_set - 1; i >= 0; i--)
        if (strcmp(p->set[i].name, name) == 0) return strcmp(p->set[i].value, "auto") != 0;
    return 0;
}

#define BUZZ_PARAM_ROWS                                                                          \
    {"buzz-k", "sink", PARAM_INT, "4", NULL, "sink tokens k, never evicted"},                   \
    {"buzz-s", "stride", PARAM_INT, "5", NULL,                                                   \
     "big stride s >= 3 for new tokens; old tokens use floor((s+1)/2)"},                         \
    {"buzz-w", "window", PARAM_INT, "auto", NULL,                                                \
     "sliding window w; auto: from the budget by the T/w theorem (POLICIES.md 4.6)"},            \
    {"buzz-T", "threshold", PARAM_INT, "auto", NULL,                                             \
     "a round fires when the middle holds more than T tokens; auto: from the budget"},           \
    {"budget-mode", NULL, PARAM_ENUM, "peak", "peak|avg",                                        \
     "peak: k+w+T = C (hard cap); avg: time-average size = C, peak k+w+T > C"},                  \
    {"buzz-new-sampler", NULL, PARAM_ENUM, "localmax", "localmax|interval",                      \
     "how new tokens are sampled (interval: the no-local-max ablation)"},                        \
    {"buzz-swap-strides", NULL, PARAM_INT, "0", NULL,                                            \
     "1: new tokens get the small stride and old tokens the big one (ablation)"},                \
    {"buzz-score", NULL, PARAM_ENUM, "accum", "accum|current",                                   \
     "local-max score: accumulated attention or the current pass's attention only"}

static const policy_param_def buzz_param_defs[] = {BUZZ_PARAM_ROWS, {NULL}};

/* The table of buzz_logn (policy_buzz_logn.c): buzz's parameters plus the log-n scaling ones,
 * kept here so the two lists cannot drift apart. */
const policy_param_def buzz_logn_param_defs[] = {
    BUZZ_PARAM_ROWS,
    {"logn-base", NULL, PARAM_FLOAT, "512", NULL, "logits are scaled by log(n)/log(base)"},
    {"logn-mode", NULL, PARAM_ENUM, "call", "call",
     "n = keys of the attention call (decode: |S|+1; prefill: the call's keys). per-query (4.9) "
     "is not supported: the engine's logit_scale hook takes one n per call"},
    {NULL}};

/* Reads and validates the parameters, sets kv->cap and allocates the state (POLICIES.md §4.6).
 * Errors (one line, naming the flag): s < 3; sink ≥ capacity; window larger than capacity; a
 * threshold or window that leaves no room; k + w + T above the capacity in peak mode. */
int buzz_init(kv_cache *kv, const policy_params *p, int n_prompt, int max_new, char *err,
              size_t errlen)
{
    int k, s, w = 0, T = 0, mode, sampler, swap, score;
    if (policy_param_int(p, "buzz-k", 4, 0, 1000000000, &k, err, errlen) ||
        policy_param_int(p, "buzz-s", 5, -1000000, 1000000, &s, err, errlen) ||
        policy_param_enum(p, "budget-mode", "peak|avg", 0, &mode, err, errlen) ||
        policy_param_enum(p, "buzz-new-sampler", "localmax|interval", 0, &sampler, err, errlen) ||
        policy_param_int(p, "buzz-swap-strides", 0, 0, 1, &swap, err, errlen) ||
        policy_param_enum(p, "buzz-score", "accum|current", 0, &score, err, errlen))
        return -1;
    /* s ∈ {1, 2} gives ŝ = 1: old tokens never shrink (§4.4) */
    if (s < 3) {
        snprintf(err, errlen, "--buzz-s: stride must be >= 3 (s = 1, 2 give a small stride of 1, "
                 "so old samples never shrink), got %d", s);
        return -1;
    }
    int w_set = param_given(p, "buzz-w"), T_set = param_given(p, "buzz-T");
    if (w_set && policy_param_int(p, "buzz-w", 0, 1, 1000000000, &w, err, errlen)) return -1;
    if (T_set && policy_param_int(p, "buzz-T", 0, 1, 1000000000, &T, err, errlen)) return -1;

    /* POLICIES.md §1.2: a budget below what the structure protects (k sinks, a window of at
     * least one, a middle of at least one; or the k + w + T given) is raised to that minimum
     * in the peak mode (the caller reports the raise) */
    long long c_min = mode != 0 ? 1 : (long long)k + (w_set ? w : 1) + (T_set ? T : 1);
    int C = kv_budget_capacity(p, n_prompt, max_new, c_min > 1000000000 ? 1000000000 : (int)c_min);
    long long L = (long long)n_prompt + max_new;
    if (L < 1) L = 1;
    int streaming = 0;
    long long cap;
    if (w_set && T_set) {
        /* both given: they fix the structure; the capacity is k + w + T (capped by the run) */
        long long peak = (long long)k + w + T;
        cap = peak < L ? peak : L;
        if (mode == 0 && cap > C) {
            snprintf(err, errlen, "--buzz-T: sink + window + threshold = %lld exceeds the capacity "
                     "%d of the budget (--budget-mode peak); lower them, raise --budget or use "
                     "--budget-mode avg", peak, C);
            return -1;
        }
    } else if (C >= L) {
        /* [DECISION] The budget holds the whole run: nothing can be evicted (identity with
         * `full`, §1.2), so the capacity checks below do not apply (a 3-token prompt with
         * budget 1.0 must not fail on "sink >= capacity"). w, T are set so no round fires. */
        cap = L;
        if (!w_set) w = (int)L;
        if (!T_set) T = (int)L;
    } else {
        if (k >= C) {
            snprintf(err, errlen, "--buzz-k: sink %d must be smaller than the capacity %d", k, C);
            return -1;
        }
        if (w_set && w > C) {
            snprintf(err, errlen, "--buzz-w: window %d is larger than the capacity %d", w, C);
            return -1;
        }
        if (mode == 0) {
            /* peak: the given one fixes the other through C = k + w + T */
            if (w_set) T = C - k - w;
            else if (T_set) w = C - k - T;
            else streaming = buzz_map_budget(C, k, s, 0, &w, &T);
        } else {
            /* [DECISION] avg with one of them given: solve the occupancy k + w + (w+T)/2 = C
             * for the other one (the mapping's own approximation, §4.6). */
            if (w_set) T = 2 * (C - k) - 3 * w;
            else if (T_set) w = (2 * (C - k) - T) / 3;
            else streaming = buzz_map_budget(C, k, s, 1, &w, &T);
        }
        if (!streaming && w_set && T < 1) {
            snprintf(err, errlen, "--buzz-w: sink %d + window %d leave no room for a middle within "
                     "the capacity %d", k, w, C);
            return -1;
        }
        if (!streaming && T_set && w < 1) {
            snprintf(err, errlen, "--buzz-T: threshold %d leaves no room for a window within the "
                     "capacity %d (sink %d)", T, C, k);
            return -1;
        }
        if (streaming) {
            /* degenerate (§4.6): sinks + the C − k most recent, like `streaming` */
            w = C - k;
            T = 0;
            cap = C;
        } else {
            long long peak = (long long)k + w + T;
            cap = peak < L ? peak : L;
        }
    }
    /* k, w, T beyond the run's length behave as the run's length (all sinks / nothing leaves
     * the window / no round): clamp them so k + w + T cannot overflow an int */
    if (k > L) k = (int)L;
    if (w > L) w = (int)L;
    if (T > L) T = (int)L;
    for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++) kv->cap[i] = (int)cap;

    /* state: n_old per layer, scratch for rounds (prefill candidates ≤ cap + prompt tokens) */
    buzz_state *st = calloc(1, sizeof *st);
    if (!st) goto oom;
    kv->pstate = st;
    *st = (buzz_state){.k = k, .s = s, .w = w, .T = T, .streaming = streaming,
                       .new_sampler = sampler, .swap_strides = swap, .score_current = score};
    st->scr_len = (int)cap + 1 + (n_prompt > 0 ? n_prompt : 0);
    st->n_old = calloc((size_t)kv->n_layers, sizeof *st->n_old);
    st->n_old_before = calloc((size_t)kv->n_layers, sizeof *st->n_old_before);
    st->event = malloc((size_t)kv->n_layers * sizeof *st->event);
    st->iscr = malloc((size_t)st->scr_len * sizeof *st->iscr);
    st->keep = malloc((size_t)st->scr_len * sizeof *st->keep);
    st->fscr = malloc((size_t)st->scr_len * sizeof *st->fscr);
    if (!st->n_old || !st->n_old_before || !st->event || !st->iscr || !st->keep || !st->fscr)
        goto oom;
    for (int l = 0; l < kv->n_layers; l++) st->event[l] = INT64_MIN;
    return 0;
oom:
    snprintf(err, errlen, "buzz: out of memory for the policy state");
    return -1; /* kv_init's kv_free calls buzz_free_state */
}

void buzz_free_state(kv_cache *kv)
{
    buzz_state *st = kv->pstate;
    if (!st) return;
    EVICT_FREE(st->n_old, st->n_old_before, st->event, st->iscr, st->keep, st->fscr, st);
    kv->pstate = NULL;
}

/* Variant parameter slot in the state (buzz_logn keeps its log base here). */
void buzz_set_aux(kv_cache *kv, double v) { ((buzz_state *)kv->pstate)->aux = v; }
double buzz_aux(const kv_cache *kv) { return ((const buzz_state *)kv->pstate)->aux; }

/* Grows the round scratch when a prefill chunk has more candidates than planned (prefill only,
 * never per decode token). Returns 0 or -1. */
static int scratch_reserve(buzz_state *st, int n)
{
    if (n <= st->scr_len) return 0;
    int *a = realloc(st->iscr, (size_t)n * sizeof *a);
    if (!a) return -1;
    st->iscr = a;
    int *b = realloc(st->keep, (size_t)n * sizeof *b);
    if (!b) return -1;
    st->keep = b;
    float *f = realloc(st->fscr, (size_t)n * sizeof *f);
    if (!f) return -1;
    st->fscr = f;
    st->scr_len = n;
    return 0;
}

/* Keep-list of a streaming-like cut (degenerate mode): the first k of n entries and the last
 * cap − k. Returns its length. */
static int streaming_keep(int n, int k, int cap, int *keep)
{
    if (n <= cap) {
        for (int j = 0; j < n; j++) keep[j] = j;
        return n;
    }
    int c = 0;
    for (int j = 0; j < k; j++) keep[c++] = j;
    for (int j = n - (cap - k); j < n; j++) keep[c++] = j;
    return c;
}

/* Keep-list of a round over n entries in position order (sink k, middle M = n − k − w, window w)
 * whose middle starts with n_old old entries; new_score [M − n_old] are the new entries' scores.
 * Writes the ascending kept indices into keep and the new n_old into *n_old_out. */
static int round_keep(const buzz_state *st, int n, int n_old, const float *new_score, int *mid,
                      int *keep, int *n_old_out)
{
    int k = st->k, w = st->w, M = n - k - w;
    if (n_old > M) n_old = M;
    /* [DECISION] the same selection in prefill and decode: one round, then interval passes
     * while the middle exceeds T. For the paper's parameters the decode round already lands
     * under T; the extra passes only keep |S| ≤ k + w + T for tiny T. */
    int c = buzz_round_select(n_old, M - n_old, new_score, st->s, st->new_sampler,
                              st->swap_strides, st->T, mid);
    int nk = 0;
    /* sink, kept middle, window */
    for (int j = 0; j < k; j++) keep[nk++] = j;
    for (int i = 0; i < c; i++) keep[nk++] = k + mid[i];
    for (int j = n - w; j < n; j++) keep[nk++] = j;
    *n_old_out = c;
    return nk;
}

/* Prefill (§4.4, Remark 2): candidates are the live slots (position order) then the chunk. If
 * they fit in k + w + T all are kept; else one round (live old samples stay old, the rest is
 * new, scored by accumulated attention = stored score + this chunk's column sums), then
 * interval passes until the middle fits under T. Returns the keep count (≤ cap). */
int buzz_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    buzz_state *st = kv->pstate;
    int n = n_live + c->n_new, cap = kv->cap[kv_idx(kv, c->layer, g)];
    /* degenerate capacity: streaming cut */
    if (st->streaming) return streaming_keep(n, st->k, cap, keep);
    /* fits: keep everything, n_old unchanged */
    if (n <= st->k + st->w + st->T) {
        for (int j = 0; j < n; j++) keep[j] = j;
        return n;
    }
    if (scratch_reserve(st, n + 1) != 0) return -1;
    int64_t key = key_prefill(c->pos0);
    int n_old = n_old_at(st, c->layer, key), M = n - st->k - st->w;
    if (n_old > M) n_old = M;
    /* scores of the new region: accumulated (stored + chunk colsum) or this pass only */
    const float *S = kv_scores(kv, c->layer, g);
    const float *colsum = c->colsum ? c->colsum + (size_t)g * c->cand_stride : NULL;
    for (int j = st->k + n_old, i = 0; j < st->k + M; j++, i++) {
        float a = (!st->score_current && S && j < n_live) ? S[j] : 0.0f;
        st->fscr[i] = a + (colsum ? colsum[j] : 0.0f);
    }
    int n_old_new, nk = round_keep(st, n, n_old, st->fscr, st->iscr, keep, &n_old_new);
    n_old_set(st, c->layer, key, n_old_new);
    return nk;
}

/* Decode, after attention (§4.4): adds the group's probabilities to the slots' scores (all
 * slots, the new token included; --buzz-score current replaces them), then fires a round when
 * the middle holds more than T tokens. probs[h*stride + j], h < G, j < len. */
void buzz_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    buzz_state *st = kv->pstate;
    int idx = kv_idx(kv, layer, g), len = kv->len[idx], G = kv->n_heads / kv->n_kv_heads;
    float *S = kv_scores(kv, layer, g);
    /* accumulate attention: sum over the G query heads of the group (§12) */
    if (probs && S) {
        for (int j = 0; j < len; j++) {
            float a = 0.0f;
            for (int h = 0; h < G; h++) a += probs[(size_t)h * stride + j];
            S[j] = st->score_current ? a : S[j] + a;
        }
    }
    /* degenerate capacity: drop the oldest non-sink tokens beyond the capacity */
    if (st->streaming) {
        if (len > kv->cap[idx]) {
            int nk = streaming_keep(len, st->k, kv->cap[idx], st->keep);
            kv_compact(kv, layer, g, st->keep, nk);
        }
        return;
    }
    /* trigger: sink and window fill first, then a round when the middle exceeds T */
    if (len <= st->k + st->w) return;
    if (len - st->k - st->w <= st->T) return;
    /* round: old by interval, new by local max over the accumulated scores */
    int64_t key = key_decode(t);
    int n_old = n_old_at(st, layer, key), n_old_new;
    int nk = round_keep(st, len, n_old, S ? S + st->k + n_old : NULL, st->iscr, st->keep,
                        &n_old_new);
    kv_compact(kv, layer, g, st->keep, nk);
    n_old_set(st, layer, key, n_old_new);
}

const policy_ops policy_buzz = {
    .name = "buzz",
    .paper = "BUZZ (Zhao et al.), §3.3-3.4, Alg. 1-2; code danielfang001/buzz-llm",
    .params = "--buzz-k 4 --buzz-s 5 --buzz-w/--buzz-T auto (k+w+T = C by the T/w theorem) "
              "--budget-mode peak|avg --buzz-new-sampler localmax|interval --buzz-swap-strides 0 "
              "--buzz-score accum|current",
    .param_defs = buzz_param_defs,
    .stats = KV_STAT_PREFILL_COLSUM | KV_STAT_DECODE_PROBS,
    .init = buzz_init,
    .on_prefill = buzz_on_prefill,
    .post_attn = buzz_post_attn,
    .free_state = buzz_free_state,
};
