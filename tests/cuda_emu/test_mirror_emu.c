/* The host mirror of the device cache after evictions (issue 18, a latent bug of the review):
 * the device policies evict on the device and the host keeps kv->len by rule; a prefill after
 * decode steps (the engine API allows prefill - decode - prefill; eval and chat reuse it) reads
 * the mirror, so it must first be refreshed from the device. Linked with the emulated engine by
 * tests/test_cuda_emu.sh:
 *
 *   test_mirror_emu MODEL_DIR POLICY [NAME=VALUE...]   (rope=shifted: --rope shifted)
 *
 * 1. the same token sequence on the CPU and the emulated GPU: prefill 21 tokens, 12 decode steps
 *    (each evicts: capacity 16), a prefill of 5 more tokens, 4 decode steps; after each phase the
 *    two caches' lengths, positions (and scores where kept) must be equal and the logits within
 *    1e-5 x the row's max |logit| (F32 model, f32 K/V);
 *    subgen_stream: the mirror's sketch (brought back from the device, then fed by the prefill)
 *    equal to the CPU's — clusters, sizes, δ, the positions of every cluster and value-norm
 *    sample (the same cluster choices and counter-RNG draws), μ and the sampled rows within
 *    float rounding;
 * 2. a stale mirror is caught: the host's length of region 0 is changed after decode steps, the
 *    next prefill must fail with one line naming the regions out of step (not run on).
 * Prints "ok ..." / "FAIL ..." lines and "N passed, M failed"; exits 1 on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eviction/eviction.h"
#include "eviction/kv_device.h"
#include "model/cuda/cuda_engine.h"
#include "model/model.h"

static int pass, failn;
static void check(int ok, const char *what, const char *detail)
{
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
    if (ok) pass++;
    else failn++;
}

/* max over a row of |a - b| / max|b| */
static double rel_diff(const float *a, const float *b, int n)
{
    double d = 0, m = 1e-30;
    for (int i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int32_t *)a < *(const int32_t *)b ? -1 : *(const int32_t *)a > *(const int32_t *)b;
}

/* the two caches hold the same tokens: lengths and the sets of positions (the device evicts by
 * writing into the victim's slot, the CPU may move the last slot there: slot order differs) */
/* The K and V rows of position p in region (l, g) of a and b (f32 caches) within 1e-4 of the
 * row's largest magnitude (the backends' rounding differs; a wrong row is far off). */
static int g_states; /* also the per-slot policy state, byte for byte (scissorhands, hashevict) */

static int same_rows(const kv_cache *a, const kv_cache *b, int l, int g, char *msg, size_t n)
{
    const int i = kv_idx(a, l, g), d = a->head_dim;
    const int32_t *pa = a->pos + a->off[i], *pb = b->pos + b->off[i];
    for (int jb = 0; jb < b->len[i]; jb++) {
        int ja = 0;
        while (ja < a->len[i] && pa[ja] != pb[jb]) ja++;
        if (ja == a->len[i]) continue; /* the positions check reports it */
        if (g_states && memcmp(kv_slot_state(a, l, g, ja), kv_slot_state(b, l, g, jb), a->ops->slot_state_bytes)) {
            snprintf(msg, n, "layer %d head %d: the per-slot state of position %d differs (CPU slot %d, mirror slot %d)",
                     l, g, pb[jb], ja, jb);
            return 0;
        }
        for (int kvsel = 0; kvsel < 2; kvsel++) {
            const float *ra = (const float *)(kvsel ? a->v_data : a->k_data) + (a->off[i] + (size_t)ja) * d;
            const float *rb = (const float *)(kvsel ? b->v_data : b->k_data) + (b->off[i] + (size_t)jb) * d;
            float mx = 0, dm = 0;
            for (int x = 0; x < d; x++) {
                mx = fmaxf(mx, fabsf(ra[x]));
                dm = fmaxf(dm, fabsf(ra[x] - rb[x]));
            }
            if (!(dm <= 1e-4f * fmaxf(mx, 1e-3f))) {
                snprintf(msg, n, "layer %d head %d: the %s row of position %d differs by %g (|row| %g): the mirror's "
                         "rows are not the device's", l, g, kvsel ? "V" : "K", pb[jb], dm, mx);
                return 0;
            }
        }
    }
    return 1;
}

