/* bench_cpu: CPU speed of llm-run's engine (issue 6), printed as the Markdown tables of
 * bench/cpu.md (bench/run_bench.sh writes the file around them).
 *
 *   bench_cpu [--threads N] [--reps R] [--steps D] [--bw-mib M] [--mapped] [--decode-only] [--act-bits 8|16] NAME=DIR[:f32|f16|bf16|auto] ...
 *
 * --decode-only: only the decode row of context 64, policy full (and its ÷ bandwidth target):
 * what bench/decode_ab.sh compares between builds.
 * --act-bits: the activations of the block-format matmuls (cpu_quant_act_bits: 16, the default,
 * or 8, llama.cpp's; bench/act_bits_hf.sh says what 8 costs against transformers).
 *
 * Weights are made resident in huge-page memory as llm-run does (model_make_resident) unless
 * --mapped; the bandwidth buffer is allocated the same way.
 *
 * For each model (weights converted with model_convert unless auto):
 *   - prefill tok/s for 128, 512 and 1000-token prompts (one engine_prefill call over the whole
 *     prompt, best of R);
 *   - decode tok/s at context 64 and 900 (prefill that many tokens, then D decode steps; tok/s =
 *     1 / median step time, which a busy machine's preemptions move least) for full, buzz 0.4,
 *     h2o 0.4, and h2o/buzz at budget 1 (they evict nothing: the policy overhead); the five
 *     sequences of a context decode in lockstep, one step of each in turn;
 *   - decode bytes per token: the weights one step reads (model_weight_bytes) + the live K and V
 *     the attention reads (in llm-run's default --kv-dtype for the weights: f32 for F32, f16
 *     otherwise; before 2026-11-27 every row used an f32 cache), and that × tok/s ÷ the memory read bandwidth measured here (a
 *     multi-threaded streaming read over a buffer much larger than the last-level cache, one
 *     pass before every round of decode steps; the median of those passes, so on a busy
 *     machine both sides of the ratio see the same conditions).
 * A quantized model given beside its own F32 conversion (NAME=FILE:auto NAME=FILE:f32) gets
 * issue 14's per-byte row twice: each model's decode bytes/s ÷ the bandwidth pass beside it, and
 * the two decoding in lockstep (paired_ratio × the bytes ratio; no pass in between, so on a
 * shared machine the steadier one, except for a model near the L3's size, whose own reuse of
 * the L3 the F32 steps flush).
 * Prompts are fixed pseudo-random token ids (no tokenizer). Lengths beyond the model's
 * context (max_position_embeddings) are shown as n/a. Exit status 0, or 1 with one line on
 * stderr when a model cannot be loaded. */
#include "cli/cli.h"
#include "eviction/eviction.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/kernels.h"
#include "model/model.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ memory bandwidth */

/* Sum of a[0..n) (n a multiple of 32): the streaming read, with AVX2 loads and the software
 * prefetch 3 KiB ahead that the 16-bit decode kernels use, so the bandwidth is the memory's,
 * not the loop's (without the prefetch the 16-bit kernels read faster than this loop on a
 * Sapphire Rapids VM: 17-19 vs 16 GB/s over 1 GiB on one thread). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
__attribute__((target("avx2"))) static float read_sum_avx2(const float *a, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 32) {
        if (i + 32 + 768 <= n) {
            _mm_prefetch((const char *)(a + i + 768), _MM_HINT_T0);
            _mm_prefetch((const char *)(a + i + 784), _MM_HINT_T0);
        }
        s0 = _mm256_add_ps(s0, _mm256_load_ps(a + i));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(a + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(a + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(a + i + 24));
    }
    float out[8];
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
#endif

static float read_sum(const float *a, size_t n)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx2")) return read_sum_avx2(a, n);
#endif
    float s[8] = {0};
    for (size_t i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++) s[j] += a[i + j];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static float *g_bw_buf;
static size_t g_bw_n;

/* Allocates and touches the bandwidth buffer: mib MiB, in transparent huge pages as the
 * weights are (model_make_resident). */
static int bw_init(size_t mib)
{
    g_bw_n = mib * (1u << 20) / sizeof(float) / 32 * 32;
    if (posix_memalign((void **)&g_bw_buf, (size_t)2 << 20, g_bw_n * sizeof(float)) != 0) return -1;
#ifdef MADV_HUGEPAGE
    madvise(g_bw_buf, g_bw_n * sizeof(float), MADV_HUGEPAGE);
#endif
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < g_bw_n; i++) g_bw_buf[i] = (float)(i & 7);   /* touch every page from its reader */
    return 0;
}

