/* matmul for F32, F16 and BF16 weights (block formats go to quant_gemm.c).
 * Decode (n = 1): our matrix-vector kernels (simd.h), threaded with OpenMP over the output
 * rows in static contiguous chunks, one pass over each weight row, weights read as stored
 * (F16/BF16 widened in registers: half the bytes of F32). No allocation.
 * Prefill (n > 1): matrix-matrix, the output rows split over the OpenMP threads: up to
 * GEMM_NT_MAX_N tokens our unpacked GEMM (gemm_avx512.c) where the SIMD family has one, else
 * the BLAS (cblas_sgemm); F16/BF16 weights are widened one tile of rows at a time (8 rows for
 * our GEMM, ~1 MiB for the BLAS) into a per-thread buffer kept between calls. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/rowsteal.h"
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>

/* Below this many weights a matrix-vector product runs on one thread (the fork costs more). */
#define MATVEC_PAR_MIN (1 << 15)
/* Widened F16/BF16 tile for prefill: about this many bytes of f32 per thread (fits the L2). */
#define TILE_BYTES (1u << 20)

static void matvec_rows(const cpu_simd_ops *s, float *y, const float *x, const weight_t *w, int r0, int r1)
{
    switch (w->dtype) {
    case DT_F32: s->matvec_f32(y, w->data, x, r0, r1, w->cols); break;
    case DT_F16: s->matvec_f16(y, w->data, x, r0, r1, w->cols); break;
    case DT_BF16: s->matvec_bf16(y, w->data, x, r0, r1, w->cols); break;
    default: break;
    }
}

/* Weight bytes per block of rows the decode threads claim (rowsteal.h: the owner of a share
 * claims half of its free blocks at a time, the others one block from the back). Measured on
 * stories110M-shape F16/BF16/F32, 2 threads (bench/decode_ab.py under chrt -f 50, 3 rounds
 * interleaved, 2026-11-27): 32 KiB blocks 70% / 72% / 82% of the bandwidth against whole shares'
 * 67% / 70% / 82%. With one claim per block (the earlier rowsteal.h) 32 KiB blocks were 10-15%
 * slower than whole shares: a locked instruction per block drained the memory pipeline. */
#define MV_BLOCK_BYTES (32u << 10)

/* k matrix-vector products with the same input in one parallel region (one fork/join, not
 * k): the R = Σ rows output rows split over the threads with stealing (rowsteal.h), thread t
 * starting on the contiguous slice [R·t/T, R·(t+1)/T). */
static void matvec_multi_sw(float *const *y, const weight_t *const *w, int k, const float *x, int then_swiglu);

/* The 16-bit kernels prefetch 3 KiB ahead of the row they read but never past the rows they
 * were given (simd_avx512.c MV_PF): a thread going through its share block by block would read
 * the first 3 KiB of each block without it. So a claimed block first prefetches the head of
 * the block after it (the one the thread most likely takes next): global row g of the k
 * matrices. */
#define MV_HEAD_BYTES ((size_t)cpu_pf.mv16)
static void prefetch_head(const weight_t *const *w, int k, long long g)
{
    for (int i = 0; i < k; i++) {
        if (g >= w[i]->rows) {
            g -= w[i]->rows;
            continue;
        }
        if (w[i]->dtype == DT_F16 || w[i]->dtype == DT_BF16) {
            const char *p = (const char *)w[i]->data + (size_t)g * w[i]->cols * 2;
            size_t n = (size_t)(w[i]->rows - g) * w[i]->cols * 2;
            for (size_t o = 0; o < MV_HEAD_BYTES && o < n; o += 64) __builtin_prefetch(p + o, 0, 3);
        }
        return;
    }
}

/* A decode product's shares (cpu_team_run): rows claimed with stealing, then (then_swiglu)
 * after a barrier swiglu on each share's static slice of the rows. */
typedef struct {
    rowsteal rs;
    const cpu_simd_ops *s;
    float *const *y;
    const weight_t *const *w;
    int k, then_swiglu;
    const float *x;
} mv_job;

static void mv_rows(void *arg, int i, int a, int b)
{
    mv_job *j = arg;
    matvec_rows(j->s, j->y[i], j->x, j->w[i], a, b);
}

static void mv_claimed(void *arg, long long g1)
{
    mv_job *j = arg;
    prefetch_head(j->w, j->k, g1);
}

static void mv_share(void *arg, int t, int T)
{
    mv_job *j = arg;
    rs_share(&j->rs, t, T, j->w, j->k, j->y, j->then_swiglu, mv_rows, mv_claimed, j);
}

static void matvec_multi(float *const *y, const weight_t *const *w, int k, const float *x)
{
    matvec_multi_sw(y, w, k, x, 0);
}

