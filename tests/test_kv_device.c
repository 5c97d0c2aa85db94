/* Tests for the host side of the device KV cache (eviction/kv_device.c) and the assumptions
 * the CUDA engine (model/cuda/engine.cu) builds on. None of this needs a GPU: the "device"
 * K/V is simulated here by a plain array that is only changed the way the engine changes the
 * real one (keep-list gathers through a scratch, writes at a slot, replayed moves), and must
 * end up equal to the reference CPU cache (eviction/kv_cache.c) row for row.
 *
 *  - kv_plan_bytes equals kv_bytes_allocated of kv_init for every policy (f32 K/V);
 *  - kv_check_limit: fits / does not fit, and the budget it suggests fits while 0.01 more
 *    does not;
 *  - kv_prefill_plan + a simulated device gather = kv_prefill (positions, scores, state,
 *    lengths, evictions, K/V rows), chunked prefills included, for the policies the CUDA
 *    backend runs (full, local, streaming, h2o, buzz);
 *  - kv_moves_from_positions replays the slot moves of the CPU hooks (swap-last, compaction)
 *    on the simulated device rows, over long decodes of those policies;
 *  - the length mirror of device policies: after every decode step of full, local, streaming
 *    and h2o, len = min(len + 1, cap) and evictions grow by one exactly when over capacity.
 *  - the prefill-only family's device decode steps: kv_decode_quiet only where the CPU hooks
 *    just append, and the mirror kept by kv_device_append equals the CPU cache (§7.6 modes).
 *
 * Kept whole (over ~500 lines): every test replays against the same simulated device (devsim:
 * its allocation, gathers and moves) and the policy runner built on it (run_policy); a split
 * would copy that simulator.
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

#include "eviction/eviction.h"
#include "eviction/kv_device.h"
#include "model/cuda/cuda_engine.h"
#include "tests/support/support.h"

#define D 4
#define L 2
#define HKV 2
#define H 4 /* G = 2 */
/* eviction/policy_common.h EVICT_SINK_DEFAULT / EVICT_RECENT_DEFAULT (internal to eviction/) */
#define EVICT_SINK_DEFAULT_T 4
#define EVICT_RECENT_DEFAULT_T 10

static uint64_t rng = 12345;
static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 16777216.0f;
}

/* every policy the CUDA backend runs (device or host-assisted) */
static const char *device_policies[] = {"full", "local", "streaming", "h2o", "buzz",
                                        "scissorhands", "l2norm", "hashevict", "random", "tova",
                                        "snapkv", "pyramidkv", "subgen", NULL};
static int host_assisted; /* the mode of the policy under test (DEV_POLICY_HOST) */
static int rounds_mode;   /* DEV_POLICY_ROUNDS (buzz): device scores, host rounds */
static int score_set;     /* device_policy.score_set (buzz --buzz-score current): score = Σ_h p */
static long n_rounds;     /* round steps simulated */
static const char *extra_name, *extra_value; /* one extra policy parameter, or NULL */
static long n_append, n_overwrite, n_gather_pre, n_moved_post; /* replay paths exercised */

static int init_kv(kv_cache *kv, const char *name, double budget, int n_prompt, int max_new)
{
    const char *set[] = {extra_name, extra_value, NULL};
    char err[256];
    int rc = ts_kv_try(kv, policy_find(name), budget, 0, extra_name ? set : NULL, L, HKV, H, D, n_prompt, max_new,
                       err, sizeof err);
    if (rc) fprintf(stderr, "kv_init %s: %s\n", name, err);
    return rc;
}

static void test_plan_bytes(void **st)
{
    (void)st;
    const policy_ops *const *all = policy_all();
    double budgets[] = {0.1, 0.4, 1.0, 37};
    int checked = 0;
    for (int i = 0; all[i]; i++)
        for (int b = 0; b < 4; b++) {
            policy_params p;
            memset(&p, 0, sizeof p);
            p.budget = budgets[b];
            char err[256];
            kv_cache kv;
            if (kv_init(&kv, all[i], &p, L, HKV, H, D, 120, 60, err, sizeof err) != 0) continue;
            size_t bytes = 0;
            int mc = 0;
            assert_int_equal(kv_plan_bytes(all[i], &p, L, HKV, H, D, 120, 60, sizeof(float), &bytes,
                                           &mc, err, sizeof err), 0);
            if (bytes != kv_bytes_allocated(&kv))
                fail_msg("%s budget %g: planned %zu bytes, kv_init allocated %zu", all[i]->name,
                         budgets[b], bytes, kv_bytes_allocated(&kv));
            int mc2 = 0;
            for (int j = 0; j < L * HKV; j++)
                if (kv.cap[j] > mc2) mc2 = kv.cap[j];
            assert_int_equal(mc, mc2);
            kv_free(&kv);
            checked++;
        }
    assert_true(checked >= 20);
}

static void test_check_limit(void **st)
{
    (void)st;
    char err[512];
    policy_params p;
    memset(&p, 0, sizeof p);
    p.budget = 1.0;
    const char *names[] = {"full", "h2o", "streaming", "pyramidkv", NULL};
    for (int k = 0; names[k]; k++) {
        const policy_ops *ops = policy_find(names[k]);
        if (!ops) continue;
        size_t need;
        assert_int_equal(kv_plan_bytes(ops, &p, L, HKV, H, D, 300, 100, 2, &need, NULL, err, sizeof err), 0);
        /* fits exactly */
        assert_int_equal(kv_check_limit(ops, &p, L, HKV, H, D, 300, 100, 2, (double)need, "limit", err, sizeof err), 0);
        /* a third of it does not; the suggestion fits and 0.01 more does not */
        double lim = need / 3.0;
        assert_int_equal(kv_check_limit(ops, &p, L, HKV, H, D, 300, 100, 2, lim, "--kv-mem-limit X", err, sizeof err), 1);
        const char *t = strstr(err, "try --budget ");
        if (!t) fail_msg("%s: no budget suggested: %s", names[k], err);
        assert_non_null(strstr(err, "--kv-mem-limit X"));
        double sb = atof(t + strlen("try --budget "));
        assert_true(sb > 0 && sb < 1);
        const policy_ops *plan = strcmp(names[k], "full") ? ops : policy_find("streaming");
        if (!strcmp(names[k], "full")) assert_non_null(strstr(err, "--policy streaming"));
        policy_params q = p;
        q.budget = sb;
        size_t b1, b2;
        assert_int_equal(kv_plan_bytes(plan, &q, L, HKV, H, D, 300, 100, 2, &b1, NULL, err, sizeof err), 0);
        q.budget = sb + 0.01;
        assert_int_equal(kv_plan_bytes(plan, &q, L, HKV, H, D, 300, 100, 2, &b2, NULL, err, sizeof err), 0);
        if (!((double)b1 <= lim && (double)b2 > lim))
            fail_msg("%s: suggested %.2f -> %zu bytes, +0.01 -> %zu, limit %.0f", names[k], sb, b1, b2, lim);
    }
    /* nothing fits: not even one token per head */
    const policy_ops *ops = policy_find("h2o");
    assert_int_equal(kv_check_limit(ops, &p, L, HKV, H, D, 300, 100, 2, 10.0, "lim", err, sizeof err), 1);
    assert_non_null(strstr(err, "raise the limit"));
}

