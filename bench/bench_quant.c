/* bench_quant: speed of matmul on ggml block weights (kernels/cpu/quant*.c).
 *
 *   bench_quant [--threads 1,2] [--family NAME] [--act-bits 16|8] [--types Q4_1,Q8_0,...]
 *               [--no-cold] [--no-gemm] [--ns 128,512] [--time S] [--layout auto|rows] [--pf SPEC]
 *
 * --types may name F32, F16 and BF16 too (decode only): the same shapes through the float
 * kernels (kernels/cpu/simd_*), the per-byte reference of issue 14's "not slower than the F32
 * path per byte read".
 * Decode (n = 1) matrix-vector: GB/s of weights streamed (weight bytes / time per call) at the
 * SmolLM2-135M and Qwen2.5-0.5B shapes (rows x cols: 576x576, 1536x576, 576x1536, 896x4864,
 * 4864x896; a type runs the shapes whose cols its block divides), "hot" (the same matrix again
 * and again: from the caches when it fits) and "cold" (a rotation of copies of >= 768 MiB back
 * to back in transparent huge pages, so the weights come from DRAM as in a real decode).
 * Prefill (n = 128, 512): GFLOP/s (2·rows·cols·n / time) of the quantized GEMM as matmul runs it
 * (packed panels where the family has them), of the register-tile kernels alone (cpu_qgemm_mode
 * 2) and of the alternative, dequantize a tile of weight rows to f32 + cblas_sgemm (mode 1).
 * --layout: auto (the default) runs the weights as llm-run keeps them resident, the 4- and 5-bit
 * types interleaved 16 rows at a time where the family has that decode kernel (WL_X16,
 * kernels.h; the "layout" column says which); rows keeps ggml's layout for every type.
 * --pf sets the decode kernels' software prefetch distances (kernels/cpu/prefetch.h): a set's name
 * (intel, amd) and/or field=bytes pairs, e.g. --pf amd,x16=2048 (default: the set dispatch.c
 * chose for this CPU; the header line says which).
 * --family pins the quantized-kernel table (scalar, avx2, avxvnni, avx512, avx512vnni; default:
 * the one dispatch.c picks); --act-bits the activations (16, the default, or 8: llama.cpp's). Each figure: the best of 10 runs of --time / 5 seconds (default
 * 0.15 s in all); 1-thread runs are timed in the thread's CPU time (the machine may be shared),
 * runs on more threads in wall-clock time: on a machine busy with other jobs those collapse
 * whenever one thread is descheduled (every parallel region waits for it), so read them only
 * from a quiet machine. */
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"
#include "kernels/kernels.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* 1 thread: the calling thread's CPU time (it runs the whole matmul), so the figures hold on a
 * machine shared with other jobs; more threads: wall-clock time. */
static clockid_t g_clock = CLOCK_MONOTONIC;
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)(rnd() * (2.0 / 4294967296.0) - 1.0); }

/* random quant bits with f16 scales of moderate size; F32/F16/BF16: values in [-0.02, 0.02)
 * (no NaN or subnormal bit patterns, which would time differently) */
static uint8_t *rand_weights(dtype_t dt, int rows, int cols)
{
    size_t rb = dtype_row_bytes(dt, cols), bb = dtype_block_bytes(dt), n = rb * rows;
    uint8_t *w = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!w) return NULL;
    if (!dtype_is_quant(dt)) {
        for (size_t i = 0; i < (size_t)rows * cols; i++) {
            float v = frand() * 0.02f;
            if (dt == DT_F32) memcpy(w + 4 * i, &v, 4);
            else {
                uint16_t h = dt == DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
                memcpy(w + 2 * i, &h, 2);
            }
        }
        return w;
    }
    for (size_t i = 0; i < n; i++) w[i] = (uint8_t)rnd();
    for (size_t b = 0; b < n / bb; b++) {
        uint16_t s1 = f32_to_f16(frand() * 0.02f), s2 = f32_to_f16(frand() * 0.02f);
        uint8_t *p = w + b * bb;
        if (dt == DT_Q6_K) memcpy(p + 208, &s1, 2);
        else {
            memcpy(p, &s1, 2);
            if (dt == DT_Q4_1 || dt == DT_Q5_1 || dt == DT_Q4_K || dt == DT_Q5_K) memcpy(p + 2, &s2, 2);
        }
    }
    return w;
}

static double g_time = 0.15;

/* seconds per call of matmul(y, x, w[i % nw], n): the best of 10 runs of at least g_time / 5
 * seconds each (on a shared machine the best run is the one least disturbed) */
