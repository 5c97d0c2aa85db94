/* Generic property tests for every eviction policy that is built (POLICIES.md §15.1).
 *
 * The real model (../shared/models/stories260K, or $LLM_SHARED/models/stories260K) is run
 * through the engine API (engine_prefill, engine_decode) for every policy of policy_all() on
 * several seeded random cases (prompt tokens drawn from the vocabulary, 40..300 of them,
 * 20..80 new tokens, budget in {0.2, 0.3, 0.5, 0.7, 1.0}; some with a chunked prefill, two with
 * --rope shifted, two with tiny absolute capacities of 6 and 12 tokens). The policy's hooks are
 * wrapped: the policy_ops struct is copied and each hook replaced by a checking wrapper that
 * calls the original and then checks the cache. Properties:
 *
 *  - capacity: |S_{l,g}| <= C_{l,g} after the eviction hook of every step (no opt-in modes
 *    are enabled), and a pre-attention slot stays inside the region (<= C);
 *  - positions: the live positions of a head are unique, strictly increasing in slot order
 *    for the policies that compact in position order (full, buzz, buzz_logn, snap family,
 *    subgen), never above the current position and only ever positions that were written;
 *  - protected sets (§15.1.3) are never evicted: streaming/buzz sinks 0..k-1, buzz's last w,
 *    hashevict/l2norm/scissorhands/random positions < 4 and >= t-10, the snap family's last 32
 *    prompt positions, h2o's R most recent, local's window, and for `full` everything;
 *  - cadence (§15.1.6): h2o, local, streaming, hashevict, l2norm, scissorhands (and tova,
 *    random, whose §0 rows say the same) evict exactly one token per decode step once full and
 *    none before; buzz evicts only on round steps (only when full, never on two consecutive
 *    steps); the snap family and subgen never evict during decode while below capacity (in
 *    reserve mode, the default, not at all; in its capped fallback only when a head reaches
 *    its capacity, ada_*: any head of the layer);
 *  - nothing is evicted when the budget's capacity covers prompt + max_new (§1.2 identity);
 *  - state follows its slot (§15.1.5) for h2o, buzz and buzz_logn: every probability passed to
 *    post_attn and every prefill column sum is recorded, each surviving position's accumulated
 *    score is recomputed from scratch and compared with kv->score at its slot (1e-5 relative);
 *  - prefill keep-lists are ascending, unique, in range and within capacity;
 *  - kv->evictions grows by exactly the number of tokens that left the cache;
 *  - the K and V rows of every live slot are the ones written for its position (they move with
 *    it through swaps, compaction and the ada_* re-layout);
 *  - heads of a layer hold equal counts (all but ada_*, §15.1.4), and tova, local and
 *    streaming the same positions in every head.
 *
 * All cases run once (the first test that needs them); each test then reports one property
 * over all policies and cases, naming policy, case, layer, head and position of the first
 * violations. A table policy x property is printed at the end.
 *
 * Kept whole (over ~500 lines): one harness. Every (policy, case) run goes once through the
 * model with the checking wrappers (ensure_run) and each cmocka test reports one property over
 * all of those runs; split binaries would each rerun the model on every case.
 * Kept whole (over ~500 lines): one harness (the checking context, hook wrappers, step bookkeeping and the
 * classification of every hook call) feeds all twelve property reports from the same runs; split,
 * each file would need the whole harness again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eviction/eviction.h"
#include "kernels/kernels.h"
#include "model/model.h"

/* ------------------------------------------------------------------ properties, results */

enum {
    P_RUN,      /* the run itself: kv_init / engine_init / prefill / decode succeed */
    P_CAP,      /* |S| <= C after every eviction hook; pre_attn slot inside the region */
    P_ORDER,    /* unique positions; strictly increasing for compacting policies */
    P_RANGE,    /* positions <= current position, only written positions */
    P_PROTECT,  /* protected sets never evicted */
    P_CADENCE,  /* eviction cadence per policy */
    P_COVER,    /* no eviction when the capacity covers the run */
    P_SCORE,    /* accumulated score follows its slot (h2o, buzz) */
    P_KEEP,     /* prefill keep-lists ascending, in range, <= cap */
    P_COUNTER,  /* kv->evictions == tokens dropped */
    P_KV,       /* the K/V rows of a slot are those written for its position */
    P_UNIFORM,  /* heads of a layer hold equal counts (tova, local, streaming: equal sets) */
    P_N
};
static const char *prop_name[P_N] = {"run", "capacity", "order", "range", "protected",
                                     "cadence", "cover", "score", "keep", "counter", "kv-data", "uniform"};

#define MAX_POL 64
#define MSG_PER 3
#define MSG_LEN 480

typedef struct {
    long long ev_prefill, ev_decode; /* tokens evicted over all cases (shows the checks bite) */
    int checked[P_N];    /* 1: the property applied to this policy in at least one case */
    int violations[P_N];
    char msg[P_N][MSG_PER][MSG_LEN];
} pol_result;

static struct {
    int tried, loaded;
    char skip_reason[LLM_ERR_LEN + 1100];
    model_weights mw;
    int ran;
    int n_pol;
    const policy_ops *pols[MAX_POL];
    pol_result res[MAX_POL];
} G;

/* ------------------------------------------------------------------ the cases */

typedef struct {
    uint64_t seed;
    int n_prompt, max_new, chunk; /* chunk 0: the whole prompt in one pass */
    int shifted;                  /* --rope shifted (keys stored before RoPE, §1.7) */
    double budget;
    int kv_dtype;                 /* the cache's K/V dtype (--kv-dtype): DT_F32 but cases 14-16 */
} test_case;

#define N_CASES 17
static test_case cases[N_CASES];

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int rand_range(uint64_t *s, int lo, int hi) /* inclusive */
{
    return lo + (int)(splitmix(s) % (uint64_t)(hi - lo + 1));
}

