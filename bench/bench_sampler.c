/* bench_sampler.c — the time of one sampling step (model/sampler.c sampler_sample) per sampler
 * setting on a logit row of a real vocabulary's size (Qwen2.5: 151936 ids; a few strong tokens
 * over a long tail), next to a full sort of the row (what llama.cpp's typical sampler does twice
 * each step, src/llama-sampler.cpp) and one decode step of the model it is compared with (pass
 * --step-ms). Prints a markdown table; the figures are this machine's, min of --reps runs.
 *
 *   make build/bench/bench_sampler && build/bench/bench_sampler [--vocab N] [--reps N] */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_desc(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x > y ? -1 : x < y ? 1 : 0;
}

int main(int argc, char **argv)
{
    int vocab = 151936, reps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--vocab")) vocab = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    }
    if (vocab < 100 || reps < 1) {
        fprintf(stderr, "usage: bench_sampler [--vocab N >= 100] [--reps N >= 1]\n");
        return 2;
    }
    float *row = malloc((size_t)vocab * sizeof *row), *x = malloc((size_t)vocab * sizeof *x);
    if (!row || !x) return 1;
    uint64_t st = 1;
    for (int i = 0; i < vocab; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        row[i] = (float)((double)(st >> 11) / 9007199254740992.0 * 12.0 - 6.0);
    }
    for (int k = 0; k < 20; k++) row[(k * 7919) % vocab] += 12.0f;
    static const struct {
        const char *name;
        float temp, top_p, min_p, typical;
        int top_k, mirostat;
    } cases[] = {
        {"greedy (--temp 0)", 0.0f, 1.0f, 0.0f, 1.0f, 0, 0},
        {"--temp 0.8 (the draw over every id)", 0.8f, 1.0f, 0.0f, 1.0f, 0, 0},
        {"--temp 0.8 --top-k 40", 0.8f, 1.0f, 0.0f, 1.0f, 40, 0},
        {"--temp 0.8 --top-p 0.9", 0.8f, 0.9f, 0.0f, 1.0f, 0, 0},
        {"--temp 0.8 --min-p 0.05", 0.8f, 1.0f, 0.05f, 1.0f, 0, 0},
        {"llama.cpp's defaults (top-k 40, top-p 0.95, min-p 0.05)", 0.8f, 0.95f, 0.05f, 1.0f, 40, 0},
        {"--temp 0.8 --typical 0.9", 0.8f, 1.0f, 0.0f, 0.9f, 0, 0},
        {"--temp 0.8 --mirostat 1", 0.8f, 1.0f, 0.0f, 1.0f, 0, 1},
        {"--temp 0.8 --mirostat 2", 0.8f, 1.0f, 0.0f, 1.0f, 0, 2},
    };
    printf("| sampler setting (vocabulary %d) | ms per step (min of %d) |\n|---|---|\n", vocab, reps);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sampler s;
        if (sampler_init(&s, vocab, cases[c].temp, cases[c].top_p, cases[c].top_k, 1) != 0) return 1;
        s.min_p = cases[c].min_p;
        s.typical_p = cases[c].typical;
        sampler_set_mirostat(&s, cases[c].mirostat, 5.0f, 0.1f);
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            memcpy(x, row, (size_t)vocab * sizeof *x);
            const double t0 = now();
            sampler_sample(&s, x);
            const double t = now() - t0;
            best = t < best ? t : best;
        }
        printf("| %s | %.2f |\n", cases[c].name, best * 1e3);
        sampler_free(&s);
    }
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        memcpy(x, row, (size_t)vocab * sizeof *x);
        const double t0 = now();
        qsort(x, (size_t)vocab, sizeof *x, cmp_desc);
        const double t = now() - t0;
        best = t < best ? t : best;
    }
    printf("| reference: one full sort of the row (llama.cpp's typical sorts it twice) | %.2f |\n", best * 1e3);
    free(row);
    free(x);
    return 0;
}
