/* Greedy sampling on the device: argmax of the logits row (lowest id on ties, as
 * model/sampler.c), so a greedy decode step copies one int back instead of the row. */
#include "kernels/cuda/kernels_cuda.cuh"

#define AM_THREADS 1024

/* one block: strided scan, then a tree reduction with the (value desc, index asc) order */
__global__ void __launch_bounds__(AM_THREADS) argmax_kernel(const float *x, int n, int *out)
{
    __shared__ float sv[AM_THREADS];
    __shared__ int si[AM_THREADS];
    const int tid = threadIdx.x;
    float bv = -INFINITY;
    int bi = -1;
    for (int i = tid; i < n; i += AM_THREADS) {
        float v = x[i];
        if (bi < 0 ? !isnan(v) : v > bv) { /* ascending i per thread: first max kept */
            bv = v;
            bi = i;
        }
    }
    sv[tid] = bv;
    si[tid] = bi;
    __syncthreads();
    for (int w = AM_THREADS / 2; w > 0; w >>= 1) {
        if (tid < w) {
            float ov = sv[tid + w];
            int oi = si[tid + w];
            if (oi >= 0 && (si[tid] < 0 || ov > sv[tid] || (ov == sv[tid] && oi < si[tid]))) {
                sv[tid] = ov;
                si[tid] = oi;
            }
        }
        __syncthreads();
    }
    if (tid == 0) out[0] = si[0] < 0 ? 0 : si[0];
}

cudaError_t launch_argmax(const float *x, int n, int *out, cudaStream_t s)
{
    argmax_kernel<<<1, AM_THREADS, 0, s>>>(x, n, out);
    return cudaPeekAtLastError();
}
