/* matvec_seq: how close the decode's matrix-vector products come to the memory bandwidth when
 * nothing else runs between them (issue 17's "decode ÷ bandwidth" row, taken apart).
 *
 *   matvec_seq MODEL_DIR [--dtype f32|f16|bf16] [--threads N] [--reps R] [--resident 0|1]
 *
 * Loads the model (converted to --dtype, default f16; then, as llm-run does, copied into one
 * huge-page arena by model_make_resident unless --resident 0) and times, best of R (default 20):
 *   seq   every layer's decode products back to back, as model/forward.c calls them (q/k/v in
 *         one call, o, gate/up + SwiGLU, down: 4 parallel regions a layer), nothing in between;
 *   lm    the LM head alone (one region over the largest matrix);
 *   read  a streaming read of 1 GiB in transparent huge pages on the same threads (the floor).
 * Prints GB/s of weights for each and their ratio to `read`. The difference between `seq` and
 * `lm` is the cost of many short regions (their starts and joins); the difference between `seq`
 * and a real decode step (bench/decode_ab.py) is everything else a step does (attention, norms,
 * RoPE, the cache, sampling). Repetitions run back to back with nothing flushed between them, so
 * a last-level cache larger than the model (480 MiB on one Sapphire Rapids VM here, where `lm`
 * then read faster than `read`) serves part of the weights: there the ratios are upper bounds, and
 * bench_cpu (a streaming pass over 1 GiB before every step) is the figure to trust. A busy host
 * moves all three: run it under
 * `OMP_WAIT_POLICY=active chrt -f 50` (real-time priority) or on an idle machine. */
#include "kernels/kernels.h"
#include "model/model.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* one pass over buf [n] floats on the OpenMP threads; returns seconds */
static double read_pass(const float *buf, size_t n)
{
    double t0 = now_s(), sink = 0;
#pragma omp parallel reduction(+ : sink)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        size_t a = n * t / T / 16 * 16, b = n * (t + 1) / T / 16 * 16;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = a; i < b; i += 16) {
            s0 += buf[i];
            s1 += buf[i + 4];
            s2 += buf[i + 8];
            s3 += buf[i + 12];
        }
        sink += s0 + s1 + s2 + s3;
    }
    if (sink == 12345.0) puts("");
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: matvec_seq MODEL_DIR [--dtype f32|f16|bf16] [--threads N] [--reps R]\n");
        return 2;
    }
    dtype_t dt = DT_F16;
    int threads = 0, reps = 20, resident = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dtype")) dt = !strcmp(argv[i + 1], "f32") ? DT_F32 : !strcmp(argv[i + 1], "bf16") ? DT_BF16 : DT_F16;
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--resident")) resident = atoi(argv[i + 1]);
    }
    if (threads > 0) omp_set_num_threads(threads);
    model_weights m;
    char err[256];
    if (model_load(argv[1], &m, err, sizeof err) || model_convert(&m, dt, err, sizeof err) ||
        (resident && model_make_resident(&m, err, sizeof err))) {
        fprintf(stderr, "matvec_seq: %s\n", err);
        return 1;
    }
    const model_config *c = &m.cfg;
    size_t wide = (size_t)(c->intermediate_size > c->hidden_size ? c->intermediate_size : c->hidden_size) * 4;
    float *x = calloc(wide, 4), *a = calloc(wide, 4), *b = calloc(wide, 4), *d = calloc(wide, 4), *e = calloc(wide, 4);
    float *logits = calloc((size_t)c->vocab_size, 4);
    size_t bw_n = (size_t)1 << 28;   /* 1 GiB of floats */
    float *buf = NULL;
    if (!x || !a || !b || !d || !e || !logits || posix_memalign((void **)&buf, (size_t)2 << 20, bw_n * 4)) {
        fprintf(stderr, "matvec_seq: out of memory\n");
        return 1;
    }
    madvise(buf, bw_n * 4, MADV_HUGEPAGE);
    for (size_t i = 0; i < bw_n; i++) buf[i] = (float)(i & 7);
    for (size_t i = 0; i < wide; i++) x[i] = 0.01f * (float)(i % 7);
    double best_seq = 1e9, best_lm = 1e9, best_rd = 1e9;
    size_t seq_bytes = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        seq_bytes = 0;
        for (int l = 0; l < c->n_layers; l++) {
            const layer_weights *lw = &m.layers[l];
            float *qkv[3] = {a, b, d};
            const weight_t *w3[3] = {&lw->wq, &lw->wk, &lw->wv};
            matmul_multi(qkv, w3, 3, x, 1);
            matmul(e, x, &lw->wo, 1);
            matmul_swiglu(a, b, &lw->w_gate, &lw->w_up, x, 1);
            matmul(d, a, &lw->w_down, 1);
            seq_bytes += weight_bytes(&lw->wq) + weight_bytes(&lw->wk) + weight_bytes(&lw->wv) + weight_bytes(&lw->wo) +
                         weight_bytes(&lw->w_gate) + weight_bytes(&lw->w_up) + weight_bytes(&lw->w_down);
        }
        double t1 = now_s();
        matmul(logits, x, &m.lm_head, 1);
        double t2 = now_s(), rd = read_pass(buf, bw_n);
        if (t1 - t0 < best_seq) best_seq = t1 - t0;
        if (t2 - t1 < best_lm) best_lm = t2 - t1;
        if (rd < best_rd) best_rd = rd;
    }
    double g_seq = seq_bytes / best_seq / 1e9, g_lm = weight_bytes(&m.lm_head) / best_lm / 1e9, g_rd = bw_n * 4.0 / best_rd / 1e9;
    printf("%s %s%s, %d threads, best of %d: read %.2f GB/s | seq %.1f MB in %d regions %.2f GB/s (%.0f%%) | lm %.1f MB %.2f GB/s (%.0f%%)\n",
           argv[1], dtype_name(dt), resident ? "" : " (not resident)", omp_get_max_threads(), reps, g_rd, seq_bytes / 1e6, 4 * c->n_layers, g_seq,
           100 * g_seq / g_rd, weight_bytes(&m.lm_head) / 1e6, g_lm, 100 * g_lm / g_rd);
    free(buf);
    free(x), free(a), free(b), free(d), free(e), free(logits);
    model_free(&m);
    return 0;
}
