/* tests/cuda_emu/emu.h — runs the CUDA kernels of kernels/cuda on the CPU, for the review tests
 * of a machine without a GPU (tests/test_cuda_emu.sh). Not a CUDA implementation: just enough
 * for our kernels, with every CUDA thread of a block a fiber that runs until its next barrier, so
 * __syncthreads, __syncwarp and the warp shuffles really synchronise (a barrier that not all
 * threads reach aborts with "deadlock").
 *
 * Races: blocks run one after the other in a seeded random order, and between two barriers the
 * threads of a block run in a fresh seeded random order (EMU_SEED, default 1; EMU_SEED=0: the
 * natural order 0..n-1), so a kernel that depends on the order of blocks or of threads gives
 * different results under different seeds (tests/test_cuda_emu.sh runs several). Static
 * __shared__ arrays are plain statics (one block at a time); the dynamic one is a per-launch
 * buffer filled with NaN before each block. Device atomics are plain read-modify-writes (one
 * fiber runs at a time), __threadfence a no-op.
 *
 * Graphs: while a stream captures (engine_emu.cc: cudaStreamBeginCapture), emu_launch records
 * the launch (its arguments by value) instead of running it; cudaGraphLaunch replays the
 * recorded nodes in order. Counters (emu_cnt) of launches, graph nodes, synchronisations and
 * copies are written by engine_emu.cc (EMU_STATS=FILE).
 *
 * The kernel sources are included after tests/cuda_emu/rewrite.py rewrote
 * `k<<<cfg>>>(args);` into `emu_launch(cfg, [=] { k(args); });` and the extern __shared__
 * declarations into pointers to the dynamic buffer.
 *
 * Fibers: a hand-written x86-64 context switch (callee-saved registers, MXCSR and the x87
 * control word; no signal mask, so no system call per switch); ucontext elsewhere and under
 * AddressSanitizer (which understands swapcontext). */
#ifndef LLM_CUDA_EMU_H
#define LLM_CUDA_EMU_H

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <ucontext.h>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(...)

using std::max;
using std::min;

struct emu_ctx {
    dim3 tid, bid, bdim, gdim;
};
inline thread_local emu_ctx emu_t;
inline float *emu_dyn_smem;

#define threadIdx (emu_t.tid)
#define blockIdx (emu_t.bid)
#define blockDim (emu_t.bdim)
#define gridDim (emu_t.gdim)

/* ------------------------------------------------------------------------ counters */
struct emu_counters {
    long kernels;         /* kernels run (direct launches + replayed graph kernel nodes) */
    long direct_launches; /* kernels launched outside a graph */
    long graph_launches;  /* cudaGraphLaunch calls */
    long graph_nodes;     /* nodes replayed (kernels + copies + memsets) */
    long syncs;           /* host waits: stream/device/event synchronisations, blocking copies */
    long d2h, d2h_bytes;  /* device → host copies (direct or replayed) */
    long h2d, h2d_bytes;
    long blas;            /* cuBLAS calls */
    long allocs, frees;   /* device + pinned allocations */
};
inline emu_counters emu_cnt;

/* ------------------------------------------------------------------------ fibers */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define EMU_ASM_FIBERS 1
/* emu_swap(save, to): saves the callee-saved registers on this stack, stores the stack pointer
 * in *save, switches to the stack `to` (made by emu_swap or emu_fiber_init) and returns there */
__attribute__((naked, noinline)) static void emu_swap(void ** /*save*/, void * /*to*/)
{
    __asm__ volatile("pushq %rbp\n\t"
                     "pushq %rbx\n\t"
                     "pushq %r12\n\t"
                     "pushq %r13\n\t"
                     "pushq %r14\n\t"
                     "pushq %r15\n\t"
                     "subq $8, %rsp\n\t"
                     "stmxcsr (%rsp)\n\t"
                     "fnstcw 4(%rsp)\n\t"
                     "movq %rsp, (%rdi)\n\t"
                     "movq %rsi, %rsp\n\t"
                     "ldmxcsr (%rsp)\n\t"
                     "fldcw 4(%rsp)\n\t"
                     "addq $8, %rsp\n\t"
                     "popq %r15\n\t"
                     "popq %r14\n\t"
                     "popq %r13\n\t"
                     "popq %r12\n\t"
                     "popq %rbx\n\t"
                     "popq %rbp\n\t"
                     "ret\n\t");
}
#endif

