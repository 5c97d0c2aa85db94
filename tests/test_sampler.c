/* test_sampler.c — greedy sampling (model/sampler.c): the vectorized argmax against the plain
 * loop it replaces (the lowest index of the largest logit; NaNs never win except at index 0),
 * on random rows of every length around its 16-lane blocks, with many ties, -inf and NaN, and a
 * vocabulary-sized row; the decode step-time quantiles of a generation (model/generate.c
 * gen_step_ms_quantile, the --json decode_step_ms_median / _p90); llama.cpp's penalties (a worked
 * example by hand, and random windows against a per-token transcription of
 * llama_sampler_penalties_apply); min-p (never a token below the threshold, each above it drawn);
 * the whole chain against llama.cpp's own samplers (tests/fixtures/sampler/llamacpp.txt, made by
 * scripts/make_sampler_fixtures.sh): top-k, top-p, min-p, typical, top-n-sigma, XTC, temperature,
 * dynamic temperature, llama.cpp's default chain, another order, Mirostat 1 and 2 over steps, DRY
 * (token breakers of one and two ids, a breaker near the end, base 1, the exponent's clamp),
 * adaptive-p over steps (its EMA fed llama.cpp's picks); the draws: llama.cpp's own picks from
 * one seeded chain over 16-24 rows for 14 settings (dist, XTC's, Mirostat's and adaptive-p's
 * generators) equal ours from the same seed, and the generator is std::mt19937. */
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"

static int plain_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static uint64_t rng = 42;
static unsigned next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33);
}

static void test_greedy_matches_plain_loop(void **state)
{
    (void)state;
    enum { N = 151936 };
    float *x = malloc(N * sizeof *x), *copy = malloc(N * sizeof *copy);
    assert_non_null(x);
    assert_non_null(copy);
    sampler s;
    assert_int_equal(sampler_init(&s, N, 0.0f, 1.0f, 0, 1), 0);
    for (int trial = 0; trial < 20000; trial++) {
        int n = trial < 19990 ? 1 + (int)(next() % 80) : N - (int)(next() % 40);
        int kinds = 2 + (int)(next() % 8);   /* few distinct values: many ties */
        for (int i = 0; i < n; i++) {
            unsigned r = next() % 16;
            x[i] = r == 0 ? NAN : r == 1 ? -INFINITY : r == 2 && trial % 3 == 0 ? INFINITY
                                                               : (float)(next() % kinds) - 3.0f;
        }
        s.vocab = n;
        memcpy(copy, x, (size_t)n * sizeof *x);
        int got = sampler_sample(&s, copy), want = plain_argmax(x, n);
        if (got != want) fail_msg("trial %d, n %d: argmax %d, the plain loop %d", trial, n, got, want);
    }
    sampler_free(&s);
    free(x);
    free(copy);
}

static void test_step_quantiles(void **state)
{
    (void)state;
    float steps[] = {5.0f, 1.0f, 4.0f, 2.0f, 3.0f, 100.0f};   /* one stall */
    gen_result r = {0};
    assert_true(gen_step_ms_quantile(&r, 0.5) == 0.0);        /* no step */
    r.step_ms = steps;
    r.n_decode_steps = 5;
    assert_true(fabs(gen_step_ms_quantile(&r, 0.5) - 3.0) < 1e-9);
    assert_true(fabs(gen_step_ms_quantile(&r, 0.9) - 4.6) < 1e-6);   /* 4 + 0.6 * (5 - 4) */
    assert_true(fabs(gen_step_ms_quantile(&r, 0.0) - 1.0) < 1e-9);
    assert_true(fabs(gen_step_ms_quantile(&r, 1.0) - 5.0) < 1e-9);
    r.n_decode_steps = 6;                                     /* the stall moves the median by half a step */
    assert_true(fabs(gen_step_ms_quantile(&r, 0.5) - 3.5) < 1e-9);
    assert_true(steps[0] == 5.0f && steps[5] == 100.0f);      /* the steps themselves stay in order */
}

/* llama.cpp's penalties, worked by hand: logits {2, -1, 0.5, 3}, accepted 0 then 3, 1, 3 with a
 * window of 3 (so 0 has left it): 3 (count 2) 3 / 2 − 2·0.5 − 0.25 = 0.25; 1 (count 1, logit ≤ 0)
 * −1·2 − 0.5 − 0.25 = −2.75; 0 and 2 unchanged. Greedy picks 0 (2.0), not 3. */
