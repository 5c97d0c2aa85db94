/* Tests for kernels/cpu: every SIMD family (kernels/cpu/simd.h) against the scalar reference
 * at odd sizes; the F16/BF16 conversions against the compiler's _Float16 (an outside
 * reference: IEEE binary16 conversions done by GCC/libgcc) and against the definition of
 * round-to-nearest-even; attention (tiled prefill with column sums, decode) against a direct
 * float64 softmax; matmul for every dtype and n; model_convert. Families the CPU cannot run
 * (AVX-512 on most machines here) are skipped, and say so.
 * Kept whole (over ~500 lines): every SIMD family is run through the same per-ISA loop and the same scalar
 * references; split by kernel it would repeat the loop and references in each file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/rowsteal.h"
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "tests/support/support.h"

/* ------------------------------------------------------------------------ helpers */

static uint64_t rng = 88172645463325252ull;
static float frand(void)  /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / (1ull << 23)) - 1.0);
}

static float *rand_floats(size_t n)
{
    float *a = malloc(n * sizeof *a + 1);
    assert_non_null(a);
    for (size_t i = 0; i < n; i++) a[i] = frand();
    return a;
}

static const char *g_default;   /* the family in use when the tests started */

static const char *const FAMILIES[] = {"avx2", "avx512"};
#define N_FAMILIES (int)(sizeof FAMILIES / sizeof FAMILIES[0])

/* The family called name, or NULL after printing why it is skipped. */
static const cpu_simd_ops *family(const char *name)
{
    const cpu_simd_ops *s = cpu_simd_find(name);
    if (!s) printf("  [ SKIP ] %s kernels: this CPU (or build) cannot run them\n", name);
    return s;
}

static const int ROWS[] = {1, 3, 17, 33, 64};
static const int COLS[] = {1, 7, 8, 31, 33, 65, 127, 257, 768, 8200};

/* |a - b| ≤ tol · scale, with a message naming what differs. */
#define CLOSE(a, b, tol, scale, ...)                                                           \
    do {                                                                                       \
        double a_ = (a), b_ = (b);                                                             \
        if (!(fabs(a_ - b_) <= (tol) * (scale))) {                                             \
            print_error(__VA_ARGS__);                                                          \
            print_error(": %.9g vs %.9g (tol %.3g × %.3g)\n", a_, b_, (double)(tol), (double)(scale)); \
            fail();                                                                            \
        }                                                                                      \
    } while (0)

/* ------------------------------------------------------------------- conversions */

static float f16_ref(uint16_t h)
{
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

static void test_f16_to_f32_matches_float16_for_all_65536_values(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = f16_to_f32((uint16_t)h), want = f16_ref((uint16_t)h);
        if (isnan(want)) assert_true(isnan(got));
        else assert_memory_equal(&got, &want, 4);
    }
}

static void test_f32_to_f16_rounds_like_float16_cast(void **state)
{
    (void)state;
    /* every f16 value, the midpoints between neighbours (ties to even), and random bits */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float a = f16_ref((uint16_t)h), b = f16_ref((uint16_t)(h + 1));
        float xs[] = {a, -a, (float)(((double)a + b) / 2), nextafterf((float)(((double)a + b) / 2), INFINITY)};
        for (int k = 0; k < 4; k++) {
            _Float16 r = (_Float16)xs[k];
            uint16_t want, got = f32_to_f16(xs[k]);
            memcpy(&want, &r, 2);
            if (got != want) fail_msg("f32_to_f16(%a) = 0x%04x, (_Float16) gives 0x%04x", xs[k], got, want);
        }
    }
    for (int i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)(rng = rng * 6364136223846793005ull + 1) >> 0;
        u = (uint32_t)(rng >> 32);
        float x;
        memcpy(&x, &u, 4);
        if (isnan(x)) continue;
        _Float16 r = (_Float16)x;
        uint16_t want, got = f32_to_f16(x);
        memcpy(&want, &r, 2);
        if (got != want) fail_msg("f32_to_f16(%a) = 0x%04x, (_Float16) gives 0x%04x", x, got, want);
    }
}

/* f32_to_bf16 is the nearest bf16 (ties to the even mantissa), checked from the definition. */
static void test_f32_to_bf16_is_round_to_nearest_even(void **state)
{
    (void)state;
    for (int i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 32);
        if (i < 1000) u = (u & 0xffff0000u) | 0x8000u;   /* exact ties */
        float x;
        memcpy(&x, &u, 4);
        if (!isfinite(x) || fabsf(x) > 3.38e38f) continue;
        uint16_t r = f32_to_bf16(x);
        double d = fabs((double)bf16_to_f32(r) - x);
        double dn = fabs((double)bf16_to_f32((uint16_t)(r + 1)) - x);
        double dp = fabs((double)bf16_to_f32((uint16_t)(r - 1)) - x);
        if (d > dn || d > dp) fail_msg("f32_to_bf16(%a) = 0x%04x is not the nearest", x, r);
        if ((d == dn || d == dp) && (r & 1)) fail_msg("f32_to_bf16(%a) = 0x%04x: a tie not rounded to even", x, r);
    }
    assert_true(isnan(bf16_to_f32(f32_to_bf16(NAN))));
    assert_int_equal(f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(f32_to_bf16(-0.0f), 0x8000);
}