static double time_calls(float *y, const float *x, weight_t *w, int nw, int n)
{
    double best = 1e30;
    int i = 0;
    matmul(y, x, &w[0], n);   /* warm */
    for (int rep = 0; rep < 10; rep++) {
        long calls = 0;
        double t0 = now_s(), t;
        do {
            matmul(y, x, &w[i], n);
            i = i + 1 < nw ? i + 1 : 0;
            calls++;
        } while ((t = now_s() - t0) < g_time / 5);
        if (t / calls < best) best = t / calls;
    }
    return best;
}

static const int SHAPES[][2] = {{576, 576}, {1536, 576}, {576, 1536}, {896, 4864}, {4864, 896}};
#define N_SHAPES 5

int main(int argc, char **argv)
{
    int threads[8] = {1, 2}, nthr = 2, cold = 1, gemm = 1, ns[8] = {128, 512}, nns = 2, auto_layout = 1;
    dtype_t types[16] = {DT_Q4_1, DT_Q8_0, DT_Q4_K, DT_Q6_K, DT_Q5_0, DT_Q4_0, DT_Q5_1, DT_Q5_K};
    int ntypes = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            nthr = 0;
            for (char *s = strtok(argv[++i], ","); s && nthr < 8; s = strtok(NULL, ",")) threads[nthr++] = atoi(s);
        } else if (!strcmp(argv[i], "--ns") && i + 1 < argc) {
            nns = 0;
            for (char *s = strtok(argv[++i], ","); s && nns < 8; s = strtok(NULL, ",")) ns[nns++] = atoi(s);
        } else if (!strcmp(argv[i], "--types") && i + 1 < argc) {
            ntypes = 0;
            for (char *s = strtok(argv[++i], ","); s && ntypes < 16; s = strtok(NULL, ",")) {
                int dt = dtype_from_name(s);
                if (dt < 0 || (!dtype_is_quant((dtype_t)dt) && dt != DT_F32 && dt != DT_F16 && dt != DT_BF16)) {
                    fprintf(stderr, "bench_quant: unknown weight type %s\n", s);
                    return 2;
                }
                types[ntypes++] = (dtype_t)dt;
            }
        } else if (!strcmp(argv[i], "--family") && i + 1 < argc) {
            if (cpu_quant_use(argv[++i]) != 0) {
                fprintf(stderr, "bench_quant: family %s not available here\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--act-bits") && i + 1 < argc) {
            if (cpu_quant_act_bits(atoi(argv[++i])) < 0) {
                fprintf(stderr, "bench_quant: --act-bits 8 or 16\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--time") && i + 1 < argc) g_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-cold")) cold = 0;
        else if (!strcmp(argv[i], "--no-gemm")) gemm = 0;
        else if (!strcmp(argv[i], "--layout") && i + 1 < argc) auto_layout = strcmp(argv[++i], "rows") != 0;
        else if (!strcmp(argv[i], "--pf") && i + 1 < argc) {
            char err[200];
            if (cpu_prefetch_set(argv[++i], err, sizeof err) != 0) {
                fprintf(stderr, "bench_quant: %s\n", err);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_quant [--threads 1,2] [--family NAME] [--act-bits 16|8] [--types Q4_1,...] [--no-cold] [--no-gemm] [--ns 128,512] [--time S] [--layout auto|rows] [--pf SPEC]\n");
            return 2;
        }
    }
    char pf[200];
    cpu_prefetch_describe(pf, sizeof pf);
    printf("quantized kernels: %s, %d-bit activations (SIMD family %s), %d cores; 1T: thread CPU time, more: wall clock\n"
           "decode prefetch distances (bytes) %s\n\n",
           cpu_quant()->name, cpu_quant()->bits, cpu_simd_name(), cpu_num_cores(), pf);

    float *x = malloc(sizeof(float) * 512 * 4864), *y = malloc(sizeof(float) * 512 * 4864);
    if (!x || !y) return 1;
    for (int i = 0; i < 512 * 4864; i++) x[i] = frand();

    printf("## Decode matvec (n = 1): GB/s of weights (hot: one matrix, cached when it fits | cold: from DRAM)\n\n");
    printf("| type | rows x cols | MiB |");
    for (int t = 0; t < nthr; t++) printf(" hot %dT | cold %dT |", threads[t], threads[t]);
    printf("\n|---|---|---|");
    for (int t = 0; t < nthr; t++) printf("---|---|");
    printf("\n");
    for (int ti = 0; ti < ntypes; ti++) {
        dtype_t dt = types[ti];
        for (int s = 0; s < N_SHAPES; s++) {
            int rows = SHAPES[s][0], cols = SHAPES[s][1];
            if (cols % dtype_block(dt)) continue;
            size_t bytes = dtype_row_bytes(dt, cols) * rows;
            /* copy 0: the hot matrix; copies 1..: back to back in one region of transparent huge
             * pages (as llm-run keeps resident weights), 64-byte aligned */
            size_t stride = (bytes + 63) & ~(size_t)63;
            int ncopies = cold ? (int)((768u << 20) / stride) + 2 : 1;
            weight_t *w = calloc(ncopies, sizeof *w);
            uint8_t *base = rand_weights(dt, rows, cols), *region = NULL;
            size_t region_bytes = stride * (size_t)(ncopies - 1);
            if (!w || !base) return 1;
            if (cold) {
                region = mmap(NULL, region_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (region == MAP_FAILED) return 1;
                madvise(region, region_bytes, MADV_HUGEPAGE);
            }
            w[0] = (weight_t){dt, base, rows, cols, WL_ROWS};
            if (auto_layout && weight_x16_wanted(&w[0])) {   /* as model_make_resident does */
                uint8_t *pk = malloc(bytes);
                if (!pk) return 1;
                weight_x16_pack(dt, base, pk, rows, cols);
                memcpy(base, pk, bytes);
                free(pk);
                w[0].layout = WL_X16;
            }
            for (int c = 1; c < ncopies; c++) {
                uint8_t *p = region + stride * (size_t)(c - 1);
                memcpy(p, base, bytes);
                w[c] = (weight_t){dt, p, rows, cols, w[0].layout};
            }
            printf("| %s%s | %dx%d | %.2f |", dtype_name(dt), w[0].layout == WL_X16 ? " x16" : "", rows, cols, bytes / 1048576.0);
            for (int t = 0; t < nthr; t++) {
                cpu_set_threads(threads[t]);
                g_clock = threads[t] == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
                double th = time_calls(y, x, w, 1, 1);
                printf(" %.1f |", bytes / th / 1e9);
                if (cold) {
                    double tc = time_calls(y, x, w + 1, ncopies - 1, 1);
                    printf(" %.1f |", bytes / tc / 1e9);
                } else printf(" - |");
                fflush(stdout);
            }
            printf("\n");
            free(base);
            if (region) munmap(region, region_bytes);
            free(w);
        }
    }

    if (gemm) {
        printf("\n## Prefill GEMM: GFLOP/s (2·rows·cols·n / time): quantized GEMM (default) | register tiles only | dequantize + sgemm\n\n");
        printf("| type | rows x cols | n |");
        for (int t = 0; t < nthr; t++) printf(" qgemm %dT | tiles %dT | deq+sgemm %dT |", threads[t], threads[t], threads[t]);
        printf("\n|---|---|---|");
        for (int t = 0; t < nthr; t++) printf("---|---|---|");
        printf("\n");
        for (int ti = 0; ti < ntypes; ti++) {
            if (!dtype_is_quant(types[ti])) continue;   /* F32/F16/BF16 prefill is the BLAS's */
            dtype_t dt = types[ti];
            for (int s = 0; s < N_SHAPES; s++) {
                int rows = SHAPES[s][0], cols = SHAPES[s][1];
                if (cols % dtype_block(dt)) continue;
                uint8_t *p = rand_weights(dt, rows, cols);
                if (!p) return 1;
                weight_t w = {dt, p, rows, cols, WL_ROWS};
                if (auto_layout && weight_x16_wanted(&w)) {
                    size_t bytes = dtype_row_bytes(dt, cols) * rows;
                    uint8_t *pk = malloc(bytes);
                    if (!pk) return 1;
                    weight_x16_pack(dt, p, pk, rows, cols);
                    memcpy(p, pk, bytes);
                    free(pk);
                    w.layout = WL_X16;
                }
                for (int ni = 0; ni < nns; ni++) {
                    int n = ns[ni];
                    double flop = 2.0 * rows * cols * n;
                    printf("| %s%s | %dx%d | %d |", dtype_name(dt), w.layout == WL_X16 ? " x16" : "", rows, cols, n);
                    for (int t = 0; t < nthr; t++) {
                        cpu_set_threads(threads[t]);
                        g_clock = threads[t] == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
                        cpu_qgemm_mode = 0;
                        double tq = time_calls(y, x, &w, 1, n);
                        cpu_qgemm_mode = 2;
                        double tt = time_calls(y, x, &w, 1, n);
                        cpu_qgemm_mode = 1;
                        double ts = time_calls(y, x, &w, 1, n);
                        cpu_qgemm_mode = 0;
                        printf(" %.1f | %.1f | %.1f |", flop / tq / 1e9, flop / tt / 1e9, flop / ts / 1e9);
                        fflush(stdout);
                    }
                    printf("\n");
                }
                free(p);
            }
        }
    }
    free(x);
    free(y);
    return 0;
}
