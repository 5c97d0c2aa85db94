/* matmul for ggml block weights (kernels.h): the activations are quantized once per call
 * (quant.h: A32 for Q8_0/Q4_0/Q5_0/Q4_1/Q5_1, A256 for the K-quants; 16-bit by default, 8-bit
 * with cpu_quant_act_bits(8)), then the family's kernels (cpu_quant(): the table of those bits)
 * take the weight rows in their block layout; nothing is dequantized whole.
 *
 * Decode (n = 1): the OpenMP threads split the output rows of all the matrices of the call
 * (one fork/join for q/k/v or gate/up), each starting on its contiguous slice and taking over
 * the blocks a slower thread has not reached (rowsteal.h); one pass over each weight row.
 * Prefill (n > 1): all n rows quantized inside the parallel region (each thread a slice of
 * them), then each thread takes a contiguous slice of the output rows (whole 32-row panels).
 * From QG_PACK_MIN rows on the family's packed-panel GEMM runs (qpack_body.inc,
 * qpack16_body.inc: a group of weight rows decoded and interleaved once per call, then every
 * activation row over it, one row per vector lane); below it (and for the scalar family) the
 * register tiles of up to 4 activation rows × 1-2 weight rows over a chunk of QG_CHUNK_BYTES of
 * weights kept in the L2.
 *
 * WL_X16 weights (kernels.h: 16 rows interleaved, the resident copy of Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 on
 * the AVX2 and AVX-512 families, and of Q4_K/Q6_K on AVX512-VNNI and AVX2, 16-bit activations) go through
 * that family's X16 decode kernel and X16 GEMM (none for the K-quants: their prefill unpacks) in whole groups
 * of 16 rows (rowsteal claims whole groups); a group cut by a row split, and every other
 * family or mode, unpacks the groups back to ggml rows for the kernels above (run_rows_x16).
 *
 * The alternative "dequantize a tile of weight rows to f32 + cblas_sgemm" (cpu_qgemm_mode 1)
 * stays for comparison. Measured with bench/bench_quant on the Sapphire Rapids dev machine, one
 * thread (its CPU time; the machine was shared), n = 128 and 512, the SmolLM2/Qwen2.5 shapes,
 * GFLOP/s = 2·rows·cols·n / time:
 *             packed GEMM    register tiles   dequantize + OpenBLAS sgemm
 *   Q4_1      305-403        94-111           92-148
 *   Q8_0      324-436        107-122          97-153
 *   Q4_K      346-366        114-121          98-141
 *   Q6_K      318-347        133-144          77-128
 *   Q5_0      307-402        94-113           84-139
 *   Q4_0      313-429        107-122          97-151
 *   Q5_1      288-385        89-102           82-143
 *   Q5_K      337-369        102-110          93-132
 * (avx512vnni kernels, 8-bit activations; the 256-bit packed GEMM: 215-245 with AVX-VNNI, 105-145
 * without, n = 128. The 16-bit kernels do half the products per instruction, vpdpwssd: see
 * bench/bench_quant --act-bits 16).
 * The packed quantized GEMM is 2.3-4× the dequantize + sgemm route, so it is the default; the
 * packing costs about as much as 4 activation rows, hence QG_PACK_MIN (n = 2..4: the tiles win).
 * llama.cpp on the same machine: SmolLM2-135M Q4_1 prefill ~180 tok/s on 1 thread, about
 * 40-50 GFLOP/s. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/rowsteal.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu_qgemm_mode = 0;

/* Below this many weights a matrix-vector product runs on one thread. */
#define QMV_PAR_MIN (1 << 15)
/* Weight bytes per block of rows the decode threads claim (rowsteal.h; with its guided claims
 * SmolLM2 Q4_1 2-thread decode went 205 -> 236 tok/s and Qwen2.5-0.5B 48.5 -> 53.7, 2026-11-27).
 * 128 KiB, not matmul.c's 32: fewer claims (each a kernel call, and steals that restart a
 * stream) on these 5-8x smaller matrices. Alternating steps in one process (2 threads, Zen 3,
 * 2026-12-01, bench/cpu.md session 29), step medians against 32 KiB: SmolLM2 Q4_1 -1.6..-3.9%
 * (64 KiB -1.6..-1.8%, 256 KiB and 1 MiB no better than 128), Qwen2.5 -0.4..-1.6% (64 KiB
 * -1.1..-1.3%, 256 KiB +0.6..+1.0% against 128, 1 MiB +3% against 32). The F32 path's blocks
 * at 128 KiB were 0.1-2% slower (kept at 32). */