static void test_penalties_by_hand(void **state)
{
    (void)state;
    sampler s;
    assert_int_equal(sampler_init(&s, 4, 0.0f, 1.0f, 0, 1), 0);
    assert_false(sampler_needs_logits(&s));
    assert_int_equal(sampler_set_penalties(&s, 2.0f, 0.5f, 0.25f, 3), 0);
    assert_true(sampler_needs_logits(&s));
    const int seq[] = {0, 3, 1, 3};
    for (int i = 0; i < 4; i++) sampler_accept(&s, seq[i]);
    float x[4] = {2.0f, -1.0f, 0.5f, 3.0f};
    assert_int_equal(sampler_sample(&s, x), 0);
    assert_true(x[0] == 2.0f && x[2] == 0.5f);
    assert_true(x[3] == 0.25f);
    assert_true(x[1] == -2.75f);
    for (int i = 0; i < 4; i++) assert_int_equal(s.count[i], 0);   /* scratch left clean */
    sampler_free(&s);
    /* off: repeat 1 and no frequency / presence, or a window of 0 in the CLI (not set) */
    assert_int_equal(sampler_init(&s, 4, 0.0f, 1.0f, 0, 1), 0);
    assert_int_equal(sampler_set_penalties(&s, 1.0f, 0.0f, 0.0f, 64), 0);
    assert_false(sampler_needs_logits(&s));
    assert_int_equal(sampler_set_penalties(&s, 0.0f, 0.0f, 0.0f, 64), -1);
    assert_int_equal(sampler_set_penalties(&s, 1.1f, 0.0f, 0.0f, 0), -1);
    sampler_free(&s);
}

/* llama_sampler_penalties_apply transcribed per candidate: the count of each id in the window
 * (the last last_n accepted), then divide / multiply and subtract. */
static void reference_penalties(float *x, int n, const int *seq, int n_seq, int last_n, float rep, float freq, float pres)
{
    const int from = n_seq > last_n ? n_seq - last_n : 0;
    for (int id = 0; id < n; id++) {
        int c = 0;
        for (int i = from; i < n_seq; i++) c += seq[i] == id;
        if (!c) continue;
        x[id] = x[id] <= 0 ? x[id] * rep : x[id] / rep;
        x[id] -= (float)c * freq + (float)(c > 0) * pres;
    }
}

static void test_penalties_random(void **state)
{
    (void)state;
    enum { N = 300, SEQ = 500 };
    float x[N], y[N];
    int seq[SEQ];
    for (int trial = 0; trial < 400; trial++) {
        const int last_n = 1 + (int)(next() % 90), n_seq = (int)(next() % SEQ);
        const float rep = 0.5f + (float)(next() % 200) / 100.0f, freq = (float)(next() % 5) / 10.0f,
                    pres = (float)(next() % 5) / 10.0f - 0.2f;
        sampler s;
        assert_int_equal(sampler_init(&s, N, 0.0f, 1.0f, 0, 1), 0);
        if (rep == 1.0f && freq == 0.0f && pres == 0.0f) {   /* off: nothing to compare */
            sampler_free(&s);
            continue;
        }
        assert_int_equal(sampler_set_penalties(&s, rep, freq, pres, last_n), 0);
        for (int i = 0; i < n_seq; i++) sampler_accept(&s, seq[i] = (int)(next() % 40));   /* many repeats */
        for (int i = 0; i < N; i++) x[i] = y[i] = (float)((int)(next() % 2001) - 1000) / 100.0f;
        reference_penalties(y, N, seq, n_seq, last_n, rep, freq, pres);
        int got = sampler_sample(&s, x);
        for (int i = 0; i < N; i++)
            if (x[i] != y[i]) fail_msg("trial %d: logit %d %g, reference %g", trial, i, x[i], y[i]);
        assert_int_equal(got, plain_argmax(y, N));
        sampler_free(&s);
    }
}

/* min-p at temperature 1: p ∝ e^logit; with min-p 0.3 a token is kept when its logit is at least
 * ln 0.3 ≈ −1.204 below the top one: of {0, −0.5, −1.1, −1.3, −4} the first three. */
