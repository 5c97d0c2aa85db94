/* kernels/cpu internal: the output rows of a decode matrix-vector call (matmul.c's matvec_multi,
 * quant_gemm.c's n = 1 path) split over the threads of one parallel region with stealing.
 *
 * Thread t owns the contiguous share [R·t/T, R·(t+1)/T) of the R rows (as a static split) and
 * claims it block by block from the front; when its share is done it claims blocks of the other
 * shares from their back ends. On an idle machine every thread reads its own share front to
 * back as before, and where one thread runs slower (its memory stream, a core shared with
 * another process, a late wake-up) the others take the blocks it has not reached instead of
 * waiting for it at the join. Stealing from the back keeps the owner's stream contiguous: taking
 * the block right after the owner's (as an earlier version did) wasted the lines the hardware
 * prefetcher had already fetched for the owner and broke its stream. A share's last block may
 * be split in pieces (rs_init's tail_parts), so that the thread still working when the others
 * run out holds less at the join. Each output row is still
 * computed whole by one thread with the same kernel, so the results do not depend on who
 * computes it (bit-identical for any thread count and any timing). */
#ifndef LLM_KERNELS_CPU_ROWSTEAL_H
#define LLM_KERNELS_CPU_ROWSTEAL_H

#include <stddef.h>

#include "kernels/kernels.h"

/* Most threads a call splits over with stealing (more: the region's static split). */
#define RS_MAX_THREADS 64

typedef struct {
    /* blocks of this share claimed: from the front (low 32 bits, the owner) and from the back
     * (high 32 bits, the others); one word, so one atomic add claims and the sum says whether
     * the block was still free */
    _Alignas(64) unsigned long long fb;
    char pad[64 - sizeof(unsigned long long)];
} rs_counter;

typedef struct {
    long long total, block;        /* rows, rows per block */
    int parts, align;              /* a share's last block in up to `parts` pieces (rs_nblocks) */
    int nt;                        /* threads the shares were made for */
    rs_counter c[RS_MAX_THREADS];
} rowsteal;

/* Shares of total rows for nt threads, blocks of about block_bytes of weights (row_bytes per
 * row), a multiple of align rows (at least align), each share's last block claimed in
 * tail_parts pieces when the share has two blocks or more (1: whole). The whole set-up: it writes every field a
 * run of up to nt threads reads (counters c[0..nt) only), so a caller need not zero-fill the
 * struct (4 KiB of counters; a zero-filled job was half of qmatmul_impl's set-up time). */
/* Rows a claim block holds: about block_bytes of weights, a multiple of align (≥ align). */
static inline long long rs_block_rows(long long total, size_t row_bytes, size_t block_bytes, int align)
{
    long long b = row_bytes ? (long long)(block_bytes / row_bytes) : total;
    b = b / align * align;
    return b < align ? align : b;
}

/* A share of R rows in blocks of `block` rows: its block count, and where block i starts (rows
 * from the share's start). With two blocks or more and parts > 1 the last (possibly partial)
 * block is split in up to `parts` pieces of equal rows, a multiple of align (the last piece may
 * be shorter): where the threads meet at the end of a run, the one still working then holds a
 * piece, not a whole block, so the other waits less at the join. */
static inline long long rs_piece_rows(long long block, int parts, int align, long long R, long long *nfull)
{
    *nfull = (R + block - 1) / block;
    if (parts <= 1 || *nfull < 2) return 0;
    long long last = R - (*nfull - 1) * block, p = (last + parts - 1) / parts;
    return (p + align - 1) / align * align;
}

static inline long long rs_nblocks(long long block, int parts, int align, long long R)
{
    long long nfull, sub = rs_piece_rows(block, parts, align, R, &nfull);
    return sub ? nfull - 1 + (R - (nfull - 1) * block + sub - 1) / sub : nfull;
}

static inline long long rs_bstart(long long block, int parts, int align, long long R, long long i)
{
    long long nfull, sub = rs_piece_rows(block, parts, align, R, &nfull);
    long long r = !sub || i < nfull - 1 ? i * block : (nfull - 1) * block + (i - (nfull - 1)) * sub;
    return r < R ? r : R;
}

static inline void rs_init(rowsteal *rs, long long total, int nt, size_t row_bytes, size_t block_bytes, int align,
                           int tail_parts)
{
    rs->block = rs_block_rows(total, row_bytes, block_bytes, align);
    rs->parts = tail_parts, rs->align = align;
    rs->total = total;
    rs->nt = nt;
    for (int t = 0; t < nt && t < RS_MAX_THREADS; t++) rs->c[t].fb = 0;
}

#define RS_FRONT 1ull
#define RS_BACK (1ull << 32)
#define RS_LO(x) ((long long)((x) & 0xffffffffull))