static void test_widen_is_exact_in_every_family(void **state)
{
    (void)state;
    size_t n = 65536 + 13;
    uint16_t *h = malloc(n * 2);
    float *a = malloc(n * 4), *b = malloc(n * 4);
    assert_true(h && a && b);
    for (size_t i = 0; i < n; i++) h[i] = (uint16_t)(i * 40503u);   /* every 16-bit pattern */
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_simd_ops *s = family(FAMILIES[f]);
        if (!s) continue;
        for (int dt = 0; dt < 2; dt++) {
            (dt ? cpu_simd_scalar.widen_bf16 : cpu_simd_scalar.widen_f16)(a, h, n);
            (dt ? s->widen_bf16 : s->widen_f16)(b, h, n);
            for (size_t i = 0; i < n; i++)
                if (!(isnan(a[i]) && isnan(b[i])) && memcmp(&a[i], &b[i], 4))
                    fail_msg("%s widen_%s(0x%04x) = %a, scalar %a", s->name, dt ? "bf16" : "f16", h[i], b[i], a[i]);
        }
    }
    free(h);
    free(a);
    free(b);
}

/* narrow_f16 / narrow_bf16 of every family give the scalar bits (f32_to_f16 / f32_to_bf16,
 * themselves checked above) for every input: random bit patterns (NaNs with payloads, infinities,
 * subnormals), every binary16 value and the midpoints around it (ties), and the overflow edge;
 * lengths that leave a scalar tail. */
static void test_narrow_every_family_matches_scalar_bits(void **state)
{
    (void)state;
    size_t n = 4 * 65536 + 2000003;
    float *x = malloc(n * 4);
    uint16_t *a = malloc(n * 2), *b = malloc(n * 2);
    assert_true(x && a && b);
    size_t k = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float v = f16_ref((uint16_t)h), w = f16_ref((uint16_t)(h + 1));
        x[k++] = v;
        x[k++] = (float)(((double)v + w) / 2);
        x[k++] = nextafterf(v, INFINITY);
        x[k++] = nextafterf(v, -INFINITY);
    }
    const float edge[] = {65504.0f, 65519.99f, 65520.0f, -65520.0f, 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f,
                          1e-45f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 3.3895314e38f, -3.3895314e38f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) x[k++] = edge[i];
    while (k < n) {
        uint32_t u = (uint32_t)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 32);
        memcpy(&x[k++], &u, 4);
    }
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_simd_ops *s = family(FAMILIES[f]);
        if (!s) continue;
        for (int dt = 0; dt < 2; dt++)
            for (size_t len = n; len + 40 > n; len -= 13) {   /* tails of 0..VN-1 elements */
                (dt ? cpu_simd_scalar.narrow_bf16 : cpu_simd_scalar.narrow_f16)(a, x, len);
                (dt ? s->narrow_bf16 : s->narrow_f16)(b, x, len);
                for (size_t i = 0; i < len; i++)
                    if (a[i] != b[i])
                        fail_msg("%s narrow_%s(%a) = 0x%04x, scalar 0x%04x", s->name, dt ? "bf16" : "f16", x[i], b[i], a[i]);
                if (dt == 0) assert_int_equal(a[0], f32_to_f16(x[0]));
            }
    }
    free(x);
    free(a);
    free(b);
}

/* ------------------------------------------------------------------------ matvec */

/* rowsteal.h: for any row count, block size, thread count and split of the last blocks, the
 * claims of threads running at once (owners from the front, half the free blocks at a time;
 * others from the back) cover every row exactly once; with one thread the share is claimed
 * front to back. */