/* then_swiglu (k = 2, gate and up of the same shape): after the products, a barrier, and each
 * thread applies swiglu to its static slice of the rows. The rows are claimed as those of any
 * k = 2 call (gate's, then up's), so each thread streams one matrix front to back. Claiming
 * rows [a, b) of both at once (this function's former pair mode) switched every thread between
 * two streams at each claim; the concatenation decodes 1 point of the bandwidth faster
 * (F32 85% -> 86%, F16 84% -> 85%, BF16 83% -> 84%, every rep at or above the old build's;
 * bench/decode_ab.py --reps 3 old=... new=..., 2 threads, 2026-11-27: bench/cpu.md, session 8). */
static void matvec_multi_sw(float *const *y, const weight_t *const *w, int k, const float *x, int then_swiglu)
{
    const cpu_simd_ops *s = cpu_simd();
    long long total = 0, work = 0;
    for (int i = 0; i < k; i++) {
        total += w[i]->rows;
        work += (long long)w[i]->rows * w[i]->cols;
    }
    int nt = omp_get_max_threads();
    if (work < MATVEC_PAR_MIN || nt == 1 || omp_in_parallel()) {
        for (int i = 0; i < k; i++) matvec_rows(s, y[i], x, w[i], 0, w[i]->rows);
        if (then_swiglu) swiglu(y[0], y[1], (size_t)w[0]->rows);
        return;
    }
    if (nt > RS_MAX_THREADS) nt = RS_MAX_THREADS;
    mv_job j;   /* not zero-filled: rs_init sets the counters it uses (4 KiB a call otherwise) */
    j.s = s, j.y = y, j.w = w, j.k = k, j.x = x, j.then_swiglu = then_swiglu;
    rs_init(&j.rs, total, nt, dtype_row_bytes(w[0]->dtype, w[0]->cols), MV_BLOCK_BYTES, 4, 1);   /* last blocks whole: untried */
    cpu_team_run(nt, mv_share, &j);
}

static void matvec(float *y, const float *x, const weight_t *w)
{
    matvec_multi(&y, &w, 1, x);
}

/* Up to this many tokens a prefill product runs gemm_nt_f32 (cpu_simd_ops), above it the BLAS:
 * the crossover of the two on the 110M shape's matrices, one thread, weights from DRAM
 * (gemm_avx512.c's figures: ours 7-60% faster up to 128 tokens, 5% slower at 256). */
#define GEMM_NT_MAX_N 192
/* F16/BF16 rows widened per call of gemm_nt_f32: one 8-row block (24 KiB of f32 at 768
 * columns, in the L1) at a time, used by every token before the next is widened. 110M F16/BF16
 * GGUF prefill of 128 ids, 1 thread, best of 3 interleaved (host loaded by a test run):
 * 8 rows 641 / 616 tok/s, 16 rows 615 (F16), 64 rows 494 (F16), the 1 MiB tile 526 / 494,
 * OpenBLAS on 1 MiB tiles 519 / 536; 2 threads 992 / 994 against 1008 / 991 (OpenBLAS). */
#define GN_WIDEN_ROWS 8

/* y[:, r0:r1) = x · W[r0:r1)ᵀ for f32 rows W (row stride cols), y's row stride ldy. */
static void gemm_f32(const cpu_simd_ops *s, float *y, int ldy, const float *x, const float *W, int n, int r0, int r1, int cols)
{
    if (s->gemm_nt_f32 && n <= GEMM_NT_MAX_N)
        s->gemm_nt_f32(y, ldy, x, n, W, r0, r1, cols);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, r1 - r0, cols, 1.0f, x, cols,
                    W + (size_t)r0 * cols, cols, 0.0f, y + r0, ldy);
}

/* Per-thread widening buffers of the F16/BF16 prefill, kept between calls (globals, so they
 * stay reachable; grown on demand, never per token). */
#define MAX_TILE_THREADS 1024
static float *tile_buf[MAX_TILE_THREADS];
static size_t tile_cap[MAX_TILE_THREADS];

/* y[:, r0:r1) = x · W[r0:r1)ᵀ on the calling thread (single-threaded BLAS). Returns -1 when the
 * widening buffer cannot be allocated. */
