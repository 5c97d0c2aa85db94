/* Tests for ggml's block formats on the CPU (kernels/cpu/quant*.c):
 *  - dequantize_row of every block type equals the gguf Python package's
 *    gguf.quants.dequantize bit for bit, on random blocks with edge values (tests/fixtures/quant,
 *    written by scripts/make_quant_fixtures.py) and on real blocks of SmolLM2-135M Q4_1 and
 *    Qwen2.5-Coder-0.5B read from the model cache (real_blocks.txt: their offsets and hashes of
 *    gguf's floats; tests/support/real_blocks.h); widen_row too;
 *  - quantize_row Q8_0/Q4_0 equals gguf.quants.quantize byte for byte;
 *  - the activation quantizers of every family write the scalar ones' bytes, and A32 is
 *    ggml's Q8_0 (quantize_row), A256 ggml's Q8_K (re-derived here);
 *  - every family's kernels (dot products, matvec, GEMM tiles) against the scalar reference at
 *    odd sizes: |y − y_ref| ≤ 1e-5 · Σ_k |w_k·x_k| (the integer block sums are exact; only the
 *    f32 scaling and summation order differ), the packed-panel GEMMs likewise, and the tiled
 *    GEMM against n separate matvecs;
 *  - matmul on quantized weights against an f32 reference (dequantized weights × f32
 *    activations, in double) within the bound the 8-bit activations allow: one activation
 *    quantization step per element, Σ_k |w_k| · amax_b(k)/127 (rounding gives at most half a
 *    step, the f16 scale 127·2⁻¹¹ of one more), plus for Q4_1/Q5_1 Σ_b |m_b| · 64 · amax_b/127
 *    (twice the s = f16(d·Σq) term's worst case); and in aggregate an RMS error within twice
 *    the rounding noise's, Σ_k w_k²·step²/12 (step = amax_b/127).
 * Families the CPU cannot run are skipped, and say so.
 * Kept whole (over ~500 lines): one block-format suite: the fixture reader, the random edge-value blocks and the
 * per-ISA dispatch loop are shared by the dequantize, quantize, dot and GEMM cases.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/support.h"
#include "tests/support/real_blocks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/quant.h"
#include "kernels/kernels.h"

/* ------------------------------------------------------------------------ helpers */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) { return ts_xorshift(&rng); }
static float frand(void) { return (float)(rnd() * (2.0 / 4294967296.0) - 1.0); }   /* [-1, 1) */

static const dtype_t QTYPES[] = {DT_Q8_0, DT_Q4_0, DT_Q4_1, DT_Q5_0, DT_Q5_1, DT_Q4_K, DT_Q5_K, DT_Q6_K};
#define N_QTYPES (int)(sizeof QTYPES / sizeof QTYPES[0])
static const char *const FAMILIES[] = {"avx2", "avxvnni", "avx512", "avx512vnni"};
#define N_FAMILIES (int)(sizeof FAMILIES / sizeof FAMILIES[0])

static const cpu_quant_ops *family(const char *name)
{
    const cpu_quant_ops *q = cpu_quant_find(name);
    if (!q) printf("  [ SKIP ] %s quantized kernels: this CPU (or build) cannot run them\n", name);
    return q;
}

static void *xmalloc(size_t n) { return ts_aligned(n); }

static uint8_t *rand_weights(dtype_t dt, int rows, int K) { return ts_rand_blocks(dt, rows, K, &rng); }

static double mag_of(const float *w, const float *x, int K) { return ts_mag(w, x, K); }

static float *rand_floats(size_t n, float scale)
{
    float *a = xmalloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = frand() * scale;
    return a;
}


/* ------------------------------------------------------------------------ fixtures */

typedef struct {
    char info[121], type[9];
    uint32_t kind, n, be, bb;
    uint8_t *blocks;
    float *floats;
} fixture;

#define FIX "tests/fixtures/quant/"