static void test_rowsteal_claims_every_row_exactly_once(void **state)
{
    (void)state;
    const long long totals[] = {1, 7, 64, 1000, 4099};
    const size_t blocks[] = {1, 3, 64, 1u << 30};
    int *hits = calloc(4099, sizeof *hits);
    assert_non_null(hits);
    for (size_t a = 0; a < sizeof totals / sizeof totals[0]; a++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
            for (int T = 1; T <= 5; T++)
                for (int rep = 0; rep < 20; rep++) {
                    long long R = totals[a];
                    memset(hits, 0, (size_t)R * sizeof *hits);
                    rowsteal rs;
                    rs_init(&rs, R, T, 1, blocks[b], 1, 1 + rep % 5);   /* last blocks whole, in 2..5 pieces */
#pragma omp parallel num_threads(T)
                    {
                        int t = omp_get_thread_num(), v = t;
                        long long g0, g1, last = -1;
                        while (rs_next(&rs, t, T, &v, &g0, &g1)) {
                            if (T == 1 && g0 != last + 1) hits[0] = -1000;   /* front to back */
                            last = g1 - 1;
                            for (long long r = g0; r < g1; r++) __atomic_add_fetch(&hits[r], 1, __ATOMIC_RELAXED);
                        }
                    }
                    for (long long r = 0; r < R; r++)
                        if (hits[r] != 1)
                            fail_msg("rows %lld, block %zu, %d threads: row %lld claimed %d times", R, blocks[b], T, r, hits[r]);
                }
    free(hits);
}

/* rs_first_claim (matmul_next_hint's read-ahead) names the rows of the first claim thread t
 * makes in a fresh run, whatever the row count, row bytes, block bytes, alignment and T. */
static void test_rowsteal_first_claim_is_the_first_rs_next(void **state)
{
    (void)state;
    const long long totals[] = {1, 7, 16, 960, 4099, 151936};
    const size_t row_bytes[] = {1, 360, 1152, 0}, block_bytes[] = {64, 32768, 131072};
    int cases = 0;
    for (size_t a = 0; a < sizeof totals / sizeof totals[0]; a++)
        for (size_t r = 0; r < sizeof row_bytes / sizeof row_bytes[0]; r++)
            for (size_t b = 0; b < sizeof block_bytes / sizeof block_bytes[0]; b++)
                for (int align = 8; align <= 16; align += 8)
                    for (int T = 1; T <= 5; T++)
                        for (int t = 0; t < T; t++) {
                            rowsteal rs;
                            const int parts = 1 + (t + T + align) % 4;
                            rs_init(&rs, totals[a], T, row_bytes[r], block_bytes[b], align, parts);
                            long long g0 = -1, g1 = -1, f0 = -1, f1 = -1;
                            int v = t, got = rs_next(&rs, t, T, &v, &g0, &g1);
                            int own = got && v == t;   /* an empty share steals instead */
                            int first = rs_first_claim(totals[a], t, T, row_bytes[r], block_bytes[b], align, parts, &f0, &f1);
                            if (first != own || (own && (f0 != g0 || f1 != g1)))
                                fail_msg("rows %lld, row bytes %zu, block %zu, align %d, thread %d of %d: first claim "
                                         "[%lld, %lld) (%d), rs_first_claim [%lld, %lld) (%d)", totals[a], row_bytes[r],
                                         block_bytes[b], align, t, T, g0, g1, own, f0, f1, first);
                            cases++;
                        }
    printf("  %d cases\n", cases);
}

/* The last block of a share of two blocks or more is claimed in pieces: a steal from the back
 * end of a 1024-row share of 256-row blocks takes its last 64 rows (4 parts; 3 parts: pieces
 * of 96, 96 and 64), the last 256 in 1 part (whole); a one-block share is never split. */
static void test_rowsteal_splits_the_last_block(void **state)
{
    (void)state;
    static const int parts[] = {4, 1, 3};
    static const long long want[] = {64, 256, 64};   /* 3 parts: 96, 96 and the last 64 (align 16) */
    for (int i = 0; i < 3; i++) {
        rowsteal rs;
        long long g0 = -1, g1 = -1;
        rs_init(&rs, 2048, 2, 1, 256, 16, parts[i]);
        assert_int_equal(rs_claim(&rs, 0, 1, 2, &g0, &g1), 1);   /* thread 1 steals from share 0 */
        assert_int_equal(g1, 1024);
        if (g1 - g0 != want[i]) fail_msg("%d parts: a steal took %lld rows, want %lld", parts[i], g1 - g0, want[i]);
    }
    rowsteal rs;
    long long g0 = -1, g1 = -1;
    rs_init(&rs, 400, 2, 1, 256, 16, 4);   /* shares of 200 rows: one block each */
    assert_int_equal(rs_claim(&rs, 0, 1, 2, &g0, &g1), 1);
    assert_int_equal(g0, 0);
    assert_int_equal(g1, 200);
}

static void test_matvec_every_family_matches_scalar_at_odd_sizes(void **state)
{
    (void)state;
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_simd_ops *s = family(FAMILIES[f]);
        if (!s) continue;
        for (size_t ri = 0; ri < sizeof ROWS / sizeof ROWS[0]; ri++)
            for (size_t ci = 0; ci < sizeof COLS / sizeof COLS[0]; ci++) {
                int rows = ROWS[ri], cols = COLS[ci];
                float *W = rand_floats((size_t)rows * cols), *x = rand_floats((size_t)cols);
                uint16_t *Wh = malloc((size_t)rows * cols * 2 + 2), *Wb = malloc((size_t)rows * cols * 2 + 2);
                float *y0 = calloc((size_t)rows + 2, 4), *y1 = calloc((size_t)rows + 2, 4);
                assert_true(Wh && Wb && y0 && y1);
                for (size_t i = 0; i < (size_t)rows * cols; i++) {
                    Wh[i] = f32_to_f16(W[i]);
                    Wb[i] = f32_to_bf16(W[i]);
                }
                /* a sub-range of rows too: r0 > 0 must leave the rows before it alone */
                int r0 = rows > 2 ? 1 : 0;
                for (int dt = 0; dt < 3; dt++) {
                    y1[0] = 12345.0f;
                    if (dt == 0) { cpu_simd_scalar.matvec_f32(y0, W, x, r0, rows, cols); s->matvec_f32(y1, W, x, r0, rows, cols); }
                    if (dt == 1) { cpu_simd_scalar.matvec_f16(y0, Wh, x, r0, rows, cols); s->matvec_f16(y1, Wh, x, r0, rows, cols); }
                    if (dt == 2) { cpu_simd_scalar.matvec_bf16(y0, Wb, x, r0, rows, cols); s->matvec_bf16(y1, Wb, x, r0, rows, cols); }
                    if (r0) assert_true(y1[0] == 12345.0f);
                    for (int r = r0; r < rows; r++) {
                        double mag = 0;   /* Σ|w x|: the scale of the rounding error */
                        for (int i = 0; i < cols; i++) mag += fabs(W[(size_t)r * cols + i] * x[i]);
                        CLOSE(y1[r], y0[r], 4e-6, mag + 1e-30, "%s matvec %s rows %d cols %d row %d", s->name,
                              dt == 0 ? "f32" : dt == 1 ? "f16" : "bf16", rows, cols, r);
                    }
                }
                free(W); free(x); free(Wh); free(Wb); free(y0); free(y1);
            }
    }
}

/* The scalar matvec is the definition: Σ w_i x_i of the widened weights (float64 check). */
static void test_matvec_scalar_is_the_dot_product_of_widened_weights(void **state)
{
    (void)state;
    int rows = 9, cols = 301;
    float *W = rand_floats((size_t)rows * cols), *x = rand_floats((size_t)cols), y[9];
    uint16_t *Wb = malloc((size_t)rows * cols * 2);
    assert_non_null(Wb);
    for (int i = 0; i < rows * cols; i++) Wb[i] = f32_to_bf16(W[i]);
    cpu_simd_scalar.matvec_bf16(y, Wb, x, 0, rows, cols);
    for (int r = 0; r < rows; r++) {
        double s = 0, mag = 0;
        for (int i = 0; i < cols; i++) {
            s += (double)bf16_to_f32(Wb[r * cols + i]) * x[i];
            mag += fabs((double)bf16_to_f32(Wb[r * cols + i]) * x[i]);
        }
        CLOSE(y[r], s, 1e-6, mag, "scalar bf16 row %d", r);
    }
    free(W); free(x); free(Wb);
}

