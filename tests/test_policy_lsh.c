/* Tests for hashevict (POLICIES.md §9, golden vectors of §15.2), the LSH evict-then-attend policy:
 * SimHash codes and projections, the victim rule, and the hooks on small hand-built caches (head_dim
 * 4) against a reference mirror, with the §15.1 properties (capacity, protected sets, one eviction
 * per step once full, identity). l2norm, random and scissorhands: tests/test_policy_protected.c. */
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
#include "tests/support/support.h"

/* the pure functions under test (eviction/policy_*.c) */
extern void hashevict_projection(uint64_t seed, int layer, int bits, int d, float *R);
extern uint64_t hashevict_code(const float *R, int bits, int d, const float *x);
extern int hashevict_victim(const int32_t *pos, const uint64_t *codes, int n,
                            const uint64_t *qcodes, int n_q, int sink, int recent, int t);
extern int hashevict_victim_mean(const int32_t *pos, const uint64_t *acc, const uint32_t *age,
                                 int n, int sink, int recent, int t);

#define D 4
#define MAXN 256

/* ------------------------------------------------------------------------ hashevict golden */

/* §15.2: c = 8, d = 4. */
static const float golden_R[8 * 4] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
                                      1, 1, 0, 0, 0, 0, 1, -1, 1, -1, 1, -1, -1, 0, 0, 1};
static const float golden_q[4] = {1, 0.5f, 0.5f, 0.2f};
static const float golden_keys[6][4] = {{1, 1, 1, 1},   {-1, 2, 0, 1},   {0.5f, -1, 2, 0},
                                        {-1, -1, -1, -1}, {2, 0, -1, 0.5f}, {1, -0.5f, 0.3f, 0.2f}};

static void test_hashevict_golden_query_code_is_11111110(void **st)
{
    (void)st;
    uint64_t c = hashevict_code(golden_R, 8, 4, golden_q);
    const int bits[8] = {1, 1, 1, 1, 1, 1, 1, 0}; /* bit 0 first */
    for (int b = 0; b < 8; b++) assert_int_equal((int)((c >> b) & 1), bits[b]);
    assert_int_equal(c, 0x7f);
}

static void test_hashevict_golden_hamming_distances_1_4_2_6_2_1(void **st)
{
    (void)st;
    const int want[6] = {1, 4, 2, 6, 2, 1};
    uint64_t cq = hashevict_code(golden_R, 8, 4, golden_q);
    for (int p = 0; p < 6; p++) {
        uint64_t ck = hashevict_code(golden_R, 8, 4, golden_keys[p]);
        assert_int_equal(__builtin_popcountll(ck ^ cq), want[p]);
    }
}

static void test_hashevict_golden_victim_3_then_1(void **st)
{
    (void)st;
    uint64_t cq = hashevict_code(golden_R, 8, 4, golden_q), codes[6];
    int32_t pos[6] = {0, 1, 2, 3, 4, 5};
    for (int p = 0; p < 6; p++) codes[p] = hashevict_code(golden_R, 8, 4, golden_keys[p]);
    /* n_sink = 1, r = 1, t = 6: candidates {1, 2, 3, 4} → 3 */
    assert_int_equal(hashevict_victim(pos, codes, 6, &cq, 1, 1, 1, 6), 3);
    /* without position 3 → 1 (slot 1) */
    int32_t pos2[5] = {0, 1, 2, 4, 5};
    uint64_t codes2[5] = {codes[0], codes[1], codes[2], codes[4], codes[5]};
    int v = hashevict_victim(pos2, codes2, 5, &cq, 1, 1, 1, 6);
    assert_int_equal(pos2[v], 1);
    /* the same distances summed over two identical probes (GQA) choose the same victim */
    uint64_t two[2] = {cq, cq};
    assert_int_equal(hashevict_victim(pos, codes, 6, two, 2, 1, 1, 6), 3);
    /* no candidate: −1 */
    assert_int_equal(hashevict_victim(pos, codes, 6, &cq, 1, 6, 0, 6), -1);
}

static void test_hashevict_victim_ties_go_to_the_older_token(void **st)
{
    (void)st;
    int32_t pos[4] = {9, 4, 7, 2};
    uint64_t codes[4] = {0xff, 0xff, 0xff, 0xff}, q = 0;
    assert_int_equal(hashevict_victim(pos, codes, 4, &q, 1, 0, 0, 10), 3);
    uint64_t acc[4] = {6, 3, 3, 2};
    uint32_t age[4] = {2, 1, 1, 1}; /* means 3, 3, 3, 2 */
    assert_int_equal(hashevict_victim_mean(pos, acc, age, 4, 0, 0, 10), 1);
}

