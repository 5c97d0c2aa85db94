/* The §15.2 golden vectors of the snap family (POLICIES.md §5-§7) on its pure functions: SnapKV
 * toy pooling and selection (snap_score.c), the Ada-KV allocation table and the PyramidKV
 * schedules (snap_alloc.c). The hooks: tests/test_policy_snap.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eviction/snap_internal.h" /* the pure functions of snap_score.c, snap_alloc.c */
#include "tests/support/support.h"

#define D 4

/* ------------------------------------------------------------------------ golden vectors */

static const float toy_A[12] = {0, .1f, 0, 0, 0, 0, 0, .9f, 0, 0, .2f, 0};

static void test_snapkv_golden_maxpool_kernel3(void **state)
{
    (void)state;
    const float want[12] = {.1f, .1f, .1f, 0, 0, 0, .9f, .9f, .9f, .2f, .2f, .2f};
    float out[12];
    snap_pool(toy_A, 12, 3, 0, out);
    for (int j = 0; j < 12; j++) assert_float_equal(out[j], want[j], 0.0f);
}

static void test_snapkv_golden_maxpool_kernel7(void **state)
{
    (void)state;
    const float want[12] = {.1f, .1f, .1f, .1f, .9f, .9f, .9f, .9f, .9f, .9f, .9f, .2f};
    float out[12];
    snap_pool(toy_A, 12, 7, 0, out);
    for (int j = 0; j < 12; j++) assert_float_equal(out[j], want[j], 0.0f);
}

static void test_snapkv_avgpool_divides_by_kernel_with_zero_padding(void **state)
{
    (void)state;
    float out[12];
    snap_pool(toy_A, 12, 3, 1, out);
    assert_float_equal(out[0], .1f / 3, 1e-7);      /* pad, 0, .1 */
    assert_float_equal(out[7], .9f / 3, 1e-7);
    assert_float_equal(out[11], .2f / 3, 1e-7);     /* .2, 0, pad */
}

/* N = 16, w_obs = 4, C = 8 → base 4: select [6, 7, 8, 9], keep [6..9, 12..15]. */
static void test_snapkv_golden_select_6_7_8_9_keep_6_to_9_and_12_to_15(void **state)
{
    (void)state;
    float scores[16] = {0}, pooled[12];
    memcpy(scores, toy_A, sizeof toy_A);
    int idx[12], keep[16];
    int n = snap_select(scores, 12, 16, 4, 0, 3, pooled, idx, keep);
    const int want[8] = {6, 7, 8, 9, 12, 13, 14, 15};
    assert_int_equal(n, 8);
    for (int i = 0; i < 8; i++) assert_int_equal(keep[i], want[i]);
}

static void test_snapkv_topk_ties_keep_the_older_token(void **state)
{
    (void)state;
    const float pooled[6] = {.5f, .5f, .5f, .5f, .5f, .5f};
    int idx[6], keep[8];
    int n = snap_topk_keep(pooled, 6, 8, 3, idx, keep);
    const int want[5] = {0, 1, 2, 6, 7};
    assert_int_equal(n, 5);
    for (int i = 0; i < 5; i++) assert_int_equal(keep[i], want[i]);
}

static const float ada_S[4][6] = {
    {.50f, .30f, .10f, .05f, .03f, .02f},
    {.20f, .18f, .17f, .16f, .15f, .14f},
    {.90f, .04f, .03f, .01f, .01f, .01f},
    {.25f, .25f, .20f, .10f, .10f, .10f},
};

