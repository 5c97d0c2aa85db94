/* gemm_nt: the prefill GEMM of kernels/cpu/gemm_avx512.c (gemm_nt_f32) against OpenBLAS's
 * cblas_sgemm on the same product, one thread, in GFLOPS (issue 17; the figures quoted in
 * gemm_avx512.c, matmul.c and bench/cpu.md session 12 come from this program).
 *
 *   build/bench/gemm_nt N ROWS K LAYERS [REPS]
 *
 * y[N][ROWS] = x[N][K] · W[ROWS][K]ᵀ for LAYERS distinct weight matrices one after the other
 * (12 layers of the 110M shape's 1152x768 = 42 MB: the weights come from DRAM; LAYERS 1: from
 * the caches), best of REPS (default 9) passes, interleaved: ours, then the BLAS. The 110M
 * shape's matrices at 2 threads are half their rows per thread: 1152 x 768 (q, k, v),
 * 2048 x 768 (gate, up), 384 x 2048 (down). Run OpenBLAS single-threaded and with the right
 * kernels: OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX (llm-run sets the core type
 * itself). Also prints max |ours - BLAS| / max |y| of the last matrix. */
#include "kernels/cpu/simd.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: gemm_nt N ROWS K LAYERS [REPS]\n");
        return 2;
    }
    int n = atoi(argv[1]), m = atoi(argv[2]), K = atoi(argv[3]), L = atoi(argv[4]);
    int reps = argc > 5 ? atoi(argv[5]) : 9;
    if (n < 1 || m < 1 || K < 1 || L < 1 || reps < 1) {
        fprintf(stderr, "gemm_nt: N, ROWS, K, LAYERS and REPS must be positive\n");
        return 2;
    }
    const cpu_simd_ops *s = cpu_simd_find("avx512");
    if (!s || !s->gemm_nt_f32) {
        fprintf(stderr, "gemm_nt: this CPU has no AVX-512 (gemm_nt_f32 is AVX-512 only)\n");
        return 1;
    }
    size_t per = (size_t)m * K, tot = per * L;
    /* 64-byte aligned, as the weight arena (model_make_resident) and the engine buffers */
    float *W = aligned_alloc(64, (tot * sizeof(float) + 63) / 64 * 64);
    float *x = aligned_alloc(64, ((size_t)n * K * sizeof(float) + 63) / 64 * 64);
    float *y = malloc((size_t)n * m * sizeof(float)), *yb = malloc((size_t)n * m * sizeof(float));
    if (!W || !x || !y || !yb) {
        fprintf(stderr, "gemm_nt: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < tot; i++) W[i] = (float)((i * 2654435761u) % 1000) * 0.001f - 0.5f;
    for (size_t i = 0; i < (size_t)n * K; i++) x[i] = (float)((i * 40503u) % 1000) * 0.001f - 0.5f;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; r++)
        for (int which = 0; which < 2; which++) {
            double t0 = now();
            for (int l = 0; l < L; l++) {
                const float *w = W + per * l;
                if (which == 0) s->gemm_nt_f32(y, m, x, n, w, 0, m, K);
                else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, K, 1.0f, x, K, w, K, 0.0f, yb, m);
            }
            double t = now() - t0;
            if (t < best[which]) best[which] = t;
        }
    double flops = 2.0 * n * (double)tot, maxd = 0, maxy = 0;
    for (size_t i = 0; i < (size_t)n * m; i++) {
        double d = fabs((double)y[i] - yb[i]);
        if (d > maxd) maxd = d;
        if (fabs(yb[i]) > maxy) maxy = fabs(yb[i]);
    }
    printf("n=%d rows=%d K=%d layers=%d: gemm_nt %.1f GFLOPS, OpenBLAS %.1f GFLOPS (best of %d); "
           "max|diff|/max|y| %.2g\n",
           n, m, K, L, flops / best[0] / 1e9, flops / best[1] / 1e9, reps, maxy > 0 ? maxd / maxy : maxd);
    free(W), free(x), free(y), free(yb);
    return 0;
}