static void test_min_p(void **state)
{
    (void)state;
    const float logits[5] = {0.0f, -0.5f, -1.1f, -1.3f, -4.0f};
    int seen[5] = {0};
    for (int top_p_on = 0; top_p_on < 2; top_p_on++)
        for (uint64_t seed = 1; seed <= 3000; seed++) {
            sampler s;
            assert_int_equal(sampler_init(&s, 5, 1.0f, top_p_on ? 0.999f : 1.0f, 0, seed), 0);
            s.min_p = 0.3f;
            float x[5];
            memcpy(x, logits, sizeof x);
            int id = sampler_sample(&s, x);
            assert_true(id >= 0 && id < 3);
            seen[id]++;
            sampler_free(&s);
        }
    assert_true(seen[0] > seen[1] && seen[1] > seen[2] && seen[2] > 0);
}

/* ------------------------------------------- against llama.cpp (tests/fixtures/sampler) */

/* scripts/llamacpp_samplers.cpp's make_row, operation for operation */
static uint64_t gen_state;
static double gen_uniform(void)
{
    gen_state = gen_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(gen_state >> 11) / 9007199254740992.0;
}
static void gen_row(float *r, int vocab, float spread)
{
    for (int i = 0; i < vocab; i++) {
        double g = 0.0;
        for (int k = 0; k < 4; k++) {
            volatile double u = gen_uniform() - 0.5;
            g += u;
        }
        volatile double gs = g * spread;
        r[i] = (float)gs;
    }
    int strong = 1 + (int)(gen_uniform() * 5);
    for (int s = 0; s < strong; s++) {
        int at = (int)(gen_uniform() * vocab);
        volatile double four_u = 4.0 * gen_uniform();
        r[at] += (float)(2.0 + four_u);
    }
}

