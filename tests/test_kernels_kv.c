/* Tests for the 16-bit KV-cache kernels of kernels/cpu (--kv-dtype f16|bf16, issue 17):
 *  - every SIMD family's dot_f16/dot_bf16 and acc_rows_f16/acc_rows_bf16 against the scalar
 *    reference and against a float64 sum over the widened values, at odd sizes; the decode
 *    score kernels dots_f32/f16/bf16 bit-identical to dot per row;
 *  - attn_decode_head and attn_prefill_head with K/V (or only V, as --rope shifted passes them)
 *    in F16/BF16: against a float64 softmax over the widened rows, and bit-identical to the
 *    same kernel on the rows widened to F32 beforehand (widening in registers changes no sum);
 *  - the grouped decode (attn_decode_scores/_softmax/_values, the fused dots_group/acc_group
 *    where a family has them) bit-identical per head to attn_decode_head, any split;
 *  - the prefill's rows at once (scores_rows, acc_rows_n*) bit-identical to scores_tile /
 *    acc_rows* row by row;
 *  - max and scale (the decode softmax's) against the scalar loops, NaNs included;
 *  - widen_elems / narrow_elems / round_elems against f16_to_f32 / f32_to_f16 (and bf16).
 * Families the CPU cannot run are skipped, and say so. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"
#include "tests/support/support.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / (1ull << 23)) - 1.0);
}

static float *rand_floats(size_t n, float mag)
{
    float *a = malloc(n * sizeof *a + 4);
    assert_non_null(a);
    for (size_t i = 0; i < n; i++) a[i] = frand() * mag;
    return a;
}

/* n values in dt (F16/BF16 bits, or F32) from random floats, and their exact f32 widening. */
static void *rand_rows(dtype_t dt, size_t n, float mag, float **wide)
{
    float *f = rand_floats(n, mag);
    void *r = malloc(n * dtype_size(dt) + 4);
    assert_non_null(r);
    narrow_elems(dt, f, r, n);
    *wide = malloc(n * sizeof(float) + 4);
    assert_non_null(*wide);
    widen_elems(dt, r, *wide, n);
    free(f);
    return r;
}

static const char *const FAMS[] = {"scalar", "avx2", "avx512"};
#define N_FAMS 3
static const dtype_t DTS[] = {DT_F16, DT_BF16};
static const char *g_default;

/* The family called name (switched to), or NULL after printing why it is skipped. */
static const cpu_simd_ops *use_family(const char *name)
{
    char err[256];
    const cpu_simd_ops *s = cpu_simd_find(name);
    if (!s) {
        printf("  [ SKIP ] %s kernels: this CPU (or build) cannot run them\n", name);
        return NULL;
    }
    assert_int_equal(cpu_simd_use(name, err, sizeof err), 0);
    return s;
}

static void restore_family(void)
{
    char err[256];
    assert_int_equal(cpu_simd_use(g_default, err, sizeof err), 0);
}

#define CLOSE(a, b, tol, scale, ...)                                                           \
    do {                                                                                       \
        double a_ = (a), b_ = (b);                                                             \
        if (!(fabs(a_ - b_) <= (tol) * (scale))) {                                             \
            print_error(__VA_ARGS__);                                                          \
            fail_msg(": got %.9g, want %.9g (tol %g x %g)", a_, b_, (double)(tol), (double)(scale)); \
        }                                                                                      \
    } while (0)