enum { EMU_RUN, EMU_BLOCK_WAIT, EMU_WARP_WAIT, EMU_DONE };
struct emu_fiber {
#ifdef EMU_ASM_FIBERS
    void *sp;
#else
    ucontext_t ctx;
#endif
    int state;
    int parity; /* shuffle buffer in use (double-buffered) */
};
struct emu_sched {
#ifdef EMU_ASM_FIBERS
    void *main_sp;
#else
    ucontext_t main;
#endif
    std::vector<emu_fiber> f;
    std::vector<char *> stacks;
    std::vector<uint64_t> warp_buf; /* [2][T] */
    std::vector<unsigned> order;
    const std::function<void()> *body;
    unsigned cur, T;
    uint64_t rng;
    bool seeded;
    /* the fiber stacks are cached across launches: freed with the scheduler at exit (else
     * LeakSanitizer, which runs after the static destructors, sees them leaked) */
    ~emu_sched()
    {
        for (char *p : stacks) free(p);
    }
};
inline emu_sched emu_s;
constexpr size_t EMU_STACK = 128 * 1024;

/* the scheduler's locals live across the switches, which save and restore the callee-saved
 * registers, so they are not clobbered */
#pragma GCC diagnostic ignored "-Wclobbered"

inline void emu_to_main()
{
    emu_fiber &f = emu_s.f[emu_s.cur];
#ifdef EMU_ASM_FIBERS
    emu_swap(&f.sp, emu_s.main_sp);
#else
    swapcontext(&f.ctx, &emu_s.main);
#endif
}
inline void emu_wait(int kind)
{
    emu_s.f[emu_s.cur].state = kind;
    emu_to_main();
}
inline void __syncthreads() { emu_wait(EMU_BLOCK_WAIT); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_wait(EMU_WARP_WAIT); }
inline void __threadfence() {}
inline void __threadfence_block() {}

/* every lane of the warp must call them (as the kernels require: full-mask shuffles). Writes
 * alternate between two buffers: a lane cannot reach shuffle k + 2 before every lane has passed
 * the barrier of shuffle k + 1, i.e. read its value of shuffle k. */
template <typename V> inline V emu_shfl(V v, unsigned src_lane)
{
    static_assert(sizeof(V) <= 8, "shuffle of at most 8 bytes");
    const unsigned t = emu_t.tid.x, base = t - (t & 31);
    emu_fiber &f = emu_s.f[emu_s.cur];
    uint64_t *buf = emu_s.warp_buf.data() + (size_t)f.parity * emu_s.T;
    f.parity ^= 1;
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    buf[t] = bits;
    emu_wait(EMU_WARP_WAIT);
    V r;
    unsigned src = base + (src_lane & 31);
    if (src >= emu_s.T) src = t;
    memcpy(&r, &buf[src], sizeof r);
    return r;
}
template <typename V> inline V __shfl_xor_sync(unsigned, V v, int o)
{
    return emu_shfl(v, (emu_t.tid.x & 31) ^ (unsigned)o);
}
template <typename V> inline V __shfl_sync(unsigned, V v, int src) { return emu_shfl(v, (unsigned)src); }
template <typename V> inline V __shfl_down_sync(unsigned, V v, unsigned d)
{
    unsigned lane = emu_t.tid.x & 31;
    return emu_shfl(v, lane + d < 32 ? lane + d : lane);
}

/* atomics: one fiber runs at a time */
inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }
inline int atomicExch(int *p, int v) { int o = *p; *p = v; return o; }
inline int atomicCAS(int *p, int c, int v) { int o = *p; if (o == c) *p = v; return o; }
template <typename T> inline T __ldg(const T *p) { return *p; }
template <typename T> inline T __ldcg(const T *p) { return *p; }
inline unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, sizeof u); return u; }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
/* round-to-nearest single operations, never fused (the host compiler contracts nothing here:
 * volatile keeps the product rounded before the sum) */
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
inline double __dsub_rn(double a, double b) { volatile double r = a - b; return r; }
inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
inline double __ddiv_rn(double a, double b) { volatile double r = a / b; return r; }