/* matmul (the public entry): every dtype, n = 1 (threaded matvec) and n > 1 (gemm_nt_f32 or the
 * BLAS, widened tiles split over threads), against float64 sums of the stored weights. */
static void test_matmul_every_dtype_and_batch_matches_float64(void **state)
{
    (void)state;
    cpu_set_threads(2);
    const int shapes[][2] = {{5, 33}, {300, 257}, {1000, 700}};  /* the last is threaded and tiled */
    const int ns[] = {1, 2, 7, 40, 250};   /* 250: above GEMM_NT_MAX_N, the BLAS */
    for (size_t si = 0; si < 3; si++) {
        int rows = shapes[si][0], cols = shapes[si][1];
        float *W = rand_floats((size_t)rows * cols);
        uint16_t *Wh = malloc((size_t)rows * cols * 2), *Wb = malloc((size_t)rows * cols * 2);
        assert_true(Wh && Wb);
        for (size_t i = 0; i < (size_t)rows * cols; i++) {
            Wh[i] = f32_to_f16(W[i]);
            Wb[i] = f32_to_bf16(W[i]);
        }
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            int n = ns[ni];
            float *x = rand_floats((size_t)n * cols), *y = malloc((size_t)n * rows * 4);
            assert_non_null(y);
            for (int dt = 0; dt < 3; dt++) {
                weight_t w = {.dtype = (dtype_t)dt, .data = dt == DT_F32 ? (void *)W : dt == DT_F16 ? (void *)Wh : (void *)Wb,
                              .rows = rows, .cols = cols};
                matmul(y, x, &w, n);
                for (int i = 0; i < n; i++)
                    for (int r = 0; r < rows; r += 7) {
                        double s = 0, mag = 0;
                        for (int c = 0; c < cols; c++) {
                            size_t k = (size_t)r * cols + c;
                            double wv = dt == DT_F32 ? W[k] : dt == DT_F16 ? f16_to_f32(Wh[k]) : bf16_to_f32(Wb[k]);
                            s += wv * x[(size_t)i * cols + c];
                            mag += fabs(wv * x[(size_t)i * cols + c]);
                        }
                        CLOSE(y[(size_t)i * rows + r], s, 1e-5, mag, "matmul %s [%d x %d] n %d row %d col %d",
                              dtype_name((dtype_t)dt), rows, cols, n, i, r);
                    }
            }
            free(x);
            free(y);
        }
        free(W); free(Wh); free(Wb);
    }
}

/* The prefill GEMM without packing (gemm_nt_f32, where a family has one): against float64 sums
 * at K with and without a 16-column tail, every tile shape (8/4/1 weight rows × 3/2/1 tokens),
 * and the same bits for any split of the rows or of the tokens (matmul's thread split, and the
 * tokens of a chunk) — each output is the same accumulator whatever tile it falls in. */
static void test_gemm_nt_matches_float64_and_any_split_gives_the_same_bits(void **state)
{
    (void)state;
    const int Ks[] = {1, 7, 16, 33, 768, 2050}, ns[] = {1, 2, 3, 4, 7, 50}, rows_[] = {1, 5, 8, 13, 37};
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_simd_ops *s = cpu_simd_find(FAMILIES[f]);
        if (!s || !s->gemm_nt_f32) {
            printf("  [ SKIP ] %s: no gemm_nt_f32 here (matmul uses the BLAS)\n", FAMILIES[f]);
            continue;
        }
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
                for (size_t ri = 0; ri < sizeof rows_ / sizeof *rows_; ri++) {
                    int K = Ks[ki], n = ns[ni], rows = rows_[ri];
                    float *W = rand_floats((size_t)rows * K), *x = rand_floats((size_t)n * K);
                    float *y = malloc((size_t)n * rows * 4), *y2 = malloc((size_t)n * rows * 4);
                    assert_true(y && y2);
                    s->gemm_nt_f32(y, rows, x, n, W, 0, rows, K);
                    for (int j = 0; j < n; j++)
                        for (int r = 0; r < rows; r++) {
                            double sum = 0, mag = 0;
                            for (int c = 0; c < K; c++) {
                                sum += (double)W[(size_t)r * K + c] * x[(size_t)j * K + c];
                                mag += fabs((double)W[(size_t)r * K + c] * x[(size_t)j * K + c]);
                            }
                            CLOSE(y[(size_t)j * rows + r], sum, 1e-5, mag + 1e-30, "%s gemm_nt K %d n %d rows %d: y[%d][%d]",
                                  s->name, K, n, rows, j, r);
                        }
                    /* rows split at a (not a multiple of 8), tokens split at b */
                    int a = rows / 3, b = n / 2;
                    memset(y2, 0xff, (size_t)n * rows * 4);
                    s->gemm_nt_f32(y2, rows, x, b, W, 0, a, K);
                    s->gemm_nt_f32(y2, rows, x, b, W, a, rows, K);
                    s->gemm_nt_f32(y2 + (size_t)b * rows, rows, x + (size_t)b * K, n - b, W, 0, rows, K);
                    assert_memory_equal(y, y2, (size_t)n * rows * 4);
                    free(W), free(x), free(y), free(y2);
                }
    }
}