#define QMV_BLOCK_BYTES (128u << 10)
/* A share's last block in 4 pieces (rowsteal.h rs_init), K-quant products' whole: their
 * decode kernels set up the activation planes at every call, and a piece is a call.
 * Alternating steps, 2 threads: SmolLM2 (Q4_1, Q8_0) 4 pieces 0/+0.7/+2.6/+1.3% (2 pieces
 * +0.1..+4.0%, 8 pieces +0.9/+2.1%), the two threads' mean wait at a product's join 1.6 →
 * 1.1-1.4 µs; Qwen2.5 with its K-quant matrices in pieces too -1.2..+0.6%, whole
 * -0.2..+1.5% (bench/cpu.md session 30). */
#define QMV_TAIL_PARTS 4
static int qmv_tail_parts(const weight_t *const *w, int k)
{
    for (int i = 0; i < k; i++)
        if (w[i]->dtype == DT_Q4_K || w[i]->dtype == DT_Q5_K || w[i]->dtype == DT_Q6_K) return 1;
    return QMV_TAIL_PARTS;
}
/* Weight bytes per prefill chunk (per thread): the chunk stays in the L2 while every
 * activation row passes over it. */
#define QG_CHUNK_BYTES (256u << 10)
/* f32 tile of dequantized weight rows for cpu_qgemm_mode 1 (per thread). */
#define QG_TILE_BYTES (1u << 20)
/* From this many activation rows on, prefill packs the weight panels (when the family can). */
#define QG_PACK_MIN 5
/* Distinct activation formats one call can need (matrices of different dtypes). */
#define QMAX_FMT 8

/* Buffers of the thread that uses them (the caller's quantized activations; a worker's f32
 * tile), kept and grown between calls. */
static _Thread_local uint8_t *t_act;
static _Thread_local size_t t_act_cap;
static _Thread_local float *t_tile;
static _Thread_local size_t t_tile_cap;
static _Thread_local uint8_t *t_pack;
static _Thread_local size_t t_pack_cap;
static _Thread_local uint8_t *t_unx;   /* WL_X16 rows unpacked (run_rows_x16) */
static _Thread_local size_t t_unx_cap;

/* p when need fits its *cap bytes, else a new 64-byte-aligned buffer (p freed), or NULL (p and
 * *cap kept) when there is no memory. */
static void *grow(void *p, size_t *cap, size_t need)
{
    if (need <= *cap) return p;
    need = (need + 4095) & ~(size_t)4095;
    void *q = aligned_alloc(64, need);
    if (!q) return NULL;
    free(p);
    *cap = need;
    return q;
}

/* The no-allocation path (when a buffer cannot be had): each weight row dequantized block by
 * block on the stack and dotted with x in f32. */
static void slow_rows(float *y, const float *x, const weight_t *w, int n)
{
    size_t rb = dtype_row_bytes(w->dtype, w->cols), bb = dtype_block_bytes(w->dtype);
    int bk = dtype_block(w->dtype);
    float tmp[256];
    for (int j = 0; j < n; j++)
        for (int r = 0; r < w->rows; r++) {
            const uint8_t *row = (const uint8_t *)w->data + (size_t)r * rb;
            uint8_t blk[256];   /* one block (Q6_K: 210 bytes) */
            double s = 0;
            for (int b = 0; b < w->cols / bk; b++) {
                if (w->layout == WL_X16) x16_block(w->dtype, w->data, w->cols, r, b, blk);
                dequantize_row(w->dtype, w->layout == WL_X16 ? blk : row + b * bb, tmp, bk);
                for (int l = 0; l < bk; l++) s += (double)tmp[l] * x[(size_t)j * w->cols + b * bk + l];
            }
            y[(size_t)j * w->rows + r] = (float)s;
        }
}

