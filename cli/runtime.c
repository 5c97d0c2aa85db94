/* cli/runtime.c — the OpenMP and OpenBLAS settings a run needs before those libraries load
 * (cli.h cli_reexec_with_runtime_settings; used by main.c and bench/bench_cpu.c). */
#include "cli/cli.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Settings the OpenMP and OpenBLAS runtimes read when they load, before main:
 *  - the wait of a thread with nothing to do: it either spins a while or sleeps at once
 *    (OMP_WAIT_POLICY=passive). Decode runs ~5 short parallel steps a layer on the decode team
 *    (kernels/cpu/team.c, which reads the same choice), so sleeping costs a futex wake-up each:
 *    stories110M F32, 2 threads, quiet machine: 49-50 tok/s passive vs 66-67 spinning (llama.cpp
 *    55.5, measured when decode ran on OpenMP). But where another process holds a core, spinning
 *    threads fight it for the core and 2-thread decode collapses (same model: 10-23 tok/s
 *    spinning vs 32 passive, 1 thread 34.5). So the choice is made here from the runnable tasks
 *    at start (/proc/loadavg, least of 5 looks): spin when this run's threads fit in the CPUs
 *    nobody else is using, else wait passively. A core taken after the start is not seen here;
 *    decode then finds it by timing a step on 1 thread now and then (model/decode_threads.c),
 *    or set OMP_WAIT_POLICY=passive. OpenMP itself now runs only prefill and load-time work,
 *    whose regions follow each other closely: its spin is short (GOMP_SPINCOUNT=10000, about
 *    0.1-0.2 ms), since its threads spinning on after a prefill hold the cores the decode
 *    team's threads need (GOMP_SPINCOUNT=300000: SmolLM2 2-thread decode steps right after an
 *    OpenMP region ran at 161-165 tok/s instead of 222-233, bench_cpu on Zen 3, 2026-11-29);
 *  - OPENBLAS_CORETYPE: Debian's OpenBLAS 0.3.21 does not know Sapphire Rapids / Zen 4 and
 *    falls back to its generic kernels; name the widest family the CPU runs.
 * Each is set only when the user has not, then the program re-executes itself once
 * (LLM_RUN_REEXEC guards the loop). Not under valgrind (its LD_PRELOAD), where /proc/self/exe
 * is the tool. */

/* Runnable tasks of this process right now (its threads in state R: OpenBLAS starts its
 * own at load), at least 1. */
static int own_runnable(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        const char *r = strrchr(buf, ')');
        if (r && r[1] == ' ' && r[2] == 'R') n++;
    }
    if (d) closedir(d);
    return n > 0 ? n : 1;
}

/* Runnable tasks of other processes right now (/proc/loadavg's "running/total" less this
 * process's own), or -1. */
static int others_runnable_once(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    int running = -1, total;
    double a, b, c;
    if (f) {
        if (fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
        fclose(f);
    }
    if (running < 1) return -1;
    int others = running - own_runnable();
    return others > 0 ? others : 0;
}

/* Runnable tasks other than this one (/proc/loadavg's "running/total"), or -1: the least of
 * up to 25 looks 6 ms apart (it stops at the first that sees none), so a process started beside
 * this one that is only loading is not taken for a busy core: `llm-run --json | python3 …`
 * starts a Python that runs for ~90 ms before it blocks on the pipe, and the 5 looks over 12 ms
 * this took before chose the passive wait there, which decodes at a third of the speed (SmolLM2
 * Q4_1, 2 threads, idle host: 56 tok/s passive vs 178 spinning; bench/spin_wait.sh). A busy
 * core costs the 150 ms at start. */
static int others_runnable(void)
{
    int least = -1;
    for (int i = 0; i < 25; i++) {
        if (i) usleep(6000);
        int n = others_runnable_once();
        if (n >= 0 && (least < 0 || n < least)) least = n;
        if (least == 0) break;
    }
    return least;
}

/* The thread count the command line asks for (-t N, --threads N, --threads=N), else 0. */
static int threads_asked(char **argv)
{
    for (int i = 1; argv[i]; i++) {
        if ((!strcmp(argv[i], "-t") || !strcmp(argv[i], "--threads")) && argv[i + 1]) return atoi(argv[i + 1]);
        if (!strncmp(argv[i], "--threads=", 10)) return atoi(argv[i] + 10);
    }
    return 0;
}

void cli_reexec_with_runtime_settings(char **argv)
{
    if (getenv("LLM_RUN_REEXEC")) return;
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload")) return;
    int change = 0;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int others = others_runnable(), want = threads_asked(argv);
        if (want <= 0) want = (int)ncpu;   /* the default: the physical cores, at most the CPUs */
        int spin = others >= 0 && ncpu > 0 && others + want <= ncpu;
        change |= (spin ? setenv("GOMP_SPINCOUNT", "10000", 1) : setenv("OMP_WAIT_POLICY", "passive", 1)) == 0;
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (!getenv("OPENBLAS_CORETYPE")) {
        __builtin_cpu_init();
        const char *t = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                      : __builtin_cpu_supports("avx2") ? "Haswell" : NULL;
        if (t) change |= setenv("OPENBLAS_CORETYPE", t, 1) == 0;
    }
#endif
    if (!change) return;
    setenv("LLM_RUN_REEXEC", "1", 1);
    /* the resolved path, not /proc/self/exe itself, so the process keeps its name (ps, pgrep) */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        execv(self, argv);
    }
    execv("/proc/self/exe", argv);   /* on failure: carry on with the runtimes as they are */
}