/* The simulated device K/V of a cache: same regions as kv->k_data/kv->v_data (f32). */
typedef struct {
    float *k, *v, *tk, *tv;
} devsim;

static void dev_alloc(devsim *d, const kv_cache *kv)
{
    d->k = calloc(kv->n_slots * D, sizeof(float));
    d->v = calloc(kv->n_slots * D, sizeof(float));
    d->tk = calloc(kv->n_slots * D, sizeof(float));
    d->tv = calloc(kv->n_slots * D, sizeof(float));
}

static void dev_free(devsim *d)
{
    free(d->k);
    free(d->v);
    free(d->tk);
    free(d->tv);
}

/* The engine's gather_region: rows src[0..n) (src < n_live: live slot, else chunk row) into the
 * scratch, then copied back over the region's first n slots. */
static void dev_gather(devsim *d, const kv_cache *kv, int l, int g, const int *src, int n,
                       int n_live, const float *k_new, const float *v_new)
{
    size_t o = kv->off[kv_idx(kv, l, g)];
    for (int i = 0; i < n; i++) {
        int j = src[i];
        const float *ks = j < n_live ? d->k + (o + j) * D : k_new + ((size_t)(j - n_live) * HKV + g) * D;
        const float *vs = j < n_live ? d->v + (o + j) * D : v_new + ((size_t)(j - n_live) * HKV + g) * D;
        memcpy(d->tk + (size_t)i * D, ks, D * sizeof(float));
        memcpy(d->tv + (size_t)i * D, vs, D * sizeof(float));
    }
    memcpy(d->k + o * D, d->tk, (size_t)n * D * sizeof(float));
    memcpy(d->v + o * D, d->tv, (size_t)n * D * sizeof(float));
}

/* Live rows of the simulated device equal the reference cache's. */
static void expect_rows_equal(const devsim *d, const kv_cache *ref, const char *what, int step)
{
    for (int i = 0; i < L * HKV; i++) {
        size_t o = ref->off[i];
        const float *rk = ref->k_data, *rv = ref->v_data;   /* an F32 cache */
        for (int s = 0; s < ref->len[i]; s++)
            for (int e = 0; e < D; e++)
                if (d->k[(o + s) * D + e] != rk[(o + s) * D + e] ||
                    d->v[(o + s) * D + e] != rv[(o + s) * D + e])
                    fail_msg("%s step %d: region %d slot %d (pos %d) differs from the CPU cache",
                             what, step, i, s, ref->pos[o + s]);
    }
}

/* One prefill chunk of n tokens at pos0 through both paths. */
static void prefill_both(kv_cache *ref, kv_cache *mir, devsim *d, int n, int pos0, const char *what)
{
    char err[256];
    int cs = ref->cap[0] + n + 8;
    for (int i = 0; i < L * HKV; i++)
        if (ref->cap[i] + n + 8 > cs) cs = ref->cap[i] + n + 8;
    float *k = malloc((size_t)n * HKV * D * sizeof(float)), *v = malloc((size_t)n * HKV * D * sizeof(float));
    float *q = malloc((size_t)n * H * D * sizeof(float));
    int32_t *cand = malloc((size_t)cs * sizeof(int32_t));
    int *slot_of = malloc((size_t)(pos0 + n + 1) * sizeof(int));
    float *colsum = malloc((size_t)HKV * cs * sizeof(float));
    int *keep = malloc((size_t)HKV * cs * sizeof(int)), nkeep[HKV], nlive[HKV];
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < n * HKV * D; i++) {
            k[i] = frand();
            v[i] = frand();
        }
        for (int i = 0; i < n * H * D; i++) q[i] = frand() - 0.5f;
        for (int i = 0; i < HKV * cs; i++) colsum[i] = frand() * 4;
        kv_prefill_chunk c = {.layer = l, .n_new = n, .pos0 = pos0, .q_new = q, .k_new = k, .v_new = v,
                              .colsum = (ref->ops->stats & KV_STAT_PREFILL_COLSUM) ? colsum : NULL,
                              .cand_stride = cs};
        for (int g = 0; g < HKV; g++) nlive[g] = kv_len(mir, l, g);
        assert_int_equal(kv_prefill(ref, &c, err, sizeof err), 0);
        if (!host_assisted) {
            /* device policies: keep-lists from positions and scores, no K/V on the host */
            kv_prefill_chunk cm = c;
            cm.q_new = cm.k_new = cm.v_new = NULL;
            assert_int_equal(kv_prefill_plan(mir, &cm, keep, cs, nkeep, err, sizeof err), 0);
            for (int g = 0; g < HKV; g++)
                dev_gather(d, mir, l, g, keep + (size_t)g * cs, nkeep[g], nlive[g], k, v);
        } else {
            /* host-assisted (engine.cu host_prefill): the CPU kv_prefill on the mirror, the
             * keep-lists recovered from positions (candidates: live slots, then the chunk) */
            int32_t cands[HKV][512];
            for (int g = 0; g < HKV; g++) {
                assert_true(nlive[g] + n <= 512);
                memcpy(cands[g], kv_positions(mir, l, g), (size_t)nlive[g] * sizeof(int32_t));
                for (int i = 0; i < n; i++) cands[g][nlive[g] + i] = pos0 + i;
            }
            assert_int_equal(kv_prefill(mir, &c, err, sizeof err), 0);
            for (int g = 0; g < HKV; g++) {
                int nk = kv_len(mir, l, g);
                assert_int_equal(kv_moves_from_positions(cands[g], nlive[g] + n, kv_positions(mir, l, g),
                                                         nk, slot_of, pos0 + n + 1, keep), 0);
                dev_gather(d, mir, l, g, keep, nk, nlive[g], k, v);
            }
        }
    }
    for (int i = 0; i < L * HKV; i++) {
        assert_int_equal(ref->len[i], mir->len[i]);
        assert_memory_equal(ref->pos + ref->off[i], mir->pos + mir->off[i], ref->len[i] * sizeof(int32_t));
        if (ref->score)
            assert_memory_equal(ref->score + ref->off[i], mir->score + mir->off[i], ref->len[i] * sizeof(float));
    }
    assert_int_equal(ref->evictions, mir->evictions);
    expect_rows_equal(d, ref, what, -1);
    free(k);
    free(v);
    free(q);
    free(cand);
    free(slot_of);
    free(colsum);
    free(keep);
}