static volatile float g_sink;

/* One multi-threaded streaming read of the buffer (static contiguous chunks, one per thread,
 * as the matvec kernels read their rows). Bytes per second. */
static double bw_pass(void)
{
    double t0 = now_s();
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        size_t a = g_bw_n / 32 * t / k * 32, b = g_bw_n / 32 * (t + 1) / k * 32;
        total += read_sum(g_bw_buf + a, b - a);
    }
    double dt = now_s() - t0;
    g_sink += total;
    return (double)g_bw_n * sizeof(float) / dt;
}

/* ---------------------------------------------------------------------------- runs */

typedef struct {
    const char *label;    /* e.g. "stories110M-syn" */
    const char *dir;
    int dtype;            /* -1 auto */
    model_weights mw;
    size_t weight_bytes;  /* per decode step */
} bench_model;

static int g_threads, g_reps = 3, g_steps = 48, g_mapped = 0;
static int g_decode_only = 0;   /* --decode-only: context 64, policy full, no prefill rows */

static void fill_tokens(int *tok, int n, int vocab)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = 3 + (int)((s >> 33) % (uint64_t)(vocab - 3));
    }
    tok[0] = 1;
}

typedef struct {
    double decode_tps;    /* 1 / median decode step */
    double kv_bytes;      /* mean K+V bytes the attention read per decode step */
    long long evictions;
    int ok;
} run_result;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One sequence: its cache, engine and timings. */
typedef struct {
    kv_cache kv;
    engine e;
    int *tok;
    double *dt;
    double kv_bytes;
    int n_prompt, ok;
} run_state;

static void run_free(run_state *st)
{
    engine_free(&st->e);
    kv_free(&st->kv);
    free(st->tok);
    free(st->dt);
    memset(st, 0, sizeof *st);
}

/* Sets up a cache for policy/budget sized for n_prompt + steps and prefills n_prompt tokens;
 * returns the prefill tok/s (0 on failure, with a line on stderr). */
static double run_prefill(run_state *st, bench_model *bm, const char *policy, double budget, int n_prompt, int steps)
{
    memset(st, 0, sizeof *st);
    const model_config *c = &bm->mw.cfg;
    char err[LLM_ERR_LEN];
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = budget;
    pp.kv_dtype = (int)model_kv_dtype_default(&bm->mw);   /* as llm-run: f16 for 16-bit and quantized weights */
    const policy_ops *ops = policy_find(policy);
    st->n_prompt = n_prompt;
    st->tok = malloc((size_t)(n_prompt + steps + 1) * sizeof *st->tok);
    st->dt = malloc((size_t)(steps + 1) * sizeof *st->dt);
    if (!st->tok || !st->dt || !ops) return 0;
    fill_tokens(st->tok, n_prompt + steps + 1, c->vocab_size);
    if (kv_init(&st->kv, ops, &pp, c->n_layers, c->n_kv_heads, c->n_heads, c->head_dim, n_prompt, steps + 1,
                err, sizeof err) != 0 ||
        engine_init(&st->e, &bm->mw, &st->kv, n_prompt, g_threads, err, sizeof err) != 0) {
        fprintf(stderr, "bench_cpu: %s %s %g: %s\n", bm->label, policy, budget, err);
        return 0;
    }
    double t0 = now_s();
    if (engine_prefill(&st->e, st->tok, n_prompt, 0, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "bench_cpu: %s: %s\n", bm->label, err);
        return 0;
    }
    st->ok = 1;
    return n_prompt / (now_s() - t0);
}

/* Decode step i of st: records its time and the K/V bytes its attention read. */
static int run_step(run_state *st, bench_model *bm, int i)
{
    const model_config *c = &bm->mw.cfg;
    char err[LLM_ERR_LEN];
    double t1 = now_s();
    if (engine_decode(&st->e, st->tok[st->n_prompt + i], st->n_prompt + i, err, sizeof err) != 0) {
        fprintf(stderr, "bench_cpu: %s: %s\n", bm->label, err);
        st->ok = 0;
        return -1;
    }
    st->dt[i] = now_s() - t1;
    long long live = 0;   /* slots the step attended over (after its eviction: ±1 per head) */
    for (int l = 0; l < c->n_layers; l++)
        for (int g = 0; g < c->n_kv_heads; g++) live += kv_len(&st->kv, l, g);
    st->kv_bytes += (double)live * (kv_bytes_per_token(&st->kv) / (size_t)(c->n_layers * c->n_kv_heads));
    return 0;
}