static int load_fixture(const char *name, fixture *f)
{
    char path[256];
    snprintf(path, sizeof path, FIX "%s", name);
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    char magic[8];
    uint32_t h[4];
    memset(f, 0, sizeof *f);
    int ok = fread(magic, 8, 1, fp) == 1 && !memcmp(magic, "LLMQFX1", 8) && fread(f->info, 120, 1, fp) == 1 &&
             fread(f->type, 8, 1, fp) == 1 && fread(h, 4, 4, fp) == 4;
    if (ok) {
        f->kind = h[0], f->n = h[1], f->be = h[2], f->bb = h[3];
        f->blocks = malloc((size_t)f->n * f->bb);
        f->floats = malloc((size_t)f->n * f->be * 4);
        ok = f->blocks && f->floats;
        if (ok && f->kind == 0)
            ok = fread(f->blocks, f->bb, f->n, fp) == f->n && fread(f->floats, 4 * f->be, f->n, fp) == f->n;
        else if (ok)
            ok = fread(f->floats, 4 * f->be, f->n, fp) == f->n && fread(f->blocks, f->bb, f->n, fp) == f->n;
    }
    fclose(fp);
    return ok ? 0 : -2;
}

static void free_fixture(fixture *f)
{
    free(f->blocks);
    free(f->floats);
}

static const char *const DEQ_FIXTURES[] = {
    "deq_Q8_0_random.qfx", "deq_Q4_0_random.qfx", "deq_Q4_1_random.qfx", "deq_Q5_0_random.qfx",
    "deq_Q5_1_random.qfx", "deq_Q4_K_random.qfx", "deq_Q5_K_random.qfx", "deq_Q6_K_random.qfx",
};

/* n blocks of type dt dequantized as one row and block by block, then widen_row of a matrix of
 * them, equal gguf's floats bit for bit: want [n * be] floats, or (real blocks) want == NULL and
 * hash [n] the FNV-1a 64 of each block's floats */
static void check_dequantize(const char *name, dtype_t dt, const uint8_t *blocks, uint32_t n, const float *want,
                             const uint64_t *hash)
{
    const size_t be = (size_t)dtype_block(dt), bb = dtype_block_bytes(dt), ne = n * be;
    float *out = malloc(ne * 4), *ref = malloc(ne * 4);
    assert_true(out && ref);
    for (int pass = 0; pass < 2; pass++) {
        memset(out, 0xA5, ne * 4);
        if (pass == 0) dequantize_row(dt, blocks, out, (int64_t)ne);
        else
            for (uint32_t b = 0; b < n; b++) dequantize_row(dt, blocks + b * bb, out + b * be, (int64_t)be);
        if (hash) {
            for (uint32_t b = 0; b < n; b++)
                if (rb_fnv1a64(out + b * be, be * 4) != hash[b])
                    fail_msg("%s: block %u (pass %d): hash %016llx vs gguf's %016llx (first value %.9g)", name, b, pass,
                             (unsigned long long)rb_fnv1a64(out + b * be, be * 4), (unsigned long long)hash[b],
                             out[b * be]);
            if (pass == 0) memcpy(ref, out, ne * 4);   /* the floats gguf hashed to these */
            continue;
        }
        for (size_t k = 0; k < ne; k++) {
            uint32_t x, e;
            memcpy(&x, out + k, 4);
            memcpy(&e, want + k, 4);
            if (x != e)
                fail_msg("%s: element %zu (block %zu): %.9g (0x%08x) vs gguf %.9g (0x%08x)", name, k, k / be, out[k], x,
                         want[k], e);
        }
    }
    const float *exp = hash ? ref : want;
    /* widen_row of a matrix of these blocks (rows of 2 blocks when there are enough) */
    int bpr = n % 2 == 0 ? 2 : 1;
    weight_t w = {dt, blocks, (int)(n / bpr), (int)(bpr * be), WL_ROWS};
    for (int r = 0; r < w.rows; r += 7) {
        widen_row(out, &w, r);
        assert_memory_equal(out, exp + (size_t)r * w.cols, (size_t)w.cols * 4);
    }
    free(out);
    free(ref);
}