/* Decode (n = 1) matmul_multi splits the rows of the call over the threads with stealing
 * (kernels/cpu/rowsteal.h): the output is bit-identical for 1..4 threads, for the float dtypes
 * and the block formats, with shares that end inside a matrix and matrices smaller than a
 * block, and equals one matmul per matrix; matmul_swiglu equals the products then swiglu. */
static void test_decode_matvec_bit_identical_for_any_thread_count(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_F32, DT_F16, DT_BF16, DT_Q4_1, DT_Q8_0, DT_Q4_K};
    const int rows[3] = {1003, 37, 2100};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        dtype_t dt = dts[d];
        int cols = dtype_block(dt) == 256 ? 512 : 320;
        weight_t w[3];
        const weight_t *wp[3];
        float *ref[3], *y[3], *x = rand_floats((size_t)cols);
        for (int i = 0; i < 3; i++) {
            size_t rb = dtype_row_bytes(dt, cols);
            uint8_t *data = dtype_is_quant(dt) ? ts_rand_blocks(dt, rows[i], cols, &rng) : malloc((size_t)rows[i] * rb);
            float *src = rand_floats((size_t)cols);
            assert_non_null(data);
            for (int r = 0; r < rows[i] && !dtype_is_quant(dt); r++) {
                for (int c = 0; c < cols; c++) src[c] = frand();
                if (dt == DT_F32) memcpy(data + (size_t)r * rb, src, rb);
                else if (dt == DT_F16 || dt == DT_BF16)
                    for (int c = 0; c < cols; c++)
                        ((uint16_t *)(data + (size_t)r * rb))[c] = dt == DT_F16 ? f32_to_f16(src[c]) : f32_to_bf16(src[c]);
            }
            free(src);
            w[i] = (weight_t){.dtype = dt, .data = data, .rows = rows[i], .cols = cols};
            wp[i] = &w[i];
            ref[i] = malloc((size_t)rows[i] * sizeof(float));
            y[i] = malloc((size_t)rows[i] * sizeof(float));
            assert_true(ref[i] && y[i]);
        }
        cpu_set_threads(1);
        matmul_multi(ref, wp, 3, x, 1);
        for (int t = 1; t <= 4; t++) {
            cpu_set_threads(t);
            for (int i = 0; i < 3; i++) memset(y[i], 0xff, (size_t)rows[i] * sizeof(float));
            matmul_multi(y, wp, 3, x, 1);
            for (int i = 0; i < 3; i++) assert_memory_equal(y[i], ref[i], (size_t)rows[i] * sizeof(float));
            for (int i = 0; i < 3; i++) {
                memset(y[i], 0xff, (size_t)rows[i] * sizeof(float));
                matmul(y[i], x, &w[i], 1);
                assert_memory_equal(y[i], ref[i], (size_t)rows[i] * sizeof(float));
            }
            /* matmul_swiglu (gate = w[0], up = w[0] with other rows: w[2]'s first rows) = the
             * products then swiglu */
            weight_t up = w[2];
            up.rows = w[0].rows;
            float *g = malloc((size_t)w[0].rows * sizeof(float)), *u = malloc((size_t)w[0].rows * sizeof(float));
            assert_true(g && u);
            matmul_swiglu(g, u, &w[0], &up, x, 1);
            float *want = malloc((size_t)w[0].rows * sizeof(float));
            assert_non_null(want);
            memcpy(want, ref[0], (size_t)w[0].rows * sizeof(float));
            swiglu(want, ref[2], (size_t)w[0].rows);
            assert_memory_equal(g, want, (size_t)w[0].rows * sizeof(float));
            free(g), free(u), free(want);
        }
        for (int i = 0; i < 3; i++) free((void *)w[i].data), free(ref[i]), free(y[i]);
        free(x);
    }
    cpu_set_threads(1);
}

/* Prefill (n > 1) matmul_multi cuts the output rows into slices fixed by the machine
 * (matmul.c prefill_slices), not by the thread count: the BLAS's result for an element may
 * depend on where the call's rows are cut (OpenBLAS 0.3.21 on an AMD Zen 3 host: this test
 * failed with a cut per thread), so the bits must be the same for 1..4 threads, through our GEMM (7 tokens, where the
 * family has one) and the BLAS (250 tokens; every n on a family without gemm_nt_f32), F32 and
 * widened F16/BF16 tiles. */
static void test_prefill_matmul_bit_identical_for_any_thread_count(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_F32, DT_F16, DT_BF16};
    const int rows[3] = {1003, 37, 2100}, cols = 320, ns[] = {7, 250};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            dtype_t dt = dts[d];
            int n = ns[ni];
            weight_t w[3];
            const weight_t *wp[3];
            float *ref[3], *y[3], *x = rand_floats((size_t)n * cols);
            for (int i = 0; i < 3; i++) {
                float *src = rand_floats((size_t)rows[i] * cols);
                void *data = src;
                if (dt != DT_F32) {
                    uint16_t *h = malloc((size_t)rows[i] * cols * 2);
                    assert_non_null(h);
                    for (size_t k = 0; k < (size_t)rows[i] * cols; k++) h[k] = dt == DT_F16 ? f32_to_f16(src[k]) : f32_to_bf16(src[k]);
                    free(src);
                    data = h;
                }
                w[i] = (weight_t){.dtype = dt, .data = data, .rows = rows[i], .cols = cols};
                wp[i] = &w[i];
                ref[i] = malloc((size_t)n * rows[i] * sizeof(float));
                y[i] = malloc((size_t)n * rows[i] * sizeof(float));
                assert_true(ref[i] && y[i]);
            }
            cpu_set_threads(1);
            matmul_multi(ref, wp, 3, x, n);
            for (int t = 2; t <= 4; t++) {
                cpu_set_threads(t);
                for (int i = 0; i < 3; i++) memset(y[i], 0xff, (size_t)n * rows[i] * sizeof(float));
                matmul_multi(y, wp, 3, x, n);
                for (int i = 0; i < 3; i++)
                    if (memcmp(y[i], ref[i], (size_t)n * rows[i] * sizeof(float)))
                        fail_msg("prefill matmul_multi %s n %d matrix %d: %d threads differ from 1", dtype_name(dt), n, i, t);
            }
            for (int i = 0; i < 3; i++) free((void *)w[i].data), free(ref[i]), free(y[i]);
            free(x);
        }
    cpu_set_threads(1);
}