static run_result run_result_of(run_state *st, int steps)
{
    run_result r = {0};
    if (!st->ok) return r;
    qsort(st->dt, (size_t)steps, sizeof *st->dt, cmp_double);
    double med = steps % 2 ? st->dt[steps / 2] : 0.5 * (st->dt[steps / 2 - 1] + st->dt[steps / 2]);
    r.decode_tps = 1.0 / med;
    r.kv_bytes = st->kv_bytes / steps;
    r.evictions = st->kv.evictions;
    r.ok = 1;
    return r;
}

/* Decode tok/s of a ÷ that of b (policy full, context ctx), the two in lockstep with
 * alternating order; 0 when either fails. */
static double paired_ratio(bench_model *a, bench_model *b, int ctx)
{
    run_state sa, sb;
    double x = 0;
    run_prefill(&sa, a, "full", 1.0, ctx, g_steps);
    run_prefill(&sb, b, "full", 1.0, ctx, g_steps);
    for (int i = 0; i < g_steps && sa.ok && sb.ok; i++) {
        if (i % 2) {
            run_step(&sa, a, i);
            run_step(&sb, b, i);
        } else {
            run_step(&sb, b, i);
            run_step(&sa, a, i);
        }
    }
    if (sa.ok && sb.ok) x = run_result_of(&sa, g_steps).decode_tps / run_result_of(&sb, g_steps).decode_tps;
    run_free(&sa);
    run_free(&sb);
    return x;
}

static const int PREFILL_LENS[] = {128, 512, 1000};
static const int DECODE_CTX[] = {64, 900};
static const struct { const char *policy; double budget; } DECODE_POL[] = {
    {"full", 1.0}, {"buzz", 0.4}, {"h2o", 0.4}, {"buzz", 1.0}, {"h2o", 1.0},
};
#define N_PL (int)(sizeof PREFILL_LENS / sizeof PREFILL_LENS[0])
#define N_DC (int)(sizeof DECODE_CTX / sizeof DECODE_CTX[0])
#define N_DP (int)(sizeof DECODE_POL / sizeof DECODE_POL[0])

typedef struct {
    double prefill[N_PL];
    run_result dec[N_DC][N_DP];
    double bw[N_DC];      /* median bandwidth of the passes in lockstep with that context's decode */
} model_result;

static void print_na(int ctx) { printf(" n/a (context %d) |", ctx); }