static void test_dequantize_matches_gguf_bit_for_bit(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof DEQ_FIXTURES / sizeof DEQ_FIXTURES[0]; i++) {
        fixture f;
        int rc = load_fixture(DEQ_FIXTURES[i], &f);
        if (rc) fail_msg("%s: cannot read (%d): run scripts/make_quant_fixtures.py", DEQ_FIXTURES[i], rc);
        int dt = dtype_from_name(f.type);
        assert_true(dt >= 0 && dtype_is_quant((dtype_t)dt));
        assert_int_equal(f.kind, 0);
        assert_int_equal(f.be, dtype_block((dtype_t)dt));
        assert_int_equal(f.bb, dtype_block_bytes((dtype_t)dt));
        check_dequantize(DEQ_FIXTURES[i], (dtype_t)dt, f.blocks, f.n, f.floats, NULL);
        printf("  %-22s %4u blocks bit-identical (%s)\n", DEQ_FIXTURES[i], f.n, f.info);
        free_fixture(&f);
    }
    /* real blocks: read from the models in the cache, checked against gguf's hashes */
    rb_set *sets;
    char err[1200];
    int ns = rb_read(FIX "real_blocks.txt", &sets, err, sizeof err);
    if (ns < 6) fail_msg("%s", ns < 0 ? err : "real_blocks.txt: fewer than the 6 sets of the two models");
    for (int i = 0; i < ns; i++) {
        int dt = dtype_from_name(sets[i].type);
        assert_true(dt >= 0 && dtype_is_quant((dtype_t)dt));
        size_t bb = dtype_block_bytes((dtype_t)dt);
        uint8_t *blocks = malloc(sets[i].n * bb);
        assert_non_null(blocks);
        if (rb_load(&sets[i], bb, blocks, err, sizeof err)) fail_msg("%s: %s", sets[i].name, err);
        check_dequantize(sets[i].name, (dtype_t)dt, blocks, (uint32_t)sets[i].n, NULL, sets[i].hash);
        printf("  %-22s %4d blocks bit-identical (%s:%s, by hash)\n", sets[i].name, sets[i].n, sets[i].model,
               sets[i].tensor);
        free(blocks);
    }
    rb_free(sets, ns);
}

static void test_quantize_row_matches_gguf_byte_for_byte(void **state)
{
    (void)state;
    const char *names[] = {"quant_Q8_0.qfx", "quant_Q4_0.qfx"};
    for (int i = 0; i < 2; i++) {
        fixture f;
        int rc = load_fixture(names[i], &f);
        if (rc) fail_msg("%s: cannot read (%d)", names[i], rc);
        dtype_t dt = (dtype_t)dtype_from_name(f.type);
        assert_int_equal(f.kind, 1);
        uint8_t *q = malloc((size_t)f.n * f.bb);
        assert_int_equal(quantize_row(dt, f.floats, q, (int64_t)f.n * f.be), 0);
        for (uint32_t b = 0; b < f.n; b++)
            if (memcmp(q + (size_t)b * f.bb, f.blocks + (size_t)b * f.bb, f.bb)) {
                for (uint32_t k = 0; k < f.bb; k++)
                    if (q[b * f.bb + k] != f.blocks[b * f.bb + k])
                        fail_msg("%s: block %u byte %u: 0x%02x vs gguf 0x%02x", names[i], b, k, q[b * f.bb + k],
                                 f.blocks[b * f.bb + k]);
            }
        printf("  %-22s %4u blocks byte-identical (%s)\n", names[i], f.n, f.info);
        free(q);
        free_fixture(&f);
    }
    float x[64] = {0};
    uint8_t buf[64];
    assert_int_equal(quantize_row(DT_Q4_1, x, buf, 32), -1);
    assert_int_equal(quantize_row(DT_Q8_0, x, buf, 33), -1);
}

/* ------------------------------------------------------------- activation quantizers */

/* rows of x with the awkward cases: zeros, ties at amax 127, a negative maximum, ±max ties */
static void edge_rows(float *x, int K, int row)
{
    for (int k = 0; k < K; k++) x[k] = frand() * (row % 3 == 0 ? 3.0f : 0.01f);
    if (row == 1)
        for (int k = 0; k < K && k < 64; k++) x[k] = 0.0f;
    if (row == 2)
        for (int k = 0; k < K; k++) x[k] = (float)((k * 37) % 255 - 127) + ((k & 1) ? 0.5f : 0.0f);
    if (row == 4) x[K / 2] = -50.0f;
    if (row == 5) {
        x[3] = 7.0f;
        x[K - 5] = -7.0f;
    }
}

