/* kernels/cpu/team.c — the decode thread team (kernels.h cpu_team_run / cpu_team_barrier).
 *
 * Why not OpenMP for decode: a decode step forks about 5 regions a layer (150 for SmolLM2, 120
 * for Qwen2.5), each over 0.1-1 MiB of weights. libgomp's fork + join costs ~0.8 µs on a 2-vCPU
 * Zen 3 VM even with spinning workers (GOMP_SPINCOUNT), and every release of its barriers makes
 * a futex_wake system call whether or not anyone sleeps (~330 futex calls a SmolLM2 token,
 * bench/cpu.md session 19). Here a fork is one store of a generation counter that the workers
 * spin on, a join is one counter the caller spins on, and a futex call is made only when a
 * worker has actually gone to sleep (after TEAM_SPIN_NS without work).
 *
 * Workers are started on first use (up to TEAM_MAX - 1 of them) and live until exit. One caller
 * at a time: a run that finds the team busy (another application thread, or a call from inside
 * a run) runs all its shares on the calling thread, as T = 1 would. The shares a run computes
 * do not depend on T by the callers' contract (kernels.h), so this never changes a result. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "kernels/kernels.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <strings.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define TEAM_MAX 256   /* 1 << TEAM_T_BITS */
/* How long an idle worker spins before it sleeps: longer than the serial code between two runs
 * of a decode step (a few µs) and than a step's sampling and output, short enough that a
 * prefill after a reply (OpenMP's threads) soon has the cores to itself. Under
 * OMP_WAIT_POLICY=passive (cli/runtime.c sets it when other processes hold CPUs at start) or
 * with more threads than CPUs, waits sleep (or yield) after the first 1024 pauses instead. */
#define TEAM_SPIN_NS 300000LL

/* The start word of a run: its sequence number above TEAM_T_BITS bits of T - 1, so that a worker
 * learns from the one load that starts it whether it takes part (a worker outside a run's T may
 * see the word of a later run first; one inside it always finishes it before the next). */
#define TEAM_T_BITS 8

typedef struct {
    _Alignas(64) atomic_uint gen;   /* the start word: workers spin (then sleep) on it */
    atomic_int sleepers;            /* workers in (or about to enter) futex_wait on gen */
    cpu_team_fn fn;                 /* the run's function and argument: written before gen */
    void *arg;
    _Alignas(64) atomic_int done;   /* workers finished with this run */
    _Alignas(64) atomic_uint bar_gen;
    atomic_int bar_count;
    _Alignas(64) atomic_int busy;   /* a caller owns the team */
    int n_workers;
    int n_cpus;                     /* CPUs this process may run on (sched_getaffinity) */
    int passive;                    /* OMP_WAIT_POLICY=passive: do not spin */
    atomic_llong spin_ns;           /* how long waits spin: TEAM_SPIN_NS, 0 when oversubscribed */
    unsigned start_gen;             /* gen when a worker was created: it waits for the next */
    pthread_mutex_t start_lock;
} team_state;

static team_state team = {.start_lock = PTHREAD_MUTEX_INITIALIZER};
static _Thread_local int my_T;   /* T of the run this thread is computing a share of (0: none) */
static _Thread_local void (*my_after)(void);   /* cpu_team_after of the share just computed */
static _Thread_local int my_worker;            /* this thread is one of the team's workers */
static _Thread_local unsigned my_seen;         /* a worker: the start word of its last run */

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void gen_wait(atomic_uint *p, unsigned seen)
{
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)p, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    (void)p, (void)seen;
    usleep(50);
#endif
}

static void gen_wake(atomic_uint *p)
{
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)p, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
#else
    (void)p;
#endif
}

/* Spins until *p != seen; after TEAM_SPIN_NS sleeps (sleep = 1) or yields the core (sleep = 0)
 * between checks. Returns the new value. */
static unsigned wait_change(atomic_uint *p, unsigned seen, int sleep)
{
    unsigned g;
    long long t0 = 0;
    for (unsigned spins = 0; (g = atomic_load_explicit(p, memory_order_acquire)) == seen; spins++) {
        cpu_relax();
        if ((spins & 1023) != 1023) continue;
        long long t = now_ns();
        if (!t0) t0 = t;
        if (t - t0 < atomic_load_explicit(&team.spin_ns, memory_order_relaxed)) continue;
        if (!sleep) {
            sched_yield();
            continue;
        }
        /* Dekker with cpu_team_run: it bumps gen, then reads sleepers; we count ourselves,
         * then read gen (both seq_cst), so one of the two sees the other */
        atomic_fetch_add(&team.sleepers, 1);
        if (atomic_load(p) == seen) gen_wait(p, seen);
        atomic_fetch_sub(&team.sleepers, 1);
        t0 = 0;
    }
    return g;
}

