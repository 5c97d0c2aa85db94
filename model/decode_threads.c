/* model/decode_threads.c — the decode thread count of each step (model/internal.h
 * decode_threads_begin / _end, called by forward.c engine_decode around every CPU step). */
#include "model/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The decode thread count (engine.dec_*): a core that another process takes after the start
 * makes the thread on it run at a fraction of its speed, and the other threads wait for it at
 * every join (the OpenMP wait was chosen at start, cli/runtime.c); one thread can then decode
 * faster than n. So decode times its steps: after DEC_FIRST_PROBE steps, and then every
 * dec_interval steps, one step runs on the other count (1 if running n, n if running 1). When
 * that step takes at most DEC_SWITCH of the median of the last 4 steps, decode switches on
 * trial: the median of the next 4 steps must also be at most DEC_SWITCH of the old median, and
 * none of them slower than the old median, else it goes back at once (one lucky step on a noisy
 * machine costs a step or a few, not an interval). A
 * kept switch probes back after DEC_BACK_PROBE steps; a probe that loses doubles the interval
 * (up to DEC_MAX_INTERVAL; the first loss to DEC_BACK_PROBE). The first probe comes as soon as 4
 * steps are timed: a core already taken when decode starts (a 96-token reply at 2 threads on a
 * 2-core host with one core busy spent its first 16 steps 1.4x slower, 0.85-0.90 of 1-thread
 * decode in all) costs 4 slow steps. On an idle machine that is one 1-thread step after 4 steps,
 * then after 16, 32, 64, ... The results do not depend on the thread count (every kernel sums in the
 * same order for any split), so switching never changes an output. LLM_ADAPT_THREADS=0 keeps
 * n_threads (=flip alternates, for the tests); LLM_ADAPT_DEBUG=1 prints each decision. */
#define DEC_FIRST_PROBE 4
#define DEC_BACK_PROBE 16
#define DEC_MAX_INTERVAL 1024
#define DEC_SWITCH 0.92

/* LLM_ADAPT_THREADS: unset or 1 = on, 0 = off, flip = alternate 1 and n threads every step,
 * no timing (tests/test_decode_threads.sh: switching never changes an output). */
static int dec_mode(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("LLM_ADAPT_THREADS");
        mode = v && !strcmp(v, "0") ? 0 : v && !strcmp(v, "flip") ? 2 : 1;
    }
    return mode;
}

static int dec_adapt_on(const engine *e)
{
    return dec_mode() == 1 && e->n_threads > 1;
}

static int dec_debug(void)
{
    static int on = -1;
    if (on < 0) on = getenv("LLM_ADAPT_DEBUG") != NULL;
    return on;
}

/* The thread count of this step. */
int decode_threads_begin(engine *e)
{
    if (dec_mode() == 2) return ++e->dec_since % 2 ? 1 : e->n_threads;
    if (!dec_adapt_on(e)) return e->n_threads;
    if (e->dec_threads < 1) {
        e->dec_threads = e->n_threads;
        e->dec_interval = DEC_FIRST_PROBE;
        e->dec_since = e->dec_nref = e->dec_probe = e->dec_trial = 0;
    }
    e->dec_probe = !e->dec_trial && e->dec_nref == 4 && e->dec_since >= e->dec_interval;
    return e->dec_probe ? (e->dec_threads == 1 ? e->n_threads : 1) : e->dec_threads;
}

static double dec_median(const engine *e)
{
    double r[4];
    memcpy(r, e->dec_ref, sizeof r);
    for (int i = 1; i < 4; i++)   /* sort the 4 */
        for (int j = i; j > 0 && r[j] < r[j - 1]; j--) {
            double x = r[j];
            r[j] = r[j - 1];
            r[j - 1] = x;
        }
    return 0.5 * (r[1] + r[2]);
}

/* The probe interval after a probe (or its trial) lost: doubled, at least DEC_BACK_PROBE, at
 * most DEC_MAX_INTERVAL. */
static int dec_next_interval(int interval)
{
    return interval < DEC_BACK_PROBE ? DEC_BACK_PROBE : interval < DEC_MAX_INTERVAL ? 2 * interval : DEC_MAX_INTERVAL;
}

/* After a step of T threads that took dt seconds. */
void decode_threads_end(engine *e, int T, double dt)
{
    if (!dec_adapt_on(e)) return;
    if (!e->dec_probe) {
        if (e->dec_nref == 4) memmove(e->dec_ref, e->dec_ref + 1, 3 * sizeof e->dec_ref[0]);
        else e->dec_nref++;
        e->dec_ref[e->dec_nref - 1] = dt;
        e->dec_since++;
        /* the trial's verdict: after 4 steps, or at once when a step is slower than the old
         * median (a false switch to 1 thread on a loaded host costs steps several times slower) */
        if (e->dec_trial && (e->dec_nref == 4 || dt > e->dec_old_med)) {
            double med = e->dec_nref == 4 ? dec_median(e) : dt;
            int keep = med <= DEC_SWITCH * e->dec_old_med;
            if (dec_debug())
                fprintf(stderr, "adapt: trial of %d threads: median %.3f ms vs %.3f ms: %s\n", e->dec_threads,
                        med * 1e3, e->dec_old_med * 1e3, keep ? "kept" : "back");
            e->dec_trial = 0;
            e->dec_since = 0;
            if (keep) {
                e->dec_interval = DEC_BACK_PROBE;
            } else {
                e->dec_threads = e->dec_threads == 1 ? e->n_threads : 1;
                e->dec_nref = 0;
                e->dec_interval = dec_next_interval(e->dec_old_interval);
            }
        }
        return;
    }
    double med = dec_median(e);
    e->dec_probe = 0;
    e->dec_since = 0;
    if (dec_debug()) fprintf(stderr, "adapt: probe %d threads %.3f ms vs median %.3f ms of %d\n", T, dt * 1e3, med * 1e3, e->dec_threads);
    if (dt <= DEC_SWITCH * med) {
        e->dec_threads = T;
        e->dec_nref = 0;
        e->dec_trial = 1;
        e->dec_old_med = med;
        e->dec_old_interval = e->dec_interval;
    } else {
        e->dec_interval = dec_next_interval(e->dec_interval);
    }
}