static void test_activation_quantizers_every_family_match_scalar_and_ggml(void **state)
{
    (void)state;
    const int Ks[] = {32, 96, 256, 768, 1792};
    for (int ki = 0; ki < 5; ki++) {
        int K = Ks[ki];
        float *x = xmalloc((size_t)K * 4);
        for (int row = 0; row < 6; row++) {
            edge_rows(x, K, row);
            for (int kind = 0; kind < 2; kind++) {
                if (kind == QA_256 && K % QKK) continue;
                for (int c = 0; c <= 128; c += 64) {
                    if (kind == QA_256 && c) continue;
                    qact_fmt fm = {kind, c, 8};
                    size_t rb = qact_row_bytes(fm, K);
                    uint8_t *r0 = xmalloc(rb), *r1 = xmalloc(rb);
                    memset(r0, 0, rb);
                    quant_act_row(&cpu_quant_scalar, fm, r0, x, K);
                    if (kind == QA_32) {   /* the quants and d are ggml's Q8_0 */
                        uint8_t *q = xmalloc((size_t)K / 32 * 34);
                        quantize_row(DT_Q8_0, x, q, K);
                        const float *d = (const float *)(r0 + qa_off_d(K));
                        for (int b = 0; b < K / 32; b++) {
                            assert_memory_equal(r0 + 32 * b, q + 34 * b + 2, 32);
                            assert_true(d[b] == f16_to_f32(q_rd16(q + 34 * b)));
                            const float *s2 = (const float *)(r0 + qa_off_s2(K));
                            int sum = 0;
                            for (int l = 0; l < 32; l++) sum += (int8_t)r0[32 * b + l];
                            assert_true(s2[2 * b] == 0.0f);
                            float amax = 0;
                            for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(x[32 * b + l]));
                            assert_true(s2[2 * b + 1] == f16_to_f32(f32_to_f16((float)sum * (amax / 127))));
                            if (c) assert_int_equal(((const int32_t *)(r0 + qa_off_corr(K)))[b], -c * sum);
                        }
                        free(q);
                    } else {               /* ggml's quantize_row_q8_K_ref, re-derived */
                        const float *d = (const float *)(r0 + qa_off_d(K));
                        const int16_t *bs16 = (const int16_t *)(r0 + qa_off_bs16(K));
                        const int16_t *bs32 = (const int16_t *)(r0 + qa_off_bs32(K));
                        for (int b = 0; b < K / 256; b++) {
                            const float *xb = x + 256 * b;
                            int im = 0;
                            for (int l = 1; l < 256; l++)
                                if (fabsf(xb[l]) > fabsf(xb[im])) im = l;
                            float iscale = xb[im] ? -127.f / xb[im] : 0.0f;
                            assert_true(d[b] == (xb[im] ? 1 / iscale : 0.0f));
                            for (int l = 0; l < 256; l++) {
                                float v = rintf(iscale * xb[l]);
                                assert_int_equal((int8_t)r0[256 * b + l], (int)(v > 127 ? 127 : v));
                            }
                            for (int g = 0; g < 16; g++) {
                                int s = 0;
                                for (int l = 0; l < 16; l++) s += (int8_t)r0[256 * b + 16 * g + l];
                                assert_int_equal(bs16[16 * b + g], s);
                                assert_int_equal(((const int32_t *)(r0 + qa_off_c16(K)))[16 * b + g], -32 * s);
                                if (g & 1) {
                                    assert_int_equal(bs32[8 * b + g / 2], s + bs16[16 * b + g - 1]);
                                    assert_true(((const float *)(r0 + qa_off_bs32f(K)))[8 * b + g / 2] == bs32[8 * b + g / 2]);
                                }
                            }
                        }
                    }
                    for (int f = 0; f < N_FAMILIES; f++) {
                        const cpu_quant_ops *q = cpu_quant_find(FAMILIES[f]);
                        if (!q) continue;
                        memset(r1, 0, rb);
                        quant_act_row(q, fm, r1, x, K);
                        if (memcmp(r0, r1, rb))
                            fail_msg("%s act%s c=%d K=%d row %d differs from scalar", q->name, kind ? "256" : "32", c, K, row);
                    }
                    free(r0);
                    free(r1);
                }
            }
        }
        free(x);
    }
}

