/* kernels/cpu internal: the output rows of a decode matrix-vector call (matmul.c's matvec_multi,
 * quant_gemm.c's n = 1 path) split over the threads of one parallel region with stealing.
 *
 * Thread t owns the contiguous share [R·t/T, R·(t+1)/T) of the R rows (as a static split) and
 * claims it block by block (an atomic counter per share); when its share is done it claims the
 * next unclaimed blocks of the other shares. On an idle machine every thread reads its own
 * share front to back as before; where a thread runs slower (a core shared with another
 * process, a late wake-up) the others take over the blocks it has not reached, instead of
 * waiting for it at the join. Each output row is still computed whole by one thread with the
 * same kernel, so the results do not depend on who computes it (bit-identical for any thread
 * count and any timing). */
#ifndef LLM_KERNELS_CPU_ROWSTEAL_H
#define LLM_KERNELS_CPU_ROWSTEAL_H

#include <stddef.h>

#include "kernels/kernels.h"

/* Most threads a call splits over with stealing (more: the region's static split). */
#define RS_MAX_THREADS 64

typedef struct {
    _Alignas(64) long long next;   /* blocks of this share claimed so far */
    char pad[64 - sizeof(long long)];
} rs_counter;

typedef struct {
    long long total, block;        /* rows, rows per block */
    int nt;                        /* threads the shares were made for */
    rs_counter c[RS_MAX_THREADS];
} rowsteal;

/* Shares of total rows for nt threads, blocks of about block_bytes of weights (row_bytes per
 * row), a multiple of align rows (at least align). */
static inline void rs_init(rowsteal *rs, long long total, int nt, size_t row_bytes, size_t block_bytes, int align)
{
    long long b = row_bytes ? (long long)(block_bytes / row_bytes) : total;
    b = b / align * align;
    rs->block = b < align ? align : b;
    rs->total = total;
    rs->nt = nt;
    for (int t = 0; t < nt && t < RS_MAX_THREADS; t++) rs->c[t].next = 0;
}

/* The next block for thread t of T (T ≤ rs->nt): rows [*g0, *g1) of the concatenation; 0 when
 * every block is claimed. *victim: the share being worked (start with t). */
static inline int rs_next(rowsteal *rs, int t, int T, int *victim, long long *g0, long long *g1)
{
    for (int k = 0; k < T; k++) {
        int v = (*victim + k) % T;   /* own share first, then the following ones in turn */
        long long s0 = rs->total * v / T, s1 = rs->total * (v + 1) / T;
        if (s0 + __atomic_load_n(&rs->c[v].next, __ATOMIC_RELAXED) * rs->block >= s1) continue;   /* (a cheap look before the claim) */
        long long i = __atomic_fetch_add(&rs->c[v].next, 1, __ATOMIC_RELAXED);
        long long a = s0 + i * rs->block;
        if (a >= s1) continue;
        *victim = v;
        *g0 = a;
        *g1 = a + rs->block < s1 ? a + rs->block : s1;
        return 1;
    }
    return 0;
}

/* quant_gemm.c: matmul_swiglu's decode for block formats (gate and up of the same shape):
 * one parallel region, blocks of rows of both, swiglu on each block. */
void qmatvec_swiglu(float *gate, float *up, const weight_t *w_gate, const weight_t *w_up, const float *x);

#endif