/* --------------------------------------------------------------- small kernels */

static void test_dot_axpy_exp_scores_every_family_match_scalar(void **state)
{
    (void)state;
    const int ns[] = {1, 5, 8, 15, 16, 17, 63, 64, 65, 128, 129, 1000};
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_simd_ops *s = family(FAMILIES[f]);
        if (!s) continue;
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            int n = ns[k];
            float *a = rand_floats((size_t)n), *b = rand_floats((size_t)n), *y0 = rand_floats((size_t)n);
            float *y1 = malloc((size_t)n * 4), *p0 = malloc((size_t)n * 4), *p1 = malloc((size_t)n * 4);
            assert_true(y1 && p0 && p1);
            double mag = 0;
            for (int i = 0; i < n; i++) mag += fabs(a[i] * b[i]);
            CLOSE(s->dot(a, b, n), cpu_simd_scalar.dot(a, b, n), 4e-6, mag, "%s dot n %d", s->name, n);
            memcpy(y1, y0, (size_t)n * 4);
            cpu_simd_scalar.axpy(y0, 0.37f, a, n);
            s->axpy(y1, 0.37f, a, n);
            for (int i = 0; i < n; i++) CLOSE(y1[i], y0[i], 1e-6, 2, "%s axpy n %d i %d", s->name, n, i);
            /* acc_rows: o += Σ p_j rows_j over hd = n columns, 7 rows */
            {
                const float *rows[7];
                float pj[7];
                for (int j = 0; j < 7; j++) { rows[j] = j % 2 ? a : b; pj[j] = 0.1f * (float)(j + 1); }
                memcpy(y1, y0, (size_t)n * 4);
                cpu_simd_scalar.acc_rows(y0, pj, rows, 7, n);
                s->acc_rows(y1, pj, rows, 7, n);
                for (int i = 0; i < n; i++) CLOSE(y1[i], y0[i], 1e-6, 5, "%s acc_rows hd %d d %d", s->name, n, i);
            }
            /* exp over scores down to -100 (flush to 0 below about -87) */
            float mx = -INFINITY;
            for (int i = 0; i < n; i++) {
                a[i] = a[i] * 50.0f - 50.0f;
                if (a[i] > mx) mx = a[i];
            }
            float s0 = cpu_simd_scalar.exp_sum(p0, a, n, mx), s1 = s->exp_sum(p1, a, n, mx);
            CLOSE(s1, s0, 4e-6, s0, "%s exp_sum n %d", s->name, n);
            for (int i = 0; i < n; i++) CLOSE(p1[i], p0[i], 3e-7, p0[i] + 1e-30, "%s exp(%g) n %d", s->name, a[i] - mx, n);
            free(a); free(b); free(y0); free(y1); free(p0); free(p1);
        }
        const int hds[] = {1, 8, 17, 64, 128};
        for (size_t k = 0; k < sizeof hds / sizeof hds[0]; k++) {
            int hd = hds[k];
            float *q = rand_floats((size_t)hd), *Kt = rand_floats((size_t)hd * ATT_BK), s0[ATT_BK], s1[ATT_BK];
            cpu_simd_scalar.scores_tile(s0, q, Kt, hd, 0.125f);
            s->scores_tile(s1, q, Kt, hd, 0.125f);
            for (int j = 0; j < ATT_BK; j++) {
                double mag = 0;
                for (int d = 0; d < hd; d++) mag += fabs(q[d] * Kt[d * ATT_BK + j]) * 0.125;
                CLOSE(s1[j], s0[j], 4e-6, mag, "%s scores_tile head_dim %d key %d", s->name, hd, j);
            }
            free(q);
            free(Kt);
        }
    }
}

/* SwiGLU in every family against float64 (g / (1 + e^-g) · u) within 4 ulp of the result, over
 * gates from -100 to 100 (exp's flush to zero near -88 included), zero, +inf and NaN; and every
 * split of the rows into two calls gives the bits of one call (the thread slices of decode). */
static void test_swiglu_every_family_matches_float64_and_any_split(void **state)
{
    (void)state;
    enum { N = 203 };
    float g[N], u[N];
    for (int i = 0; i < N; i++) {
        g[i] = -100.0f + 200.0f * (float)i / (N - 1) + 0.013f * (float)(i % 7);
        u[i] = 0.5f + 0.01f * (float)(i % 13) - (i % 3 == 0 ? 1.2f : 0.0f);
    }
    g[0] = 0.0f, g[1] = -0.0f, g[2] = 88.5f, g[3] = -88.5f, g[4] = 1e-30f, g[5] = -87.0f;
    g[6] = INFINITY, g[7] = NAN;
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_simd_ops *s = family(FAMILIES[f]);
        if (!s) continue;
        float y[N], z[N];
        memcpy(y, g, sizeof y);
        s->swiglu(y, u, N);
        for (int i = 0; i < N; i++) {
            if (isnan(g[i])) {
                if (!isnan(y[i])) fail_msg("%s swiglu(NaN) = %g, not NaN", s->name, y[i]);
                continue;
            }
            double ref = isinf(g[i]) ? (double)u[i] * INFINITY : (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i];
            double tol = 4.0 * fabs(ref) * FLT_EPSILON + 1e-36;   /* expf flushes below e^-88.7 */
            if (isinf(ref) ? y[i] != ref : fabs(y[i] - ref) > tol)
                fail_msg("%s swiglu(%g) * %g = %.9g, float64 %.9g", s->name, g[i], u[i], y[i], ref);
        }
        for (int a = 0; a <= N; a += a < 20 ? 1 : 37) {
            memcpy(z, g, sizeof z);
            s->swiglu(z, u, (size_t)a);
            s->swiglu(z + a, u + a, (size_t)(N - a));
            if (memcmp(z, y, sizeof z)) fail_msg("%s swiglu split at %d differs from one call", s->name, a);
        }
    }
}

