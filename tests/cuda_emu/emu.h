/* tests/cuda_emu/emu.h — runs the CUDA kernels of kernels/cuda on the CPU, for the review tests
 * of a machine without a GPU (tests/test_cuda_emu.sh). Not a CUDA implementation: just enough
 * for our kernels, with every CUDA thread of a block a fiber that runs until its next barrier, so
 * __syncthreads and the warp shuffles really synchronise (threads run in order 0..n-1 between
 * barriers; a barrier that not all threads reach aborts with "deadlock"). Blocks run one after
 * the other; static __shared__ arrays are plain statics (one block at a time), the dynamic one is
 * a per-launch buffer filled with NaN before each block.
 * The kernel sources are included after scripts in tests/test_cuda_emu.sh rewrote
 * `k<<<cfg>>>(args);` into `emu_launch(cfg, [&] { k(args); });` and the extern __shared__
 * declarations into pointers to the dynamic buffer. */
#ifndef LLM_CUDA_EMU_H
#define LLM_CUDA_EMU_H

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <cstdio>
#include <ucontext.h>
#include <vector>

#undef __global__
#undef __device__
#undef __shared__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
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

/* The CUDA threads of a block are fibers (ucontext) on the calling thread: each runs until it
 * waits at a barrier or returns; a block barrier opens when every live thread of the block waits
 * at it, a warp barrier when every live lane of the warp waits at it; anything else (some threads
 * at __syncthreads, others at a shuffle or gone) is reported as a deadlock. */
/* the scheduler's locals live across swapcontext, which saves and restores the callee-saved
 * registers (glibc), so they are not clobbered */
#pragma GCC diagnostic ignored "-Wclobbered"
enum { EMU_RUN, EMU_BLOCK_WAIT, EMU_WARP_WAIT, EMU_DONE };
struct emu_fiber {
    ucontext_t ctx;
    int state;
};
struct emu_sched {
    ucontext_t main;
    std::vector<emu_fiber> f;
    std::vector<char *> stacks;
    std::vector<float> warp_buf;
    const std::function<void()> *body;
    unsigned cur;
};
inline emu_sched emu_s;
constexpr size_t EMU_STACK = 128 * 1024;

inline void emu_wait(int kind)
{
    emu_fiber &f = emu_s.f[emu_s.cur];
    f.state = kind;
    swapcontext(&f.ctx, &emu_s.main);
}
inline void __syncthreads() { emu_wait(EMU_BLOCK_WAIT); }

/* every lane of the warp must call it (as the kernels require: full-mask shuffles) */
inline float __shfl_xor_sync(unsigned, float v, int o)
{
    unsigned t = emu_t.tid.x, lane = t & 31, base = t - lane;
    emu_wait(EMU_WARP_WAIT); /* previous reads done */
    emu_s.warp_buf[base + lane] = v;
    emu_wait(EMU_WARP_WAIT);
    return emu_s.warp_buf[base + (lane ^ (unsigned)o)];
}

inline void emu_fiber_main()
{
    (*emu_s.body)();
    emu_s.f[emu_s.cur].state = EMU_DONE;
    swapcontext(&emu_s.f[emu_s.cur].ctx, &emu_s.main);
}

inline cudaError_t emu_last_error = cudaSuccess;
inline cudaError_t cudaPeekAtLastError_emu() { return emu_last_error; }
#define cudaPeekAtLastError cudaPeekAtLastError_emu
template <typename F> inline cudaError_t cudaFuncSetAttribute_emu(F, int, int) { return cudaSuccess; }
#define cudaFuncSetAttribute(f, a, v) cudaFuncSetAttribute_emu(f, 0, v)

inline dim3 emu_dim(dim3 d) { return d; }
inline dim3 emu_dim(unsigned x) { return dim3(x); }
inline dim3 emu_dim(int x) { return dim3((unsigned)x); }

/* Runs body once per CUDA thread of every block (blockDim.x only: our kernels are 1-D blocks). */
template <typename G, typename B>
inline void emu_launch(G grid_, B block_, size_t smem, cudaStream_t, std::function<void()> body)
{
    dim3 grid = emu_dim(grid_), block = emu_dim(block_);
    if (block.x < 1 || block.x > 1024 || block.y != 1 || block.z != 1 || grid.x < 1 || grid.y < 1 ||
        grid.z < 1 || grid.y > 65535 || grid.z > 65535 || block.x % 32 != 0 || smem > 227 * 1024) {
        emu_last_error = cudaErrorInvalidConfiguration;
        return;
    }
    std::vector<float> dyn(smem / sizeof(float) + 1);
    emu_dyn_smem = dyn.data();
    const unsigned T = block.x;
    emu_s.f.resize(T);
    emu_s.warp_buf.assign(T, 0.0f);
    while (emu_s.stacks.size() < T) emu_s.stacks.push_back((char *)malloc(EMU_STACK));
    emu_s.body = &body;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                std::fill(dyn.begin(), dyn.end(), NAN); /* uninitialised shared memory */
                for (unsigned t = 0; t < T; t++) {
                    emu_fiber &f = emu_s.f[t];
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = emu_s.stacks[t];
                    f.ctx.uc_stack.ss_size = EMU_STACK;
                    f.ctx.uc_link = NULL;
                    makecontext(&f.ctx, emu_fiber_main, 0);
                    f.state = EMU_RUN;
                }
                for (;;) {
                    for (unsigned t = 0; t < T; t++)
                        if (emu_s.f[t].state == EMU_RUN) {
                            emu_s.cur = t;
                            emu_t.tid = dim3(t);
                            emu_t.bid = dim3(bx, by, bz);
                            emu_t.bdim = block;
                            emu_t.gdim = grid;
                            swapcontext(&emu_s.main, &emu_s.f[t].ctx);
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

#endif
