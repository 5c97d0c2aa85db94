/* bench/omp_cost.c — what one OpenMP fork/join and one barrier cost on this machine (the fixed
 * cost a decode step paid ~5 times a layer; bench/cpu.md session 19), and the same for the
 * decode team that replaced it (kernels.h cpu_team_run / cpu_team_barrier; session 20). Prints,
 * for three rounds, the mean ns of an empty `#pragma omp parallel num_threads(T)` and of a
 * `#pragma omp barrier` inside one region, then of an empty cpu_team_run(T) and of a
 * cpu_team_barrier inside one run, over N repetitions. Run with the environment llm-run would
 * choose, e.g.
 *   GOMP_SPINCOUNT=300000 build/bench/omp_cost [T] [N]     (spinning; the default on an idle host)
 *   OMP_WAIT_POLICY=passive build/bench/omp_cost [T] [N]   (sleeping at once) */
#include "kernels/kernels.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static volatile int sink;
static int g_N;

static void team_empty(void *arg, int t, int T)
{
    (void)arg, (void)T;
    sink = t;
}

static void team_barriers(void *arg, int t, int T)
{
    (void)arg, (void)t, (void)T;
    for (int i = 0; i < g_N; i++) cpu_team_barrier();
}

int main(int argc, char **argv)
{
    int T = argc > 1 ? atoi(argv[1]) : 2, N = argc > 2 ? atoi(argv[2]) : 200000;
    if (T < 1 || N < 1) {
        fprintf(stderr, "usage: omp_cost [threads >= 1] [repetitions >= 1]\n");
        return 2;
    }
    printf("threads %d, %d repetitions\n", T, N);
    for (int round = 0; round < 3; round++) {
        double t0 = now_s();
        for (int i = 0; i < N; i++) {
#pragma omp parallel num_threads(T)
            sink = omp_get_thread_num();
        }
        double t1 = now_s();
#pragma omp parallel num_threads(T)
        for (int i = 0; i < N; i++) {
#pragma omp barrier
        }
        double t2 = now_s();
        g_N = N;
        for (int i = 0; i < N; i++) cpu_team_run(T, team_empty, NULL);
        double t3 = now_s();
        cpu_team_run(T, team_barriers, NULL);
        double t4 = now_s();
        printf("OpenMP: fork+join %.0f ns, barrier %.0f ns; team: run %.0f ns, barrier %.0f ns\n", (t1 - t0) / N * 1e9,
               (t2 - t1) / N * 1e9, (t3 - t2) / N * 1e9, (t4 - t3) / N * 1e9);
    }
    return 0;
}