static void test_conversions_match_scalar_definitions(void **state)
{
    (void)state;
    const size_t ns[] = {1, 7, 8, 15, 16, 17, 100, 1023};
    for (int f = 0; f < N_FAMS; f++) {
        if (!use_family(FAMS[f])) continue;
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            size_t n = ns[k];
            float *x = rand_floats(n, 300.0f), *y = malloc(n * 4 + 4), *z = malloc(n * 4 + 4);
            uint16_t *h = malloc(n * 2 + 4);
            assert_true(y && z && h);
            x[0] = 1.0f + 1.0f / 2048.0f;   /* an f16 tie: rounds to even (1.0) */
            for (int d = 0; d < 2; d++) {
                dtype_t dt = DTS[d];
                narrow_elems(dt, x, h, n);
                widen_elems(dt, h, y, n);
                memcpy(z, x, n * 4);
                round_elems(dt, z, n);
                for (size_t i = 0; i < n; i++) {
                    uint16_t want = dt == DT_F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
                    float wide = dt == DT_F16 ? f16_to_f32(want) : bf16_to_f32(want);
                    if (h[i] != want || y[i] != wide || z[i] != wide)
                        fail_msg("%s %s n %zu i %zu: x %.9g -> %04x (want %04x), widened %.9g / rounded %.9g (want %.9g)",
                                 FAMS[f], dtype_name(dt), n, i, x[i], h[i], want, y[i], z[i], wide);
                }
            }
            assert_int_equal(h[0], f32_to_bf16(x[0]));
            /* F32: copies */
            float *c = malloc(n * 4 + 4);
            assert_non_null(c);
            narrow_elems(DT_F32, x, c, n);
            assert_memory_equal(c, x, n * 4);
            widen_elems(DT_F32, x, c, n);
            assert_memory_equal(c, x, n * 4);
            memcpy(c, x, n * 4);
            round_elems(DT_F32, c, n);
            assert_memory_equal(c, x, n * 4);
            free(x); free(y); free(z); free(h); free(c);
        }
    }
    restore_family();
}

/* max (NaNs ignored, as the decode softmax's scalar loop) and scale of every family against the
 * scalar loops, at sizes around the vector widths, with NaNs, infinities and ties placed at
 * random (the max equal as a value: a zero's sign may differ; scale bit for bit). */
static void test_max_and_scale_every_family(void **state)
{
    (void)state;
    const int ns[] = {0, 1, 7, 8, 9, 15, 16, 17, 33, 100, 1000};
    for (int f = 0; f < N_FAMS; f++) {
        const cpu_simd_ops *s = use_family(FAMS[f]);
        if (!s) continue;
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
            for (int kind = 0; kind < 5; kind++) {
                const int n = ns[k];
                float *x = rand_floats((size_t)n + 1, 50.0f), *y = malloc(((size_t)n + 1) * sizeof *y);
                assert_non_null(y);
                for (int i = 0; i < n; i++) {
                    unsigned r = (unsigned)(frand() * 1e6f) % 16;
                    if (kind == 1 && r == 0) x[i] = NAN;                  /* a few NaNs */
                    if (kind == 2) x[i] = NAN;                            /* all NaN: -inf */
                    if (kind == 3 && r < 4) x[i] = r < 2 ? -INFINITY : 49.0f;   /* ties, -inf */
                    if (kind == 4) x[i] = i == 0 ? 1e3f : i >= n / 2 ? NAN : x[i];   /* NaN after the max */
                }
                float ref = -INFINITY;
                for (int i = 0; i < n; i++)
                    if (x[i] > ref) ref = x[i];
                float got = s->max(x, n);
                if (!(got == ref) && !(isinf(got) && isinf(ref) && got < 0 && ref < 0))
                    fail_msg("%s max n %d kind %d: %.9g, loop %.9g", s->name, n, kind, got, ref);
                for (int i = 0; i < n; i++) y[i] = x[i] * 0.3125f;
                s->scale(x, n, 0.3125f);
                if (n) assert_memory_equal(x, y, (size_t)n * sizeof *x);
                free(x);
                free(y);
            }
    }
}