inline void emu_fiber_main()
{
    (*emu_s.body)();
    emu_s.f[emu_s.cur].state = EMU_DONE;
    emu_to_main();
    abort(); /* a finished fiber is never resumed */
}

#ifdef EMU_ASM_FIBERS
/* a fresh stack whose first emu_swap "returns" into emu_fiber_main with the alignment of a call */
inline void *emu_fiber_init(char *stack)
{
    uintptr_t top = ((uintptr_t)(stack + EMU_STACK)) & ~(uintptr_t)15;
    uint64_t *a = (uint64_t *)(top - 16); /* return address slot: 16-aligned, so rsp ≡ 8 after ret */
    a[0] = (uint64_t)(uintptr_t)&emu_fiber_main;
    for (int i = 1; i <= 6; i++) a[-i] = 0; /* rbp rbx r12 r13 r14 r15 */
    uint32_t mx;
    uint16_t cw;
    __asm__ volatile("stmxcsr %0" : "=m"(mx));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    uint64_t w = (uint64_t)mx | (uint64_t)cw << 32;
    a[-7] = w;
    return (void *)&a[-7];
}
#endif

inline cudaError_t emu_last_error = cudaSuccess;
inline cudaError_t cudaPeekAtLastError_emu() { return emu_last_error; }
#define cudaPeekAtLastError cudaPeekAtLastError_emu
inline cudaError_t cudaFuncSetAttribute_emu() { return cudaSuccess; }
#define cudaFuncSetAttribute(...) cudaFuncSetAttribute_emu() /* variadic: template arguments have commas */

inline dim3 emu_dim(dim3 d) { return d; }
inline dim3 emu_dim(unsigned x) { return dim3(x); }
inline dim3 emu_dim(int x) { return dim3((unsigned)x); }

inline uint64_t emu_next(uint64_t &s)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}
inline void emu_seed_init()
{
    static bool done = false;
    if (done) return;
    done = true;
    const char *e = getenv("EMU_SEED");
    unsigned long long seed = e && *e ? strtoull(e, NULL, 10) : 1;
    emu_s.seeded = seed != 0;
    emu_s.rng = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    if (!emu_s.rng) emu_s.rng = 1;
}
/* a[0..n) in a fresh random order (identity when unseeded) */
inline void emu_permute(std::vector<unsigned> &a, unsigned n)
{
    a.resize(n);
    for (unsigned i = 0; i < n; i++) a[i] = i;
    if (!emu_s.seeded) return;
    for (unsigned i = n; i > 1; i--) std::swap(a[i - 1], a[emu_next(emu_s.rng) % i]);
}