/* ------------------------------------------------------------------ family kernels */

static const int NXS[] = {1, 2, 3, 5, 17, 64};

static void test_kernels_every_family_match_scalar_at_odd_sizes(void **state)
{
    (void)state;
    const int ROWS[] = {1, 17, 37};   /* 37: two packed panels of 16 and a part one */
    const int NBLK[] = {1, 3, 7};
    int tested = 0;
    for (int f = 0; f < N_FAMILIES; f++) {
        const cpu_quant_ops *q = family(FAMILIES[f]);
        if (!q) continue;
        for (int t = 0; t < N_QTYPES; t++)
            for (int ki = 0; ki < 3; ki++)
                tested += ts_quant_check_vs_scalar(&cpu_quant_scalar, q, QTYPES[t], ROWS[ki],
                                                   NBLK[ki] * dtype_block(QTYPES[t]), NXS, 6, "", &rng);
    }
    printf("  %d (family, dtype, K, n) cases\n", tested);
}

/* A kernel that ignores a block's scale or an element must fail the test above: the scalar
 * reference differs from the f32 product by only the activation rounding, and a corrupted block
 * moves y by more than the tolerance. */
static void test_scalar_reference_is_the_dot_product_of_dequantized_rows(void **state)
{
    (void)state;
    for (int t = 0; t < N_QTYPES; t++) {
        dtype_t dt = QTYPES[t];
        int K = 3 * dtype_block(dt);
        uint8_t *W = rand_weights(dt, 1, K);
        float *x = rand_floats(K, 1.0f), *wf = xmalloc((size_t)K * 4);
        dequantize_row(dt, W, wf, K);
        qact_fmt fm = quant_act_fmt(&cpu_quant_scalar, dt);
        uint8_t *X = xmalloc(qact_row_bytes(fm, K));
        quant_act_row(&cpu_quant_scalar, fm, X, x, K);
        /* the activation row dequantized: x̂ = q·d */
        const int8_t *qs = (const int8_t *)X;
        const float *d = (const float *)(X + qa_off_d(K));
        double refq = 0, bound = 0;
        for (int k = 0; k < K; k++) {
            refq += (double)wf[k] * (qs[k] * d[k / (fm.kind == QA_256 ? 256 : 32)]);
            bound += fabs(wf[k]) * 1e-5;
        }
        float y;
        cpu_quant_scalar.mm[dt](&y, 0, W, 0, X, 0, 1, 1, K);
        /* Q4_1/Q5_1 take the min term m·Σx̂ as m·s, s = f16(d·Σq) with the unrounded d: off by
         * at most |m|·|s|·2⁻¹⁰ per block */
        double tol = 1e-5 * fabs(refq) + bound;
        if (dt == DT_Q4_1 || dt == DT_Q5_1)
            for (int b = 0; b < K / 32; b++)
                tol += fabs(f16_to_f32(q_rd16(W + b * dtype_block_bytes(dt) + 2))) *
                       fabs(((const float *)(X + qa_off_s2(K)))[2 * b + 1]) / 1024;
        TS_CLOSE(y, refq, tol, "%s: scalar dot vs Σ w·x̂", dtype_name(dt));
        free(W), free(x), free(wf), free(X);
    }
}

/* ---------------------------------------------------------------- matmul end to end */

