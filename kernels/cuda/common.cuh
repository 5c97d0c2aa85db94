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

/* Storage types (the values of dtype_t in kernels/kernels.h): per element, then ggml's block
 * formats (32 elements per block: Q8_0 34 B, Q4_0 18 B, Q4_1 20 B, Q5_0 22 B, Q5_1 24 B; 256 per
 * super-block: Q4_K 144 B, Q5_K 176 B, Q6_K 210 B; layouts in kernels/cuda/quant.cuh). */
enum {
    CU_F32 = 0, CU_F16 = 1, CU_BF16 = 2,
    CU_Q8_0, CU_Q4_0, CU_Q4_1, CU_Q5_0, CU_Q5_1, CU_Q4_K, CU_Q5_K, CU_Q6_K,
    CU_DT_COUNT
};
__host__ __device__ static inline int cu_dt_valid(int dt) { return dt >= 0 && dt < CU_DT_COUNT; }
__host__ __device__ static inline int cu_is_quant(int dt) { return dt >= CU_Q8_0 && dt < CU_DT_COUNT; }
/* elements per block (1 for F32/F16/BF16) and bytes per block */
__host__ __device__ static inline int cu_blk_elems(int dt) { return dt < CU_Q8_0 ? 1 : dt < CU_Q4_K ? 32 : 256; }
__host__ __device__ static inline int cu_blk_bytes(int dt)
{
    switch (dt) {
    case CU_F32: return 4;
    case CU_F16: case CU_BF16: return 2;
    case CU_Q8_0: return 34;
    case CU_Q4_0: return 18;
    case CU_Q4_1: return 20;
    case CU_Q5_0: return 22;
    case CU_Q5_1: return 24;
    case CU_Q4_K: return 144;
    case CU_Q5_K: return 176;
    case CU_Q6_K: return 210;
    default: return 0;
    }
}
/* bytes of a row of `cols` elements (cols a multiple of the block) */
__host__ __device__ static inline size_t cu_row_bytes(int dt, int cols)
{
    return (size_t)(cols / cu_blk_elems(dt)) * (size_t)cu_blk_bytes(dt);
}

/* f32 arithmetic that is never contracted into an FMA (nvcc contracts a*b+c by default), where a
 * result must equal the CPU's operation for operation (dequantization, RoPE). The emulator's host
 * compiler does not contract on x86-64 without -march. */
#ifdef __CUDA_ARCH__
#define cu_mul(a, b) __fmul_rn((a), (b))
#define cu_add(a, b) __fadd_rn((a), (b))
#define cu_sub(a, b) __fsub_rn((a), (b))
#else
#define cu_mul(a, b) ((float)(a) * (float)(b))
#define cu_add(a, b) ((float)(a) + (float)(b))
#define cu_sub(a, b) ((float)(a) - (float)(b))
#endif

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

/* ‖k‖₂ of a stored key [d] as eviction/policy_l2norm.c computes it (squares summed in double in
 * order, the square root rounded to f32), in float-float arithmetic (no double on the device):
 * each square exact as hi + lo (fma), summed with error-free additions, the square root refined
 * once — the f32 result differs from the double one only when the exact value lies within about
 * 2^-44 of a rounding boundary. */
template <typename T> __device__ __forceinline__ float cu_key_norm(const T *k, int d)
{
    float hi = 0.0f, lo = 0.0f;
    for (int i = 0; i < d; i++) {
        const float x = to_f32(k[i]);
        const float p = x * x, pe = fmaf(x, x, -p); /* x² = p + pe exactly */
        const float s = hi + p, bb = s - hi;
        float e = (hi - (s - bb)) + (p - bb); /* hi + p = s + e exactly */
        e += lo + pe;
        hi = s + e;
        lo = e - (hi - s);
    }
    if (hi <= 0.0f) return 0.0f;
    const float r0 = sqrtf(hi);
    const float corr = (fmaf(-r0, r0, hi) + lo) / (2.0f * r0); /* sqrt(hi + lo) ≈ r0 + corr */
    return r0 + corr;
}

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* Element i of a KV array of dtype dt (CU_F32/F16/BF16) as f32, and a store rounding to it. */
__device__ __forceinline__ float kv_load(const void *p, int dt, size_t i)
{
    return dt == CU_F32 ? ((const float *)p)[i]
           : dt == CU_F16 ? __half2float(((const __half *)p)[i])
                          : __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}
__device__ __forceinline__ float kv_round(int dt, float v)
{
    return dt == CU_F16 ? __half2float(__float2half_rn(v))
           : dt == CU_BF16 ? __bfloat162float(__float2bfloat16_rn(v)) : v;
}
__device__ __forceinline__ void kv_store(void *p, int dt, size_t i, float v)
{
    if (dt == CU_F32) ((float *)p)[i] = v;
    else if (dt == CU_F16) ((__half *)p)[i] = __float2half_rn(v);
    else ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
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