static void make_cases(void)
{
    static const double budgets[5] = {0.2, 0.3, 0.5, 0.7, 1.0};
    for (int i = 0; i < N_CASES; i++) {
        uint64_t s = 0x5eed0000ull + (uint64_t)i * 7919;
        test_case *c = &cases[i];
        c->seed = s;
        c->n_prompt = rand_range(&s, 40, 300);
        c->max_new = rand_range(&s, 20, 80);
        /* every budget of the set at least once, then random ones */
        c->budget = i < 5 ? budgets[i] : budgets[rand_range(&s, 0, 4)];
        /* two tiny absolute capacities (budget > 1 = tokens, §1.2): the policies' floors and
         * degenerate modes (streaming sink C/2 at C <= 8, buzz as streaming below k + s + 2) */
        if (i == 12) c->budget = 6;
        if (i == 13) c->budget = 12;
        /* cases 9 and 11 run with --rope shifted */
        c->shifted = i == 9 || i == 11;
        /* cases 5, 6 and 10 prefill in chunks (eviction between chunks) */
        c->chunk = (i == 5 || i == 6 || i == 10) ? rand_range(&s, 16, 96) : 0;
        /* cases 14-16: a 16-bit cache (rows of 2 bytes moved, compacted, re-laid out): f16
         * chunked at 0.3, bf16 at 0.5, f16 shifted at 0.7 */
        c->kv_dtype = i == 15 ? DT_BF16 : i >= 14 ? DT_F16 : DT_F32;
        if (i >= 14) c->budget = budgets[1 + (i - 14)];
        if (i == 14) c->chunk = rand_range(&s, 16, 96);
        if (i == 16) c->shifted = 1;
    }
}

/* ------------------------------------------------------------------ per-run checking context */

enum { CAD_NONE, CAD_ONE, CAD_BUZZ, CAD_PREFILL_ONLY };

typedef struct {
    const policy_ops *orig;
    policy_ops ops; /* the wrapped copy the cache runs with */
    kv_cache *kv;
    int pi, ci;
    int n_prompt, max_new, L, chunked;
    /* what applies to this policy */
    int ordered;        /* compacts in position order: strictly increasing positions */
    int cadence;        /* CAD_* */
    int score_check;    /* h2o, buzz: recompute the accumulated score */
    int prot_all;       /* everything protected (full; buzz when the budget covers the run) */
    int sink;           /* positions < sink protected */
    int win_dec;        /* after decode at t: positions > t - win_dec protected */
    int win_pre;        /* after a prefill chunk ending at e: positions > e - win_pre protected */
    int snap_obs;       /* snap family: the last snap_obs prompt positions are kept */
    int reserve;        /* prefill-only family in reserve mode: no decode eviction at all */
    int layerwise_split;/* ada_*: a re-compression re-splits the whole layer */
    int cover;          /* the budget's capacity covers prompt + max_new: nothing evictable */
    char prot_desc[160];
    /* tracking */
    int n_lg;
    float *shadow;          /* [n_lg][L] recomputed accumulated score per position */
    float *rec_k, *rec_v;   /* [n_lg][L][head_dim] K and V written for each position */
    unsigned char *prev;    /* [n_lg][L] live before the current step / chunk */
    unsigned char *now;     /* [n_lg][L] scratch */
    int *len_before;        /* [n_lg] */
    int *cap_before;        /* [n_lg] (ada_* re-partition capacities) */
    int *last_evict_step;   /* [n_lg] decode step of the last eviction (buzz cadence) */
    int in_decode, t, step; /* current decode position and step index */
    int prefill_end;        /* last position of the current prefill chunk */
    int prefill_done;
} run_ctx;

static run_ctx *R;