static void check_matmul(dtype_t dt, int rows, int K, int n, const char *fam, int threads)
{
    uint8_t *W;
    float *wsrc = NULL;
    if (dt == DT_Q8_0 || dt == DT_Q4_0) {   /* quantized from f32 weights, as --dtype does */
        wsrc = rand_floats((size_t)rows * K, 0.05f);
        W = malloc(dtype_row_bytes(dt, K) * rows);
        assert_non_null(W);
        assert_int_equal(quantize_row(dt, wsrc, W, (int64_t)rows * K), 0);
    } else W = rand_weights(dt, rows, K);
    float *wf = xmalloc((size_t)rows * K * 4), *x = rand_floats((size_t)n * K, 1.0f);
    for (int j = 0; j < n; j++)   /* rows of different scales */
        for (int k = 0; k < K; k++) x[(size_t)j * K + k] *= (float)(1 + j % 4) * ((k * 7) % 13 == 0 ? 4.0f : 1.0f);
    dequantize_row(dt, W, wf, (int64_t)rows * K);
    weight_t w = {dt, W, rows, K, WL_ROWS};
    float *y = xmalloc((size_t)n * rows * 4), *y1 = xmalloc((size_t)rows * 4);
    cpu_set_threads(threads);
    assert_int_equal(cpu_quant_use(fam), 0);
    matmul(y, x, &w, n);
    int bk = dtype_block(dt) == 256 ? 256 : 32, mins = dt == DT_Q4_1 || dt == DT_Q5_1;
    double e2 = 0, v2 = 0;
    for (int j = 0; j < n; j++) {
        const float *xj = x + (size_t)j * K;
        for (int r = 0; r < rows; r++) {
            const float *wr = wf + (size_t)r * K;
            double ref = 0, bound = 0;
            for (int b = 0; b < K / bk; b++) {
                double amax = 0, wabs = 0, w2 = 0;
                for (int l = 0; l < bk; l++) {
                    amax = fmax(amax, fabs(xj[b * bk + l]));
                    wabs += fabs(wr[b * bk + l]);
                    w2 += (double)wr[b * bk + l] * wr[b * bk + l];
                    ref += (double)wr[b * bk + l] * xj[b * bk + l];
                }
                double step = amax / 127;
                bound += wabs * step;
                v2 += w2 * step * step / 12;   /* rounding errors: uniform in ±step/2 */
                if (mins) {   /* the block's min m: the term m·s, s = f16(d·Σq) ≈ Σx */
                    double m = f16_to_f32(q_rd16(W + (size_t)r * dtype_row_bytes(dt, K) + (size_t)b * dtype_block_bytes(dt) + 2));
                    bound += fabs(m) * 64 * step;
                    v2 += m * m * 32 * step * step / 12;
                }
            }
            float got = y[(size_t)j * rows + r];
            TS_CLOSE(got, ref, bound + 1e-6, "%s %s rows %d K %d n %d threads %d: y[%d][%d] vs f32 reference", fam,
                  dtype_name(dt), rows, K, n, threads, j, r);
            e2 += (got - ref) * (got - ref);
        }
        if (j < 3 || j == n - 1) {   /* decode of the same row: the same numbers up to f32 rounding */
            matmul(y1, xj, &w, 1);
            for (int r = 0; r < rows; r++)
                TS_CLOSE(y1[r], y[(size_t)j * rows + r], 1e-5 * mag_of(wf + (size_t)r * K, xj, K), "%s %s: decode vs prefill row %d",
                      fam, dtype_name(dt), j);
        }
    }
    /* in aggregate the error is the rounding noise's: RMS within 2× of Σ w²·step²/12 */
    if (!(e2 <= 4 * v2)) fail_msg("%s %s n %d: RMS error %.3g > 2 × the rounding noise %.3g", fam, dtype_name(dt), n, sqrt(e2), sqrt(v2));
    /* the dequantize + sgemm prefill: f32 activations, only f32 rounding */
    if (n > 1) {
        cpu_qgemm_mode = 1;
        matmul(y, x, &w, n);
        cpu_qgemm_mode = 0;
        for (int j = 0; j < n; j++)
            for (int r = 0; r < rows; r++) {
                double ref = 0;
                for (int k = 0; k < K; k++) ref += (double)wf[(size_t)r * K + k] * x[(size_t)j * K + k];
                TS_CLOSE(y[(size_t)j * rows + r], ref, 1e-5 * mag_of(wf + (size_t)r * K, x + (size_t)j * K, K),
                      "%s sgemm path y[%d][%d]", dtype_name(dt), j, r);
            }
    }
    assert_int_equal(cpu_quant_use(NULL), 0);
    free(W), free(wsrc), free(wf), free(x), free(y), free(y1);
}

