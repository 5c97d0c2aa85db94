/* The whole CUDA backend (kernels + model/cuda/engine.cu + engine_mirror.cu) on the CPU: the
 * kernels through tests/cuda_emu/emu.h, and the CUDA runtime / cuBLAS calls the engine makes
 * replaced by host versions here (device memory = host memory, every stream synchronous,
 * cublasGemmEx as a plain loop in fp32). Linked with the CUDA=1 objects of the C code into
 * build/emu/llm-run-emu, so `--device cuda` runs the device engine's host logic (mirror, keep-lists,
 * gathers, rounds, replays) and its kernels end to end against `--device cpu`
 * (tests/test_cuda_emu.sh). Fresh device allocations are filled with NaN bytes, so a read of
 * memory the engine never wrote shows up in the logits. */
#include "tests/cuda_emu/emu.h"

#include <cstdio>
#include <cstdlib>

#include "elementwise.inc"
#include "attn_prefill.inc"
#include "attn_decode.inc"
#include "select.inc"
#include "sample.inc"

#include "model/cuda/engine.cu"
#include "model/cuda/engine_mirror.cu"

extern "C" {
cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated CUDA error"; }
cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = malloc(n);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n); /* NaN floats, -1 ints */
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) { memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t)
{
    memmove(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, cudaMemcpyKind,
                              cudaStream_t)
{
    if (w > dp || w > sp) return cudaErrorInvalidPitchValue;
    for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = (cudaStream_t)0x1; return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return emu_last_error; }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return emu_last_error; }
cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
    const char *lim = getenv("EMU_GPU_FREE"); /* to test the does-not-fit path */
    *t = (size_t)64 << 30;
    *f = lim ? (size_t)strtoull(lim, NULL, 10) : *t;
    return cudaSuccess;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) { *h = (cublasHandle_t)0x1; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy_v2(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t) { return "emulated cuBLAS status"; }

static float emu_elem(const void *p, cudaDataType t, size_t i)
{
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    if (t == CUDA_R_16F) return __half2float(((const __half *)p)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

/* column-major C[m×n] = alpha·op(A)·op(B) + beta·C, the cases the engine uses (A transposed) */
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B,
                            cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
                            cublasComputeType_t comp, cublasGemmAlgo_t)
{
    if (ta != CUBLAS_OP_T || tb != CUBLAS_OP_N || ct != CUDA_R_32F || comp != CUBLAS_COMPUTE_32F || at != bt ||
        lda < k || ldb < k || ldc < m)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const float a = *(const float *)alpha, b = *(const float *)beta;
    float *c = (float *)C;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float s = 0.0f;
            for (int p = 0; p < k; p++) s += emu_elem(A, at, (size_t)i * lda + p) * emu_elem(B, bt, (size_t)j * ldb + p);
            float &o = c[(size_t)j * ldc + i];
            o = b == 0.0f ? a * s : a * s + b * o;
        }
    return CUBLAS_STATUS_SUCCESS;
}
}