static void test_hashevict_projection_is_seeded_standard_normal(void **st)
{
    (void)st;
    enum { BITS = 64, DD = 128 };
    static float R[BITS * DD], R2[BITS * DD], R3[BITS * DD];
    hashevict_projection(7, 0, BITS, DD, R);
    hashevict_projection(7, 0, BITS, DD, R2);
    hashevict_projection(7, 1, BITS, DD, R3);
    assert_memory_equal(R, R2, sizeof R);
    assert_true(memcmp(R, R3, sizeof R) != 0);
    double m = 0, v = 0;
    for (int i = 0; i < BITS * DD; i++) m += R[i];
    m /= BITS * DD;
    for (int i = 0; i < BITS * DD; i++) v += (R[i] - m) * (R[i] - m);
    v /= BITS * DD - 1;
    assert_true(fabs(m) < 0.05);
    assert_true(fabs(v - 1.0) < 0.06);
}

/* ------------------------------------------------------------------------ hashevict hooks */

/* Reference state of one (layer, g) region, slot by slot. */
typedef struct {
    int n;
    int32_t pos[MAXN];
    uint64_t code[MAXN], acc[MAXN];
    uint32_t age[MAXN];
} mirror;

/* Probe codes of the G query heads q [G][D] under R. */
static void query_codes(const float *R, int bits, const float *q, int G, uint64_t *out)
{
    for (int h = 0; h < G; h++) out[h] = hashevict_code(R, bits, D, q + h * D);
}

/* The reference victim (mean or current distance) over the mirror, accumulating as the policy. */
static int mirror_victim(mirror *m, const uint64_t *qc, int n_q, int sink, int recent, int t,
                         int mean)
{
    if (!mean) return hashevict_victim(m->pos, m->code, m->n, qc, n_q, sink, recent, t);
    for (int j = 0; j < m->n; j++) {
        for (int h = 0; h < n_q; h++) m->acc[j] += __builtin_popcountll(m->code[j] ^ qc[h]);
        m->age[j]++;
    }
    return hashevict_victim_mean(m->pos, m->acc, m->age, m->n, sink, recent, t);
}

/* Runs hashevict on 1 layer x 2 KV heads (G = 2) against the reference: an N-token prompt
 * (simulated when N > C) and `steps` decode steps. */
