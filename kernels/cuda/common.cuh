/* kernels/cuda/common.cuh — shared by the CUDA kernel files and the device engine (internal;
 * the C interface is cuda_backend.h).
 *
 * Error handling: library code never exits. Host functions that can fail take
 * `char *err, size_t errlen` and return -1 with one line "FILE:LINE: CALL: cuda message".
 * CUDA_TRY / CUBLAS_TRY wrap a runtime / cuBLAS call; every kernel launcher returns the
 * cudaError_t of the launch (cudaPeekAtLastError), so `CUDA_TRY(launch_xxx(...))` names the
 * launcher and the engine's file and line. Launch errors are reported at once; errors raised
 * while a kernel runs surface at the next synchronising call (set LLM_CUDA_SYNC=1 to
 * synchronise after every launch and pin them to the launch that caused them). */
#ifndef LLM_CUDA_COMMON_CUH
#define LLM_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CUDA_TRY(call)                                                                         \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                  \
                     cudaGetErrorString(e_));                                                  \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

#define CUBLAS_TRY(call)                                                                       \
    do {                                                                                       \
        cublasStatus_t s_ = (call);                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                     \
            snprintf(err, errlen, "%s:%d: %s: cuBLAS status %d (%s)", __FILE__, __LINE__,      \
                     #call, (int)s_, cublasGetStatusString(s_));                               \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

/* Storage types (values of dtype_t in model/model.h). */
enum { CU_F32 = 0, CU_F16 = 1, CU_BF16 = 2 };

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* Calls F<T>(args) with T the storage type of dtype dt (CU_F32/F16/BF16); other values are
 * cudaErrorInvalidValue. Used by the launchers of the typed kernels. */
#define CU_DISPATCH(dt, F, ...)                                                                \
    ((dt) == CU_F32    ? F<float>(__VA_ARGS__)                                                 \
     : (dt) == CU_F16  ? F<__half>(__VA_ARGS__)                                                \
     : (dt) == CU_BF16 ? F<__nv_bfloat16>(__VA_ARGS__)                                         \
                       : cudaErrorInvalidValue)

/* Block-wide sum / max of one float per thread (blockDim.x a multiple of 32, ≤ 1024). red:
 * shared scratch of 32 floats. All threads get the result. Contains __syncthreads: call from
 * every thread of the block. */
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float block_sum(float v, float *red)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* red may still be read by a previous call */
    if (lane == 0) red[w] = v;
    __syncthreads();
    float t = 0.0f;
    for (int i = 0; i < nw; i++) t += red[i]; /* fixed order: deterministic */
    return t;
}
__device__ __forceinline__ float block_max(float v, float *red)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) red[w] = v;
    __syncthreads();
    float t = -INFINITY;
    for (int i = 0; i < nw; i++) t = fmaxf(t, red[i]);
    return t;
}

static inline unsigned cu_blocks(size_t n, unsigned threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

#endif