static void *worker_main(void *p)
{
    const int id = (int)(size_t)p;
    unsigned seen = team.start_gen;   /* pthread_create orders it */
    my_worker = 1;
    for (;;) {
        seen = wait_change(&team.gen, seen, 1);
        const int T = (int)(seen & ((1u << TEAM_T_BITS) - 1)) + 1;
        if (id < T) {
            my_T = T;
            team.fn(team.arg, id, T);
            my_T = 0;
            atomic_fetch_add_explicit(&team.done, 1, memory_order_release);
            if (my_after) {
                void (*after)(void) = my_after;
                my_after = NULL;
                my_seen = seen;
                after();
            }
        }
    }
    return NULL;
}

/* In the child of a fork() only the forking thread exists: the team starts empty there. */
static void team_after_fork_child(void)
{
    team.n_workers = 0;
    atomic_store(&team.busy, 0);
    atomic_store(&team.sleepers, 0);
    pthread_mutex_init(&team.start_lock, NULL);
    my_T = 0;
}

/* Starts workers up to n (called by the one caller holding busy). 0 when none could start. */
static int team_grow(int n)
{
    pthread_mutex_lock(&team.start_lock);
    team.start_gen = atomic_load(&team.gen);   /* unchanged until our caller's run starts */
    if (!team.n_cpus) {   /* first use */
        pthread_atfork(NULL, NULL, team_after_fork_child);
        cpu_set_t set;
        team.n_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (team.n_cpus < 1) team.n_cpus = 1;
        const char *wp = getenv("OMP_WAIT_POLICY");
        team.passive = wp && !strcasecmp(wp, "passive");
    }
    while (team.n_workers < n) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&th, &at, worker_main, (void *)(size_t)(team.n_workers + 1));
        pthread_attr_destroy(&at);
        if (rc) break;
        team.n_workers++;
    }
    int have = team.n_workers;
    pthread_mutex_unlock(&team.start_lock);
    return have;
}

void cpu_team_run(int T, cpu_team_fn fn, void *arg)
{
    int expect = 0;
    if (T > TEAM_MAX) T = TEAM_MAX;
    if (T > 1 && !my_T && !omp_in_parallel() && atomic_compare_exchange_strong(&team.busy, &expect, 1)) {
        if (team.n_workers < T - 1) {
            int have = team_grow(T - 1);
            if (have < T - 1) T = have + 1;
        }
        if (T == 1) atomic_store(&team.busy, 0);
    } else {
        T = 1;
    }
    if (T == 1) {   /* every share on this thread; a barrier inside returns at once */
        const int outer = my_T;
        my_T = 1;
        fn(arg, 0, 1);
        my_T = outer;
        return;
    }
    team.fn = fn;
    team.arg = arg;
    /* more threads than CPUs: a spinning waiter holds the core the awaited thread needs */
    atomic_store_explicit(&team.spin_ns, T > team.n_cpus || team.passive ? 0 : TEAM_SPIN_NS, memory_order_relaxed);
    atomic_store_explicit(&team.done, 0, memory_order_relaxed);
    atomic_store_explicit(&team.bar_count, 0, memory_order_relaxed);
    unsigned g = atomic_load_explicit(&team.gen, memory_order_relaxed);
    g = ((g >> TEAM_T_BITS) + 1) << TEAM_T_BITS | (unsigned)(T - 1);
    atomic_store(&team.gen, g);   /* seq_cst: ordered before the read of sleepers */
    if (atomic_load(&team.sleepers)) gen_wake(&team.gen);
    my_T = T;
    fn(arg, 0, T);
    my_T = 0;
    long long t0 = 0;
    for (unsigned spins = 0; atomic_load_explicit(&team.done, memory_order_acquire) != T - 1; spins++) {
        cpu_relax();
        if ((spins & 1023) == 1023) {   /* a worker descheduled: give it the core */
            long long t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 >= atomic_load_explicit(&team.spin_ns, memory_order_relaxed) / 20) sched_yield();
        }
    }
    atomic_store(&team.busy, 0);
}

void cpu_team_after(void (*fn)(void))
{
    if (my_worker) my_after = fn;
}

int cpu_team_next_posted(void)
{
    return my_worker && atomic_load_explicit(&team.gen, memory_order_relaxed) != my_seen;
}

void cpu_team_barrier(void)
{
    const int T = my_T;
    if (T <= 1) return;
    unsigned g = atomic_load_explicit(&team.bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&team.bar_count, 1, memory_order_acq_rel) == T - 1) {
        atomic_store_explicit(&team.bar_count, 0, memory_order_relaxed);
        atomic_store_explicit(&team.bar_gen, g + 1, memory_order_release);
        return;
    }
    wait_change(&team.bar_gen, g, 0);
}