static float param(const char *line, const char *key)
{
    const char *at = strstr(line, key);
    if (!at) fail_msg("fixture: no %s in '%s'", key, line);
    return strtof(at + strlen(key), NULL);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Each case of the fixture: the sampler set as its params line says, each row regenerated (its
 * sum checked), sampler_filter's candidates (logit not −∞) equal llama.cpp's as a set, with p within
 * 2e-5 + 1e-4·p; Mirostat takes llama.cpp's pick (sampler_commit), so the next row's truncation
 * depends on the same mu. */
static void test_llamacpp_chain(void **state)
{
    (void)state;
    FILE *f = fopen("tests/fixtures/sampler/llamacpp.txt", "r");
    assert_non_null(f);
    static char line[1 << 20];
    char name[64] = "", order[32] = "";
    sampler s = {0};
    float *row = NULL;
    int have = 0, n_cases = 0, n_rows = 0, n_mirostat = 0, n_dry_rows = 0, vocab = 0;
    float pr[32];
    int mirostat = 0, stateful = 0, draws = 0, n_draws = 0;
    unsigned seed = 7;
    float pen[3] = {1.0f, 0.0f, 0.0f};
    int pen_last_n = 0;
    /* DRY: its parameters, breakers (concatenated) and the history accepted before each row */
    float dry_mult = 0.0f, dry_base = 0.0f;
    int dry_allowed = 0, dry_last_n = 0, n_brk = 0, brk_seq[256], brk_len[32], n_brk_seq = 0, hist[512], n_hist = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "case ", 5)) {
            sscanf(line + 5, "%63s", name);
            n_cases++;
        } else if (!strncmp(line, "params ", 7)) {
            const char *keys[] = {"temp=", "dyn_range=", "dyn_exp=", "top_k=", "top_p=", "min_p=", "typ_p=",
                                  "top_n_sigma=", "xtc_p=", "xtc_t=", "min_keep=", "mirostat=", "tau=", "eta=",
                                  "ad_t=", "ad_d="};
            for (int i = 0; i < 16; i++) pr[i] = param(line, keys[i]);
            sscanf(strstr(line, "order=") + 6, "%31s", order);
            mirostat = (int)pr[11];
            stateful = mirostat || strchr(order, 'a');
            have = 0, draws = 0, seed = 7, pen_last_n = 0;
            dry_mult = 0.0f, n_brk = n_brk_seq = n_hist = 0;
        } else if (!strncmp(line, "seed ", 5)) {   /* a draw case: one seeded sampler over the rows */
            seed = (unsigned)strtoul(line + 5, NULL, 10);
            draws = stateful = 1;
        } else if (!strncmp(line, "penalties ", 10)) {
            assert_int_equal(sscanf(line + 10, "repeat=%f freq=%f present=%f last_n=%d", &pen[0], &pen[1], &pen[2], &pen_last_n), 4);
        } else if (!strncmp(line, "dry ", 4)) {
            assert_int_equal(sscanf(line + 4, "mult=%f base=%f allowed=%d last_n=%d", &dry_mult, &dry_base, &dry_allowed,
                                    &dry_last_n), 4);
        } else if (!strncmp(line, "breaker ", 8) || !strncmp(line, "accept ", 7)) {
            const int is_brk = line[0] == 'b';
            char *e;
            const int k = (int)strtol(line + (is_brk ? 8 : 7), &e, 10);
            for (int i = 0; i < k; i++) {
                const int id = (int)strtol(e, &e, 10);
                if (is_brk) brk_seq[n_brk_seq++] = id;
                else hist[n_hist++] = id;
            }
            if (is_brk) brk_len[n_brk++] = k;
        } else if (!strncmp(line, "row ", 4)) {
            float spread;
            unsigned long long st;
            double want_sum;
            assert_int_equal(sscanf(line + 4, "%d %f %llu %lf", &vocab, &spread, &st, &want_sum), 4);
            row = realloc(row, (size_t)vocab * sizeof *row);
            gen_state = st;
            gen_row(row, vocab, spread);
            double sum = 0.0;
            for (int i = 0; i < vocab; i++) sum += row[i];
            if (sum != want_sum) fail_msg("%s: the regenerated row sums to %.17g, llama.cpp's to %.17g", name, sum, want_sum);
            if (!have || !stateful) {   /* Mirostat and adaptive-p keep their sampler (mu, the EMA) across the rows */
                sampler_free(&s);
                assert_int_equal(sampler_init(&s, vocab, pr[0], pr[4], (int)pr[3], seed), 0);
                s.dynatemp_range = pr[1], s.dynatemp_exponent = pr[2], s.min_p = pr[5], s.typical_p = pr[6];
                s.top_n_sigma = pr[7], s.xtc_probability = pr[8], s.xtc_threshold = pr[9], s.min_keep = (int)pr[10];
                assert_int_equal(sampler_set_order(&s, order), 0);
                assert_int_equal(sampler_set_mirostat(&s, mirostat, pr[12], pr[13]), 0);
                if (strchr(order, 'a')) assert_int_equal(sampler_set_adaptive(&s, pr[14], pr[15]), 0);
                if (dry_mult != 0.0f) {
                    assert_int_equal(sampler_set_dry(&s, dry_mult, dry_base, dry_allowed, dry_last_n, brk_seq, brk_len, n_brk), 0);
                    assert_non_null(s.dry);
                    n_dry_rows++;
                }
                if (pen_last_n) assert_int_equal(sampler_set_penalties(&s, pen[0], pen[1], pen[2], pen_last_n), 0);
                for (int i = 0; i < n_hist; i++) sampler_accept(&s, hist[i]);
                have = 1;
            }
            n_rows++;
        } else if (!strncmp(line, "keep ", 5)) {
            char *p = line + 5, *e;
            const int nk = (int)strtol(p, &e, 10);
            int *ids = malloc((size_t)nk * sizeof *ids), *mine = malloc((size_t)vocab * sizeof *mine);
            double *ps = malloc((size_t)nk * sizeof *ps);
            for (int i = 0; i < nk; i++) {
                ids[i] = (int)strtol(e, &e, 10);
                ps[i] = strtod(e, &e);
            }
            const int n = sampler_filter(&s, row);
            int m = 0;
            for (int i = 0; i < n; i++)
                if (s.buf[i].logit != -INFINITY) mine[m++] = s.buf[i].id;
            qsort(mine, (size_t)m, sizeof *mine, cmp_int);
            if (m != nk) fail_msg("%s row %d (vocab %d): %d candidates left, llama.cpp %d", name, n_rows, vocab, m, nk);
            for (int i = 0; i < nk; i++) {
                if (mine[i] != ids[i]) fail_msg("%s row %d: candidate %d is id %d, llama.cpp's %d", name, n_rows, i, mine[i], ids[i]);
                float p_mine = 0.0f;
                for (int j = 0; j < n; j++)
                    if (s.buf[j].id == ids[i]) p_mine = s.buf[j].p;
                if (fabs(p_mine - ps[i]) > 2e-5 + 1e-4 * ps[i])
                    fail_msg("%s row %d: id %d p %.9g, llama.cpp %.9g", name, n_rows, ids[i], p_mine, ps[i]);
            }
            free(ids);
            free(mine);
            free(ps);
        } else if (!strncmp(line, "draw ", 5)) {   /* llama.cpp's pick: ours from the same seed */
            assert_true(draws);
            const int want = atoi(line + 5), got = sampler_sample(&s, row);
            if (got != want) fail_msg("%s row %d: drew id %d, llama.cpp %d (seed %u)", name, n_rows, got, want, seed);
            sampler_accept(&s, got);
            n_draws++;
        } else if (!strncmp(line, "pick ", 5)) {
            const int id = atoi(line + 5);
            int k = -1;
            for (int i = 0; i < s.n; i++)
                if (s.buf[i].id == id) k = i;
            assert_true(k >= 0);
            assert_int_equal(sampler_commit(&s, k), id);
            n_mirostat++;
        }
    }
    fclose(f);
    sampler_free(&s);
    free(row);
    assert_true(n_cases >= 51 && n_rows >= 378 && n_mirostat >= 50 && n_dry_rows >= 18 && n_draws >= 232);
}

