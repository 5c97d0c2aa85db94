/* kernels/cpu internal: the software prefetch distances of the decode (n = 1) kernels, in bytes
 * ahead of the weight being read, chosen at run time for the CPU's vendor.
 *
 * A decode matrix-vector product streams its weights from DRAM once, and how far ahead a
 * software prefetch must run to keep that stream full depends on the core's hardware
 * prefetchers and its memory latency, not on the instruction set. The distances tuned on a
 * Sapphire Rapids VM (the defaults, the `intel` set) cost an AMD Zen 4 VM a third of its
 * bandwidth on the WL_X16 groups: bench_quant cold, one thread, Q8_0 x16 18-20 GB/s at 3072
 * bytes into the L2, 28-34 at 0-1024, where F32 read 27.5 (2026-11-28, bench/cpu.md session 13).
 * So the distances are data: dispatch.c sets `cpu_pf` once, before main, from cpuid's vendor
 * string (AMD: the `amd` set, anything else: `intel`), LLM_PREFETCH=intel|amd picks a set
 * by hand, and bench_quant --pf name=bytes,... tries others. Which prefetch hint
 * (L1 / L2) a kernel uses stays with the kernel. A distance changes only timing, never a result. */
#ifndef LLM_KERNELS_CPU_PREFETCH_H
#define LLM_KERNELS_CPU_PREFETCH_H

#include <stddef.h>

typedef struct {
    int x16;               /* WL_X16 groups (quant_x16_body*.inc), prefetcht1 */
    int x16k;              /* WL_X16 Q4_K / Q6_K groups (quant_x16k_avx512.c), prefetcht1 */
    int q16, q16_l2;       /* 16-bit-activation row kernels (quant16_body.inc), AVX-512: t0, t1 */
    int q16_256;           /* the same kernels at 256 bits (quant16_avx2.c), t0 */
    int q8;                /* 8-bit-activation row kernels (quant_body.inc, quant_vec8.h), t0 */
    int split, split_l2;   /* Q4_K/Q5_K byte-plane decode (quant16_split_avx512.inc): t0, t1 */
    int mv16, mv32;        /* F16/BF16 rows (t1) and F32 rows (t0), simd_avx512.c */
    int x16nta;            /* not a distance: non-zero, the 256-bit WL_X16 kernels (Q8_0, Q4_0,
                            * Q4_1, Q5_0, Q5_1; quant_x16_avx2.c) prefetch with prefetchnta
                            * instead of prefetcht1 (the AVX-512 ones keep prefetcht1) */
    int idle;              /* not a distance: the bytes of the next decode product (matmul_next_hint)
                            * a team worker prefetches (t0) at the front of its first claim once
                            * its share is done, while the caller runs the serial code between the
                            * two products (quant_gemm.c; 0: none) */
} cpu_prefetch;

/* The distances in use (dispatch.c). Read by the kernels at every call; written only by
 * dispatch.c's start-up code and cpu_prefetch_set (not while kernels run). */
extern cpu_prefetch cpu_pf;

/* The named sets: "intel" (the defaults) and "amd". NULL for an unknown name. */
const cpu_prefetch *cpu_prefetch_preset(const char *name);

/* The name of the set chosen at start-up ("intel", "amd"); "custom" after cpu_prefetch_set. */
const char *cpu_prefetch_name(void);

/* Applies "set" or "set,field=bytes,..." or "field=bytes,..." (fields as in cpu_prefetch, bytes
 * 0..65536) to cpu_pf. 0 on success; -1 with a one-line reason in err otherwise (cpu_pf
 * unchanged). For benchmarks: not thread-safe against running kernels. */
int cpu_prefetch_set(const char *spec, char *err, size_t errlen);

/* "x16=1024 q16=2048 ..." of cpu_pf into buf (for reports). */
void cpu_prefetch_describe(char *buf, size_t n);

#endif