/* The §15.2 Ada-KV table: B, α → counts c, exact B_g, reference B_g (Σ). */
static void test_ada_golden_allocation_table_all_six_rows(void **state)
{
    (void)state;
    struct { int B; double alpha; int c[4], exact[4], ref[4], ref_sum; } rows[] = {
        {8, 0.0, {2, 2, 1, 3}, {2, 2, 1, 3}, {2, 2, 1, 3}, 8},
        {8, 0.5, {2, 2, 1, 3}, {2, 2, 2, 2}, {2, 2, 2, 2}, 8},
        {12, 0.2, {2, 6, 1, 3}, {2, 6, 1, 3}, {2, 5, 1, 2}, 10},
        {12, 0.5, {2, 6, 1, 3}, {3, 4, 2, 3}, {2, 4, 2, 2}, 10},
        {16, 0.2, {3, 6, 1, 6}, {3, 6, 1, 6}, {2, 5, 1, 5}, 13},
        {16, 0.5, {3, 6, 1, 6}, {4, 5, 2, 5}, {4, 5, 2, 5}, 16},
    };
    const int n[4] = {6, 6, 6, 6};
    int idx[24], counts[4], budgets[4];
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        int sum = snap_ada_allocate(&ada_S[0][0], 6, n, 4, rows[r].B, rows[r].alpha, 0, idx, counts, budgets);
        assert_int_equal(sum, rows[r].B); /* exact: Σ B_g = B */
        for (int g = 0; g < 4; g++) {
            assert_int_equal(counts[g], rows[r].c[g]);
            assert_int_equal(budgets[g], rows[r].exact[g]);
        }
        sum = snap_ada_allocate(&ada_S[0][0], 6, n, 4, rows[r].B, rows[r].alpha, 1, idx, counts, budgets);
        assert_int_equal(sum, rows[r].ref_sum);
        for (int g = 0; g < 4; g++) assert_int_equal(budgets[g], rows[r].ref[g]);
    }
}

/* §15.2 PyramidKV code schedule, L = 32, w_obs = 32: C → base_0, base_31, Σ, uniform. */
static void test_pyramid_golden_code_schedule_rows(void **state)
{
    (void)state;
    struct { int C, b0, b31, sum, uniform; } rows[] = {
        {128, 188, 33, 3536, 3072},    {256, 437, 34, 7536, 7168},      {512, 936, 37, 15568, 15360},
        {1024, 1935, 75, 32160, 31744}, {2048, 3932, 119, 64816, 64512},
    };
    int out[32];
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        int base = rows[r].C - 32, sum = 0;
        snap_pyramid_schedule(base, 1000000000, 32, 20.0, 0, out);
        for (int l = 0; l < 32; l++) sum += out[l];
        assert_int_equal(out[0], rows[r].b0);
        assert_int_equal(out[31], rows[r].b31);
        assert_int_equal(sum, rows[r].sum);
        assert_int_equal(32 * base, rows[r].uniform);
    }
}

static void test_pyramid_exact_schedule_sums_to_uniform_and_decreases(void **state)
{
    (void)state;
    int out[32];
    for (int C = 40; C <= 2048; C += 37) {
        for (int n = 50; n <= 5000; n += 950) {
            int base = C - 32, sum = 0;
            snap_pyramid_schedule(base, n, 32, 20.0, 1, out);
            for (int l = 0; l < 32; l++) {
                sum += out[l];
                if (l) assert_true(out[l] <= out[l - 1]);
                assert_true(out[l] >= 0);
            }
            assert_int_equal(sum, 32 * base);
        }
    }
}

static void test_pyramid_clips_the_bottom_layer_to_the_prefix(void **state)
{
    (void)state;
    int out[4];
    /* base 60, n 100: max_b = 120 − 3 = 117 ≥ 100 → max_b = 100, min_b = 20, step 26 */
    snap_pyramid_schedule(60, 100, 4, 20.0, 0, out);
    assert_int_equal(out[0], 100);
    assert_int_equal(out[1], 74);
    assert_int_equal(out[3], 22);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapkv_golden_maxpool_kernel3),
        cmocka_unit_test(test_snapkv_golden_maxpool_kernel7),
        cmocka_unit_test(test_snapkv_avgpool_divides_by_kernel_with_zero_padding),
        cmocka_unit_test(test_snapkv_golden_select_6_7_8_9_keep_6_to_9_and_12_to_15),
        cmocka_unit_test(test_snapkv_topk_ties_keep_the_older_token),
        cmocka_unit_test(test_ada_golden_allocation_table_all_six_rows),
        cmocka_unit_test(test_pyramid_golden_code_schedule_rows),
        cmocka_unit_test(test_pyramid_exact_schedule_sums_to_uniform_and_decreases),
        cmocka_unit_test(test_pyramid_clips_the_bottom_layer_to_the_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