/* Decode steps on both, in the engines' order per layer (every head's pre_attn + write, the
 * attention, every head's post_attn, post_attn_layer). The reference is the CPU cache; the
 * mirror runs the same hooks and the simulated device follows it as engine.cu does: the
 * device policies by their own rule (append; the mirror's moves replayed), the host-assisted
 * ones through kv_decode_replay / kv_moves_from_positions. */
static void decode_both(kv_cache *ref, kv_cache *mir, devsim *d, int pos0, int steps, const char *what,
                        int check_len_mirror)
{
    int stride = 0;
    for (int i = 0; i < L * HKV; i++)
        if (ref->cap[i] + 1 > stride) stride = ref->cap[i] + 1;
    float *probs = malloc((size_t)H * stride * sizeof(float));
    int32_t *before = malloc((size_t)HKV * stride * sizeof(int32_t)), *cand = malloc((size_t)(stride + 1) * sizeof(int32_t));
    int *src = malloc((size_t)(stride + 1) * sizeof(int)), n_pos = pos0 + steps + 1;
    int *slot_of = malloc((size_t)n_pos * sizeof(int)), len0[HKV], nb[HKV];
    float q[HKV][H / HKV * D], k[HKV][D], v[HKV][D];
    const int G = H / HKV;
    for (int s = 0; s < steps; s++) {
        int t = pos0 + s;
        for (int l = 0; l < L; l++) {
            int64_t ev0 = ref->evictions;
            for (int g = 0; g < HKV; g++) {
                int idx = kv_idx(ref, l, g);
                len0[g] = ref->len[idx];
                for (int e = 0; e < D; e++) {
                    k[g][e] = frand() - 0.5f;
                    v[g][e] = frand();
                }
                for (int e = 0; e < G * D; e++) q[g][e] = frand() - 0.5f;
                int sr = kv_decode_slot(ref, l, g, t, q[g], k[g], v[g]);
                kv_write(ref, l, g, sr, t, k[g], v[g]);
                int n0 = mir->len[idx];
                memcpy(before, mir->pos + mir->off[idx], (size_t)n0 * sizeof(int32_t));
                int sm = kv_decode_slot(mir, l, g, t, q[g], k[g], v[g]);
                kv_write(mir, l, g, sm, t, k[g], v[g]);
                assert_int_equal(sr, sm);
                size_t o = mir->off[idx];
                int ws = sm;
                if (host_assisted) {
                    int r = kv_decode_replay(before, n0, t, mir->pos + o, mir->len[idx], slot_of, n_pos,
                                             cand, src, &ws);
                    assert_true(r >= 0);
                    if (r == 0 && ws == n0) n_append++;
                    if (r == 0 && ws != n0) n_overwrite++;
                    if (r == 1) {
                        n_gather_pre++;
                        /* the new token is candidate n0: chunk row 0 */
                        float kk[HKV][D], vv[HKV][D];
                        memcpy(kk[g], k[g], sizeof k[g]);
                        memcpy(vv[g], v[g], sizeof v[g]);
                        dev_gather(d, mir, l, g, src, mir->len[idx], n0, &kk[0][0], &vv[0][0]);
                        ws = -1;
                    }
                } else {
                    assert_int_equal(sm, n0); /* device policies append */
                }
                if (ws >= 0) { /* the device write */
                    memcpy(d->k + (o + ws) * D, k[g], sizeof k[g]);
                    memcpy(d->v + (o + ws) * D, v[g], sizeof v[g]);
                }
            }
            /* probabilities with distinct values (separated scores), every query head */
            for (int h = 0; h < H; h++) {
                int n = ref->len[kv_idx(ref, l, h / G)];
                float sum = 0;
                for (int j = 0; j < n; j++) sum += probs[h * stride + j] = 0.05f + frand();
                for (int j = 0; j < n; j++) probs[h * stride + j] /= sum;
            }
            for (int g = 0; g < HKV; g++) {
                int idx = kv_idx(mir, l, g);
                nb[g] = mir->len[idx];
                memcpy(before + (size_t)g * stride, mir->pos + mir->off[idx], (size_t)nb[g] * sizeof(int32_t));
            }
            for (int g = 0; g < HKV; g++) {
                kv_post_attn(ref, l, g, t, probs + (size_t)g * G * stride, stride);
                kv_post_attn(mir, l, g, t, probs + (size_t)g * G * stride, stride);
            }
            if (ref->ops->post_attn_layer) {
                ref->ops->post_attn_layer(ref, l, t, probs, stride);
                mir->ops->post_attn_layer(mir, l, t, probs, stride);
            }
            for (int g = 0; g < HKV; g++) {
                int idx = kv_idx(mir, l, g), n1 = mir->len[idx];
                assert_int_equal(kv_moves_from_positions(before + (size_t)g * stride, nb[g], mir->pos + mir->off[idx],
                                                         n1, slot_of, n_pos, src), 0);
                dev_gather(d, mir, l, g, src, n1, nb[g], NULL, NULL);
                for (int i = 0; i < n1; i++) n_moved_post += src[i] != i;
                if (check_len_mirror) {
                    int want = len0[g] + 1 > ref->cap[idx] ? ref->cap[idx] : len0[g] + 1;
                    if (ref->len[idx] != want)
                        fail_msg("%s step %d: len %d, the device mirror assumes %d", what, s, ref->len[idx], want);
                }
            }
            if (check_len_mirror) {
                int64_t over = 0;
                for (int g = 0; g < HKV; g++) over += len0[g] + 1 > ref->cap[kv_idx(ref, l, g)];
                assert_int_equal(ref->evictions - ev0, over);
            }
        }
        for (int i = 0; i < L * HKV; i++) {
            assert_int_equal(ref->len[i], mir->len[i]);
            assert_memory_equal(ref->pos + ref->off[i], mir->pos + mir->off[i], ref->len[i] * sizeof(int32_t));
        }
        expect_rows_equal(d, ref, what, s);
    }
    free(probs);
    free(before);
    free(cand);
    free(src);
    free(slot_of);
}