/* m weight rows of dtype dt, K columns, in ggml's layout at W (rb bytes apart) · n activation
 * rows X (xs bytes apart) → y[j·ldy + i] for i < m, j < n. */
static void run_span(const cpu_quant_ops *ops, float *y, size_t ldy, dtype_t dt, int K, const uint8_t *W,
                     const uint8_t *X, size_t xs, int n, int m)
{
    size_t rb = dtype_row_bytes(dt, K);
    if (n >= QG_PACK_MIN && ops->gemm[dt] && cpu_qgemm_mode != 2) {
        uint8_t *buf = grow(t_pack, &t_pack_cap, ops->gemm_buf(dt, K));
        if (buf) {   /* (on failure the old buffer stays, and the tiles below need none) */
            t_pack = buf;
            ops->gemm[dt](y, ldy, W, rb, X, xs, m, n, K, buf);
            return;
        }
    }
    qmm_fn mm = ops->mm[dt];
    int chunk = n == 1 ? m : (int)(QG_CHUNK_BYTES / rb);
    if (chunk < 8) chunk = 8;
    for (int r0 = 0; r0 < m; r0 += chunk)
        mm(y + r0, ldy, W + (size_t)r0 * rb, rb, X, xs, m - r0 < chunk ? m - r0 : chunk, n, K);
}

static void run_rows_x16_unpacked(const cpu_quant_ops *ops, float *y, const weight_t *w, const uint8_t *X, size_t xs,
                                  int n, int a, int b);

/* Output rows [a, b) of a WL_X16 weight: decode through the family's X16 kernel (a group that
 * [a, b) covers only in part goes through a 16-row buffer), prefill through its X16 GEMM
 * (whole groups; the rest unpacked), anything else by unpacking whole groups to ggml rows for
 * the family's own kernels (run_rows_x16_unpacked). */
static void run_rows_x16(const cpu_quant_ops *ops, float *y, const weight_t *w, const uint8_t *X, size_t xs,
                         int n, int a, int b)
{
    const dtype_t dt = w->dtype;
    const int K = w->cols;
    const size_t rb = dtype_row_bytes(dt, K), ldy = (size_t)w->rows;
    const uint8_t *W = w->data;
    qmm_fn k = n == 1 ? cpu_quant_x16(ops, dt) : NULL;
    if (k) {
        int f0 = (a + 15) / 16, f1 = b / 16;
        if (f0 < f1) k(y + 16 * f0, 0, W + (size_t)f0 * 16 * rb, 0, X, xs, 16 * (f1 - f0), 1, K);
        for (int g = a / 16; g < (b + 15) / 16; g++) {
            if (g >= f0 && g < f1) continue;
            float t[16];
            k(t, 0, W + (size_t)g * 16 * rb, 0, X, xs, 16, 1, K);
            for (int r = g * 16 > a ? g * 16 : a; r < b && r < g * 16 + 16; r++) y[r] = t[r - g * 16];
        }
        return;
    }
    qgemm_fn gx = n >= QG_PACK_MIN && cpu_qgemm_mode != 2 ? cpu_quant_x16_gemm(ops, dt) : NULL;
    if (gx) {   /* prefill: the whole groups through the GEMM that packs panels from them */
        int f0 = (a + 15) / 16, f1 = b / 16;
        uint8_t *pk = f0 < f1 ? grow(t_pack, &t_pack_cap, ops->gemm_buf(dt, K)) : NULL;
        if (pk) {
            t_pack = pk;
            gx(y + 16 * f0, ldy, W + (size_t)f0 * 16 * rb, rb, X, xs, 16 * (f1 - f0), n, K, pk);
            if (a < 16 * f0) run_rows_x16_unpacked(ops, y, w, X, xs, n, a, 16 * f0);   /* (f0 < f1: 16 f0 < b) */
            if (16 * f1 < b) run_rows_x16_unpacked(ops, y, w, X, xs, n, 16 * f1, b);
            return;
        }
    }
    run_rows_x16_unpacked(ops, y, w, X, xs, n, a, b);
}