static int matmul_rows(float *y, const float *x, const weight_t *w, int n, int r0, int r1, int tid)
{
    int rows = w->rows, cols = w->cols;
    const cpu_simd_ops *s = cpu_simd();
    if (w->dtype == DT_F32) {
        gemm_f32(s, y, rows, x, w->data, n, r0, r1, cols);
        return 0;
    }
    int tr = (int)(TILE_BYTES / sizeof(float) / (size_t)cols);
    tr = tr < 16 ? 16 : tr & ~15;
    if (s->gemm_nt_f32 && n <= GEMM_NT_MAX_N) tr = GN_WIDEN_ROWS;
    if (tr > r1 - r0) tr = r1 - r0;
    size_t need = (size_t)tr * cols;
    if (tid >= MAX_TILE_THREADS) return -1;
    if (need > tile_cap[tid]) {
        float *nb = realloc(tile_buf[tid], need * sizeof(float));
        if (!nb) return -1;
        tile_buf[tid] = nb;
        tile_cap[tid] = need;
    }
    float *buf = tile_buf[tid];
    const uint16_t *W = w->data;
    for (int t0 = r0; t0 < r1; t0 += tr) {
        int m = r1 - t0 < tr ? r1 - t0 : tr;
        if (w->dtype == DT_F16) s->widen_f16(buf, W + (size_t)t0 * cols, (size_t)m * cols);
        else s->widen_bf16(buf, W + (size_t)t0 * cols, (size_t)m * cols);
        gemm_f32(s, y + t0, rows, x, buf, n, 0, m, cols);
    }
    return 0;
}

/* `--act-bits 8` on BF16 weights (kernels.h): the activations rounded to bf16 once per call, for
 * gemm_bf16_avx512.c; NULL (the f32 path) unless that setting, the AVX-512 family on a CPU with
 * AVX512-BF16, every matrix BF16 with the same row length, and the buffer can grow. One buffer
 * per calling thread, kept between calls. */
static _Thread_local uint16_t *xbf_buf;
static _Thread_local size_t xbf_cap;

static const uint16_t *bf16_act(const weight_t *const *w, int k, const float *x, int n)
{
#ifdef LLM_SIMD_X86
    if (cpu_quant_act_bits(0) != 8 || cpu_simd() != &cpu_simd_avx512 || !cpu_has_avx512bf16()) return NULL;
    for (int i = 0; i < k; i++)
        if (w[i]->dtype != DT_BF16 || w[i]->cols != w[0]->cols) return NULL;
    size_t need = (size_t)n * w[0]->cols;
    if (need > xbf_cap) {
        uint16_t *nb = realloc(xbf_buf, need * sizeof(uint16_t));
        if (!nb) return NULL;
        xbf_buf = nb;
        xbf_cap = need;
    }
    cpu_round_bf16_avx512bf16(xbf_buf, x, need);
    return xbf_buf;
#else
    (void)w, (void)k, (void)x, (void)n;
    return NULL;
#endif
}

/* The number of slices a prefill product's output rows are cut into: the machine's physical
 * cores (cpu_num_cores, read once), whatever -t says. The BLAS's result for an output element
 * may depend on where the call's rows are cut (OpenBLAS 0.3.21 on an AMD Zen 3 host: with a cut
 * per thread, test_kernels' test_prefill_matmul_bit_identical_for_any_thread_count failed and
 * every prompt row of -t 2 differed from -t 1), so the cut may not depend on the thread count:
 * -t 1 and -t 2 then give the same bits (tests/test_decode_threads.sh). With the
 * default -t (the cores) it is one slice per thread, as before; fewer threads take several. */
static int prefill_slices(void)
{
    static _Atomic int slices;
    int p = slices;
    if (p == 0) {
        p = cpu_num_cores();
        if (p < 1) p = 1;
        slices = p;
    }
    return p;
}

/* Prefill: the output rows R = Σ rows are cut into prefill_slices() contiguous slices, each
 * thread takes a contiguous run of slices and runs the BLAS on its part of each matrix; the BLAS
 * itself is single-threaded (cpu_set_threads), so one thread pool serves both and none spins
 * while the other works. */
static void gemm_multi(float *const *y, const weight_t *const *w, int k, const float *x, int n)
{
    long long total = 0, work = 0;
    for (int i = 0; i < k; i++) {
        total += w[i]->rows;
        work += (long long)n * w[i]->rows * w[i]->cols;
    }
    const int P = prefill_slices();
    int nt = omp_in_parallel() || work < (1 << 20) ? 1 : omp_get_max_threads(), failed = 0;
    const uint16_t *xb = bf16_act(w, k, x, n);
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        for (long long sl = (long long)P * t / T; sl < (long long)P * (t + 1) / T; sl++) {
            long long g0 = total * sl / P, g1 = total * (sl + 1) / P, base = 0;
            for (int i = 0; i < k; i++) {
                long long a = g0 > base ? g0 : base, b = g1 < base + w[i]->rows ? g1 : base + w[i]->rows;
#ifdef LLM_SIMD_X86
                if (xb && a < b)
                    cpu_gemm_nt_bf16_avx512bf16(y[i], w[i]->rows, xb, n, w[i]->data, (int)(a - base), (int)(b - base), w[i]->cols);
                else
#endif
                if (a < b && matmul_rows(y[i], x, w[i], n, (int)(a - base), (int)(b - base), t) != 0) failed = 1;
                base += w[i]->rows;
            }
        }
    }
    if (failed)   /* no memory for a widening buffer: one row of x at a time, no buffer */
        for (int i = 0; i < k; i++)
            for (int r = 0; r < n; r++) matvec(y[i] + (size_t)r * w[i]->rows, x + (size_t)r * w[i]->cols, w[i]);
}