/* The generator is std::mt19937: C++11 [rand.predef] gives its 10000th output from the default
 * seed 5489; libstdc++'s uniform draws use two outputs (double) or one (float). */
static void test_mt19937(void **state)
{
    (void)state;
    sampler_mt g;
    sampler_mt_seed(&g, 5489u);
    uint32_t x = 0;
    for (int i = 0; i < 10000; i++) x = sampler_mt_next(&g);
    assert_int_equal(x, 4123659995u);
    sampler_mt a, b;
    sampler_mt_seed(&a, 42u);
    sampler_mt_seed(&b, 42u);
    const double lo = sampler_mt_next(&b), hi = sampler_mt_next(&b);
    assert_true(sampler_mt_double(&a) == (lo + hi * 4294967296.0) / 18446744073709551616.0);
    assert_true(sampler_mt_float(&a) == (float)sampler_mt_next(&b) / 4294967296.0f);
}

/* The draws: sampler_sample takes only candidates sampler_filter leaves (here top-k 3 of a
 * 64-token row, then temperature), each of them sometimes; the same seed gives the same tokens. */
static void test_draws_within_chain(void **state)
{
    (void)state;
    float r[64], x[64];
    gen_state = 99;
    gen_row(r, 64, 3.0f);
    sampler s;
    assert_int_equal(sampler_init(&s, 64, 0.9f, 1.0f, 3, 5), 0);
    int n = sampler_filter(&s, r), ids[3], seen[3] = {0};
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) ids[i] = s.buf[i].id;
    uint64_t first[20];
    for (int t = 0; t < 3000; t++) {
        memcpy(x, r, sizeof x);
        int id = sampler_sample(&s, x), k = -1;
        for (int i = 0; i < 3; i++)
            if (ids[i] == id) k = i;
        if (k < 0) fail_msg("draw %d: token %d is not among the top 3", t, id);
        seen[k]++;
        if (t < 20) first[t] = (uint64_t)id;
    }
    for (int i = 0; i < 3; i++) assert_true(seen[i] > 0);
    sampler_free(&s);
    assert_int_equal(sampler_init(&s, 64, 0.9f, 1.0f, 3, 5), 0);
    for (int t = 0; t < 20; t++) {
        memcpy(x, r, sizeof x);
        assert_int_equal(sampler_sample(&s, x), (int)first[t]);
    }
    sampler_free(&s);
    /* the order is checked: letters of SAMPLER_STAGES only */
    assert_int_equal(sampler_init(&s, 64, 0.9f, 1.0f, 3, 5), 0);
    assert_int_equal(sampler_set_order(&s, "kpt"), 0);
    assert_int_equal(sampler_set_order(&s, "kqt"), -1);
    assert_int_equal(sampler_set_order(&s, "edskypmxtedskypmxt"), -1);
    assert_int_equal(sampler_set_mirostat(&s, 3, 5.0f, 0.1f), -1);
    sampler_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_matches_plain_loop),
        cmocka_unit_test(test_step_quantiles),
        cmocka_unit_test(test_penalties_by_hand),
        cmocka_unit_test(test_penalties_random),
        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_llamacpp_chain),
        cmocka_unit_test(test_draws_within_chain),
        cmocka_unit_test(test_mt19937),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