int main(int argc, char **argv)
{
    /* the runtime settings llm-run gives itself (cli/runtime.c: the OpenMP wait, OpenBLAS's
     * core type), so the benchmark measures what llm-run runs */
    cli_reexec_with_runtime_settings(argv);
    g_threads = cpu_num_cores();
    size_t bw_mib = 1024;
    int bw_only = 0;
    bench_model models[8];
    int n_models = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) g_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) g_steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bw-mib") && i + 1 < argc) bw_mib = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--mapped")) g_mapped = 1;   /* weights left in the file mapping */
        else if (!strcmp(argv[i], "--bw-only")) bw_only = 1;   /* one bandwidth figure, then exit */
        else if (!strcmp(argv[i], "--decode-only")) g_decode_only = 1;
        else if (!strcmp(argv[i], "--act-bits") && i + 1 < argc) {
            int bits = atoi(argv[++i]);
            if ((bits != 8 && bits != 16) || cpu_quant_act_bits(bits) != bits) {
                fprintf(stderr, "bench_cpu: --act-bits: expected 8 or 16, got '%s'\n", argv[i]);
                return 2;
            }
        }
        else if (strchr(argv[i], '=') && n_models < 8) {
            bench_model *bm = &models[n_models++];
            memset(bm, 0, sizeof *bm);
            char *spec = argv[i], *eq = strchr(spec, '='), *colon = strrchr(spec, ':');
            *eq = 0;
            bm->label = spec;
            bm->dir = eq + 1;
            bm->dtype = -1;
            if (colon && colon > eq) {
                *colon = 0;
                const char *d = colon + 1;
                bm->dtype = !strcmp(d, "f32") ? DT_F32 : !strcmp(d, "f16") ? DT_F16 : !strcmp(d, "bf16") ? DT_BF16 : -1;
            }
        } else {
            fprintf(stderr, "usage: bench_cpu [--threads N] [--reps R] [--steps D] [--bw-mib M] [--mapped] [--decode-only] [--act-bits 8|16] NAME=DIR[:f32|f16|bf16|auto] ...\n");
            return 2;
        }
    }
    if (bw_only && g_threads >= 1) {
        /* bench/vs_llamacpp.py: the streaming-read bandwidth between its rounds, best of 3 */
        cpu_set_threads(g_threads);
        if (bw_init(bw_mib) != 0) return 1;
        double best = 0;
        for (int rep = 0; rep < 3; rep++) {
            double b = bw_pass();
            if (b > best) best = b;
        }
        printf("%.3f\n", best / 1e9);   /* GB/s */
        return 0;
    }
    if (g_threads < 1 || g_reps < 1 || g_steps < 2 || n_models == 0) {
        fprintf(stderr, "bench_cpu: need threads >= 1, reps >= 1, steps >= 2 and at least one model\n");
        return 2;
    }
    cpu_set_threads(g_threads);
    if (bw_init(bw_mib) != 0) {
        fprintf(stderr, "bench_cpu: out of memory for the %zu MiB bandwidth buffer\n", bw_mib);
        return 1;
    }
    double bw_best = 0;
    for (int rep = 0; rep < 7; rep++) {
        double b = bw_pass();
        if (b > bw_best) bw_best = b;
    }
    printf("Threads: %d (OpenMP; the BLAS single-threaded inside them), SIMD kernels: %s, decode prefetch distances: "
           "the %s set (kernels/cpu/prefetch.h), block-format activations: %d-bit, OMP_WAIT_POLICY=%s.\n\n", g_threads,
           cpu_simd_name(), cpu_prefetch_name(), cpu_quant_act_bits(0), getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "(unset)");

    static model_result res[8];
    double bw_lo = 0, bw_hi = 0;   /* range of the per-context medians */
    double *bw_round = malloc((size_t)g_steps * sizeof *bw_round);
    if (!bw_round) return 1;
    for (int mi = 0; mi < n_models; mi++) {
        bench_model *bm = &models[mi];
        char err[LLM_ERR_LEN];
        if (model_load(bm->dir, &bm->mw, err, sizeof err) != 0 ||
            (bm->dtype >= 0 && model_convert(&bm->mw, (dtype_t)bm->dtype, err, sizeof err) != 0) ||
            (!g_mapped && model_make_resident(&bm->mw, err, sizeof err) != 0)) {
            fprintf(stderr, "bench_cpu: %s\n", err);
            return 1;
        }
        bm->weight_bytes = model_weight_bytes(&bm->mw, 1);
        int ctx = bm->mw.cfg.max_position_embeddings;
        model_result *mr = &res[mi];
        for (int p = 0; p < N_PL; p++) {
            mr->prefill[p] = 0;
            if (PREFILL_LENS[p] > ctx || g_decode_only) continue;
            for (int rep = 0; rep < g_reps; rep++) {
                run_state st;
                double tps = run_prefill(&st, bm, "full", 1.0, PREFILL_LENS[p], 0);
                if (tps > mr->prefill[p]) mr->prefill[p] = tps;
                run_free(&st);
            }
        }
        /* the policies of one context decode in lockstep (step i of each in turn), so a busy
         * machine's slow spells hit them alike and their ratios hold */
        for (int d = 0; d < N_DC; d++) {
            run_state st[N_DP];
            memset(mr->dec[d], 0, sizeof mr->dec[d]);
            if (DECODE_CTX[d] + g_steps + 1 > ctx || (g_decode_only && d > 0)) continue;
            for (int p = 0; p < N_DP; p++)
                if (g_decode_only && p > 0) memset(&st[p], 0, sizeof st[p]);
                else
                run_prefill(&st[p], bm, DECODE_POL[p].policy, DECODE_POL[p].budget, DECODE_CTX[d], g_steps);
            for (int i = 0; i < g_steps; i++) {
                /* the bandwidth too, once per round, so the ratio's two sides share the
                 * machine's conditions (median over the rounds) */
                bw_round[i] = bm->weight_bytes > ((size_t)64 << 20) ? bw_pass() : bw_best;   /* a model that
                    fits in the cache is not flushed between its rounds */
                for (int k = 0; k < N_DP; k++) {
                    int p = i % 2 ? N_DP - 1 - k : k;   /* alternate the order: no policy always first */
                    if (st[p].ok) run_step(&st[p], bm, i);
                }
            }
            qsort(bw_round, (size_t)g_steps, sizeof *bw_round, cmp_double);
            mr->bw[d] = g_steps % 2 ? bw_round[g_steps / 2] : 0.5 * (bw_round[g_steps / 2 - 1] + bw_round[g_steps / 2]);
            if (mr->bw[d] > bw_hi) bw_hi = mr->bw[d];
            if (bw_lo == 0 || mr->bw[d] < bw_lo) bw_lo = mr->bw[d];
            for (int p = 0; p < N_DP; p++) {
                mr->dec[d][p] = run_result_of(&st[p], g_steps);
                run_free(&st[p]);
            }
        }
        fprintf(stderr, "bench_cpu: %s done\n", bm->label);
    }

    free(bw_round);
    printf("Memory read bandwidth (streaming read of %zu MiB in transparent huge pages, %d threads): "
           "**%.2f–%.2f GB/s**: one pass before every round of decode steps, the median per model "
           "and context (column `bandwidth`; the ratios divide by the one measured alongside); "
           "best of 7 passes at the start: %.2f GB/s.\n\n",
           bw_mib, g_threads, bw_lo / 1e9, bw_hi / 1e9, bw_best / 1e9);

    /* the tables */
    if (!g_decode_only) {
    printf("### Prefill (tok/s, whole prompt in one pass, policy full, best of %d)\n\n", g_reps);
    printf("| model | weights | MB read per decode token |");
    for (int p = 0; p < N_PL; p++) printf(" %d tokens |", PREFILL_LENS[p]);
    printf("\n|---|---|---|");
    for (int p = 0; p < N_PL; p++) printf("---|");
    printf("\n");
    for (int mi = 0; mi < n_models; mi++) {
        bench_model *bm = &models[mi];
        printf("| %s | %s | %.1f |", bm->label, dtype_name(bm->mw.layers[0].wq.dtype), bm->weight_bytes / 1e6);
        for (int p = 0; p < N_PL; p++)
            if (res[mi].prefill[p] > 0) printf(" %.1f |", res[mi].prefill[p]);
            else print_na(bm->mw.cfg.max_position_embeddings);
        printf("\n");
    }
    }
    printf("\n### Decode (tok/s = 1 / median step of %d steps; bytes/s = (weights + live K/V read per step) × tok/s)\n\n", g_steps);
    printf("| model | weights | context | policy | budget | evictions | tok/s | GB/s read | bandwidth GB/s | ÷ bandwidth |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (int mi = 0; mi < n_models; mi++) {
        bench_model *bm = &models[mi];
        for (int d = 0; d < N_DC; d++)
            for (int p = 0; p < N_DP; p++) {
                run_result *r = &res[mi].dec[d][p];
                if (g_decode_only && !r->ok) continue;
                printf("| %s | %s | %d | %s | %g |", bm->label, dtype_name(bm->mw.layers[0].wq.dtype),
                       DECODE_CTX[d], DECODE_POL[p].policy, DECODE_POL[p].budget);
                if (!r->ok) {
                    printf(" |");
                    print_na(bm->mw.cfg.max_position_embeddings);
                    printf(" | | |\n");
                    continue;
                }
                double bps = (bm->weight_bytes + r->kv_bytes) * r->decode_tps, bw = res[mi].bw[d];
                printf(" %lld | %.1f | %.2f | %.2f | %.0f%% |\n", r->evictions, r->decode_tps, bps / 1e9, bw / 1e9, 100 * bps / bw);
            }
    }

    /* the targets, for every model pair NAME:f32 / NAME:bf16 and every model */
    printf("\n### Targets\n\n| target | model | measured | goal | met |\n|---|---|---|---|---|\n");
    for (int mi = 0; mi < n_models; mi++) {
        bench_model *bm = &models[mi];
        model_result *mr = &res[mi];
        const char *dt = dtype_name(bm->mw.layers[0].wq.dtype);
        run_result *full64 = &mr->dec[0][0];
        if (full64->ok) {
            double frac = (bm->weight_bytes + full64->kv_bytes) * full64->decode_tps / mr->bw[0];
            printf("| decode bytes/s ÷ bandwidth (context 64, full) | %s %s | %.0f%% | ≥ 85%% | %s |\n",
                   bm->label, dt, 100 * frac, frac >= 0.85 ? "yes" : "no");
            if (mr->prefill[1] > 0) {
                double x = mr->prefill[1] / full64->decode_tps;
                printf("| prefill-512 tok/s ÷ decode tok/s | %s %s | %.1f× | ≥ 5× | %s |\n", bm->label, dt, x,
                       x >= 5 ? "yes" : "no");
            }
        }
        for (int d = 0; d < N_DC; d++) {
            run_result *full = &mr->dec[d][0];
            if (!full->ok) continue;
            for (int p = 3; p < N_DP; p++) {
                run_result *r = &mr->dec[d][p];
                if (!r->ok) continue;
                double x = r->decode_tps / full->decode_tps;
                printf("| %s (budget 1, %lld evictions) decode ÷ full, context %d | %s %s | %.3f | ≥ 0.95 | %s |\n",
                       DECODE_POL[p].policy, r->evictions, DECODE_CTX[d], bm->label, dt, x, x >= 0.95 ? "yes" : "no");
            }
            if (DECODE_CTX[d] < 900) continue;
            for (int p = 1; p < 3; p++) {
                run_result *r = &mr->dec[d][p];
                if (!r->ok) continue;
                double x = r->decode_tps / full->decode_tps;
                printf("| %s 0.4 decode ÷ full, context %d | %s %s | %.2f× | > 1 | %s |\n", DECODE_POL[p].policy,
                       DECODE_CTX[d], bm->label, dt, x, x > 1 ? "yes" : "no");
            }
        }
        /* quantized vs F32 of the same file, per byte read (issue 14: "not slower than the F32
         * path per byte read"): the two rows' bytes/s, each ÷ the bandwidth measured alongside it
         * (in lockstep instead, each F32 step flushes the L3, and a quantized model small enough
         * to be partly served from it there (SmolLM2: 98 MB, 32 MiB of L3) loses that) */
        if (dtype_is_quant(bm->mw.layers[0].wq.dtype) && full64->ok)
            for (int mj = 0; mj < n_models; mj++) {
                bench_model *f = &models[mj];
                run_result *f64 = &res[mj].dec[0][0];
                if (mj == mi || strcmp(f->dir, bm->dir) || f->mw.layers[0].wq.dtype != DT_F32 || !f64->ok) continue;
                double x = (bm->weight_bytes + full64->kv_bytes) * full64->decode_tps / mr->bw[0] /
                           ((f->weight_bytes + f64->kv_bytes) * f64->decode_tps / res[mj].bw[0]);
                printf("| decode bytes/s ÷ the same model's in F32 (context %d, full; each ÷ its bandwidth) | %s %s | %.0f%% | ≥ 100%% | %s |\n",
                       DECODE_CTX[0], bm->label, dt, 100 * x, x >= 1.0 ? "yes" : "no");
                /* the same ratio with the two decoding in lockstep (one step of each in turn):
                 * both see the same machine, no bandwidth pass in between; for a model several
                 * times the L3 (Qwen2.5) the steadier figure; one near it (SmolLM2) also loses
                 * there whatever L3 reuse it had between its own steps (the F32 steps flush it) */
                double r = paired_ratio(bm, f, DECODE_CTX[0]);
                if (r > 0) {
                    double xl = r * (bm->weight_bytes + full64->kv_bytes) / (f->weight_bytes + f64->kv_bytes);
                    printf("| decode bytes/s ÷ the same model's in F32 (context %d, full; the two in lockstep) | %s %s | %.0f%% | ≥ 100%% | %s |\n",
                           DECODE_CTX[0], bm->label, dt, 100 * xl, xl >= 1.0 ? "yes" : "no");
                }
            }
        /* BF16 vs F32 of the same folder */
        if (bm->mw.layers[0].wq.dtype != DT_BF16 || g_decode_only) continue;
        for (int mj = 0; mj < n_models; mj++) {
            if (mj == mi || strcmp(models[mj].dir, bm->dir) || models[mj].mw.layers[0].wq.dtype != DT_F32) continue;
            if (!full64->ok || !res[mj].dec[0][0].ok) continue;
            double x = paired_ratio(bm, &models[mj], DECODE_CTX[0]);
            printf("| BF16 decode ÷ F32 decode (context %d, full; the two in lockstep) | %s | %.2f× | ≥ 1.8× | %s |\n",
                   DECODE_CTX[0], bm->label, x, x >= 1.8 ? "yes" : "no");
        }
    }
    for (int mi = 0; mi < n_models; mi++) model_free(&models[mi].mw);
    return 0;
}
