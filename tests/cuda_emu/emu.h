/* tests/cuda_emu/emu.h — runs the CUDA kernels of kernels/cuda on the CPU, for the review tests
 * of a machine without a GPU (tests/test_cuda_emu.sh). Not a CUDA implementation: just enough
 * for our kernels, with every CUDA thread of a block an OS thread, so __syncthreads and the warp
 * shuffles really synchronise (a missing barrier shows up as a wrong or racy result, a barrier
 * that not all threads reach as a hang). Blocks run one after the other; static __shared__
 * arrays are plain statics (one block at a time), the dynamic one is a per-launch buffer.
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
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
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
    std::barrier<> *block_bar;
    std::barrier<> *warp_bar; /* this thread's warp */
    float *warp_buf;          /* [32] exchange slots of this thread's warp */
};
inline thread_local emu_ctx emu_t;
inline float *emu_dyn_smem;

#define threadIdx (emu_t.tid)
#define blockIdx (emu_t.bid)
#define blockDim (emu_t.bdim)
#define gridDim (emu_t.gdim)

inline void __syncthreads() { emu_t.block_bar->arrive_and_wait(); }

/* every lane of the warp must call it (as the kernels require: full-mask shuffles) */
inline float __shfl_xor_sync(unsigned, float v, int o)
{
    unsigned lane = emu_t.tid.x & 31;
    emu_t.warp_bar->arrive_and_wait(); /* previous reads done */
    emu_t.warp_buf[lane] = v;
    emu_t.warp_bar->arrive_and_wait();
    return emu_t.warp_buf[lane ^ (unsigned)o];
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
    if (block.x < 1 || block.x > 1024 || block.y != 1 || block.z != 1 || grid.y > 65535 ||
        grid.z > 65535 || block.x % 32 != 0) {
        emu_last_error = cudaErrorInvalidConfiguration;
        return;
    }
    std::vector<float> dyn(smem / sizeof(float) + 1, NAN); /* uninitialised shared memory */
    emu_dyn_smem = dyn.data();
    unsigned nw = (block.x + 31) / 32;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                std::fill(dyn.begin(), dyn.end(), NAN);
                std::barrier<> bar((std::ptrdiff_t)block.x);
                std::vector<std::unique_ptr<std::barrier<>>> wb;
                for (unsigned w = 0; w < nw; w++) wb.emplace_back(new std::barrier<>(32));
                std::vector<float> wbuf(32 * nw);
                std::vector<std::thread> th;
                for (unsigned t = 0; t < block.x; t++)
                    th.emplace_back([&, t] {
                        emu_t.tid = dim3(t);
                        emu_t.bid = dim3(bx, by, bz);
                        emu_t.bdim = block;
                        emu_t.gdim = grid;
                        emu_t.block_bar = &bar;
                        emu_t.warp_bar = wb[t / 32].get();
                        emu_t.warp_buf = &wbuf[32 * (t / 32)];
                        body();
                        /* a thread that returns early drops out of later barriers */
                        bar.arrive_and_drop();
                        emu_t.warp_bar->arrive_and_drop();
                    });
                for (auto &x : th) x.join();
            }
}

#endif