static void run_hashevict_against_reference(const char *probe, const char *accum, int N, int budget,
                                            int steps)
{
    enum { L = 1, HKV = 2, H = 4, G = 2, BITS = 16, SINK = 2, RECENT = 3 };
    const char *flags[] = {"hash-sink", "2", "hash-recent", "3", "hash-probe", probe,
                           "hash-accum", accum, NULL};
    const int mean = strcmp(accum, "mean") == 0, key = strcmp(probe, "key") == 0;
    kv_cache kv;
    ts_make_kv(&kv, "hashevict", L, HKV, H, N, steps + 1, budget, 11, flags);
    const int C = kv.cap[0];
    assert_int_equal(C, budget);
    float R[BITS * D];
    hashevict_projection(11, 0, BITS, D, R);
    uint64_t rng = 5;
    static float q[MAXN * H * D], k[MAXN * HKV * D], v[MAXN * HKV * D];
    ts_fill(q, (size_t)N * H * D, &rng);
    ts_fill(k, (size_t)N * HKV * D, &rng);
    ts_fill(v, (size_t)N * HKV * D, &rng);
    /* reference prefill: fill with the first C tokens, replay the rule over the rest */
    mirror m[HKV];
    for (int g = 0; g < HKV; g++) {
        memset(&m[g], 0, sizeof m[g]);
        for (int p = 0; p < N; p++) {
            uint64_t code = hashevict_code(R, BITS, D, k + ((size_t)p * HKV + g) * D);
            if (m[g].n < C) {
                m[g].pos[m[g].n] = p, m[g].code[m[g].n] = code, m[g].n++;
                continue;
            }
            uint64_t qc[G];
            int n_q = key ? 1 : G;
            if (key) qc[0] = code;
            else query_codes(R, BITS, q + ((size_t)p * H + g * G) * D, G, qc);
            int vi = mirror_victim(&m[g], qc, n_q, SINK, RECENT, p, mean);
            assert_true(vi >= 0);
            m[g].pos[vi] = p, m[g].code[vi] = code, m[g].acc[vi] = 0, m[g].age[vi] = 0;
        }
        /* kept in ascending position (= candidate) order */
        for (int i = 0; i < m[g].n; i++)
            for (int j = i + 1; j < m[g].n; j++)
                if (m[g].pos[j] < m[g].pos[i]) {
                    mirror tmp = m[g];
                    m[g].pos[i] = tmp.pos[j], m[g].pos[j] = tmp.pos[i];
                    m[g].code[i] = tmp.code[j], m[g].code[j] = tmp.code[i];
                    m[g].acc[i] = tmp.acc[j], m[g].acc[j] = tmp.acc[i];
                    m[g].age[i] = tmp.age[j], m[g].age[j] = tmp.age[i];
                }
    }
    ts_prefill(&kv, 0, N, 0, q, k, v, NULL, 0);
    for (int g = 0; g < HKV; g++) {
        assert_int_equal(kv_len(&kv, 0, g), m[g].n);
        assert_memory_equal(kv_positions(&kv, 0, g), m[g].pos, (size_t)m[g].n * sizeof(int32_t));
    }
    /* decode: the same victim as the reference, one eviction per head per step once full */
    for (int t = N; t < N + steps; t++) {
        float qt[H * D], kt[HKV * D], vt[HKV * D];
        ts_fill(qt, H * D, &rng), ts_fill(kt, HKV * D, &rng), ts_fill(vt, HKV * D, &rng);
        for (int g = 0; g < HKV; g++) {
            int full = kv_len(&kv, 0, g) == C;
            if (full) ts_assert_protected(&kv, 0, g, SINK, RECENT, t);
            int64_t ev = kv.evictions;
            uint64_t code = hashevict_code(R, BITS, D, kt + g * D);
            int want = m[g].n;
            if (full) {
                uint64_t qc[G];
                if (key) qc[0] = code;
                else query_codes(R, BITS, qt + g * G * D, G, qc);
                want = mirror_victim(&m[g], qc, key ? 1 : G, SINK, RECENT, t, mean);
            } else {
                m[g].n++;
            }
            m[g].pos[want] = t, m[g].code[want] = code, m[g].acc[want] = 0, m[g].age[want] = 0;
            int slot = ts_decode(&kv, 0, g, t, qt + g * G * D, kt + g * D, vt + g * D);
            assert_int_equal(slot, want);
            assert_int_equal(kv.evictions - ev, full ? 1 : 0);
            assert_true(kv_len(&kv, 0, g) <= C);
            assert_memory_equal(kv_positions(&kv, 0, g), m[g].pos, (size_t)m[g].n * sizeof(int32_t));
        }
    }
    kv_free(&kv);
}

static void test_hashevict_decode_matches_reference_query_probe(void **st)
{
    (void)st;
    run_hashevict_against_reference("query", "none", 4, 8, 40);
}

static void test_hashevict_prefill_simulate_then_decode_matches_reference(void **st)
{
    (void)st;
    run_hashevict_against_reference("query", "none", 30, 8, 30);
}

static void test_hashevict_key_probe_matches_reference(void **st)
{
    (void)st;
    run_hashevict_against_reference("key", "none", 30, 8, 30);
}

static void test_hashevict_mean_accumulators_follow_slots_from_prefill_into_decode(void **st)
{
    (void)st;
    run_hashevict_against_reference("query", "mean", 30, 8, 40);
    run_hashevict_against_reference("key", "mean", 5, 7, 40);
}

static void test_hashevict_recent_global_prefill_keeps_first_sink_and_last(void **st)
{
    (void)st;
    const char *flags[] = {"hash-prefill", "recent_global", NULL};
    kv_cache kv;
    ts_make_kv(&kv, "hashevict", 2, 1, 1, 40, 10, 20, 3, flags);
    assert_int_equal(kv.cap[0], 20);
    uint64_t rng = 9;
    static float q[40 * D], k[40 * D], v[40 * D];
    ts_fill(q, sizeof q / sizeof *q, &rng), ts_fill(k, sizeof k / sizeof *k, &rng), ts_fill(v, sizeof v / sizeof *v, &rng);
    for (int l = 0; l < 2; l++) {
        ts_prefill(&kv, l, 40, 0, q, k, v, NULL, 0);
        const int32_t *P = kv_positions(&kv, l, 0);
        assert_int_equal(kv_len(&kv, l, 0), 20);
        for (int i = 0; i < 4; i++) assert_int_equal(P[i], i);
        for (int i = 4; i < 20; i++) assert_int_equal(P[i], 40 - 20 + i);
    }
    kv_free(&kv);
}