/* Rows [a, b) of a WL_X16 weight through the family's kernels for ggml rows: whole groups
 * unpacked, up to QG_CHUNK_BYTES of rows at a time. */
static void run_rows_x16_unpacked(const cpu_quant_ops *ops, float *y, const weight_t *w, const uint8_t *X, size_t xs,
                                  int n, int a, int b)
{
    const dtype_t dt = w->dtype;
    const int K = w->cols;
    const size_t rb = dtype_row_bytes(dt, K), ldy = (size_t)w->rows;
    const uint8_t *W = w->data;
    int win = (int)(QG_CHUNK_BYTES / rb) & ~31;
    if (win < 32) win = 32;
    uint8_t *buf = grow(t_unx, &t_unx_cap, (size_t)(win + 32) * rb);
    if (!buf) {   /* no memory for even this: NaN rather than a wrong number */
        for (int j = 0; j < n; j++)
            for (int r = a; r < b; r++) y[(size_t)j * ldy + r] = __builtin_nanf("");
        return;
    }
    t_unx = buf;
    for (int s = a; s < b;) {
        int e = (s / 16) * 16 + win;
        if (e > b) e = b;
        for (int r = s; r < e;) {
            int g = r / 16, re = e < 16 * g + 16 ? e : 16 * g + 16;
            weight_x16_unpack(dt, W + (size_t)g * 16 * rb, buf + (size_t)(r - s) * rb, r - 16 * g, re - r, K);
            r = re;
        }
        run_span(ops, y + s, ldy, dt, K, buf, X, xs, n, e - s);
        s = e;
    }
}

/* Output rows [a, b) of w for all n activation rows X (format of w, xs bytes apart). */
static void run_rows(const cpu_quant_ops *ops, float *y, const weight_t *w, const uint8_t *X, size_t xs,
                     int n, int a, int b)
{
    if (w->layout == WL_X16) {
        run_rows_x16(ops, y, w, X, xs, n, a, b);
        return;
    }
    size_t rb = dtype_row_bytes(w->dtype, w->cols);
    run_span(ops, y + a, (size_t)w->rows, w->dtype, w->cols, (const uint8_t *)w->data + (size_t)a * rb, X, xs, n, b - a);
}

/* cpu_qgemm_mode 1: rows [a, b) by dequantizing tiles of weight rows into f32 + sgemm. */
static int sgemm_rows(float *y, const float *x, const weight_t *w, int n, int a, int b)
{
    int cols = w->cols;
    int tr = (int)(QG_TILE_BYTES / sizeof(float) / (size_t)cols);
    tr = tr < 16 ? 16 : tr & ~15;
    if (tr > b - a) tr = b - a;
    float *tile = grow(t_tile, &t_tile_cap, (size_t)tr * cols * sizeof(float));
    if (!tile) return -1;
    t_tile = tile;
    for (int t0 = a; t0 < b; t0 += tr) {
        int m = b - t0 < tr ? b - t0 : tr;
        for (int r = 0; r < m; r++) widen_row(t_tile + (size_t)r * cols, w, t0 + r);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, cols, 1.0f, x, cols, t_tile, cols,
                    0.0f, y + t0, w->rows);
    }
    return 0;
}

/* Thread t of T's static share of the total output rows of the k matrices (prefill: whole
 * panels of 32 rows per thread), activations at act + off[wf[i]], xs[wf[i]] bytes a row. */
static void qmm_share(const cpu_quant_ops *ops, float *const *y, const weight_t *const *w, int k, const uint8_t *act,
                      const size_t *off, const size_t *xs, const int *wf, int n, long long total, int t, int T)
{
    long long g0 = total * t / T, g1 = total * (t + 1) / T, base = 0;
    if (n > 1) {
        g0 = t ? (g0 + 16) & ~31LL : 0;
        g1 = t + 1 < T ? (g1 + 16) & ~31LL : total;
    }
    for (int i = 0; i < k; i++) {
        long long a = g0 > base ? g0 : base, b = g1 < base + w[i]->rows ? g1 : base + w[i]->rows;
        if (a < b) run_rows(ops, y[i], w[i], act + off[wf[i]], xs[wf[i]], n, (int)(a - base), (int)(b - base));
        base += w[i]->rows;
    }
}