static void test_dot_and_acc_rows_16bit_every_family(void **state)
{
    (void)state;
    const int ns[] = {1, 5, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1000};
    for (int f = 0; f < N_FAMS; f++) {
        const cpu_simd_ops *s = use_family(FAMS[f]);
        if (!s) continue;
        for (int d = 0; d < 2; d++) {
            dtype_t dt = DTS[d];
            for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
                int n = ns[k];
                float *a = rand_floats((size_t)n, 1.0f), *bw, *cw;
                uint16_t *b = rand_rows(dt, (size_t)n, 2.0f, &bw), *c = rand_rows(dt, (size_t)n, 2.0f, &cw);
                double ref = 0, mag = 0;
                for (int i = 0; i < n; i++) ref += (double)a[i] * bw[i], mag += fabs((double)a[i] * bw[i]);
                float got = dt == DT_F16 ? s->dot_f16(a, b, n) : s->dot_bf16(a, b, n);
                float sc = dt == DT_F16 ? cpu_simd_scalar.dot_f16(a, b, n) : cpu_simd_scalar.dot_bf16(a, b, n);
                CLOSE(got, ref, 4e-6, mag + 1e-30, "%s dot_%s n %d vs float64", s->name, dtype_name(dt), n);
                CLOSE(got, sc, 4e-6, mag + 1e-30, "%s dot_%s n %d vs scalar", s->name, dtype_name(dt), n);
                /* the same lanes and order as dot on the widened row */
                float wide = s->dot(a, bw, n);
                assert_memory_equal(&got, &wide, sizeof got);
                /* dots_*: several rows at a time, each exactly dot(row) · scale (5 rows of n) */
                {
                    float *W, *sg = malloc(5 * 4), *sw = malloc(5 * 4), *s32 = malloc(5 * 4);
                    uint16_t *R = rand_rows(dt, (size_t)5 * n, 2.0f, &W);
                    assert_true(sg && sw && s32);
                    (dt == DT_F16 ? s->dots_f16 : s->dots_bf16)(sg, a, R, 5, n, 0.375f);
                    s->dots_f32(s32, a, W, 5, n, 0.375f);
                    for (int j = 0; j < 5; j++) {
                        const uint16_t *r = R + (size_t)j * n;
                        sw[j] = (dt == DT_F16 ? s->dot_f16(a, r, n) : s->dot_bf16(a, r, n)) * 0.375f;
                        float d32 = s->dot(a, W + (size_t)j * n, n) * 0.375f;
                        if (memcmp(&sg[j], &sw[j], 4) || memcmp(&s32[j], &d32, 4) || memcmp(&sg[j], &d32, 4))
                            fail_msg("%s dots %s n %d row %d: %.9g / f32 %.9g, dot %.9g / %.9g", s->name,
                                     dtype_name(dt), n, j, sg[j], s32[j], sw[j], d32);
                    }
                    free(W); free(R); free(sg); free(sw); free(s32);
                }
                /* acc_rows over 7 rows of n columns (head_dim = n) */
                const uint16_t *rows[7];
                const float *wrows[7];
                float p[7];
                for (int j = 0; j < 7; j++) {
                    rows[j] = j % 2 ? b : c;
                    wrows[j] = j % 2 ? bw : cw;
                    p[j] = 0.1f * (float)(j + 1);
                }
                float *o0 = rand_floats((size_t)n, 1.0f), *o1 = malloc((size_t)n * 4 + 4), *o2 = malloc((size_t)n * 4 + 4);
                double *od = malloc((size_t)n * 8 + 8);
                assert_true(o1 && o2 && od);
                for (int i = 0; i < n; i++) {
                    od[i] = o0[i];
                    for (int j = 0; j < 7; j++) od[i] += (double)p[j] * wrows[j][i];
                }
                memcpy(o1, o0, (size_t)n * 4);
                memcpy(o2, o0, (size_t)n * 4);
                (dt == DT_F16 ? s->acc_rows_f16 : s->acc_rows_bf16)(o1, p, rows, 7, n);
                s->acc_rows(o2, p, wrows, 7, n);
                (dt == DT_F16 ? cpu_simd_scalar.acc_rows_f16 : cpu_simd_scalar.acc_rows_bf16)(o0, p, rows, 7, n);
                for (int i = 0; i < n; i++) {
                    CLOSE(o1[i], od[i], 2e-6, 8, "%s acc_rows_%s hd %d d %d vs float64", s->name, dtype_name(dt), n, i);
                    CLOSE(o1[i], o0[i], 2e-6, 8, "%s acc_rows_%s hd %d d %d vs scalar", s->name, dtype_name(dt), n, i);
                }
                assert_memory_equal(o1, o2, (size_t)n * 4);
                free(a); free(b); free(bw); free(c); free(cw); free(o0); free(o1); free(o2); free(od);
            }
        }
    }
    restore_family();
}