static void viol(int prop, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void viol(int prop, const char *fmt, ...)
{
    pol_result *res = &G.res[R->pi];
    int k = res->violations[prop]++;
    if (k >= MSG_PER) return;
    const test_case *c = &cases[R->ci];
    char body[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(res->msg[prop][k], MSG_LEN, "%s case %d (N=%d max_new=%d budget=%.1f chunk=%d%s C=%d): %s",
             R->orig->name, R->ci, c->n_prompt, c->max_new, c->budget, c->chunk,
             c->shifted ? " rope=shifted" : "",
             R->kv && R->kv->cap ? R->kv->cap[0] : -1, body);
}

static void mark(int prop) { G.res[R->pi].checked[prop] = 1; }

static int name_in(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(name, *list)) return 1;
    return 0;
}

/* Current position of the phase: the decode position, else the end of the prefill chunk. */
static int cur_pos(void) { return R->in_decode ? R->t : R->prefill_end; }

/* 1 when position p must be live in head lg after a hook at the current position cur. */
static int is_protected(int lg, int p, int cur, int decode)
{
    if (p < 0 || p > cur) return 0;
    if (R->prot_all) return 1;
    if (p < R->sink) return 1;
    int w = decode ? R->win_dec : R->win_pre;
    if (w > 0 && p > cur - w) return 1;
    (void)lg;
    if (R->snap_obs && (decode || cur == R->n_prompt - 1) && p >= R->n_prompt - R->snap_obs &&
        p < R->n_prompt)
        return 1;
    return 0;
}

/* Live bitmap of head lg into out [L]; records range/duplicate problems when check. */
static void live_map(int lg, unsigned char *out)
{
    kv_cache *kv = R->kv;
    memset(out, 0, (size_t)R->L);
    const int32_t *P = kv->pos + kv->off[lg];
    for (int j = 0; j < kv->len[lg]; j++)
        if (P[j] >= 0 && P[j] < R->L) out[P[j]] = 1;
}

/* The checks of one head after a hook: capacity (limit), positions, protected, scores. */
static void check_head(int l, int g, int cap_limit, const char *hook)
{
    kv_cache *kv = R->kv;
    int lg = kv_idx(kv, l, g), len = kv->len[lg], cap = kv->cap[lg];
    int cur = cur_pos();
    mark(P_CAP);
    if (len < 0 || len > cap + cap_limit) {
        viol(P_CAP, "after %s at pos %d: layer %d head %d holds %d > capacity %d%s", hook, cur, l, g,
             len, cap, cap_limit ? " + 1 (layer-wise hook pending)" : "");
        if (len > cap + 1 || len < 0) return; /* outside the region: do not read further */
    }
    const int32_t *P = kv->pos + kv->off[lg];
    unsigned char *seen = R->now + (size_t)lg * R->L;
    memset(seen, 0, (size_t)R->L);
    mark(P_ORDER);
    mark(P_RANGE);
    for (int j = 0; j < len; j++) {
        if (P[j] < 0 || P[j] > cur) {
            viol(P_RANGE, "after %s at pos %d: layer %d head %d slot %d holds position %d (> current)",
                 hook, cur, l, g, j, P[j]);
            continue;
        }
        if (seen[P[j]])
            viol(P_ORDER, "after %s at pos %d: layer %d head %d: position %d is live twice", hook, cur,
                 l, g, P[j]);
        seen[P[j]] = 1;
        if (R->ordered && j > 0 && P[j] <= P[j - 1])
            viol(P_ORDER, "after %s at pos %d: layer %d head %d: slot %d position %d after slot %d "
                 "position %d (policy compacts in position order)", hook, cur, l, g, j, P[j], j - 1,
                 P[j - 1]);
    }
    /* protected positions seen so far must be live */
    if (R->prot_all || R->sink || R->win_dec || R->win_pre || R->snap_obs) {
        mark(P_PROTECT);
        for (int p = 0; p <= cur && p < R->L; p++)
            if (!seen[p] && is_protected(lg, p, cur, R->in_decode)) {
                viol(P_PROTECT, "after %s at pos %d: layer %d head %d: protected position %d is not "
                     "live (%s)", hook, cur, l, g, p, R->prot_desc);
                break;
            }
    }
    /* K and V rows follow their positions (moves, compaction, re-layout) */
    mark(P_KV);
    {
        /* rows widened from the cache's dtype: the engine hands the policy (and the recorder)
         * rows already rounded to it, so they compare exactly */
        const int d = kv->head_dim;
        float kb[d], vb[d];
        for (int j = 0; j < len; j++) {
            if (P[j] < 0 || P[j] > cur || P[j] >= R->L) continue;
            size_t o = ((size_t)lg * R->L + P[j]) * d;
            if (memcmp(kv_key_f32(kv, l, g, j, kb), R->rec_k + o, (size_t)d * sizeof(float)) ||
                memcmp(kv_value_f32(kv, l, g, j, vb), R->rec_v + o, (size_t)d * sizeof(float))) {
                viol(P_KV, "after %s at pos %d: layer %d head %d slot %d: K/V differ from those written "
                     "for its position %d", hook, cur, l, g, j, P[j]);
                break;
            }
        }
    }
    /* accumulated scores follow their slots */
    if (R->score_check && kv->score) {
        mark(P_SCORE);
        const float *S = kv->score + kv->off[lg];
        for (int j = 0; j < len; j++) {
            if (P[j] < 0 || P[j] >= R->L) continue;
            float want = R->shadow[(size_t)lg * R->L + P[j]], got = S[j];
            float tol = 1e-5f * fmaxf(fabsf(want), fabsf(got)) + 1e-7f;
            if (!(fabsf(want - got) <= tol)) {
                viol(P_SCORE, "after %s at pos %d: layer %d head %d slot %d (position %d): score %.9g, "
                     "recomputed from all probabilities %.9g", hook, cur, l, g, j, P[j], got, want);
                break;
            }
        }
    }
}

/* ------------------------------------------------------------------ hook wrappers */

static int keep_recent(int n_cand, int cap, int *keep) /* kv_cache.c's default */
{
    int first = n_cand > cap ? n_cand - cap : 0;
    for (int j = first; j < n_cand; j++) keep[j - first] = j;
    return n_cand - first;
}

static int w_on_prefill(kv_cache *kv, const kv_prefill_chunk *c, int g, int n_live, int *keep)
{
    int l = c->layer, lg = kv_idx(kv, l, g), cap = kv->cap[lg], n_cand = n_live + c->n_new;
    const int32_t *P = kv_positions(kv, l, g);
    /* candidate positions, before the policy sees them */
    int32_t *cpos = malloc((size_t)(n_cand > 0 ? n_cand : 1) * sizeof *cpos);
    unsigned char *kept = calloc((size_t)(n_cand > 0 ? n_cand : 1), 1);
    assert_non_null(cpos);
    assert_non_null(kept);
    for (int j = 0; j < n_cand; j++) cpos[j] = j < n_live ? P[j] : c->pos0 + (j - n_live);
    /* record the chunk's K/V rows (as the cache stores them) by position */
    for (int r = 0; r < c->n_new; r++) {
        int p = c->pos0 + r, d = kv->head_dim, hkv = kv->n_kv_heads;
        if (p < 0 || p >= R->L) continue;
        size_t o = ((size_t)lg * R->L + p) * d, src = ((size_t)r * hkv + g) * d;
        memcpy(R->rec_k + o, c->k_new + src, (size_t)d * sizeof(float));
        memcpy(R->rec_v + o, c->v_new + src, (size_t)d * sizeof(float));
    }
    /* the shadow score: + this chunk's column sums (summed over the group by the engine) */
    if (R->score_check && c->colsum)
        for (int j = 0; j < n_cand; j++)
            if (cpos[j] >= 0 && cpos[j] < R->L)
                R->shadow[(size_t)lg * R->L + cpos[j]] += c->colsum[(size_t)g * c->cand_stride + j];
    int n = R->orig->on_prefill ? R->orig->on_prefill(kv, c, g, n_live, keep)
                                : keep_recent(n_cand, cap, keep);
    mark(P_KEEP);
    if (n < 0 || n > cap) {
        viol(P_KEEP, "on_prefill layer %d head %d (chunk %d..%d): keeps %d of %d candidates, capacity %d",
             l, g, c->pos0, c->pos0 + c->n_new - 1, n, n_cand, cap);
    } else {
        for (int i = 0; i < n; i++) {
            if (keep[i] < 0 || keep[i] >= n_cand || (i > 0 && keep[i] <= keep[i - 1])) {
                viol(P_KEEP, "on_prefill layer %d head %d (chunk %d..%d): keep[%d] = %d (previous %d, "
                     "%d candidates): not ascending/unique/in range", l, g, c->pos0,
                     c->pos0 + c->n_new - 1, i, keep[i], i > 0 ? keep[i - 1] : -1, n_cand);
                break;
            }
            kept[keep[i]] = 1;
        }
        /* protected candidates must be kept */
        int e = c->pos0 + c->n_new - 1;
        for (int j = 0; j < n_cand; j++)
            if (!kept[j] && is_protected(lg, cpos[j], e, 0)) {
                viol(P_PROTECT, "on_prefill layer %d head %d (chunk %d..%d): protected position %d "
                     "dropped (%s)", l, g, c->pos0, e, cpos[j], R->prot_desc);
                break;
            }
        if (R->cover) {
            mark(P_COVER);
            if (n != n_cand)
                viol(P_COVER, "on_prefill layer %d head %d: the budget covers prompt + max_new = %d "
                     "but %d of %d candidates are kept", l, g, R->L, n, n_cand);
        }
    }
    free(cpos);
    free(kept);
    return n;
}

static int w_pre_attn(kv_cache *kv, int layer, int g, int t, const float *q, const float *k,
                      const float *v)
{
    int lg = kv_idx(kv, layer, g), len = kv->len[lg], cap = kv->cap[lg];
    if (t >= 0 && t < R->L) {
        size_t o = ((size_t)lg * R->L + t) * kv->head_dim;
        memcpy(R->rec_k + o, k, (size_t)kv->head_dim * sizeof(float));
        memcpy(R->rec_v + o, v, (size_t)kv->head_dim * sizeof(float));
    }
    int slot = R->orig->pre_attn ? R->orig->pre_attn(kv, layer, g, t, q, k, v) : len;
    mark(P_CAP);
    if (slot < 0 || slot > len || slot > cap) {
        viol(P_CAP, "pre_attn layer %d head %d t=%d: slot %d outside 0..min(len %d, capacity %d)", layer,
             g, t, slot, len, cap);
        /* the engine would write outside the region: stop the run safely */
        return slot < 0 ? 0 : (slot > cap ? cap : slot);
    }
    if (slot < len) {
        int victim = kv->pos[kv->off[lg] + slot];
        if (R->prot_all || R->sink || R->win_dec || R->snap_obs) mark(P_PROTECT);
        if (is_protected(lg, victim, t, 1))
            viol(P_PROTECT, "pre_attn layer %d head %d t=%d: overwrites protected position %d (%s)", layer,
                 g, t, victim, R->prot_desc);
    }
    return slot;
}

static void w_post_attn(kv_cache *kv, int layer, int g, int t, const float *probs, int stride)
{
    int lg = kv_idx(kv, layer, g), len = kv->len[lg], G_ = kv->n_heads / kv->n_kv_heads;
    /* the shadow score: + the group's probabilities (summed over the G query heads first) */
    if (R->score_check && probs) {
        const int32_t *P = kv_positions(kv, layer, g);
        for (int j = 0; j < len; j++) {
            float sum = 0.0f;
            for (int h = 0; h < G_; h++) sum += probs[(size_t)h * stride + j];
            if (P[j] >= 0 && P[j] < R->L) R->shadow[(size_t)lg * R->L + P[j]] += sum;
        }
    }
    if (R->orig->post_attn) R->orig->post_attn(kv, layer, g, t, probs, stride);
    /* layer-wise policies evict in post_attn_layer: one extra entry allowed until then */
    check_head(layer, g, R->orig->post_attn_layer ? 1 : 0, "post_attn");
}

static void w_post_attn_layer(kv_cache *kv, int layer, int t, const float *probs, int stride)
{
    R->orig->post_attn_layer(kv, layer, t, probs, stride);
    for (int g = 0; g < kv->n_kv_heads; g++) check_head(layer, g, 0, "post_attn_layer");
}

/* ------------------------------------------------------------------ classification */

static const char *const SNAP[] = {"snapkv", "pyramidkv", "ada_snapkv", "ada_pyramidkv", NULL};
static const char *const ORDERED[] = {"full", "buzz", "buzz_logn", "snapkv", "pyramidkv",
                                      "ada_snapkv", "ada_pyramidkv", "subgen", NULL};
static const char *const ONE_PER_STEP[] = {"h2o", "local", "streaming", "hashevict", "l2norm",
                                           "scissorhands", "tova", "random", NULL};
static const char *const SINK4_RECENT10[] = {"hashevict", "l2norm", "scissorhands", "random", NULL};

static void classify(const policy_params *pp)
{
    const char *name = R->orig->name;
    kv_cache *kv = R->kv;
    int C = kv->cap[0];
    R->ordered = name_in(name, ORDERED);
    R->score_check = !strcmp(name, "h2o") || !strcmp(name, "buzz") || !strcmp(name, "buzz_logn");
    R->cadence = name_in(name, ONE_PER_STEP) ? CAD_ONE
               : (!strcmp(name, "buzz") || !strcmp(name, "buzz_logn")) ? CAD_BUZZ
               : (name_in(name, SNAP) || !strcmp(name, "subgen")) ? CAD_PREFILL_ONLY
                                                                  : CAD_NONE;
    R->cover = kv_budget_capacity(pp, R->n_prompt, R->max_new, 1) >= R->L;
    R->layerwise_split = !strncmp(name, "ada_", 4);
    if (name_in(name, SNAP)) {
        /* §7.6: reserve unless C - max_new cannot hold the window + 1 (C_min = 33) */
        int Cs = kv_budget_capacity(pp, R->n_prompt, R->max_new, 33);
        R->reserve = Cs >= R->L || Cs - R->max_new >= 33;
    } else if (!strcmp(name, "subgen")) {
        /* subgen's reserve needs C - max_new >= 2 (one center, one recent; C_min = 2) */
        int Cg = kv_budget_capacity(pp, R->n_prompt, R->max_new, 2);
        R->reserve = Cg >= R->L || Cg - R->max_new >= 2;
    }
    snprintf(R->prot_desc, sizeof R->prot_desc, "none");
    if (!strcmp(name, "full")) {
        R->prot_all = 1;
        snprintf(R->prot_desc, sizeof R->prot_desc, "full keeps everything");
    } else if (!strcmp(name, "local")) {
        R->win_dec = R->win_pre = C;
        snprintf(R->prot_desc, sizeof R->prot_desc, "local keeps the %d most recent", C);
    } else if (!strcmp(name, "streaming")) {
        R->sink = C <= 8 ? C / 2 : 4;
        R->win_dec = R->win_pre = C - R->sink;
        snprintf(R->prot_desc, sizeof R->prot_desc, "streaming: sinks 0..%d + the %d most recent",
                 R->sink - 1, C - R->sink);
    } else if (!strcmp(name, "h2o")) {
        int Rr = C - C / 2;
        R->win_dec = R->win_pre = Rr;
        snprintf(R->prot_desc, sizeof R->prot_desc, "h2o: the R = %d most recent", Rr);
    } else if (!strcmp(name, "buzz") || !strcmp(name, "buzz_logn")) {
        /* §4.6 peak mapping, k = 4, s = 5: w = floor((C-k)/(1 + 26/6)); C < k+s+2: streaming */
        int Cb = kv_budget_capacity(pp, R->n_prompt, R->max_new, 1), k = 4, s = 5;
        if (Cb >= R->L) {
            R->prot_all = 1;
            snprintf(R->prot_desc, sizeof R->prot_desc, "buzz: budget covers the run, nothing evictable");
        } else if (Cb < k + s + 2) {
            R->sink = k;
            R->win_dec = R->win_pre = Cb - k;
            snprintf(R->prot_desc, sizeof R->prot_desc, "buzz (degenerate C=%d): sinks 0..3 + the %d most recent",
                     Cb, Cb - k);
            R->cadence = CAD_ONE;
        } else {
            long long room = Cb - k, rd = s + 1, rn = (long long)s * s + 1;
            int w = (int)(room * rd / (rd + rn));
            if (w < 1) w = 1;
            R->sink = k;
            R->win_dec = R->win_pre = w;
            snprintf(R->prot_desc, sizeof R->prot_desc, "buzz: sinks 0..3 + window w = %d", w);
        }
    } else if (name_in(name, SINK4_RECENT10)) {
        R->sink = 4;
        R->win_dec = 11; /* t-10 .. t (t-10..t-1 protected at step t, t itself written) */
        R->win_pre = 10; /* the 10 most recent prompt positions */
        snprintf(R->prot_desc, sizeof R->prot_desc, "%s: positions < 4 and >= t-10", name);
    } else if (name_in(name, SNAP) && R->reserve && !R->chunked) {
        /* reserve mode keeps the 32-token observation window (the capped fallback shrinks it) */
        R->snap_obs = 32;
        snprintf(R->prot_desc, sizeof R->prot_desc, "%s: the last 32 prompt positions", name);
    }
}

/* ------------------------------------------------------------------ step bookkeeping */

static void snapshot(void)
{
    kv_cache *kv = R->kv;
    for (int lg = 0; lg < R->n_lg; lg++) {
        live_map(lg, R->prev + (size_t)lg * R->L);
        R->len_before[lg] = kv->len[lg];
        R->cap_before[lg] = kv->cap[lg];
    }
}

/* After a prefill chunk [pos0, pos0+n) or a decode step (n = 1, pos0 = t): the tokens that
 * left, the cadence, the counter, and the full head checks. */
static void after_step(int pos0, int n, int64_t ev_before, const char *what)
{
    kv_cache *kv = R->kv;
    int64_t dropped_total = 0;
    for (int l = 0; l < kv->n_layers; l++)
        for (int g = 0; g < kv->n_kv_heads; g++) {
            int lg = kv_idx(kv, l, g), cap = kv->cap[lg];
            check_head(l, g, 0, what);
            if (kv->len[lg] < 0 || kv->len[lg] > cap + 1) continue;
            unsigned char *prev = R->prev + (size_t)lg * R->L, *now = R->now + (size_t)lg * R->L;
            live_map(lg, now);
            for (int p = pos0; p < pos0 + n && p < R->L; p++) prev[p] = 1;
            int dropped = 0, first_dropped = -1;
            for (int p = 0; p < R->L; p++) {
                if (prev[p] && !now[p]) {
                    dropped++;
                    if (first_dropped < 0) first_dropped = p;
                }
                if (now[p] && !prev[p])
                    viol(P_RANGE, "after %s at pos %d: layer %d head %d: position %d is live but was "
                         "never written", what, pos0 + n - 1, l, g, p);
            }
            dropped_total += dropped;
            if (R->in_decode) G.res[R->pi].ev_decode += dropped;
            else G.res[R->pi].ev_prefill += dropped;
            if (R->cover) {
                mark(P_COVER);
                if (dropped)
                    viol(P_COVER, "after %s at pos %d: layer %d head %d: the budget covers prompt + "
                         "max_new = %d (capacity %d) but %d token(s) were evicted (first: position %d)",
                         what, pos0 + n - 1, l, g, R->L, cap, dropped, first_dropped);
            }
            if (!R->in_decode) continue;
            /* decode cadence */
            int full = R->len_before[lg] >= cap;
            switch (R->cadence) {
            case CAD_ONE:
                mark(P_CADENCE);
                if (dropped != (full ? 1 : 0))
                    viol(P_CADENCE, "decode t=%d layer %d head %d: %d eviction(s) with %d of %d slots "
                         "live before the step (expected %d)", R->t, l, g, dropped,
                         R->len_before[lg], cap, full ? 1 : 0);
                break;
            case CAD_BUZZ:
                mark(P_CADENCE);
                if (dropped && !full)
                    viol(P_CADENCE, "decode t=%d layer %d head %d: buzz evicted %d with %d of %d slots "
                         "live (a round fires only when the middle exceeds T, i.e. when full)", R->t,
                         l, g, dropped, R->len_before[lg], cap);
                if (dropped && R->last_evict_step[lg] == R->step - 1)
                    viol(P_CADENCE, "decode t=%d layer %d head %d: buzz evicted on two consecutive "
                         "steps (rounds must leave the middle below T)", R->t, l, g);
                break;
            case CAD_PREFILL_ONLY: {
                /* reserve (default): the prompt was compressed to C - max_new, decode only
                 * appends. The capped fallback re-compresses a head when it reaches its
                 * capacity (ada_*: the whole layer, as the split is re-run). */
                mark(P_CADENCE);
                int reached = R->len_before[lg] + 1 >= cap;
                if (R->layerwise_split)
                    for (int h = 0; h < kv->n_kv_heads; h++) {
                        int lh = kv_idx(kv, l, h);
                        if (R->len_before[lh] + 1 >= R->cap_before[lh]) reached = 1;
                    }
                if (dropped && R->reserve)
                    viol(P_CADENCE, "decode t=%d layer %d head %d: %d eviction(s) in reserve mode "
                         "(%d of %d slots live before the step; decode must only append)", R->t, l, g,
                         dropped, R->len_before[lg], cap);
                else if (dropped && !reached)
                    viol(P_CADENCE, "decode t=%d layer %d head %d: %d eviction(s) with %d of %d slots "
                         "live (no eviction during decode while below capacity)", R->t, l, g,
                         dropped, R->len_before[lg], cap);
                break;
            }
            default:
                break;
            }
            if (dropped) R->last_evict_step[lg] = R->step;
        }
    /* uniform policies: equal counts over the heads of a layer (ada_* split a layer's budget
     * unevenly); layer-wise tova and the position-only local/streaming: equal position sets */
    if (!R->layerwise_split) {
        int same_sets = !strcmp(R->orig->name, "tova") || !strcmp(R->orig->name, "local") ||
                        !strcmp(R->orig->name, "streaming");
        mark(P_UNIFORM);
        for (int l = 0; l < kv->n_layers; l++)
            for (int g = 1; g < kv->n_kv_heads; g++) {
                int a = kv_idx(kv, l, 0), b = kv_idx(kv, l, g);
                if (kv->len[a] != kv->len[b]) {
                    viol(P_UNIFORM, "after %s at pos %d: layer %d: head 0 holds %d tokens, head %d holds %d",
                         what, pos0 + n - 1, l, kv->len[a], g, kv->len[b]);
                    break;
                }
                if (same_sets && kv->len[a] >= 0 && kv->len[a] <= kv->cap[a] + 1) {
                    live_map(a, R->now);
                    live_map(b, R->now + R->L);
                    if (memcmp(R->now, R->now + R->L, (size_t)R->L)) {
                        viol(P_UNIFORM, "after %s at pos %d: layer %d: heads 0 and %d hold different "
                             "positions (%s keeps the same set in every head)", what, pos0 + n - 1, l,
                             g, R->orig->name);
                        break;
                    }
                }
            }
    }
    /* the regions: inside the allocation, disjoint (ada_* re-partition their layer's arena) */
    for (int a = 0; a < R->n_lg; a++) {
        if (kv->off[a] + (size_t)kv->cap[a] + 1 > kv->n_slots)
            viol(P_CAP, "after %s at pos %d: region %d (layer %d head %d) [%zu, %zu] exceeds the %zu "
                 "allocated slots", what, pos0 + n - 1, a, a / kv->n_kv_heads, a % kv->n_kv_heads,
                 kv->off[a], kv->off[a] + (size_t)kv->cap[a], kv->n_slots);
        for (int b = a + 1; b < R->n_lg; b++)
            if (kv->off[a] < kv->off[b] + (size_t)kv->cap[b] + 1 &&
                kv->off[b] < kv->off[a] + (size_t)kv->cap[a] + 1)
                viol(P_CAP, "after %s at pos %d: regions %d and %d overlap", what, pos0 + n - 1, a, b);
    }
    mark(P_COUNTER);
    if (kv->evictions - ev_before != dropped_total)
        viol(P_COUNTER, "after %s at pos %d: kv->evictions grew by %lld, but %lld token(s) left the "
             "cache", what, pos0 + n - 1, (long long)(kv->evictions - ev_before),
             (long long)dropped_total);
}

/* ------------------------------------------------------------------ one run */

static void run_case(int pi, int ci)
{
    const test_case *cs = &cases[ci];
    const model_config *cfg = &G.mw.cfg;
    run_ctx rc;
    memset(&rc, 0, sizeof rc);
    R = &rc;
    rc.orig = G.pols[pi];
    rc.pi = pi;
    rc.ci = ci;
    rc.n_prompt = cs->n_prompt;
    rc.max_new = cs->max_new;
    rc.L = cs->n_prompt + cs->max_new;
    rc.chunked = cs->chunk > 0 && cs->chunk < cs->n_prompt;
    /* the wrapped ops */
    rc.ops = *rc.orig;
    rc.ops.on_prefill = w_on_prefill;
    rc.ops.pre_attn = w_pre_attn;
    rc.ops.post_attn = w_post_attn;
    rc.ops.post_attn_layer = rc.orig->post_attn_layer ? w_post_attn_layer : NULL;

    /* prompt: BOS + random tokens of the vocabulary (no BOS/EOS inside) */
    uint64_t s = cs->seed ^ 0xabcdefull;
    int *tokens = malloc((size_t)cs->n_prompt * sizeof *tokens);
    assert_non_null(tokens);
    tokens[0] = cfg->bos_token_id;
    for (int i = 1; i < cs->n_prompt; i++) tokens[i] = rand_range(&s, 3, cfg->vocab_size - 1);

    kv_cache kv;
    engine e;
    sampler smp = {0};
    memset(&e, 0, sizeof e);
    char err[LLM_ERR_LEN];
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = cs->budget;
    pp.seed = cs->seed;
    pp.rope_shifted = cs->shifted;
    pp.kv_dtype = cs->kv_dtype;
    pp.hooks_always = 1;   /* the properties are about the hooks: run them at budget 1.0 too */
    rc.kv = NULL;
    mark(P_RUN);
    if (kv_init(&kv, &rc.ops, &pp, cfg->n_layers, cfg->n_kv_heads, cfg->n_heads, cfg->head_dim,
                cs->n_prompt, cs->max_new, err, sizeof err) != 0) {
        if (cs->shifted && strstr(err, "--rope")) {
            /* a policy may refuse --rope shifted outright (one-line error): not a violation */
            printf("note: %s case %d: --rope shifted refused: %s\n", rc.orig->name, ci, err);
            free(tokens);
            R = NULL;
            return;
        }
        viol(P_RUN, "kv_init failed: %s", err);
        free(tokens);
        R = NULL;
        return;
    }
    rc.kv = &kv;
    rc.n_lg = kv.n_layers * kv.n_kv_heads;
    classify(&pp);
    rc.shadow = calloc((size_t)rc.n_lg * rc.L, sizeof *rc.shadow);
    rc.prev = calloc((size_t)rc.n_lg * rc.L, 1);
    rc.rec_k = calloc((size_t)rc.n_lg * rc.L * kv.head_dim, sizeof(float));
    rc.rec_v = calloc((size_t)rc.n_lg * rc.L * kv.head_dim, sizeof(float));
    rc.now = calloc((size_t)rc.n_lg * rc.L, 1);
    rc.len_before = calloc((size_t)rc.n_lg, sizeof *rc.len_before);
    rc.cap_before = calloc((size_t)rc.n_lg, sizeof *rc.cap_before);
    rc.last_evict_step = malloc((size_t)rc.n_lg * sizeof *rc.last_evict_step);
    assert_true(rc.rec_k && rc.rec_v && rc.shadow && rc.prev && rc.now && rc.len_before && rc.cap_before && rc.last_evict_step);
    for (int i = 0; i < rc.n_lg; i++) rc.last_evict_step[i] = -10;

    int chunk = rc.chunked ? cs->chunk : cs->n_prompt;
    /* one thread: the tiny model gains nothing from more, and OpenMP barriers spin badly on a
     * loaded machine */
    int nt = 1;
    cpu_set_threads(nt);
    if (engine_init(&e, &G.mw, &kv, chunk, nt, err, sizeof err) != 0) {
        viol(P_RUN, "engine_init failed: %s", err);
        goto out;
    }
    /* prefill, chunk by chunk */
    for (int off = 0; off < cs->n_prompt; off += chunk) {
        int m = cs->n_prompt - off < chunk ? cs->n_prompt - off : chunk;
        rc.prefill_end = off + m - 1;
        snapshot();
        int64_t ev = kv.evictions;
        if (engine_prefill(&e, tokens + off, m, off, NULL, err, sizeof err) != 0) {
            viol(P_RUN, "engine_prefill(%d..%d) failed: %s", off, off + m - 1, err);
            goto out;
        }
        after_step(off, m, ev, "prefill");
    }
    rc.prefill_done = 1;
    /* decode max_new steps (positions n_prompt .. n_prompt + max_new - 1), sampled tokens */
    if (sampler_init(&smp, cfg->vocab_size, 0.8f, 0.95f, 0, cs->seed) != 0) {
        viol(P_RUN, "sampler_init failed");
        goto out;
    }
    rc.in_decode = 1;
    for (int i = 0; i < cs->max_new; i++) {
        int t = cs->n_prompt + i;
        int tok = sampler_sample(&smp, e.logits);
        rc.t = t;
        rc.step = i;
        snapshot();
        int64_t ev = kv.evictions;
        if (engine_decode(&e, tok, t, err, sizeof err) != 0) {
            viol(P_RUN, "engine_decode(t=%d) failed: %s", t, err);
            goto out;
        }
        after_step(t, 1, ev, "decode");
    }
out:
    sampler_free(&smp);
    engine_free(&e);
    kv_free(&kv);
    free(tokens);
    free(rc.shadow);
    free(rc.prev);
    free(rc.rec_k);
    free(rc.rec_v);
    free(rc.now);
    free(rc.len_before);
    free(rc.cap_before);
    free(rc.last_evict_step);
    R = NULL;
}

/* ------------------------------------------------------------------ model, running, reporting */

static int load_model(void)
{
    if (G.tried) return G.loaded;
    G.tried = 1;
    const char *shared = getenv("LLM_SHARED");
    char dir[512], cfgp[540];
    snprintf(dir, sizeof dir, "%s/models/stories260K", shared && *shared ? shared : "../shared");
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    struct stat st;
    if (stat(cfgp, &st) != 0) {
        snprintf(G.skip_reason, sizeof G.skip_reason, "model %s not found (set LLM_SHARED)", dir);
        return 0;
    }
    char err[LLM_ERR_LEN];
    if (model_load(dir, &G.mw, err, sizeof err) != 0 || model_to_f32(&G.mw, err, sizeof err) != 0) {
        snprintf(G.skip_reason, sizeof G.skip_reason, "cannot load %s: %s", dir, err);
        return 0;
    }
    G.loaded = 1;
    return 1;
}

static void ensure_run(void)
{
    if (!load_model()) {
        printf("SKIP: %s\n", G.skip_reason);
        skip();
    }
    if (G.ran) return;
    G.ran = 1;
    make_cases();
    const policy_ops *const *all = policy_all();
    for (int i = 0; all[i] && G.n_pol < MAX_POL; i++) G.pols[G.n_pol++] = all[i];
    printf("policies built: ");
    for (int i = 0; i < G.n_pol; i++) printf("%s%s", G.pols[i]->name, i + 1 < G.n_pol ? " " : "\n");
    for (int i = 0; i < N_CASES; i++)
        printf("case %d: N=%d max_new=%d budget=%.1f%s chunk=%d%s kv=%s\n", i, cases[i].n_prompt,
               cases[i].max_new, cases[i].budget, cases[i].budget > 1 ? " (tokens)" : "",
               cases[i].chunk, cases[i].shifted ? " rope=shifted" : "", kv_dtype_name((dtype_t)cases[i].kv_dtype));
    for (int pi = 0; pi < G.n_pol; pi++)
        for (int ci = 0; ci < N_CASES; ci++) run_case(pi, ci);
}

/* Fails the test when any policy violated prop; prints the first messages of each. */
static void report(int prop)
{
    ensure_run();
    int bad = 0, applied = 0;
    for (int pi = 0; pi < G.n_pol; pi++) {
        pol_result *r = &G.res[pi];
        applied += r->checked[prop];
        if (!r->violations[prop]) continue;
        bad++;
        printf("  %s: %d violation(s) of '%s'\n", G.pols[pi]->name, r->violations[prop], prop_name[prop]);
        for (int k = 0; k < MSG_PER && k < r->violations[prop]; k++) printf("    %s\n", r->msg[prop][k]);
    }
    if (prop != P_RUN && prop != P_SCORE && !applied && G.n_pol > 0)
        fail_msg("property '%s' was checked for no policy", prop_name[prop]);
    if (bad) fail_msg("%d polic%s violate '%s'", bad, bad == 1 ? "y" : "ies", prop_name[prop]);
}

static void test_every_run_completes_without_engine_or_policy_errors(void **st) { (void)st; report(P_RUN); }
static void test_live_slots_never_exceed_capacity_after_any_hook(void **st) { (void)st; report(P_CAP); }
static void test_live_positions_are_unique_and_ordered_for_compacting_policies(void **st) { (void)st; report(P_ORDER); }
static void test_live_positions_never_exceed_the_current_position(void **st) { (void)st; report(P_RANGE); }
static void test_protected_positions_are_never_evicted(void **st) { (void)st; report(P_PROTECT); }
static void test_eviction_cadence_matches_the_policy(void **st) { (void)st; report(P_CADENCE); }
static void test_nothing_is_evicted_when_capacity_covers_the_run(void **st) { (void)st; report(P_COVER); }
static void test_accumulated_scores_follow_their_slots_h2o_buzz(void **st)
{
    (void)st;
    ensure_run();
    int any = 0;
    for (int pi = 0; pi < G.n_pol; pi++) any |= G.res[pi].checked[P_SCORE];
    if (!any) {
        printf("SKIP: neither h2o nor buzz is built\n");
        skip();
    }
    report(P_SCORE);
}
static void test_prefill_keep_lists_are_ascending_and_within_capacity(void **st) { (void)st; report(P_KEEP); }
static void test_eviction_counter_equals_tokens_dropped(void **st) { (void)st; report(P_COUNTER); }
static void test_keys_and_values_stay_with_their_positions(void **st) { (void)st; report(P_KV); }
static void test_heads_of_a_layer_hold_equal_counts_for_uniform_policies(void **st) { (void)st; report(P_UNIFORM); }

static int print_table(void **st)
{
    (void)st;
    if (!G.ran) return 0;
    printf("\nproperty results per policy (%d cases each; ok / FAIL(n violations) / - not applicable):\n",
           N_CASES);
    printf("%-14s", "policy");
    for (int p = 0; p < P_N; p++) printf(" %-10s", prop_name[p]);
    printf(" evicted(prefill/decode)\n");
    for (int pi = 0; pi < G.n_pol; pi++) {
        printf("%-14s", G.pols[pi]->name);
        for (int p = 0; p < P_N; p++) {
            char cell[32];
            if (G.res[pi].violations[p]) snprintf(cell, sizeof cell, "FAIL(%d)", G.res[pi].violations[p]);
            else snprintf(cell, sizeof cell, "%s", G.res[pi].checked[p] ? "ok" : "-");
            printf(" %-10s", cell);
        }
        printf(" %lld/%lld\n", G.res[pi].ev_prefill, G.res[pi].ev_decode);
    }
    if (G.loaded) model_free(&G.mw);
    return 0;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* violation lists next to cmocka's lines */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_run_completes_without_engine_or_policy_errors),
        cmocka_unit_test(test_live_slots_never_exceed_capacity_after_any_hook),
        cmocka_unit_test(test_live_positions_are_unique_and_ordered_for_compacting_policies),
        cmocka_unit_test(test_live_positions_never_exceed_the_current_position),
        cmocka_unit_test(test_protected_positions_are_never_evicted),
        cmocka_unit_test(test_eviction_cadence_matches_the_policy),
        cmocka_unit_test(test_nothing_is_evicted_when_capacity_covers_the_run),
        cmocka_unit_test(test_accumulated_scores_follow_their_slots_h2o_buzz),
        cmocka_unit_test(test_prefill_keep_lists_are_ascending_and_within_capacity),
        cmocka_unit_test(test_eviction_counter_equals_tokens_dropped),
        cmocka_unit_test(test_keys_and_values_stay_with_their_positions),
        cmocka_unit_test(test_heads_of_a_layer_hold_equal_counts_for_uniform_policies),
    };
    return cmocka_run_group_tests_name("policy_properties", tests, NULL, print_table);
}
