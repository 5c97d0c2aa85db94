/* bench/omp_cost.c — what one OpenMP fork/join and one barrier cost on this machine (the fixed
 * cost a decode step pays ~4 times a layer; bench/cpu.md session 19). Prints, for three rounds,
 * the mean ns of an empty `#pragma omp parallel num_threads(T)` and of a `#pragma omp barrier`
 * inside one region, over N repetitions. Run with the environment llm-run would choose, e.g.
 *   GOMP_SPINCOUNT=300000 build/bench/omp_cost [T] [N]     (spinning; the default on an idle host)
 *   OMP_WAIT_POLICY=passive build/bench/omp_cost [T] [N]   (sleeping at once) */
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
        printf("fork+join %.0f ns, barrier %.0f ns\n", (t1 - t0) / N * 1e9, (t2 - t1) / N * 1e9);
    }
    return 0;
}