/* float64 decode attention over widened rows K, V [n][hd]: probs p [n], out [hd]. */
static void decode_ref(const float *q, const float *K, const float *V, int n, int hd, float scale,
                       double *p, double *out)
{
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) {
        double s = 0;
        for (int d = 0; d < hd; d++) s += (double)q[d] * K[(size_t)j * hd + d];
        p[j] = s * scale;
        if (p[j] > mx) mx = p[j];
    }
    for (int j = 0; j < n; j++) sum += (p[j] = exp(p[j] - mx));
    for (int j = 0; j < n; j++) p[j] /= sum;
    for (int d = 0; d < hd; d++) {
        out[d] = 0;
        for (int j = 0; j < n; j++) out[d] += p[j] * V[(size_t)j * hd + d];
    }
}

static void test_decode_attention_16bit_kv_every_family(void **state)
{
    (void)state;
    const int cases[][2] = {{1, 8}, {7, 16}, {64, 64}, {65, 64}, {901, 64}, {33, 128}, {50, 17}, {3, 129}};
    for (int f = 0; f < N_FAMS; f++) {
        if (!use_family(FAMS[f])) continue;
        for (int d = 0; d < 2; d++)
            for (int kf32 = 0; kf32 < 2; kf32++) {   /* kf32: f32 keys, 16-bit values (--rope shifted) */
                dtype_t vdt = DTS[d], kdt = kf32 ? DT_F32 : vdt;
                for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                    int n = cases[c][0], hd = cases[c][1];
                    float *q = rand_floats((size_t)hd, 4.0f), *Kw, *Vw;
                    void *K = rand_rows(kdt, (size_t)n * hd, 1.0f, &Kw), *V = rand_rows(vdt, (size_t)n * hd, 1.0f, &Vw);
                    float *probs = malloc((size_t)n * 4), *probs2 = malloc((size_t)n * 4), out[256], out2[256];
                    double *p = malloc((size_t)n * 8), ro[256];
                    assert_true(probs && probs2 && p);
                    float scale = 1.0f / sqrtf((float)hd);
                    attn_decode_head(q, K, kdt, V, vdt, n, hd, scale, probs, out);
                    decode_ref(q, Kw, Vw, n, hd, scale, p, ro);
                    for (int j = 0; j < n; j++)
                        CLOSE(probs[j], p[j], 2e-6, 1, "%s decode K %s V %s n %d hd %d: p[%d]", FAMS[f],
                              dtype_name(kdt), dtype_name(vdt), n, hd, j);
                    for (int e = 0; e < hd; e++)
                        CLOSE(out[e], ro[e], 2e-5, 1, "%s decode K %s V %s n %d hd %d: out[%d]", FAMS[f],
                              dtype_name(kdt), dtype_name(vdt), n, hd, e);
                    /* bit-identical to the f32 kernel on the widened rows */
                    attn_decode_head(q, Kw, DT_F32, Vw, DT_F32, n, hd, scale, probs2, out2);
                    assert_memory_equal(probs, probs2, (size_t)n * 4);
                    assert_memory_equal(out, out2, (size_t)hd * 4);
                    free(q); free(K); free(V); free(Kw); free(Vw); free(probs); free(probs2); free(p);
                }
            }
    }
    restore_family();
}