/* DEV_POLICY_ROUNDS as engine.cu runs it (rounds_post_attn): the mirror only appends; the
 * simulated device keeps the scores (score += Σ_h p); on a step where a region is over capacity
 * the layer's device scores go to the mirror, post_attn runs without probabilities, the device
 * replays the moves and takes the mirror's positions and scores back. Must equal the CPU run
 * (which calls post_attn with the probabilities every step) in positions, K/V rows and scores. */
static void decode_rounds(kv_cache *ref, kv_cache *mir, devsim *d, int pos0, int steps, const char *what)
{
    int stride = 0;
    for (int i = 0; i < L * HKV; i++)
        if (ref->cap[i] + 1 > stride) stride = ref->cap[i] + 1;
    const int G = H / HKV;
    float *probs = malloc((size_t)H * stride * sizeof(float));
    float *dscore = malloc(mir->n_slots * sizeof(float));
    memcpy(dscore, mir->score, mir->n_slots * sizeof(float)); /* the prefill's upload */
    int32_t *before = malloc((size_t)HKV * stride * sizeof(int32_t));
    int *src = malloc((size_t)stride * sizeof(int)), n_pos = pos0 + steps + 1, nb[HKV];
    int *slot_of = malloc((size_t)n_pos * sizeof(int));
    float q[G * D], k[D], v[D];
    for (int s = 0; s < steps; s++) {
        int t = pos0 + s;
        for (int l = 0; l < L; l++) {
            int over = 0;
            for (int g = 0; g < HKV; g++) {
                int idx = kv_idx(ref, l, g);
                for (int e = 0; e < D; e++) {
                    k[e] = frand() - 0.5f;
                    v[e] = frand();
                }
                for (int e = 0; e < G * D; e++) q[e] = frand() - 0.5f;
                int sr = kv_decode_slot(ref, l, g, t, q, k, v);
                kv_write(ref, l, g, sr, t, k, v);
                /* device append (kv_write kernel) + mirror append */
                size_t o = mir->off[idx];
                int slot = mir->len[idx];
                assert_int_equal(sr, slot);
                memcpy(d->k + (o + slot) * D, k, sizeof k);
                memcpy(d->v + (o + slot) * D, v, sizeof v);
                dscore[o + slot] = 0.0f;
                mir->pos[o + slot] = t;
                mir->score[o + slot] = 0.0f;
                mir->len[idx] = slot + 1;
                over |= mir->len[idx] > mir->cap[idx];
            }
            for (int h = 0; h < H; h++) {
                int n = ref->len[kv_idx(ref, l, h / G)];
                float sum = 0;
                for (int j = 0; j < n; j++) sum += probs[h * stride + j] = 0.05f + frand();
                for (int j = 0; j < n; j++) probs[h * stride + j] /= sum;
            }
            for (int g = 0; g < HKV; g++) {
                int idx = kv_idx(mir, l, g);
                size_t o = mir->off[idx];
                /* the attention kernel's scores: a = Σ_h p_h(j), score += a (score = a with
                 * score_set) */
                for (int j = 0; j < mir->len[idx]; j++) {
                    float a = 0.0f;
                    for (int h = 0; h < G; h++) a += probs[(size_t)(g * G + h) * stride + j];
                    dscore[o + j] = score_set ? a : dscore[o + j] + a;
                }
                kv_post_attn(ref, l, g, t, probs + (size_t)g * G * stride, stride);
            }
            if (!over) continue;
            n_rounds++;
            for (int g = 0; g < HKV; g++) {
                int idx = kv_idx(mir, l, g);
                size_t o = mir->off[idx];
                memcpy(mir->score + o, dscore + o, (size_t)(mir->cap[idx] + 1) * sizeof(float));
                nb[g] = mir->len[idx];
                memcpy(before + (size_t)g * stride, mir->pos + o, (size_t)nb[g] * sizeof(int32_t));
            }
            for (int g = 0; g < HKV; g++) kv_post_attn(mir, l, g, t, NULL, stride);
            for (int g = 0; g < HKV; g++) {
                int idx = kv_idx(mir, l, g), n1 = mir->len[idx];
                size_t o = mir->off[idx];
                assert_true(n1 <= mir->cap[idx]);
                assert_int_equal(kv_moves_from_positions(before + (size_t)g * stride, nb[g], mir->pos + o,
                                                         n1, slot_of, n_pos, src), 0);
                dev_gather(d, mir, l, g, src, n1, nb[g], NULL, NULL);
                memcpy(dscore + o, mir->score + o, (size_t)(mir->cap[idx] + 1) * sizeof(float));
            }
        }
        for (int i = 0; i < L * HKV; i++) {
            assert_int_equal(ref->len[i], mir->len[i]);
            assert_memory_equal(ref->pos + ref->off[i], mir->pos + mir->off[i], ref->len[i] * sizeof(int32_t));
            for (int j = 0; j < ref->len[i]; j++)
                if (dscore[ref->off[i] + j] != ref->score[ref->off[i] + j])
                    fail_msg("%s step %d: region %d slot %d score %g, CPU %g", what, s, i, j,
                             dscore[ref->off[i] + j], ref->score[ref->off[i] + j]);
        }
        assert_int_equal(ref->evictions, mir->evictions);
        expect_rows_equal(d, ref, what, s);
    }
    free(probs);
    free(dscore);
    free(before);
    free(src);
    free(slot_of);
}