/* ----------------------------------------------------------------------- attention */

static void check_prefill(const char *fam, int n_live, int n_new, int hd)
{
    char err[256];
    assert_int_equal(cpu_simd_use(fam, err, sizeof err), 0);
    int stride = 3 * hd;   /* q/k/v rows interleaved with other heads, as in the engine */
    float *q = rand_floats((size_t)n_new * stride), *Kl = rand_floats((size_t)n_live * hd + 1);
    float *Vl = rand_floats((size_t)n_live * hd + 1), *Kn = rand_floats((size_t)n_new * stride);
    float *Vn = rand_floats((size_t)n_new * stride);
    for (size_t i = 0; i < (size_t)n_new * stride; i++) q[i] *= 3.0f;   /* peaked rows too */
    float *out = malloc((size_t)n_new * stride * 4), *colsum = calloc((size_t)(n_live + n_new), 4);
    float *out2 = malloc((size_t)n_new * stride * 4);
    float *scratch = malloc(attn_prefill_scratch_floats(hd) * 4);
    double *ro = malloc((size_t)n_new * hd * 8), *rc = calloc((size_t)(n_live + n_new), 8);
    assert_true(out && colsum && out2 && scratch && ro && rc);
    float scale = 1.0f / sqrtf((float)hd);
    attn_prefill_head(q, stride, Kl, DT_F32, Vl, DT_F32, n_live, Kn, stride, Vn, stride, n_new, hd, scale, out, stride, colsum, scratch);
    attn_prefill_head(q, stride, Kl, DT_F32, Vl, DT_F32, n_live, Kn, stride, Vn, stride, n_new, hd, scale, out2, stride, NULL, scratch);
    ts_attn_prefill_ref(q, stride, Kl, Vl, n_live, Kn, stride, Vn, stride, n_new, hd, scale, ro, rc);
    for (int i = 0; i < n_new; i++)
        for (int d = 0; d < hd; d++) {
            CLOSE(out[(size_t)i * stride + d], ro[(size_t)i * hd + d], 2e-5, 1, "%s prefill out n_live %d n_new %d hd %d row %d d %d",
                  fam, n_live, n_new, hd, i, d);
            /* the outputs do not depend on whether column sums are asked for (identity tests) */
            assert_memory_equal(&out[(size_t)i * stride + d], &out2[(size_t)i * stride + d], 4);
        }
    for (int j = 0; j < n_live + n_new; j++)
        CLOSE(colsum[j], rc[j], 2e-5, rc[j] + 1, "%s prefill colsum n_live %d n_new %d hd %d col %d", fam, n_live, n_new, hd, j);
    free(q); free(Kl); free(Vl); free(Kn); free(Vn); free(out); free(out2); free(colsum); free(scratch); free(ro); free(rc);
}

static void test_prefill_attention_tiles_match_float64_softmax(void **state)
{
    (void)state;
    const char *fams[] = {"scalar", "avx2", "avx512"};
    const int cases[][3] = {{0, 1, 8}, {0, 37, 8}, {5, 33, 16}, {70, 100, 64}, {0, 130, 64}, {129, 65, 128}, {3, 200, 17}};
    for (int f = 0; f < 3; f++) {
        if (f && !family(fams[f])) continue;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) check_prefill(fams[f], cases[c][0], cases[c][1], cases[c][2]);
    }
    char err[256];
    assert_int_equal(cpu_simd_use(g_default, err, sizeof err), 0);
}

static void test_decode_attention_matches_float64_softmax(void **state)
{
    (void)state;
    const char *fams[] = {"scalar", "avx2", "avx512"};
    const int cases[][2] = {{1, 8}, {7, 16}, {64, 64}, {901, 64}, {33, 128}, {50, 17}};
    char err[256];
    for (int f = 0; f < 3; f++) {
        if (f && !family(fams[f])) continue;
        assert_int_equal(cpu_simd_use(fams[f], err, sizeof err), 0);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            int n = cases[c][0], hd = cases[c][1];
            float *q = rand_floats((size_t)hd), *K = rand_floats((size_t)n * hd), *V = rand_floats((size_t)n * hd);
            float *probs = malloc((size_t)n * 4), out[128];
            double *p = malloc((size_t)n * 8), mx = -INFINITY, sum = 0;
            assert_true(probs && p);
            for (int d = 0; d < hd; d++) q[d] *= 4.0f;
            float scale = 1.0f / sqrtf((float)hd);
            attn_decode_head(q, K, DT_F32, V, DT_F32, n, hd, scale, probs, out);
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int d = 0; d < hd; d++) s += (double)q[d] * K[(size_t)j * hd + d];
                p[j] = s * scale;
                if (p[j] > mx) mx = p[j];
            }
            for (int j = 0; j < n; j++) sum += (p[j] = exp(p[j] - mx));
            for (int j = 0; j < n; j++) CLOSE(probs[j], p[j] / sum, 2e-6, 1, "%s decode probs n %d hd %d slot %d", fams[f], n, hd, j);
            for (int d = 0; d < hd; d++) {
                double o = 0;
                for (int j = 0; j < n; j++) o += p[j] / sum * V[(size_t)j * hd + d];
                CLOSE(out[d], o, 2e-5, 1, "%s decode out n %d hd %d d %d", fams[f], n, hd, d);
            }
            free(q); free(K); free(V); free(probs); free(p);
        }
    }
    assert_int_equal(cpu_simd_use(g_default, err, sizeof err), 0);
}

