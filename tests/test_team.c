/* Tests for the decode thread team (kernels.h cpu_team_run / cpu_team_barrier,
 * kernels/cpu/team.c):
 *  - every share t = 0..T-1 runs exactly once per run, with the run's T, for T = 1..5 and
 *    10,000 runs alternating T (a worker that misses a run, or runs one twice, or a run that
 *    returns before a share finished, is counted);
 *  - the barrier: each share writes its slot, passes the barrier and reads every other slot,
 *    three barriers per run, 20,000 runs (a barrier that lets a share through early shows as a
 *    stale slot; checked to fail with the barrier made a no-op);
 *  - a run from inside a run, or from inside an OpenMP region, computes its shares on the
 *    calling thread with T = 1 (and its barriers return at once);
 *  - a worker's after function (cpu_team_after) runs after its share and sees the next run
 *    start (cpu_team_next_posted); the caller's registration is ignored;
 *  - workers that slept (after the team's spin time) wake for the next run;
 *  - a forked child (where no worker exists) runs the team without hanging. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <omp.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernels.h"

#define MAXT 8

typedef struct {
    atomic_int calls[MAXT];
    atomic_int bad_T;
    int T;
} count_job;

static void count_share(void *arg, int t, int T)
{
    count_job *j = arg;
    if (T != j->T || t < 0 || t >= T) atomic_fetch_add(&j->bad_T, 1);
    else atomic_fetch_add(&j->calls[t], 1);
}

static void test_every_share_runs_once_per_run(void **state)
{
    (void)state;
    for (int r = 0; r < 10000; r++) {
        int T = 1 + r % 5;
        count_job j = {.T = T};
        cpu_team_run(T, count_share, &j);
        assert_int_equal(atomic_load(&j.bad_T), 0);
        for (int t = 0; t < MAXT; t++) assert_int_equal(atomic_load(&j.calls[t]), t < T ? 1 : 0);
    }
}

typedef struct {
    int slot[3][MAXT];
    atomic_int stale;
    unsigned seq;
} bar_job;

static void bar_share(void *arg, int t, int T)
{
    bar_job *j = arg;
    for (int p = 0; p < 3; p++) {
        __atomic_store_n(&j->slot[p][t], (int)j->seq + p, __ATOMIC_RELAXED);
        cpu_team_barrier();
        for (int u = 0; u < T; u++)
            if (__atomic_load_n(&j->slot[p][u], __ATOMIC_RELAXED) != (int)j->seq + p) atomic_fetch_add(&j->stale, 1);
    }
}

static void test_barrier_orders_every_share(void **state)
{
    (void)state;
    bar_job j;
    memset(&j, 0, sizeof j);
    for (int r = 0; r < 20000; r++) {
        int T = 2 + r % 3;
        j.seq = 10u * (unsigned)r + 7;
        cpu_team_run(T, bar_share, &j);
    }
    assert_int_equal(atomic_load(&j.stale), 0);
}

typedef struct {
    atomic_int outer, inner, inner_bad;
} nest_job;

static void inner_share(void *arg, int t, int T)
{
    nest_job *j = arg;
    cpu_team_barrier();   /* at T = 1: returns at once */
    if (t != 0 || T != 1) atomic_fetch_add(&j->inner_bad, 1);
    atomic_fetch_add(&j->inner, 1);
}

static void outer_share(void *arg, int t, int T)
{
    nest_job *j = arg;
    (void)t, (void)T;
    atomic_fetch_add(&j->outer, 1);
    cpu_team_run(3, inner_share, j);
    cpu_team_barrier();
}