/* rows: also the K/V rows (a host mirror that keeps them: host-assisted policies) */
static int same_cache(const kv_cache *a, const kv_cache *b, int rows, char *msg, size_t n)
{
    for (int l = 0; l < a->n_layers; l++)
        for (int g = 0; g < a->n_kv_heads; g++) {
            int i = kv_idx(a, l, g);
            if (a->len[i] != b->len[i]) {
                snprintf(msg, n, "layer %d head %d: length %d (CPU) vs %d (GPU mirror)", l, g, a->len[i], b->len[i]);
                return 0;
            }
            int32_t pa[1024], pb[1024];
            if (a->len[i] > 1024) continue;
            memcpy(pa, kv_positions((kv_cache *)a, l, g), (size_t)a->len[i] * sizeof(int32_t));
            memcpy(pb, kv_positions((kv_cache *)b, l, g), (size_t)a->len[i] * sizeof(int32_t));
            qsort(pa, (size_t)a->len[i], sizeof(int32_t), cmp_int);
            qsort(pb, (size_t)a->len[i], sizeof(int32_t), cmp_int);
            for (int j = 0; j < a->len[i]; j++)
                if (pa[j] != pb[j]) {
                    snprintf(msg, n, "layer %d head %d: sorted positions [%d]: %d (CPU) vs %d (GPU mirror)", l, g, j, pa[j], pb[j]);
                    return 0;
                }
            if (rows && !same_rows(a, b, l, g, msg, n)) return 0;
        }
    snprintf(msg, n, "%d regions equal%s", a->n_layers * a->n_kv_heads,
             rows ? g_states ? " (positions, K/V rows, per-slot state)" : " (positions, K/V rows)" : "");
    return 1;
}

/* subgen_stream's sketches of a (CPU) and b (the GPU's host mirror): the same decisions (integers
 * and positions exactly), μ, δ and the sampled K/V within 1e-4 relative (the rows' rounding) */