static void qmatmul_impl(float *const *y, const weight_t *const *w, int k, const float *x, int n, int then_swiglu);

/* A decode product's shares (cpu_team_run): rows claimed with stealing, then (then_swiglu)
 * after a barrier swiglu on each share's static slice of the rows. */
typedef struct {
    rowsteal rs;
    const cpu_quant_ops *ops;
    float *const *y;
    const weight_t *const *w;
    int k, then_swiglu;
    const uint8_t *act;
    const size_t *off, *xs;
    const int *wf;
    const matmul_hint *hint;   /* what follows this product (matmul_next_hint), NULL: nothing */
} qmv_job;

/* A worker's read-ahead: of the next product, cpu_pf.idle bytes in up to 4 spans, the places
 * its first claim starts streaming (rs_first_claim; each WL_X16 piece streams groups f0 and
 * f0 + ng/2 together, run_rows_x16), each given a share of the bytes; then the hint's spans. */
static _Thread_local struct {
    int n, nm;   /* spans, of which the first nm are the matrices' */
    const char *p[4 + MM_HINT_SPANS];
    size_t len[4 + MM_HINT_SPANS];
} t_ahead;

/* Appends the matrices' spans to t_ahead (its caller empties it first). */
static void ahead_plan(const weight_t *const *w, int k, int t, int T, size_t bytes)
{
    long long total = 0, g0, g1, base = 0;
    int x16 = 0;
    for (int i = 0; i < k; i++) total += w[i]->rows, x16 |= w[i]->layout == WL_X16;
    if (!rs_first_claim(total, t, T, dtype_row_bytes(w[0]->dtype, w[0]->cols), QMV_BLOCK_BYTES, x16 ? 16 : 8, qmv_tail_parts(w, k),
                        &g0, &g1))
        return;
    for (int i = 0; i < k && bytes && t_ahead.n < 3; base += w[i]->rows, i++) {
        long long a = (g0 > base ? g0 : base) - base, e = (g1 < base + w[i]->rows ? g1 : base + w[i]->rows) - base;
        const size_t rb = dtype_row_bytes(w[i]->dtype, w[i]->cols);
        const char *W = w[i]->data;
        if (a >= e) continue;
        if (w[i]->layout != WL_X16) {   /* one stream from row a */
            size_t len = (size_t)(e - a) * rb < bytes ? (size_t)(e - a) * rb : bytes;
            t_ahead.p[t_ahead.n] = W + (size_t)a * rb, t_ahead.len[t_ahead.n++] = len;
            bytes -= len;
            continue;
        }
        long long f0 = (a + 15) / 16, ng = e / 16 - f0;   /* whole groups; the partial ones after */
        if (ng <= 0) continue;
        const size_t gs = 16 * rb, len = bytes / 2 < (size_t)ng * gs / 2 ? bytes / 2 : (size_t)ng * gs / 2;
        t_ahead.p[t_ahead.n] = W + (size_t)f0 * gs, t_ahead.len[t_ahead.n++] = len;
        t_ahead.p[t_ahead.n] = W + (size_t)(f0 + ng / 2) * gs, t_ahead.len[t_ahead.n++] = len;
        bytes -= 2 * len;
    }
}

/* cpu_team_after: the plan read into this core's caches (prefetcht0: alternating decode steps
 * against prefetcht1, SmolLM2 2 threads, bench/cpu.md session 30), a line at a time, stopping
 * as soon as the team's next run starts: a prefetch waits for a free miss buffer, and reading
 * ahead past the caller's serial code had delayed the worker's start by 0.6-0.8 µs a run (a
 * look at the team every 1 KiB against none: SmolLM2 0.4-2% faster steps; every 256 bytes
 * against 1 KiB 0.7-2.7%, every line against 256 bytes 2.2-3.5%, every line against 1 KiB
 * -0.1..+1.6%). A prefetch never faults. */
