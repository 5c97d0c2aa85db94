/* Weights of any storage type as whole rows (kernels_cuda.cuh): the embedding lookup, tiles of
 * rows dequantized to f16/bf16/f32 for the prefill GEMMs (cuBLAS then runs on the tile), and
 * the activations split into two 16-bit halves (hi + lo) so a 16-bit tensor-core GEMM keeps
 * them at (nearly) f32 precision; bias rows. Dequantization: kernels/cuda/quant.cuh. */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/quant.cuh"

template <int DT> __device__ __forceinline__ int deq_units(const uint8_t *row, int nu, float *out, int outdt, int tid, int nt)
{
    for (int v = tid; v < nu; v += nt) {
        float w[8];
        int e0, e1;
        unit_deq<DT>(row, v, w, e0, e1);
        for (int k = 0; k < 4; k++) {
            kv_store(out, outdt, (size_t)e0 + k, w[k]);
            kv_store(out, outdt, (size_t)e1 + k, w[4 + k]);
        }
    }
    return 0;
}

/* row r of a matrix [*][cols] of dtype dt to out[cols] (f32/f16/bf16), by the nt threads tid */
__device__ __forceinline__ void deq_row(const void *w, int dt, int r, int cols, void *out, int outdt, int tid, int nt)
{
    const uint8_t *row = (const uint8_t *)w + (size_t)r * cu_row_bytes(dt, cols);
    if (dt <= CU_BF16 && (cols & 7)) {
        for (int e = tid; e < cols; e += nt) kv_store(out, outdt, (size_t)e, plain_elem(row, dt, e));
        return;
    }
    (void)CU_DISPATCH_ALL(dt, 0, deq_units, row, cols >> 3, (float *)out, outdt, tid, nt);
}

/* one block per token; the token ids are device memory (a decode step reads its token from the
 * step parameters, so a replayed graph needs no new arguments) */
__global__ void embed_kernel(const void *table, int dt, const int *tokens, int dim, float *x)
{
    deq_row(table, dt, tokens[blockIdx.x], dim, x + (size_t)blockIdx.x * dim, CU_F32, threadIdx.x, blockDim.x);
}

cudaError_t launch_embed(const void *table, int dt, const int *tokens, int n, int dim, float *x,
                         cudaStream_t s)
{
    if (n < 1) return cudaSuccess;
    if (!cu_dt_valid(dt) || dim % cu_blk_elems(dt)) return cudaErrorInvalidValue;
    embed_kernel<<<n, 256, 0, s>>>(table, dt, tokens, dim, x);
    return cudaPeekAtLastError();
}

/* grid min(nr, 65535) blocks: rows r0 + i of w (stride over i) to out[i][cols] */
__global__ void dequant_rows_kernel(const void *w, int dt, int cols, int r0, int nr, void *out, int outdt)
{
    const size_t es = outdt == CU_F32 ? 4 : 2;
    for (int i = blockIdx.x; i < nr; i += gridDim.x)
        deq_row(w, dt, r0 + i, cols, (char *)out + (size_t)i * cols * es, outdt, threadIdx.x, blockDim.x);
}

cudaError_t launch_dequant_rows(const void *w, int dt, int cols, int r0, int nr, void *out, int out_dt,
                                cudaStream_t s)
{
    if (nr < 1) return cudaSuccess;
    if (!cu_dt_valid(dt) || cols % cu_blk_elems(dt) || out_dt > CU_BF16 || out_dt < 0) return cudaErrorInvalidValue;
    dequant_rows_kernel<<<nr < 65535 ? nr : 65535, 256, 0, s>>>(w, dt, cols, r0, nr, out, out_dt);
    return cudaPeekAtLastError();
}

/* hi = x rounded to dt, lo = (x − hi) rounded to dt (Dekker-style split: hi + lo carries 2 × the
 * 16-bit type's significand: 22 bits for f16, 16 for bf16) */
__global__ void split_kernel(const float *x, size_t n, int dt, void *hi, void *lo)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = x[i], h = kv_round(dt, v);
        kv_store(hi, dt, i, h);
        kv_store(lo, dt, i, v - h);
    }
}

static unsigned dq_grid(size_t n)
{
    unsigned b = cu_blocks(n, 256);
    return b < 1 ? 1 : b > 65535 ? 65535 : b;
}

cudaError_t launch_split_hilo(const float *x, size_t n, int dt, void *hi, void *lo, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    if (dt != CU_F16 && dt != CU_BF16) return cudaErrorInvalidValue;
    split_kernel<<<dq_grid(n), 256, 0, s>>>(x, n, dt, hi, lo);
    return cudaPeekAtLastError();
}

__global__ void bias_kernel(float *y, const float *b, size_t n, int dim)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += b[i % dim];
}

cudaError_t launch_add_bias(float *y, const float *bias, int n, int dim, cudaStream_t s)
{
    if (n < 1 || dim < 1) return cudaSuccess;
    size_t tot = (size_t)n * dim;
    bias_kernel<<<dq_grid(tot), 256, 0, s>>>(y, bias, tot, dim);
    return cudaPeekAtLastError();
}