static void test_hashevict_chunked_prefill_keeps_capacity_and_ascending_positions(void **st)
{
    (void)st;
    kv_cache kv;
    ts_make_kv(&kv, "hashevict", 1, 1, 2, 50, 5, 16, 3, NULL);
    uint64_t rng = 2;
    static float q[10 * 2 * D], k[10 * D], v[10 * D];
    for (int c = 0; c < 5; c++) {
        ts_fill(q, sizeof q / sizeof *q, &rng), ts_fill(k, sizeof k / sizeof *k, &rng), ts_fill(v, sizeof v / sizeof *v, &rng);
        ts_prefill(&kv, 0, 10, 10 * c, q, k, v, NULL, 0);
        int n = kv_len(&kv, 0, 0);
        assert_int_equal(n, (10 * (c + 1) < 16 ? 10 * (c + 1) : 16));
        ts_assert_protected(&kv, 0, 0, 4, 10, 10 * (c + 1));
    }
    kv_free(&kv);
}

static void test_hashevict_identity_when_budget_covers_everything(void **st)
{
    (void)st;
    kv_cache kv;
    ts_make_kv(&kv, "hashevict", 1, 1, 1, 10, 10, 1.0, 0, NULL);
    assert_true(kv.cap[0] >= 20);
    uint64_t rng = 1;
    float q[10 * D], k[10 * D], v[10 * D];
    ts_fill(q, 40, &rng), ts_fill(k, 40, &rng), ts_fill(v, 40, &rng);
    ts_prefill(&kv, 0, 10, 0, q, k, v, NULL, 0);
    for (int t = 10; t < 19; t++) {
        float x[D];
        ts_fill(x, D, &rng);
        assert_int_equal(ts_decode(&kv, 0, 0, t, x, x, x), t);
    }
    assert_int_equal(kv.evictions, 0);
    for (int j = 0; j < 19; j++) assert_int_equal(kv_positions(&kv, 0, 0)[j], j);
    kv_free(&kv);
}

static void test_hashevict_capacity_raised_to_sink_plus_recent_plus_one(void **st)
{
    (void)st;
    kv_cache kv;
    ts_make_kv(&kv, "hashevict", 1, 1, 1, 100, 100, 0.01, 0, NULL);
    assert_int_equal(kv.cap[0], 15);
    kv_free(&kv);
    const char *flags[] = {"sink", "1", "window", "2", "lsh-bits", "8", NULL};
    ts_make_kv(&kv, "hashevict", 1, 1, 1, 100, 100, 2, 0, flags);
    assert_int_equal(kv.cap[0], 4);
    kv_free(&kv);
}

static void test_hashevict_bad_flags_are_one_line_errors(void **st)
{
    (void)st;
    const policy_ops *ops = policy_find("hashevict");
    ts_expect_init_error(ops, 0.5, (const char *const[]){"hash-bits", "65", NULL}, 10, 10, "--hash-bits");
    ts_expect_init_error(ops, 0.5, (const char *const[]){"hash-prefill", "stream", NULL}, 10, 10, "--hash-prefill");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashevict_golden_query_code_is_11111110),
        cmocka_unit_test(test_hashevict_golden_hamming_distances_1_4_2_6_2_1),
        cmocka_unit_test(test_hashevict_golden_victim_3_then_1),
        cmocka_unit_test(test_hashevict_victim_ties_go_to_the_older_token),
        cmocka_unit_test(test_hashevict_projection_is_seeded_standard_normal),
        cmocka_unit_test(test_hashevict_decode_matches_reference_query_probe),
        cmocka_unit_test(test_hashevict_prefill_simulate_then_decode_matches_reference),
        cmocka_unit_test(test_hashevict_key_probe_matches_reference),
        cmocka_unit_test(test_hashevict_mean_accumulators_follow_slots_from_prefill_into_decode),
        cmocka_unit_test(test_hashevict_recent_global_prefill_keeps_first_sink_and_last),
        cmocka_unit_test(test_hashevict_chunked_prefill_keeps_capacity_and_ascending_positions),
        cmocka_unit_test(test_hashevict_identity_when_budget_covers_everything),
        cmocka_unit_test(test_hashevict_capacity_raised_to_sink_plus_recent_plus_one),
        cmocka_unit_test(test_hashevict_bad_flags_are_one_line_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