static void ahead_run(void)
{
    for (int s = 0; s < t_ahead.n; s++)
        for (size_t o = 0; o < t_ahead.len[s]; o += 64) {
            if (cpu_team_next_posted()) goto out;
            if (s < t_ahead.nm) __builtin_prefetch(t_ahead.p[s] + o, 0, 3);
            else __builtin_prefetch(t_ahead.p[s] + o, 0, 2);   /* the hint's spans: L2, may exceed the L1 */
        }
out:
    t_ahead.n = 0;
}

static void qmv_rows(void *arg, int i, int a, int b)
{
    qmv_job *j = arg;
    run_rows(j->ops, j->y[i], j->w[i], j->act + j->off[j->wf[i]], j->xs[j->wf[i]], 1, a, b);
}

static void qmv_share(void *arg, int t, int T)
{
    qmv_job *j = arg;
    rs_share(&j->rs, t, T, j->w, j->k, j->y, j->then_swiglu, qmv_rows, NULL, j);
    const matmul_hint *h = j->hint;
    if (h && t > 0 && cpu_pf.idle > 0) {   /* a worker: its read-ahead once it has reported */
        t_ahead.n = 0;
        if (h->k) ahead_plan(h->w, h->k, t, T, (size_t)cpu_pf.idle);
        t_ahead.nm = t_ahead.n;
        for (int s = 0; t < MM_HINT_THREADS && s < h->n[t]; s++)
            t_ahead.p[t_ahead.n] = h->p[t][s], t_ahead.len[t_ahead.n++] = h->len[t][s];
        if (t_ahead.n) cpu_team_after(ahead_run);
    }
}

void qmatmul_multi(float *const *y, const weight_t *const *w, int k, const float *x, int n)
{
    qmatmul_impl(y, w, k, x, n, 0);
}

void qmatvec_swiglu(float *gate, float *up, const weight_t *w_gate, const weight_t *w_up, const float *x)
{
    float *y[2] = {gate, up};
    const weight_t *w[2] = {w_gate, w_up};
    qmatmul_impl(y, w, 2, x, 1, 1);
}

/* then_swiglu (n = 1, k = 2: gate and up of the same rows, matmul_swiglu): the decode rows are
 * claimed as those of any k = 2 call (each thread streams one matrix, as matmul.c's
 * matvec_multi_sw does), then after a barrier each thread applies swiglu to its static slice;
 * every other path applies swiglu to the whole after the products. */