static int same_sketch(const kv_cache *a, const kv_cache *b, char *msg, size_t n)
{
    ss_sketch x, y;
    if (subgen_stream_device_sketch(a, &x) || subgen_stream_device_sketch(b, &y)) {
        snprintf(msg, n, "no sketch");
        return 0;
    }
    long long ins = 0;
    for (int i = 0; i < x.n; i++) {
        const ss_head *ha = &x.head[i], *hb = &y.head[i];
        if (ha->m != hb->m || ha->n_ins != hb->n_ins || ha->delta_set != hb->delta_set ||
            fabs(ha->mu - hb->mu) > 1e-4 * fabs(ha->mu) || fabs(ha->delta - hb->delta) > 1e-4 * fabs(ha->delta)) {
            snprintf(msg, n, "region %d: m %d/%d, inserted %lld/%lld, mu %.9g/%.9g, delta %.9g/%.9g (CPU/GPU)", i, ha->m,
                     hb->m, (long long)ha->n_ins, (long long)hb->n_ins, ha->mu, hb->mu, ha->delta, hb->delta);
            return 0;
        }
        ins += ha->n_ins;
        for (int c = 0; c < ha->m; c++) {
            const size_t o = (size_t)i * x.m_max + c;
            if (x.count[o] != y.count[o]) {
                snprintf(msg, n, "region %d cluster %d: size %lld/%lld", i, c, (long long)x.count[o], (long long)y.count[o]);
                return 0;
            }
            for (int j = 0; j < x.t; j++)
                if (x.samp_pos[o * x.t + j] != y.samp_pos[o * x.t + j]) {
                    snprintf(msg, n, "region %d cluster %d sample %d: position %d/%d", i, c, j, x.samp_pos[o * x.t + j],
                             y.samp_pos[o * x.t + j]);
                    return 0;
                }
        }
        for (int j = 0; j < x.s; j++) {
            const size_t o = (size_t)i * x.s + j;
            if (x.mpos[o] != y.mpos[o] || fabs(x.mw2[o] - y.mw2[o]) > 1e-4 * fabs(x.mw2[o])) {
                snprintf(msg, n, "region %d value sample %d: position %d/%d, w2 %.9g/%.9g", i, j, x.mpos[o], y.mpos[o],
                         x.mw2[o], y.mw2[o]);
                return 0;
            }
            for (int e = 0; e < x.d; e++)
                if (fabsf(x.mv[o * x.d + e] - y.mv[o * x.d + e]) > 1e-4f * (1.0f + fabsf(x.mv[o * x.d + e]))) {
                    snprintf(msg, n, "region %d value sample %d: V[%d] %g/%g", i, j, e, x.mv[o * x.d + e],
                             y.mv[o * x.d + e]);
                    return 0;
                }
        }
    }
    snprintf(msg, n, "%d regions, %lld tokens sketched: clusters, sizes, sample positions equal", x.n, ins);
    return ins > 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_mirror_emu MODEL_DIR POLICY [NAME=VALUE...]\n");
        return 2;
    }
    char err[512], msg[600];
    model_weights w;
    memset(&w, 0, sizeof w);
    if (model_load(argv[1], &w, err, sizeof err) != 0) {
        fprintf(stderr, "model_load: %s\n", err);
        return 2;
    }
    const model_config *c = &w.cfg;
    const policy_ops *ops = policy_find(argv[2]);
    if (!ops) {
        fprintf(stderr, "no policy %s\n", argv[2]);
        return 2;
    }
    enum { NP = 21, ND1 = 12, NP2 = 5, ND2 = 4 };
    int toks[NP + ND1 + NP2 + ND2];
    for (int i = 0; i < (int)(sizeof toks / sizeof *toks); i++) toks[i] = i == 0 ? 1 : 3 + (i * 37) % (c->vocab_size - 3);
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = 1;
    pp.budget_tokens = 16;
    pp.kv_dtype = DT_F32;
    /* the policy's parameters: NAME=VALUE arguments after the policy (e.g. h2o-order=evict-first);
     * rope=shifted: --rope shifted (POLICIES.md §1.7), not a policy parameter */
    for (int i = 3; i < argc && pp.n_set < POLICY_MAX_SET; i++) {
        if (!strcmp(argv[i], "rope=shifted")) {
            pp.rope_shifted = 1;
            continue;
        }
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq - argv[i] >= (int)sizeof pp.set[0].name || strlen(eq + 1) >= sizeof pp.set[0].value) {
            fprintf(stderr, "expected NAME=VALUE, got '%s'\n", argv[i]);
            return 2;
        }
        snprintf(pp.set[pp.n_set].name, sizeof pp.set[0].name, "%.*s", (int)(eq - argv[i]), argv[i]);
        snprintf(pp.set[pp.n_set].value, sizeof pp.set[0].value, "%s", eq + 1);
        pp.set[pp.n_set++].origin = argv[i];
    }
    kv_cache kv[2];
    engine e[2];
    memset(e, 0, sizeof e);
    const int V = c->vocab_size;
    float *rows[2];
    for (int b = 0; b < 2; b++) {
        /* the run's sizes as the CLI gives them: prompt NP, max new ND1 + NP2 + ND2 */
        if (kv_init(&kv[b], ops, &pp, c->n_layers, c->n_kv_heads, c->n_heads, c->head_dim, NP, ND1 + NP2 + ND2 + 1,
                    err, sizeof err) != 0) {
            fprintf(stderr, "kv_init: %s\n", err);
            return 2;
        }
        int rc = b ? engine_init_cuda(&e[b], &w, &kv[b], NP, err, sizeof err) : engine_init(&e[b], &w, &kv[b], NP, 1, err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "engine_init%s: %s\n", b ? "_cuda" : "", err);
            return 2;
        }
        e[b].want_logits = 1;
        rows[b] = malloc((size_t)(ND1 + NP2 + ND2 + 1) * V * sizeof(float));
    }
    /* a host-assisted policy's mirror keeps the K/V rows (those written by device decode steps
     * are brought back before the host reads them: ce_refresh_mirror) */
    device_policy dp;
    char why[256];
    int planned = device_policy_plan(ops, &pp, &kv[1], &dp, why, sizeof why) == 0;
    const int mirror_rows = planned && dp.mode == DEV_POLICY_HOST;
    /* scissorhands' histories, hashevict's codes (the device's equal to the CPU's bit for bit):
     * the per-slot state the device kept comes back to the mirror */
    g_states = planned && (dp.evict == EV_SH || dp.evict == EV_HASH) && dp.dev_decode != DEV_DECODE_NONE;
    /* the same sequence on both; logits row r after each step */
    double worst = 0;
    int t = 0, r = 0, ok_run = 1, ok_cache1 = 1;
    /* both engines phase by phase; the caches compared right after the second prefill (the
     * device policies' mirror is refreshed there; later decode steps keep only its lengths) */
    char cache_msg[600] = "";
    for (int ph = 0; ph < 4 && ok_run; ph++) {
        int t0 = ph == 0 ? 0 : ph == 1 ? NP : ph == 2 ? NP + ND1 : NP + ND1 + NP2;
        int t1 = ph == 0 ? NP : ph == 1 ? NP + ND1 : ph == 2 ? NP + ND1 + NP2 : NP + ND1 + NP2 + ND2;
        for (int b = 0; b < 2 && ok_run; b++) {
            if (ph == 0 || ph == 2) {
                if (engine_prefill(&e[b], toks + t0, t1 - t0, t0, NULL, err, sizeof err)) ok_run = 0;
                memcpy(rows[b] + (size_t)(ph == 0 ? 0 : 1 + ND1) * V, e[b].logits, (size_t)V * sizeof(float));
                continue;
            }
            for (t = t0; t < t1 && ok_run; t++) {
                if (engine_decode(&e[b], toks[t], t, err, sizeof err)) ok_run = 0;
                int row = ph == 1 ? 1 + (t - NP) : 2 + ND1 + (t - t0);
                memcpy(rows[b] + (size_t)row * V, e[b].logits, (size_t)V * sizeof(float));
            }
        }
        if (ph == 2 && ok_run) ok_cache1 = same_cache(&kv[0], &kv[1], mirror_rows, cache_msg, sizeof cache_msg);
        if (ph == 2 && ok_run && !strcmp(argv[2], "subgen_stream")) {
            char sk_msg[300];
            int same = same_sketch(&kv[0], &kv[1], sk_msg, sizeof sk_msg);
            check(same, "subgen_stream: the mirror's sketch after device steps + prefill = the CPU's", sk_msg);
        }
    }
    r = 2 + ND1 + ND2;
    t = NP + ND1 + NP2 + ND2;
    snprintf(msg, sizeof msg, "%s", ok_run ? "prefill 21, 12 decode steps, prefill 5, 4 decode steps" : err);
    check(ok_run, "CPU and emulated GPU run decode -> prefill -> decode", msg);
    if (ok_run) {
        for (int i = 0; i < r; i++) worst = fmax(worst, rel_diff(rows[1] + (size_t)i * V, rows[0] + (size_t)i * V, V));
        snprintf(msg, sizeof msg, "%s %d rows, max|d|/max|ref| %.3g, evictions %lld / %lld", argv[2], r, worst,
                 (long long)kv[0].evictions, (long long)kv[1].evictions);
        check(worst <= 1e-5 && kv[0].evictions > 0 && kv[0].evictions == kv[1].evictions,
              "logits after evictions and a prefill on the refreshed mirror (<= 1e-5)", msg);
        /* the mirror after the second prefill (refreshed, then the prefill plan on it) */
        check(ok_cache1, "host mirror after decode evictions + prefill = the CPU cache", cache_msg);
    }
    /* 2. a stale mirror: decode steps, the host's length of region 0 off by one, then prefill
     * (device-run policies only: for the host-assisted ones the host mirror is the truth) */
    int host = !planned || (dp.mode == DEV_POLICY_HOST && dp.dev_decode != DEV_DECODE_ALWAYS);
    if (ok_run && !host) {
        int rc = engine_decode(&e[1], toks[0], t, err, sizeof err);
        t++;
        kv[1].len[0] -= 1;
        int tk = 5;
        rc = rc ? rc : engine_prefill(&e[1], &tk, 1, t, NULL, err, sizeof err);
        snprintf(msg, sizeof msg, "%s", rc ? err : "the prefill ran on a stale mirror");
        check(rc != 0 && strstr(err, "out of step") && !strchr(err, '\n'), "a stale host length is refused, one line", msg);
    } else if (ok_run) {
        printf("note: %s runs its hooks on the host mirror (host-assisted): no stale-mirror case\n", argv[2]);
    }
    for (int b = 0; b < 2; b++) {
        engine_free(&e[b]);
        kv_free(&kv[b]);
        free(rows[b]);
    }
    model_free(&w);
    printf("%d passed, %d failed\n", pass, failn);
    return failn != 0;
}