static void check_prefill(const char *fam, dtype_t kdt, dtype_t vdt, int n_live, int n_new, int hd)
{
    int stride = 3 * hd;   /* q/k/v rows interleaved with other heads, as in the engine */
    float *Klw, *Vlw;
    void *Kl = rand_rows(kdt, (size_t)n_live * hd, 1.0f, &Klw), *Vl = rand_rows(vdt, (size_t)n_live * hd, 1.0f, &Vlw);
    float *q = rand_floats((size_t)n_new * stride, 3.0f), *Kn = rand_floats((size_t)n_new * stride, 1.0f);
    float *Vn = rand_floats((size_t)n_new * stride, 1.0f);
    size_t on = (size_t)n_new * stride, nc = (size_t)(n_live + n_new);
    float *out = malloc(on * 4), *out2 = malloc(on * 4), *out3 = malloc(on * 4);
    float *cs = calloc(nc, 4), *cs3 = calloc(nc, 4), *scratch = malloc(attn_prefill_scratch_floats(hd) * 4);
    double *ro = malloc((size_t)n_new * hd * 8), *rc = calloc(nc, 8);
    assert_true(out && out2 && out3 && cs && cs3 && scratch && ro && rc);
    float scale = 1.0f / sqrtf((float)hd);
    attn_prefill_head(q, stride, Kl, kdt, Vl, vdt, n_live, Kn, stride, Vn, stride, n_new, hd, scale, out,
                      stride, cs, scratch);
    attn_prefill_head(q, stride, Kl, kdt, Vl, vdt, n_live, Kn, stride, Vn, stride, n_new, hd, scale, out2,
                      stride, NULL, scratch);
    attn_prefill_head(q, stride, Klw, DT_F32, Vlw, DT_F32, n_live, Kn, stride, Vn, stride, n_new, hd, scale,
                      out3, stride, cs3, scratch);
    ts_attn_prefill_ref(q, stride, Klw, Vlw, n_live, Kn, stride, Vn, stride, n_new, hd, scale, ro, rc);
    for (int i = 0; i < n_new; i++) {
        for (int d = 0; d < hd; d++)
            CLOSE(out[(size_t)i * stride + d], ro[(size_t)i * hd + d], 2e-5, 1,
                  "%s prefill K %s V %s n_live %d n_new %d hd %d row %d d %d", fam, dtype_name(kdt),
                  dtype_name(vdt), n_live, n_new, hd, i, d);
        /* independent of the column sums, and bit-identical to the f32 kernel on widened rows */
        assert_memory_equal(out + (size_t)i * stride, out2 + (size_t)i * stride, (size_t)hd * 4);
        assert_memory_equal(out + (size_t)i * stride, out3 + (size_t)i * stride, (size_t)hd * 4);
    }
    for (size_t j = 0; j < nc; j++)
        CLOSE(cs[j], rc[j], 2e-5, rc[j] + 1, "%s prefill colsum K %s V %s n_live %d n_new %d hd %d col %zu",
              fam, dtype_name(kdt), dtype_name(vdt), n_live, n_new, hd, j);
    assert_memory_equal(cs, cs3, nc * 4);
    free(Kl); free(Vl); free(Klw); free(Vlw); free(q); free(Kn); free(Vn);
    free(out); free(out2); free(out3); free(cs); free(cs3); free(scratch); free(ro); free(rc);
}

static void test_prefill_attention_16bit_live_kv_every_family(void **state)
{
    (void)state;
    /* live slots across tile boundaries (64) and query blocks (32), odd head dims */
    const int cases[][3] = {{1, 1, 8}, {5, 33, 16}, {63, 2, 17}, {70, 100, 64}, {129, 65, 128}, {200, 7, 33}};
    for (int f = 0; f < N_FAMS; f++) {
        if (!use_family(FAMS[f])) continue;
        for (int d = 0; d < 2; d++)
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                check_prefill(FAMS[f], DTS[d], DTS[d], cases[c][0], cases[c][1], cases[c][2]);
                check_prefill(FAMS[f], DT_F32, DTS[d], cases[c][0], cases[c][1], cases[c][2]);
            }
    }
    restore_family();
}

/* The grouped decode (attn_decode_scores / _softmax / _values, as engine_decode splits them
 * over threads): for every family, dtype (f32, f16, bf16; f32 keys with 16-bit values), group
 * size and split, bit-identical per query head to attn_decode_head. */