/* Runs body once per CUDA thread of every block (blockDim.x only: our kernels are 1-D blocks). */
inline void emu_run(dim3 grid, dim3 block, size_t smem, const std::function<void()> &body)
{
    emu_seed_init();
    if (block.x < 1 || block.x > 1024 || block.y != 1 || block.z != 1 || grid.x < 1 || grid.y < 1 ||
        grid.z < 1 || grid.y > 65535 || grid.z > 65535 || block.x % 32 != 0 || smem > 227 * 1024) {
        emu_last_error = cudaErrorInvalidConfiguration;
        return;
    }
    /* 128-byte aligned, as the hardware's dynamic shared memory (WMMA needs 32) */
    std::vector<float> dyn(smem / sizeof(float) + 1 + 32);
    emu_dyn_smem = dyn.data() + (128 - (uintptr_t)dyn.data() % 128) % 128 / sizeof(float);
    const unsigned T = block.x;
    emu_s.T = T;
    emu_s.f.resize(T);
    emu_s.warp_buf.assign(2 * (size_t)T, 0);
    while (emu_s.stacks.size() < T) emu_s.stacks.push_back((char *)malloc(EMU_STACK));
    emu_s.body = &body;
    const size_t nb = (size_t)grid.x * grid.y * grid.z;
    std::vector<unsigned> border;
    if (nb > 0xffffffffu) abort();
    emu_permute(border, (unsigned)nb);
    for (size_t bi = 0; bi < nb; bi++) {
        const unsigned b = border[bi];
        const unsigned bx = b % grid.x, by = (b / grid.x) % grid.y, bz = b / (grid.x * grid.y);
        std::fill(dyn.begin(), dyn.end(), NAN); /* uninitialised shared memory */
        for (unsigned t = 0; t < T; t++) {
            emu_fiber &f = emu_s.f[t];
#ifdef EMU_ASM_FIBERS
            f.sp = emu_fiber_init(emu_s.stacks[t]);
#else
            getcontext(&f.ctx);
            f.ctx.uc_stack.ss_sp = emu_s.stacks[t];
            f.ctx.uc_stack.ss_size = EMU_STACK;
            f.ctx.uc_link = NULL;
            makecontext(&f.ctx, emu_fiber_main, 0);
#endif
            f.state = EMU_RUN;
            f.parity = 0;
        }
        emu_t.bid = dim3(bx, by, bz);
        emu_t.bdim = block;
        emu_t.gdim = grid;
        for (;;) {
            emu_permute(emu_s.order, T);
            for (unsigned k = 0; k < T; k++) {
                unsigned t = emu_s.order[k];
                if (emu_s.f[t].state != EMU_RUN) continue;
                emu_s.cur = t;
                emu_t.tid = dim3(t);
#ifdef EMU_ASM_FIBERS
                emu_swap(&emu_s.main_sp, emu_s.f[t].sp);
#else
                swapcontext(&emu_s.main, &emu_s.f[t].ctx);
#endif
            }
            /* everyone waits or is done: open the barriers that can open */
            bool opened = false, all_done = true, all_block = true;
            for (unsigned w = 0; w < T; w += 32) {
                bool warp_ready = true, any = false;
                for (unsigned t = w; t < w + 32 && t < T; t++) {
                    int st = emu_s.f[t].state;
                    if (st == EMU_DONE) continue;
                    any = true;
                    warp_ready &= st == EMU_WARP_WAIT;
                }
                if (any && warp_ready) {
                    for (unsigned t = w; t < w + 32 && t < T; t++)
                        if (emu_s.f[t].state == EMU_WARP_WAIT) emu_s.f[t].state = EMU_RUN;
                    opened = true;
                }
            }
            if (opened) continue;
            for (unsigned t = 0; t < T; t++) {
                int st = emu_s.f[t].state;
                all_done &= st == EMU_DONE;
                all_block &= st == EMU_DONE || st == EMU_BLOCK_WAIT;
            }
            if (all_done) break;
            if (!all_block) {
                fprintf(stderr, "emu: deadlock in block (%u,%u,%u): threads wait at different barriers\n",
                        bx, by, bz);
                abort();
            }
            /* threads that returned count as arrived (as on sm_70+) */
            for (unsigned t = 0; t < T; t++)
                if (emu_s.f[t].state == EMU_BLOCK_WAIT) emu_s.f[t].state = EMU_RUN;
        }
    }
}

/* ------------------------------------------------------------------------ graphs */
enum { EMU_NODE_KERNEL, EMU_NODE_COPY };
struct emu_node {
    int kind;
    std::function<void()> fn;
};
/* the node list of the capture in progress (engine_emu.cc), or NULL */
inline std::vector<emu_node> *emu_capture;

template <typename G, typename B>
inline void emu_launch(G grid_, B block_, size_t smem, cudaStream_t, std::function<void()> body)
{
    dim3 grid = emu_dim(grid_), block = emu_dim(block_);
    if (emu_capture) {
        emu_capture->push_back({EMU_NODE_KERNEL, [grid, block, smem, body] {
                                    emu_cnt.kernels++;
                                    emu_run(grid, block, smem, body);
                                }});
        return;
    }
    emu_cnt.kernels++;
    emu_cnt.direct_launches++;
    emu_run(grid, block, smem, body);
}

#include "tests/cuda_emu/emu_wmma.h"

#endif