static void test_simd_selection_names_and_rejects_unknown(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(cpu_simd_use("avx9000", err, sizeof err), -1);
    assert_non_null(strstr(err, "avx9000"));
    assert_int_equal(cpu_simd_use("scalar", err, sizeof err), 0);
    assert_string_equal(cpu_simd_name(), "scalar");
    assert_non_null(cpu_simd_find("scalar"));
    assert_int_equal(cpu_simd_use(g_default, err, sizeof err), 0);
}

/* ------------------------------------------------------------------- model_convert */

static void test_model_convert_to_bf16_rounds_matrices_keeps_norms_and_tying(void **state)
{
    (void)state;
    enum { DIM = 8, FFN = 12, VOCAB = 10 };
    float *buf[12];
    model_weights m;
    memset(&m, 0, sizeof m);
    m.cfg.n_layers = 1;
    m.cfg.hidden_size = DIM;
    layer_weights *lw = calloc(1, sizeof *lw);
    assert_non_null(lw);
    m.layers = lw;
    int shapes[][2] = {{VOCAB, DIM}, {1, DIM}, {DIM, DIM}, {DIM, DIM}, {DIM, DIM}, {DIM, DIM}, {1, DIM},
                       {FFN, DIM}, {FFN, DIM}, {DIM, FFN}, {1, DIM}};
    weight_t *ws[] = {&m.embed, &lw->attn_norm, &lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->ffn_norm,
                      &lw->w_gate, &lw->w_up, &lw->w_down, &m.final_norm};
    for (int i = 0; i < 11; i++) {
        buf[i] = rand_floats((size_t)shapes[i][0] * shapes[i][1]);
        *ws[i] = (weight_t){.dtype = DT_F32, .data = buf[i], .rows = shapes[i][0], .cols = shapes[i][1]};
    }
    m.lm_head = m.embed;   /* tied */
    char err[256];
    assert_int_equal(model_convert(&m, DT_BF16, err, sizeof err), 0);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    for (int i = 0; i < 11; i++) {
        int is_norm = shapes[i][0] == 1;
        assert_int_equal(ws[i]->dtype, is_norm ? DT_F32 : DT_BF16);
        if (is_norm) {
            assert_ptr_equal(ws[i]->data, buf[i]);
            continue;
        }
        for (int k = 0; k < shapes[i][0] * shapes[i][1]; k++)
            assert_int_equal(((const uint16_t *)ws[i]->data)[k], f32_to_bf16(buf[i][k]));
    }
    /* BF16 → F32: exact widening, norms already F32 stay put */
    assert_int_equal(model_convert(&m, DT_F32, err, sizeof err), 0);
    for (int i = 0; i < 11; i++) {
        assert_int_equal(ws[i]->dtype, DT_F32);
        for (int k = 0; k < shapes[i][0] * shapes[i][1]; k++)
            assert_true(((const float *)ws[i]->data)[k] ==
                        (shapes[i][0] == 1 ? buf[i][k] : bf16_to_f32(f32_to_bf16(buf[i][k]))));
    }
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    for (int i = 0; i < 11; i++) free(buf[i]);
    model_free(&m);
}

int main(void)
{
    const char *env = getenv("LLM_SIMD");
    char err[256];
    if (env && *env && cpu_simd_use(env, err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
    g_default = cpu_simd_name();
    printf("SIMD family in use: %s\n", g_default);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_to_f32_matches_float16_for_all_65536_values),
        cmocka_unit_test(test_f32_to_f16_rounds_like_float16_cast),
        cmocka_unit_test(test_f32_to_bf16_is_round_to_nearest_even),
        cmocka_unit_test(test_widen_is_exact_in_every_family),
        cmocka_unit_test(test_narrow_every_family_matches_scalar_bits),
        cmocka_unit_test(test_rowsteal_claims_every_row_exactly_once),
        cmocka_unit_test(test_rowsteal_first_claim_is_the_first_rs_next),
        cmocka_unit_test(test_rowsteal_splits_the_last_block),
        cmocka_unit_test(test_matvec_every_family_matches_scalar_at_odd_sizes),
        cmocka_unit_test(test_matvec_scalar_is_the_dot_product_of_widened_weights),
        cmocka_unit_test(test_matmul_every_dtype_and_batch_matches_float64),
        cmocka_unit_test(test_gemm_nt_matches_float64_and_any_split_gives_the_same_bits),
        cmocka_unit_test(test_decode_matvec_bit_identical_for_any_thread_count),
        cmocka_unit_test(test_prefill_matmul_bit_identical_for_any_thread_count),
        cmocka_unit_test(test_dot_axpy_exp_scores_every_family_match_scalar),
        cmocka_unit_test(test_swiglu_every_family_matches_float64_and_any_split),
        cmocka_unit_test(test_prefill_attention_tiles_match_float64_softmax),
        cmocka_unit_test(test_decode_attention_matches_float64_softmax),
        cmocka_unit_test(test_simd_selection_names_and_rejects_unknown),
        cmocka_unit_test(test_model_convert_to_bf16_rounds_matrices_keeps_norms_and_tying),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