/* Claims blocks of share v for thread t (T threads): its owner (v == t) from the front, half of
 * the free blocks at a time (guided: a locked instruction drains the core's memory pipeline, so
 * one per 32 KiB block cost 5-10% of a 2-thread decode; this is about log2 of the blocks), anyone
 * else one block from the back. 0 when the share has no free block left. */
static inline int rs_claim(rowsteal *rs, int v, int t, int T, long long *g0, long long *g1)
{
    long long s0 = rs->total * v / T, s1 = rs->total * (v + 1) / T;
    long long nb = rs_nblocks(rs->block, rs->parts, rs->align, s1 - s0);
    unsigned long long cur = __atomic_load_n(&rs->c[v].fb, __ATOMIC_RELAXED);
    for (;;) {
        long long f = RS_LO(cur), b = (long long)(cur >> 32), free_ = nb - f - b;
        if (free_ <= 0) return 0;
        long long take = v == t ? (free_ + 1) / 2 : 1, i0;
        unsigned long long next = v == t ? cur + (unsigned long long)take * RS_FRONT : cur + RS_BACK;
        if (!__atomic_compare_exchange_n(&rs->c[v].fb, &cur, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            continue;                                           /* cur reloaded: try again */
        i0 = v == t ? f : nb - b - 1;                           /* first block index claimed */
        *g0 = s0 + rs_bstart(rs->block, rs->parts, rs->align, s1 - s0, i0);
        *g1 = s0 + rs_bstart(rs->block, rs->parts, rs->align, s1 - s0, i0 + take);
        return 1;
    }
}

/* Rows [*g0, *g1) of the first claim thread t of T makes in a run set up by rs_init(rs, total,
 * T, row_bytes, block_bytes, align, tail_parts): the front half of its own share (rs_claim), where its
 * weight stream starts on an idle machine (matmul_next_hint's read-ahead). 0: an empty share. */
static inline int rs_first_claim(long long total, int t, int T, size_t row_bytes, size_t block_bytes, int align,
                                 int tail_parts, long long *g0, long long *g1)
{
    long long b = rs_block_rows(total, row_bytes, block_bytes, align);
    long long s0 = total * t / T, s1 = total * (t + 1) / T, nb = rs_nblocks(b, tail_parts, align, s1 - s0);
    if (nb <= 0) return 0;
    *g0 = s0;
    *g1 = s0 + rs_bstart(b, tail_parts, align, s1 - s0, (nb + 1) / 2);
    return 1;
}

/* The next block for thread t of T (T ≤ rs->nt): rows [*g0, *g1) of the concatenation; 0 when
 * every block is claimed. *victim: the share being worked (start with t): its own share first,
 * then the following ones in turn, from their back ends. */
static inline int rs_next(rowsteal *rs, int t, int T, int *victim, long long *g0, long long *g1)
{
    for (int k = 0; k < T; k++) {
        int v = (*victim + k) % T;
        if (rs_claim(rs, v, t, T, g0, g1)) {
            *victim = v;
            return 1;
        }
    }
    return 0;
}

/* Share t of T (cpu_team_run) of a decode product over the concatenation of the k matrices
 * w[0..k): each claimed block of rows [g0, g1) first calls claimed(ctx, g1) when given (the F32
 * path's prefetch of what follows), then rows(ctx, i, a, b) for each piece [a, b) of matrix i in
 * it. With then_swiglu (k = 2, gate and up of one shape, into y[0] and y[1]): after a team
 * barrier, swiglu on the static slice t of T of the rows (the slice, not the claimed rows: the
 * split of the elements does not change their values). */
static inline void rs_share(rowsteal *rs, int t, int T, const weight_t *const *w, int k, float *const *y, int then_swiglu,
                            void (*rows)(void *ctx, int i, int a, int b), void (*claimed)(void *ctx, long long g1), void *ctx)
{
    int v = t;
    long long g0, g1;
    while (rs_next(rs, t, T, &v, &g0, &g1)) {
        if (claimed) claimed(ctx, g1);
        long long base = 0;
        for (int i = 0; i < k && base < g1; i++) {
            long long a = g0 > base ? g0 : base, b = g1 < base + w[i]->rows ? g1 : base + w[i]->rows;
            if (a < b) rows(ctx, i, (int)(a - base), (int)(b - base));
            base += w[i]->rows;
        }
    }
    if (then_swiglu) {
        cpu_team_barrier();
        size_t R = (size_t)w[0]->rows, a = R * t / T, b = R * (t + 1) / T;
        swiglu(y[0] + a, y[1] + a, b - a);
    }
}

/* quant_gemm.c: matmul_swiglu's decode for block formats (gate and up of the same shape):
 * one parallel region, blocks of rows of both, swiglu on each block. */
void qmatvec_swiglu(float *gate, float *up, const weight_t *w_gate, const weight_t *w_up, const float *x);

#endif