static void run_policy(const char *name, double budget, int n_prompt, int chunk, int max_new)
{
    kv_cache ref, mir;
    device_policy dp;
    char why[256];
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = budget;
    if (extra_name) assert_int_equal(policy_params_set(&pp, policy_find(name), extra_name, extra_value, why, sizeof why), 0);
    assert_int_equal(init_kv(&ref, name, budget, n_prompt, max_new), 0);
    assert_int_equal(init_kv(&mir, name, budget, n_prompt, max_new), 0);
    /* planned on the initialised cache, as the engine does: a budget covering prompt + max new
     * is a passthrough (no hook, no scores), which the plan runs as `full` */
    assert_int_equal(device_policy_plan(policy_find(name), &pp, &mir, &dp, why, sizeof why), 0);
    /* the evict-then-attend device modes (h2o evict-first) overwrite a victim instead of
     * appending: simulated through the host replay path (the kernel is the emulator's test) */
    host_assisted = dp.mode == DEV_POLICY_HOST || EV_IS_ETE(dp.evict);
    rounds_mode = dp.mode == DEV_POLICY_ROUNDS;
    score_set = dp.score_set;
    devsim d;
    dev_alloc(&d, &mir);
    char what[96];
    snprintf(what, sizeof what, "%s budget %g chunk %d", name, budget, chunk);
    for (int off = 0; off < n_prompt; off += chunk)
        prefill_both(&ref, &mir, &d, n_prompt - off < chunk ? n_prompt - off : chunk, off, what);
    if (rounds_mode) decode_rounds(&ref, &mir, &d, n_prompt, max_new - 1, what);
    else decode_both(&ref, &mir, &d, n_prompt, max_new - 1, what, !host_assisted);
    dev_free(&d);
    kv_free(&ref);
    kv_free(&mir);
}

static void test_prefill_and_replay(void **st)
{
    (void)st;
    for (int i = 0; device_policies[i]; i++) {
        run_policy(device_policies[i], 1.0, 40, 40, 30);
        run_policy(device_policies[i], 0.3, 60, 60, 90);
        run_policy(device_policies[i], 0.5, 70, 16, 50);
        run_policy(device_policies[i], 0.2, 100, 100, 200);
    }
    /* buzz variants: the degenerate (streaming) capacity, avg budget mode, explicit w/T, and
     * --buzz-score current (rounds path, scores replaced) */
    run_policy("buzz", 10, 60, 60, 60); /* 10 tokens: below k + s + 2 = 11 */
    extra_name = "budget-mode";
    extra_value = "avg";
    run_policy("buzz", 0.3, 80, 80, 150);
    extra_name = "buzz-w";
    extra_value = "8";
    run_policy("buzz", 0.4, 80, 20, 150);
    extra_name = "buzz-score";
    extra_value = "current";
    run_policy("buzz", 0.3, 80, 80, 150);
    extra_name = "h2o-order";
    extra_value = "evict-first";
    run_policy("h2o", 0.3, 60, 60, 90);
    run_policy("h2o", 0.5, 70, 16, 50);
    extra_name = NULL;
    printf("replay paths: %ld appends, %ld overwrites, %ld pre-attention gathers, %ld moved rows "
           "after attention\n", n_append, n_overwrite, n_gather_pre, n_moved_post);
    printf("buzz round steps simulated: %ld\n", n_rounds);
    assert_true(n_append > 0 && n_overwrite > 0 && n_moved_post > 0 && n_rounds > 20);
}

static void test_moves_reject(void **st)
{
    (void)st;
    int32_t before[3] = {0, 5, 9}, after[2] = {9, 7};
    int slot_of[16], src[3];
    assert_int_equal(kv_moves_from_positions(before, 3, after, 2, slot_of, 16, src), -1);
    int32_t after2[2] = {0, 9};
    assert_int_equal(kv_moves_from_positions(before, 3, after2, 2, slot_of, 16, src), 0);
    assert_int_equal(src[0], 0);
    assert_int_equal(src[1], 2);
    int32_t bad[1] = {20};
    assert_int_equal(kv_moves_from_positions(bad, 1, bad, 1, slot_of, 16, src), -1);
    /* kv_decode_replay: append, overwrite, and a hook that also moved slots */
    int32_t b4[4] = {0, 1, 2, 3}, cand[5];
    int src5[5], slot = -7;
    int32_t app[5] = {0, 1, 2, 3, 10}, ovw[4] = {0, 10, 2, 3}, mov[4] = {0, 2, 3, 10}, odd[4] = {0, 1, 2, 11};
    assert_int_equal(kv_decode_replay(b4, 4, 10, app, 5, slot_of, 16, cand, src5, &slot), 0);
    assert_int_equal(slot, 4);
    assert_int_equal(kv_decode_replay(b4, 4, 10, ovw, 4, slot_of, 16, cand, src5, &slot), 0);
    assert_int_equal(slot, 1);
    assert_int_equal(kv_decode_replay(b4, 4, 10, mov, 4, slot_of, 16, cand, src5, &slot), 1);
    int want[4] = {0, 2, 3, 4}; /* candidate 4 = the new token */
    assert_memory_equal(src5, want, sizeof want);
    assert_int_equal(kv_decode_replay(b4, 4, 10, odd, 4, slot_of, 16, cand, src5, &slot), -1);
}

/* The prefill-only family's device decode steps (POLICIES.md §7.6, model/device.c
 * DEV_DECODE_QUIET): whenever kv_decode_quiet says a step is quiet, the CPU hooks only append
 * in every region, and the mirror kept by rule (kv_device_append, the queries written into the
 * ring as the device does) equals the CPU cache; the other steps run the hooks on the mirror
 * (host-assisted) and it still equals it, so later re-compressions see the same ring. Reserve
 * and grow are quiet on every step; capped has both kinds. */
