// Device memory read bandwidth, the floor decode is measured against (bench/bench_cuda.sh):
// a grid-stride kernel reads BYTES of device memory (16-byte loads, summed so nothing is
// optimised away) ITER times; prints "read_GBps X" (1 GB = 1e9 bytes) and, for reference,
// "copy_GBps Y" for cudaMemcpy device-to-device (read + write bytes / time).
//   nvcc -O3 -o bandwidth bench/bandwidth.cu && ./bandwidth [GiB]
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

__global__ void read_kernel(const float4 *p, size_t n, float *out)
{
    float s = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.678f) out[0] = s; // practically never: keeps the loads
}

int main(int argc, char **argv)
{
    double gib = argc > 1 ? atof(argv[1]) : 4.0;
    size_t bytes = (size_t)(gib * (1ull << 30)) / 16 * 16, n = bytes / 16;
    void *a, *b;
    float *out;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMalloc(&out, sizeof(float)));
    CK(cudaMemset(a, 0, bytes));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int iter = 10;
    read_kernel<<<sms * 8, 512>>>((const float4 *)a, n, out); // warm-up
    CK(cudaGetLastError());
    CK(cudaEventRecord(e0));
    for (int i = 0; i < iter; i++) read_kernel<<<sms * 8, 512>>>((const float4 *)a, n, out);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("read_GBps %.1f\n", (double)bytes * iter / (ms * 1e-3) / 1e9);
    CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e0));
    for (int i = 0; i < iter; i++) CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("copy_GBps %.1f\n", 2.0 * bytes * iter / (ms * 1e-3) / 1e9);
    return 0;
}