static void test_matmul_quantized_matches_f32_reference(void **state)
{
    (void)state;
    const char *fams[] = {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni"};
    for (int f = 0; f < 5; f++) {
        if (!cpu_quant_find(fams[f])) {
            printf("  [ SKIP ] matmul with %s quantized kernels: not supported here\n", fams[f]);
            continue;
        }
        for (int t = 0; t < N_QTYPES; t++) {
            dtype_t dt = QTYPES[t];
            int K = dtype_block(dt) == 256 ? 512 : 96;
            check_matmul(dt, 37, K, 1, fams[f], 1);
            check_matmul(dt, 37, K, 5, fams[f], 1);
            check_matmul(dt, 301, K * 3, 9, fams[f], 2);   /* big enough to run threaded */
            check_matmul(dt, 300, K * 2, 1, fams[f], 2);
        }
    }
    cpu_set_threads(1);
}

static void test_matmul_multi_mixed_dtypes_equals_single_calls_partial_blocks_nan_rmsnorm(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_Q5_0, DT_Q8_0, DT_Q4_1, DT_Q4_0};
    int K = 256, n = 6;
    for (int threads = 1; threads <= 2; threads++) {
        cpu_set_threads(threads);
        for (int n_ = 1; n_ <= n; n_ += n - 1) {
            uint8_t *W[4];
            weight_t w[4];
            const weight_t *wp[4];
            float *y[4], *ys[4];
            float *x = rand_floats((size_t)n_ * K, 1.0f);
            for (int i = 0; i < 4; i++) {
                int rows = 150 + 37 * i;
                W[i] = rand_weights(dts[i], rows, K);
                w[i] = (weight_t){dts[i], W[i], rows, K, WL_ROWS};
                wp[i] = &w[i];
                y[i] = xmalloc((size_t)n_ * rows * 4);
                ys[i] = xmalloc((size_t)n_ * rows * 4);
                matmul(ys[i], x, &w[i], n_);
            }
            matmul_multi(y, wp, 4, x, n_);
            for (int i = 0; i < 4; i++) {
                assert_memory_equal(y[i], ys[i], (size_t)n_ * w[i].rows * 4);
                free(W[i]), free(y[i]), free(ys[i]);
            }
            free(x);
        }
    }
    cpu_set_threads(1);
    /* rmsnorm with a block-format weight: the dequantized weight's result exactly */
    float xs[64], wsrc[64], o1[64], o2[64];
    uint8_t wq[68];
    for (int i = 0; i < 64; i++) xs[i] = frand(), wsrc[i] = 1 + frand() * 0.1f;
    quantize_row(DT_Q8_0, wsrc, wq, 64);
    dequantize_row(DT_Q8_0, wq, wsrc, 64);
    weight_t nq = {DT_Q8_0, wq, 1, 64, WL_ROWS}, nf = {DT_F32, wsrc, 1, 64, WL_ROWS};
    rmsnorm(o1, xs, &nq, 1, 64, 1e-5f);
    rmsnorm(o2, xs, &nf, 1, 64, 1e-5f);
    assert_memory_equal(o1, o2, sizeof o1);
    /* a row that is not whole blocks: NaN, nothing read */
    uint8_t blk[34] = {0};
    float x[40] = {0}, y[2];
    weight_t bad = {DT_Q8_0, blk, 1, 40, WL_ROWS};
    matmul(y, x, &bad, 1);
    assert_true(isnan(y[0]));
}

int main(void)
{
    cpu_quant_act_bits(8);   /* these tests are about the 8-bit activations (test_quant_act16.c: 16) */
    printf("quantized kernels in use: %s (SIMD family %s)\n", cpu_quant()->name, cpu_simd_name());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequantize_matches_gguf_bit_for_bit),
        cmocka_unit_test(test_quantize_row_matches_gguf_byte_for_byte),
        cmocka_unit_test(test_activation_quantizers_every_family_match_scalar_and_ggml),
        cmocka_unit_test(test_kernels_every_family_match_scalar_at_odd_sizes),
        cmocka_unit_test(test_scalar_reference_is_the_dot_product_of_dequantized_rows),
        cmocka_unit_test(test_matmul_quantized_matches_f32_reference),
        cmocka_unit_test(test_matmul_multi_mixed_dtypes_equals_single_calls_partial_blocks_nan_rmsnorm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