/* matmul_next_hint's hint for the next product on this thread (quant_gemm.c's decode takes it;
 * the F32/F16/BF16 paths below drop it: they read ahead by their own claims). */
static _Thread_local matmul_hint t_hint;
static _Thread_local int t_hint_set;

void matmul_next_hint(const weight_t *const *w, int k)
{
    t_hint.k = k < 0 ? 0 : k > 4 ? 4 : k;
    for (int i = 0; i < t_hint.k; i++) t_hint.w[i] = w[i];
    for (int t = 0; t < MM_HINT_THREADS; t++) t_hint.n[t] = 0;
    t_hint_set = 1;
}

void matmul_next_hint_bytes(int t, const void *p, size_t bytes)
{
    if (!t_hint_set || t < 1 || t >= MM_HINT_THREADS || t_hint.n[t] >= MM_HINT_SPANS || !p || !bytes) return;
    t_hint.p[t][t_hint.n[t]] = p;
    t_hint.len[t][t_hint.n[t]++] = bytes;
}

const matmul_hint *matmul_take_hint(void)
{
    const int set = t_hint_set;
    t_hint_set = 0;
    return set ? &t_hint : NULL;
}

void matmul(float *y, const float *x, const weight_t *w, int n)
{
    if (dtype_is_quant(w->dtype)) {
        qmatmul_multi(&y, &w, 1, x, n);
        return;
    }
    t_hint_set = 0;
    if (n == 1) matvec(y, x, w);
    else gemm_multi(&y, &w, 1, x, n);
}

void matmul_multi(float *const *y, const weight_t *const *w, int k, const float *x, int n)
{
    int nq = 0;
    for (int i = 0; i < k; i++) nq += dtype_is_quant(w[i]->dtype);
    if (nq == k) {   /* block formats: quant_gemm.c */
        qmatmul_multi(y, w, k, x, n);
        return;
    }
    t_hint_set = 0;
    if (nq > 0)   /* a mix: one matrix at a time */
        for (int i = 0; i < k; i++) matmul(y[i], x, w[i], n);
    else if (n == 1) matvec_multi(y, w, k, x);
    else gemm_multi(y, w, k, x, n);
}

void matmul_swiglu(float *gate, float *up, const weight_t *w_gate, const weight_t *w_up, const float *x, int n)
{
    int same = w_gate->rows == w_up->rows && w_gate->cols == w_up->cols;
    int qg = dtype_is_quant(w_gate->dtype), qu = dtype_is_quant(w_up->dtype);
    if (!qg || !qu) t_hint_set = 0;
    if (n == 1 && same && !qg && !qu) {
        float *y[2] = {gate, up};
        const weight_t *w[2] = {w_gate, w_up};
        matvec_multi_sw(y, w, 2, x, 1);
    } else if (n == 1 && same && qg && qu) {
        qmatvec_swiglu(gate, up, w_gate, w_up, x);
    } else {
        float *y[2] = {gate, up};
        const weight_t *w[2] = {w_gate, w_up};
        matmul_multi(y, w, 2, x, n);
        swiglu(gate, up, (size_t)n * w_gate->rows);
    }
}

void widen_row(float *out, const weight_t *w, int row)
{
    size_t cols = (size_t)w->cols;
    switch (w->dtype) {
    case DT_F32: {
        const float *src = (const float *)w->data + (size_t)row * cols;
        for (size_t i = 0; i < cols; i++) out[i] = src[i];
        break;
    }
    case DT_F16: cpu_simd()->widen_f16(out, (const uint16_t *)w->data + (size_t)row * cols, cols); break;
    case DT_BF16: cpu_simd()->widen_bf16(out, (const uint16_t *)w->data + (size_t)row * cols, cols); break;
    default:   /* block formats: ggml's dequantization of the one row */
        if (w->layout == WL_X16) {
            uint8_t blk[256];   /* one block (Q6_K: 210 bytes) */
            const int bk = dtype_block(w->dtype);
            for (int b = 0; b < w->cols / bk; b++) {
                x16_block(w->dtype, w->data, w->cols, row, b, blk);
                dequantize_row(w->dtype, blk, out + (size_t)bk * b, bk);
            }
            break;
        }
        dequantize_row(w->dtype, (const uint8_t *)w->data + (size_t)row * dtype_row_bytes(w->dtype, w->cols), out, w->cols);
        break;
    }
}