static void test_grouped_decode_matches_per_head_every_family(void **state)
{
    (void)state;
    const int cases[][3] = {{1, 64, 1}, {5, 64, 3}, {37, 64, 7}, {300, 64, 3}, {33, 48, 2}, {29, 20, 3},
                            {70, 128, 9}, {4, 16, 4}};
    const dtype_t dts[] = {DT_F32, DT_F16, DT_BF16};
    for (int f = 0; f < N_FAMS; f++) {
        if (!use_family(FAMS[f])) continue;
        for (int d = 0; d < 3; d++)
            for (int kf32 = 0; kf32 < 2; kf32++) {
                dtype_t vdt = dts[d], kdt = kf32 ? DT_F32 : vdt;
                for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                    int n = cases[c][0], hd = cases[c][1], G = cases[c][2], stride = n + 3;
                    float *q = rand_floats((size_t)G * hd, 4.0f), *Kw, *Vw;
                    void *K = rand_rows(kdt, (size_t)n * hd, 1.0f, &Kw), *V = rand_rows(vdt, (size_t)n * hd, 1.0f, &Vw);
                    float *probs = malloc((size_t)G * stride * 4), *probs1 = malloc((size_t)n * 4);
                    float *out = malloc((size_t)G * hd * 4), *out1 = malloc((size_t)hd * 4);
                    assert_true(probs && probs1 && out && out1);
                    float scale = 1.0f / sqrtf((float)hd);
                    for (int split = 1; split <= 3; split++) {   /* key ranges and column blocks as threads take them */
                        for (int t = 0; t < split; t++)
                            attn_decode_scores(q, G, K, kdt, n * t / split, n * (t + 1) / split, hd, scale, probs, stride);
                        for (int g = 0; g < G; g++) attn_decode_softmax(probs + (size_t)g * stride, n);
                        int ds = split == 1 ? hd : attn_decode_dsplit(hd);
                        for (int d0 = 0; d0 < hd; d0 += ds) attn_decode_values(probs, stride, G, V, vdt, n, hd, d0, d0 + ds, out);
                        for (int g = 0; g < G; g++) {
                            attn_decode_head(q + (size_t)g * hd, K, kdt, V, vdt, n, hd, scale, probs1, out1);
                            if (memcmp(probs + (size_t)g * stride, probs1, (size_t)n * 4) ||
                                memcmp(out + (size_t)g * hd, out1, (size_t)hd * 4))
                                fail_msg("%s grouped decode K %s V %s n %d hd %d G %d split %d: head %d differs from attn_decode_head",
                                         FAMS[f], dtype_name(kdt), dtype_name(vdt), n, hd, G, split, g);
                        }
                    }
                    free(q); free(K); free(V); free(Kw); free(Vw); free(probs); free(probs1); free(out); free(out1);
                }
            }
    }
    restore_family();
}

/* The prefill's query rows at once (scores_rows, acc_rows_n*, where a family has them): bit for
 * bit scores_tile and acc_rows* of the same family row by row, for every nr up to att_rows,
 * head_dim a multiple of the vector chunk or not, and every value dtype. */