static void quiet_case(const char *name, const char *mode, double budget, int n_prompt, int max_new, int want_loud)
{
    kv_cache ref, mir;
    /* the snap family's window 8 (not 32): reserve keeps its mode at these sizes (C − max_new
     * ≥ window + 1, else it falls back to capped) */
    const char *set[] = {"prefill-only-decode", mode, strcmp(name, "subgen") ? "snap-window" : NULL, "8", NULL};
    char err[256];
    assert_int_equal(ts_kv_try(&ref, policy_find(name), budget, 0, set, L, HKV, H, D, n_prompt, max_new, err, sizeof err), 0);
    assert_int_equal(ts_kv_try(&mir, policy_find(name), budget, 0, set, L, HKV, H, D, n_prompt, max_new, err, sizeof err), 0);
    devsim d;
    dev_alloc(&d, &mir);
    char what[96];
    snprintf(what, sizeof what, "%s %s budget %g", name, mode, budget);
    host_assisted = 1;
    prefill_both(&ref, &mir, &d, n_prompt, 0, what);
    int rows = 0;
    float *ring = kv_device_query_ring(&mir, &rows);
    assert_true(!strcmp(name, "subgen") ? ring == NULL : ring != NULL);
    const int G = H / HKV;
    int n_quiet = 0, n_loud = 0;
    float q[HKV][G * D], k[HKV][D], v[HKV][D];
    for (int t = n_prompt; t < n_prompt + max_new - 1; t++) {
        int quiet = kv_decode_quiet(&mir);
        assert_true(quiet == 0 || quiet == 1);
        n_quiet += quiet;
        n_loud += !quiet;
        for (int l = 0; l < L; l++) {
            int len0[HKV];
            for (int g = 0; g < HKV; g++) {
                len0[g] = ref.len[kv_idx(&ref, l, g)];
                for (int e = 0; e < D; e++) k[g][e] = frand() - 0.5f, v[g][e] = frand();
                for (int e = 0; e < G * D; e++) q[g][e] = frand() - 0.5f;
                int sr = kv_decode_slot(&ref, l, g, t, q[g], k[g], v[g]);
                kv_write(&ref, l, g, sr, t, k[g], v[g]);
                if (!quiet) {
                    int sm = kv_decode_slot(&mir, l, g, t, q[g], k[g], v[g]);
                    kv_write(&mir, l, g, sm, t, k[g], v[g]);
                }
            }
            for (int g = 0; g < HKV; g++) kv_post_attn(&ref, l, g, t, NULL, 0);
            if (quiet) {
                /* the CPU only appended: every region grew by one, t in its last slot */
                for (int g = 0; g < HKV; g++) {
                    int idx = kv_idx(&ref, l, g);
                    assert_int_equal(ref.len[idx], len0[g] + 1);
                    assert_int_equal(ref.pos[ref.off[idx] + len0[g]], t);
                }
                kv_device_append(&mir, l, t);
                for (int g = 0; g < HKV; g++) { /* the device's share: K/V rows, the query ring */
                    int idx = kv_idx(&mir, l, g);
                    memcpy((float *)mir.k_data + (mir.off[idx] + len0[g]) * D, k[g], sizeof k[g]);
                    memcpy((float *)mir.v_data + (mir.off[idx] + len0[g]) * D, v[g], sizeof v[g]);
                    if (ring) memcpy(ring + (((size_t)l * rows + t % rows) * H + (size_t)g * G) * D, q[g], sizeof q[g]);
                }
            } else {
                for (int g = 0; g < HKV; g++) kv_post_attn(&mir, l, g, t, NULL, 0);
            }
        }
        for (int i = 0; i < L * HKV; i++) {
            assert_int_equal(ref.len[i], mir.len[i]);
            assert_int_equal(ref.cap[i], mir.cap[i]);
            assert_memory_equal(ref.pos + ref.off[i], mir.pos + mir.off[i], ref.len[i] * sizeof(int32_t));
            assert_memory_equal((float *)ref.k_data + ref.off[i] * D, (float *)mir.k_data + mir.off[i] * D,
                                ref.len[i] * D * sizeof(float));
        }
        assert_int_equal(ref.evictions, mir.evictions);
    }
    printf("%s: %d quiet decode steps, %d through the hooks\n", what, n_quiet, n_loud);
    assert_true(n_quiet > 0);
    if (want_loud) assert_true(n_loud > 0);
    else assert_int_equal(n_loud, 0);
    dev_free(&d);
    kv_free(&ref);
    kv_free(&mir);
}

static void test_decode_quiet(void **st)
{
    (void)st;
    quiet_case("snapkv", "reserve", 0.5, 80, 30, 0);
    quiet_case("snapkv", "grow", 0.3, 80, 30, 0);
    quiet_case("snapkv", "capped", 0.4, 80, 60, 1);
    quiet_case("pyramidkv", "capped", 0.4, 80, 60, 1);
    quiet_case("ada_snapkv", "reserve", 0.5, 80, 30, 0);
    quiet_case("ada_pyramidkv", "capped", 0.4, 80, 60, 1);
    quiet_case("subgen", "reserve", 0.5, 60, 20, 0);
    quiet_case("subgen", "grow", 0.3, 60, 20, 0);
    quiet_case("subgen", "capped", 0.4, 60, 60, 1);
    /* not of the family */
    kv_cache kv;
    assert_int_equal(init_kv(&kv, "h2o", 0.5, 40, 20), 0);
    assert_int_equal(kv_decode_quiet(&kv), -1);
    kv_free(&kv);
}