static void qmatmul_impl(float *const *y, const weight_t *const *w, int k, const float *x, int n, int then_swiglu)
{
    const cpu_quant_ops *ops = cpu_quant();
    int K = w[0]->cols;
    const matmul_hint *hint = matmul_take_hint();   /* for the decode's team run below; else dropped */
    for (int i = 0; i < k; i++)   /* not a matrix of whole blocks (or not K wide): NaN, no reads */
        if (w[i]->cols != K || K <= 0 || K % dtype_block(w[i]->dtype)) {
            for (int m = 0; m < k; m++)
                for (size_t e = 0; e < (size_t)n * w[m]->rows; e++) y[m][e] = __builtin_nanf("");
            if (then_swiglu) swiglu(y[0], y[1], (size_t)n * w[0]->rows);
            return;
        }
    long long total = 0, work = 0;
    for (int i = 0; i < k; i++) {
        total += w[i]->rows;
        work += (long long)n * w[i]->rows * w[i]->cols;
    }
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (n == 1 && work < QMV_PAR_MIN) nt = 1;
    if (n > 1 && work < (1 << 20)) nt = 1;

    if (n > 1 && cpu_qgemm_mode == 1) {
        int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
        {
            int t = omp_get_thread_num(), T = omp_get_num_threads();
            long long g0 = total * t / T, g1 = total * (t + 1) / T, base = 0;
            for (int i = 0; i < k; i++) {
                long long a = g0 > base ? g0 : base, b = g1 < base + w[i]->rows ? g1 : base + w[i]->rows;
                if (a < b && sgemm_rows(y[i], x, w[i], n, (int)(a - base), (int)(b - base)) != 0) failed = 1;
                base += w[i]->rows;
            }
        }
        if (failed)
            for (int i = 0; i < k; i++) slow_rows(y[i], x, w[i], n);
        return;
    }

    /* the distinct activation formats, and where each one's n rows go */
    qact_fmt fmt[QMAX_FMT];
    size_t xs[QMAX_FMT], off[QMAX_FMT], need = 0;
    int nf = 0, wf[64];
    for (int i = 0; i < k; i++) {
        qact_fmt f = quant_act_fmt(ops, w[i]->dtype);
        int j = 0;
        while (j < nf && (fmt[j].kind != f.kind || fmt[j].corr != f.corr)) j++;
        if (j == nf) {
            if (nf == QMAX_FMT || i >= 64) {   /* more than the call can hold: one at a time */
                for (int m = 0; m < k; m++) qmatmul_multi(&y[m], &w[m], 1, x, n);
                if (then_swiglu) swiglu(y[0], y[1], (size_t)n * w[0]->rows);
                return;
            }
            fmt[nf] = f;
            xs[nf] = qact_row_bytes(f, K);
            off[nf] = need;
            need += xs[nf] * (size_t)n;
            nf++;
        }
        if (i < 64) wf[i] = j;
    }
    if (k > 64) {
        for (int m = 0; m < k; m++) qmatmul_multi(&y[m], &w[m], 1, x, n);
        return;
    }
    uint8_t *act = grow(t_act, &t_act_cap, need);
    if (!act) {
        for (int i = 0; i < k; i++) slow_rows(y[i], x, w[i], n);
        if (then_swiglu) swiglu(y[0], y[1], (size_t)w[0]->rows);
        return;
    }
    t_act = act;
    if (n == 1)
        for (int f = 0; f < nf; f++) quant_act_row(ops, fmt[f], act + off[f], x, K);

    if (n == 1 && nt > 1) {   /* decode: the rows split with stealing (rowsteal.h), on the team */
        if (nt > RS_MAX_THREADS) nt = RS_MAX_THREADS;
        qmv_job j;   /* not zero-filled: rs_init sets the counters it uses (4 KiB a call otherwise) */
        j.ops = ops, j.y = y, j.w = w, j.k = k, j.act = act, j.off = off, j.xs = xs, j.wf = wf;
        j.then_swiglu = then_swiglu;
        j.hint = hint;
        int x16 = 0;   /* whole 16-row groups for the WL_X16 kernels */
        for (int i = 0; i < k; i++) x16 |= w[i]->layout == WL_X16;
        rs_init(&j.rs, total, nt, dtype_row_bytes(w[0]->dtype, K), QMV_BLOCK_BYTES, x16 ? 16 : 8, qmv_tail_parts(w, k));
        cpu_team_run(nt, qmv_share, &j);
        return;
    }
    if (nt == 1) {   /* no OpenMP region: libgomp mallocs and frees a team of one at every fork */
        for (int f = 0; f < nf && n > 1; f++)
            for (int j = 0; j < n; j++) quant_act_row(ops, fmt[f], act + off[f] + (size_t)j * xs[f], x + (size_t)j * K, K);
        qmm_share(ops, y, w, k, act, off, xs, wf, n, total, 0, 1);
    } else {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), T = omp_get_num_threads();
            if (n > 1) {
                for (int f = 0; f < nf; f++)
                    for (int j = n * t / T; j < n * (t + 1) / T; j++)
                        quant_act_row(ops, fmt[f], act + off[f] + (size_t)j * xs[f], x + (size_t)j * K, K);
#pragma omp barrier
            }
            qmm_share(ops, y, w, k, act, off, xs, wf, n, total, t, T);
        }
    }
    if (then_swiglu) swiglu(y[0], y[1], (size_t)n * w[0]->rows);
}