static void test_prefill_rows_at_once_match_row_by_row_every_family(void **state)
{
    (void)state;
    const int hds[] = {16, 20, 48, 64, 72, 128};
    const int ns[] = {1, 7, 64};
    int ran = 0;
    for (int f = 0; f < N_FAMS; f++) {
        const cpu_simd_ops *s = use_family(FAMS[f]);
        if (!s) continue;
        if (!s->scores_rows) {
            assert_null(s->acc_rows_n);
            continue;
        }
        assert_true(s->att_rows >= 2 && s->att_rows <= ATT_QR_MAX);
        assert_non_null(s->acc_rows_n);
        assert_non_null(s->acc_rows_n_f16);
        assert_non_null(s->acc_rows_n_bf16);
        ran++;
        for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++) {
            const int hd = hds[h], qs = hd + 5, os = hd + 3;
            float *q = rand_floats((size_t)ATT_QR_MAX * qs, 2.0f), *Kt = rand_floats((size_t)hd * ATT_BK, 1.0f);
            float *s1 = malloc(sizeof(float) * ATT_QR_MAX * ATT_BK), *s2 = malloc(sizeof(float) * ATT_BK);
            assert_true(s1 && s2);
            for (int nr = 1; nr <= s->att_rows; nr++) {
                s->scores_rows(s1, q, qs, nr, Kt, hd, 0.125f);
                for (int r = 0; r < nr; r++) {
                    s->scores_tile(s2, q + (size_t)r * qs, Kt, hd, 0.125f);
                    if (memcmp(s1 + (size_t)r * ATT_BK, s2, sizeof(float) * ATT_BK))
                        fail_msg("%s scores_rows nr %d hd %d: row %d differs from scores_tile", s->name, nr, hd, r);
                }
            }
            for (int dti = 0; dti < 3; dti++) {
                const dtype_t dt = dti == 0 ? DT_F32 : DTS[dti - 1];
                for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
                    const int n = ns[k];
                    float *vw;
                    void *V = dt == DT_F32 ? NULL : rand_rows(dt, (size_t)n * hd, 1.0f, &vw);
                    if (dt == DT_F32) vw = rand_floats((size_t)n * hd, 1.0f);
                    const void *rows[ATT_BK];
                    for (int j = 0; j < n; j++)
                        rows[j] = dt == DT_F32 ? (const void *)(vw + (size_t)j * hd)
                                               : (const void *)((const uint16_t *)V + (size_t)j * hd);
                    float *p = rand_floats((size_t)ATT_QR_MAX * ATT_BK, 1.0f), *o0 = rand_floats((size_t)ATT_QR_MAX * os, 1.0f);
                    float *o1 = malloc(sizeof(float) * ATT_QR_MAX * os), *o2 = malloc(sizeof(float) * ATT_QR_MAX * os);
                    assert_true(o1 && o2);
                    for (int nr = 1; nr <= s->att_rows; nr++) {
                        memcpy(o1, o0, sizeof(float) * ATT_QR_MAX * os);
                        memcpy(o2, o0, sizeof(float) * ATT_QR_MAX * os);
                        if (dt == DT_F32) s->acc_rows_n(o1, os, p, ATT_BK, nr, (const float *const *)rows, n, hd);
                        else (dt == DT_F16 ? s->acc_rows_n_f16 : s->acc_rows_n_bf16)(o1, os, p, ATT_BK, nr, (const uint16_t *const *)rows, n, hd);
                        for (int r = 0; r < nr; r++) {
                            float *o = o2 + (size_t)r * os;
                            const float *pr = p + (size_t)r * ATT_BK;
                            if (dt == DT_F32) s->acc_rows(o, pr, (const float *const *)rows, n, hd);
                            else (dt == DT_F16 ? s->acc_rows_f16 : s->acc_rows_bf16)(o, pr, (const uint16_t *const *)rows, n, hd);
                        }
                        if (memcmp(o1, o2, sizeof(float) * ATT_QR_MAX * os))
                            fail_msg("%s acc_rows_n %s nr %d n %d hd %d differs from acc_rows row by row", s->name,
                                     dtype_name(dt), nr, n, hd);
                    }
                    free(V), free(vw), free(p), free(o0), free(o1), free(o2);
                }
            }
            free(q), free(Kt), free(s1), free(s2);
        }
    }
    restore_family();
    printf("  prefill rows-at-once kernels checked in %d famil%s\n", ran, ran == 1 ? "y" : "ies");
}

int main(void)
{
    g_default = cpu_simd_name();
    printf("kernel family in use: %s\n", g_default);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversions_match_scalar_definitions),
        cmocka_unit_test(test_max_and_scale_every_family),
        cmocka_unit_test(test_dot_and_acc_rows_16bit_every_family),
        cmocka_unit_test(test_decode_attention_16bit_kv_every_family),
        cmocka_unit_test(test_grouped_decode_matches_per_head_every_family),
        cmocka_unit_test(test_prefill_attention_16bit_live_kv_every_family),
        cmocka_unit_test(test_prefill_rows_at_once_match_row_by_row_every_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