static void test_nested_run_and_openmp_region_run_on_the_caller(void **state)
{
    (void)state;
    nest_job j;
    memset(&j, 0, sizeof j);
    cpu_team_run(3, outer_share, &j);
    assert_int_equal(atomic_load(&j.outer), 3);
    assert_int_equal(atomic_load(&j.inner), 3);   /* one T = 1 inner run per outer share */
    assert_int_equal(atomic_load(&j.inner_bad), 0);

    nest_job k;
    memset(&k, 0, sizeof k);
    int n_omp = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        n_omp = omp_get_num_threads();
        cpu_team_run(4, inner_share, &k);
    }
    assert_int_equal(atomic_load(&k.inner), n_omp);
    assert_int_equal(atomic_load(&k.inner_bad), 0);
}

static void test_sleeping_workers_wake(void **state)
{
    (void)state;
    count_job j = {.T = 4};
    cpu_team_run(4, count_share, &j);
    struct timespec ts = {0, 30 * 1000 * 1000};   /* longer than the spin time: workers sleep */
    for (int r = 0; r < 3; r++) {
        nanosleep(&ts, NULL);
        count_job k = {.T = 4};
        cpu_team_run(4, count_share, &k);
        for (int t = 0; t < 4; t++) assert_int_equal(atomic_load(&k.calls[t]), 1);
    }
}

/* cpu_team_after / cpu_team_next_posted: worker 1's after function runs once its share is
 * reported (the run has returned), sees no next run until the caller starts one (the caller
 * waits 20 ms first), then sees it and returns, and takes part in that run; the caller and
 * worker 0 of a T = 1 run get no after function. */
static atomic_int after_calls, after_first, after_saw_next, after_share_done;
static void after_fn(void)
{
    atomic_fetch_add(&after_calls, 1);
    atomic_store(&after_first, cpu_team_next_posted());
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {   /* until the next run is posted (at most 5 s) */
        if (cpu_team_next_posted()) {
            atomic_store(&after_saw_next, 1);
            return;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < 5000000000LL);
}

static void after_share(void *arg, int t, int T)
{
    (void)arg, (void)T;
    if (t == 1 || T == 1) cpu_team_after(after_fn);   /* T == 1: on the caller, ignored */
    if (t == 1) atomic_fetch_add(&after_share_done, 1);
}

static void test_after_function_runs_on_the_worker_until_the_next_run(void **state)
{
    (void)state;
    assert_int_equal(cpu_team_next_posted(), 0);   /* not a worker */
    cpu_team_run(2, after_share, NULL);
    assert_int_equal(atomic_load(&after_share_done), 1);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&after_calls), 1);
    assert_int_equal(atomic_load(&after_first), 0);
    assert_int_equal(atomic_load(&after_saw_next), 0);
    count_job k = {.T = 2};
    cpu_team_run(2, count_share, &k);   /* the worker leaves after_fn for it */
    for (int t = 0; t < 2; t++) assert_int_equal(atomic_load(&k.calls[t]), 1);
    assert_int_equal(atomic_load(&after_saw_next), 1);
    cpu_team_run(1, after_share, NULL);   /* T = 1: the caller's registration is ignored */
    cpu_team_run(2, count_share, &k);
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&after_calls), 1);
}

/* A forked child has no workers: its runs start new ones (an exit status of 0 within 10 s). */
static void test_runs_in_a_forked_child(void **state)
{
    (void)state;
    count_job j = {.T = 2};
    cpu_team_run(2, count_share, &j);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10);
        int ok = 1;
        for (int r = 0; r < 100; r++) {
            count_job k = {.T = 2};
            cpu_team_run(2, count_share, &k);
            ok &= atomic_load(&k.calls[0]) == 1 && atomic_load(&k.calls[1]) == 1 && atomic_load(&k.bad_T) == 0;
        }
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_share_runs_once_per_run),
        cmocka_unit_test(test_barrier_orders_every_share),
        cmocka_unit_test(test_after_function_runs_on_the_worker_until_the_next_run),
        cmocka_unit_test(test_nested_run_and_openmp_region_run_on_the_caller),
        cmocka_unit_test(test_sleeping_workers_wake),
        cmocka_unit_test(test_runs_in_a_forked_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