/* Which policy runs where on --device cuda (model/device.c): never a silent fallback. */
static void test_device_policy_plan(void **st)
{
    (void)st;
    char why[256];
    device_policy dp;
    policy_params p;
    memset(&p, 0, sizeof p);
    p.budget = 0.5;
    const struct {
        const char *name;
        int mode, evict;
    } want[] = {{"full", DEV_POLICY_DEVICE, EV_NONE},       {"local", DEV_POLICY_DEVICE, EV_LOCAL},
                {"streaming", DEV_POLICY_DEVICE, EV_STREAMING}, {"h2o", DEV_POLICY_DEVICE, EV_H2O},
                {"buzz", DEV_POLICY_ROUNDS, EV_NONE},       {"scissorhands", DEV_POLICY_HOST, EV_NONE},
                {"l2norm", DEV_POLICY_HOST, EV_NONE},       {"hashevict", DEV_POLICY_HOST, EV_NONE},
                {"random", DEV_POLICY_HOST, EV_NONE},       {"tova", DEV_POLICY_HOST, EV_NONE},
                {"snapkv", DEV_POLICY_HOST, EV_NONE},       {"pyramidkv", DEV_POLICY_HOST, EV_NONE},
                {"subgen", DEV_POLICY_HOST, EV_NONE},       {"buzz_logn", DEV_POLICY_ROUNDS, EV_NONE},
                {"ada_snapkv", DEV_POLICY_HOST, EV_NONE},   {"ada_pyramidkv", DEV_POLICY_HOST, EV_NONE},
                {"subgen_stream", DEV_POLICY_HOST, EV_NONE}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        why[0] = 0;
        assert_int_equal(device_policy_plan(policy_find(want[i].name), &p, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.mode, want[i].mode);
        if (dp.mode == DEV_POLICY_DEVICE) assert_int_equal(dp.evict, want[i].evict);
        /* what the engine must do beyond the plain attention */
        assert_int_equal(dp.logit_scale, !strcmp(want[i].name, "buzz_logn"));
        assert_int_equal(dp.relayout, !strncmp(want[i].name, "ada_", 4));
        assert_int_equal(dp.host_attend, !strcmp(want[i].name, "subgen_stream"));
        /* the prefill-only family decodes on the device between its hooks; l2norm, random,
         * scissorhands, hashevict and tova evict on the device, subgen_stream's window and
         * sketch (EV_SS) are updated there (its host attend hook only for host steps) */
        int quiet = !strcmp(want[i].name, "snapkv") || !strcmp(want[i].name, "pyramidkv") ||
                    !strcmp(want[i].name, "subgen") || !strncmp(want[i].name, "ada_", 4);
        int always = !strcmp(want[i].name, "l2norm") || !strcmp(want[i].name, "random") ||
                     !strcmp(want[i].name, "tova") || !strcmp(want[i].name, "scissorhands") ||
                     !strcmp(want[i].name, "hashevict") || !strcmp(want[i].name, "subgen_stream");
        assert_int_equal(dp.dev_decode, quiet ? DEV_DECODE_QUIET : always ? DEV_DECODE_ALWAYS : DEV_DECODE_NONE);
        if (always)
            assert_int_equal(dp.evict, !strcmp(want[i].name, "l2norm")         ? EV_L2NORM
                                       : !strcmp(want[i].name, "random")       ? EV_RANDOM
                                       : !strcmp(want[i].name, "scissorhands") ? EV_SH
                                       : !strcmp(want[i].name, "hashevict")    ? EV_HASH
                                       : !strcmp(want[i].name, "subgen_stream") ? EV_SS
                                                                               : EV_TOVA);
    }
    /* l2norm / random: the CPU policies' protections (eviction/policy_common.h defaults) and
     * seed; --rope shifted decodes on the device as well (select.cu launch_ete_shifted) */
    {
        policy_params r = p;
        char e2[256];
        r.seed = 77;
        assert_int_equal(policy_params_set(&r, policy_find("random"), "rnd-recent", "6", e2, sizeof e2), 0);
        assert_int_equal(device_policy_plan(policy_find("random"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.n_sink, EVICT_SINK_DEFAULT_T);
        assert_int_equal(dp.n_recent, 6);
        assert_true(dp.seed == 77);
        assert_int_equal(device_policy_plan(policy_find("l2norm"), &p, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.n_recent, EVICT_RECENT_DEFAULT_T);
        r = p;
        r.rope_shifted = 1;   /* --rope shifted: the victim before the rank rotation, on the device too */
        assert_int_equal(device_policy_plan(policy_find("l2norm"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        assert_int_equal(dp.evict, EV_L2NORM);
        assert_int_equal(device_policy_plan(policy_find("scissorhands"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        assert_int_equal(device_policy_plan(policy_find("tova"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        /* scissorhands: --sh-hist and the protections of policy_scissorhands.c */
        r = p;
        assert_int_equal(policy_params_set(&r, policy_find("scissorhands"), "sh-hist", "7", e2, sizeof e2), 0);
        assert_int_equal(device_policy_plan(policy_find("scissorhands"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.sh_hist, 7);
        assert_int_equal(dp.n_sink, EVICT_SINK_DEFAULT_T);
        assert_int_equal(dp.n_recent, EVICT_RECENT_DEFAULT_T);
        /* hashevict: --hash-bits, --hash-probe; --hash-accum mean on the device too (dp.mean:
         * running sums and ages as per-slot state); --rope shifted on the device too (select.cu) */
        r = p;
        assert_int_equal(policy_params_set(&r, policy_find("hashevict"), "hash-bits", "9", e2, sizeof e2), 0);
        assert_int_equal(policy_params_set(&r, policy_find("hashevict"), "hash-probe", "key", e2, sizeof e2), 0);
        assert_int_equal(device_policy_plan(policy_find("hashevict"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.he_bits, 9);
        assert_int_equal(dp.he_probe, 1);
        assert_int_equal(dp.evict, EV_HASH);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        assert_int_equal(dp.mean, 0);
        assert_int_equal(policy_params_set(&r, policy_find("hashevict"), "hash-accum", "mean", e2, sizeof e2), 0);
        assert_int_equal(device_policy_plan(policy_find("hashevict"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.mode, DEV_POLICY_HOST);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        assert_int_equal(dp.evict, EV_HASH);
        assert_int_equal(dp.mean, 1);
        assert_int_equal(dp.he_bits, 9);
        r.rope_shifted = 1; /* mean with --rope shifted: on the device too (launch_ete_shifted) */
        assert_int_equal(device_policy_plan(policy_find("hashevict"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        assert_int_equal(dp.mean, 1);
        r = p;
        r.rope_shifted = 1;
        assert_int_equal(device_policy_plan(policy_find("hashevict"), &r, NULL, &dp, why, sizeof why), 0);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
    }
    /* subgen_stream: EV_SS once its window can fill (the sketch used); a window covering
     * prompt + max new (r = C) without passthrough only appends on the device */
    {
        kv_cache kv;
        assert_int_equal(init_kv(&kv, "subgen_stream", 0.5, 40, 20), 0);
        assert_int_equal(device_policy_plan(policy_find("subgen_stream"), &kv.params, &kv, &dp, why, sizeof why), 0);
        assert_int_equal(dp.evict, EV_SS);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        kv_free(&kv);
        assert_int_equal(init_kv(&kv, "subgen_stream", 1.0, 40, 20), 0);
        kv.passthrough = 0; /* as with params.hooks_always */
        assert_int_equal(device_policy_plan(policy_find("subgen_stream"), &kv.params, &kv, &dp, why, sizeof why), 0);
        assert_int_equal(dp.mode, DEV_POLICY_HOST);
        assert_int_equal(dp.evict, EV_NONE);
        assert_int_equal(dp.dev_decode, DEV_DECODE_ALWAYS);
        kv_free(&kv);
    }
    /* every registered policy is in the table above; one the plan does not know is refused
     * with a one-line reason naming it */
    const policy_ops *const *all = policy_all();
    for (int i = 0; all[i]; i++) {
        int ported = 0;
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) ported |= !strcmp(all[i]->name, want[k].name);
        if (!ported) fail_msg("%s: not in the device plan table of this test", all[i]->name);
    }
    policy_ops unknown = *policy_find("local");
    unknown.name = "not_a_policy";
    why[0] = 0;
    assert_int_equal(device_policy_plan(&unknown, &p, NULL, &dp, why, sizeof why), -1);
    assert_int_equal(dp.mode, DEV_POLICY_REFUSED);
    if (!strstr(why, "not_a_policy") || strchr(why, '\n')) fail_msg("unknown policy: reason '%s'", why);
    /* h2o variants and --rope shifted */
    policy_params q = p;
    char err[256];
    assert_int_equal(policy_params_set(&q, policy_find("h2o"), "h2o-order", "evict-first", err, sizeof err), 0);
    assert_int_equal(device_policy_plan(policy_find("h2o"), &q, NULL, &dp, why, sizeof why), 0);
    assert_int_equal(dp.mode, DEV_POLICY_DEVICE); /* evict-first: evict-then-attend on the device */
    assert_int_equal(dp.evict, EV_H2O_EF);
    q.rope_shifted = 1; /* the victim before the rank rotation: on the device too (launch_ete_shifted) */
    assert_int_equal(device_policy_plan(policy_find("h2o"), &q, NULL, &dp, why, sizeof why), 0);
    assert_int_equal(dp.mode, DEV_POLICY_DEVICE);
    assert_int_equal(dp.evict, EV_H2O_EF);
    q = p;
    assert_int_equal(policy_params_set(&q, policy_find("buzz"), "buzz-score", "current", err, sizeof err), 0);
    assert_int_equal(device_policy_plan(policy_find("buzz"), &q, NULL, &dp, why, sizeof why), 0);
    assert_int_equal(dp.mode, DEV_POLICY_ROUNDS); /* current: the scores replaced on the device */
    assert_int_equal(dp.score_set, 1);
    assert_int_equal(device_policy_plan(policy_find("buzz"), &p, NULL, &dp, why, sizeof why), 0);
    assert_int_equal(dp.score_set, 0);
    q = p;
    q.rope_shifted = 1; /* runs on the device: rank-rotated keys */
    assert_int_equal(device_policy_plan(policy_find("full"), &q, NULL, &dp, why, sizeof why), 0);
    assert_int_equal(dp.rope_shifted, 1);
    /* capacity-dependent parameters agree with the CPU policies: h2o R = C - C/2, sink, mean;
     * streaming sink 4, or C/2 when C <= 8 */
    kv_cache kv;
    assert_int_equal(init_kv(&kv, "h2o", 0.3, 50, 20), 0);
    assert_int_equal(device_policy_plan(policy_find("h2o"), &p, &kv, &dp, why, sizeof why), 0);
    assert_int_equal(dp.n_recent, kv.cap[0] - kv.cap[0] / 2);
    assert_int_equal(dp.n_sink, 0);
    assert_int_equal(dp.want_probs, 1);
    assert_int_equal(dp.want_colsum, 1);
    kv_free(&kv);
    q = p;
    assert_int_equal(policy_params_set(&q, policy_find("h2o"), "h2o-score", "mean", err, sizeof err), 0);
    assert_int_equal(policy_params_set(&q, policy_find("h2o"), "h2o-sink", "2", err, sizeof err), 0);
    assert_int_equal(device_policy_plan(policy_find("h2o"), &q, NULL, &dp, why, sizeof why), 0);
    assert_int_equal(dp.mean, 1);
    assert_int_equal(dp.n_sink, 2);
    assert_int_equal(init_kv(&kv, "streaming", 6, 50, 20), 0); /* budget > 1: 6 tokens */
    assert_int_equal(device_policy_plan(policy_find("streaming"), &p, &kv, &dp, why, sizeof why), 0);
    assert_int_equal(dp.n_sink, 3);
    kv_free(&kv);
    assert_int_equal(init_kv(&kv, "streaming", 0.5, 50, 20), 0);
    assert_int_equal(device_policy_plan(policy_find("streaming"), &p, &kv, &dp, why, sizeof why), 0);
    assert_int_equal(dp.n_sink, 4);
    kv_free(&kv);
}

/* --device resolution without a GPU (this build has none, or the machine has none). */
static void test_device_resolve(void **st)
{
    (void)st;
    char msg[256], why[256];
    int use = -1;
    policy_params p;
    memset(&p, 0, sizeof p);
    p.budget = 1;
    assert_int_equal(device_resolve("cpu", policy_find("full"), &p, &use, msg, sizeof msg), 0);
    assert_int_equal(use, 0);
    if (cuda_device_count(why, sizeof why) > 0) {
        skip(); /* a GPU answers: the no-GPU branch is tested by tests/test_cuda.sh elsewhere */
        return;
    }
    assert_int_equal(device_resolve("auto", policy_find("full"), &p, &use, msg, sizeof msg), 0);
    assert_int_equal(use, 0);
    assert_int_equal(device_resolve("cuda", policy_find("full"), &p, &use, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--device cuda: no usable CUDA device ("));
    assert_non_null(strstr(msg, why));
    assert_int_equal(device_resolve("gpu", policy_find("full"), &p, &use, msg, sizeof msg), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_bytes),
        cmocka_unit_test(test_check_limit),
        cmocka_unit_test(test_prefill_and_replay),
        cmocka_unit_test(test_moves_reject),
        cmocka_unit_test(test_decode_quiet),
        cmocka_unit_test(test_device_policy_plan),
        cmocka_unit_test(test_device_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
