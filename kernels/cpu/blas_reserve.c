/* Out-of-memory guard for the BLAS. OpenBLAS (0.3.x, Debian 12's libopenblas) gives each of its
 * threads a 128 MiB work buffer (worker threads allocate theirs when the library loads, the
 * calling thread on its first GEMM) and, when that malloc fails (ulimit -v, strict overcommit),
 * retries forever instead of failing; exit() then waits for the stuck worker. llm-run would
 * hang at 100% CPU instead of saying it is out of memory (found by tests/test_bad_inputs.sh
 * under ulimit -v). cpu_blas_reserve_check makes the same allocations first. */
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>

int openblas_get_num_threads(void);

/* OpenBLAS's BUFFER_SIZE on x86-64 (32 << 22 bytes) plus its page of alignment slack, and a
 * margin per thread for what starting the OpenMP/BLAS threads takes (stack, malloc arena). */
#define OPENBLAS_BUFFER_BYTES (((size_t)32 << 22) + 4096)
#define THREAD_MARGIN_BYTES ((size_t)16 << 20)
#define MAX_BUFFERS 1024

int cpu_blas_reserve_check(int n_threads, char *err, size_t errlen)
{
    if (n_threads < 1) n_threads = openblas_get_num_threads();
    if (n_threads < 1) n_threads = 1;
    if (n_threads > MAX_BUFFERS) n_threads = MAX_BUFFERS;
    /* one malloc per thread, as OpenBLAS does (address space only: nothing is touched). Worker
     * threads that already hold their buffers are counted again: the check errs on the safe
     * side by (n_threads - 1) buffers. */
    static void *p[MAX_BUFFERS];
    int got = 0;
    while (got < n_threads && (p[got] = malloc(OPENBLAS_BUFFER_BYTES + THREAD_MARGIN_BYTES))) got++;
    for (int i = 0; i < got; i++) free(p[i]);
    if (got < n_threads) {
        snprintf(err, errlen, "out of memory: cannot reserve %d x %zu MiB for the BLAS work "
                 "buffers of %d thread(s) (check ulimit -v; fewer --threads or "
                 "OPENBLAS_NUM_THREADS=1 need less)", n_threads, OPENBLAS_BUFFER_BYTES >> 20,
                 n_threads);
        return -1;
    }
    return 0;
}
