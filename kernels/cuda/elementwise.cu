/* Elementwise kernels of the forward pass (prefill; a decode step fuses them into its GEMVs):
 * RMSNorm, RoPE, SwiGLU, residual add, f32 → f16/bf16 cast and rounding. Same formulas and evaluation order as kernels/cpu/ops.c where it
 * matters (RMSNorm: w * (x * inv); RoPE from the same host-made tables). */
#include "kernels/cuda/kernels_cuda.cuh"

/* One block per row; sum of squares in f32 (block reduction in fixed order). */
__global__ void rmsnorm_kernel(const float *x, const float *w, float *out, int dim, float eps)
{
    __shared__ float red[32];
    const float *xr = x + (size_t)blockIdx.x * dim;
    float *o = out + (size_t)blockIdx.x * dim;
    float ss = 0.0f;
    for (int d = threadIdx.x; d < dim; d += blockDim.x) ss += xr[d] * xr[d];
    ss = block_sum(ss, red);
    float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    /* every thread has read its own xr[d] before; out may alias x element-wise */
    for (int d = threadIdx.x; d < dim; d += blockDim.x) o[d] = w[d] * (xr[d] * inv);
}

cudaError_t launch_rmsnorm(const float *x, const float *w, float *out, int n, int dim, float eps,
                           cudaStream_t s)
{
    if (n < 1) return cudaSuccess;
    rmsnorm_kernel<<<n, 256, 0, s>>>(x, w, out, dim, eps);
    return cudaPeekAtLastError();
}

/* grid (n, n_heads); threads over the head_dim/2 pairs. */
__global__ void rope_kernel(float *x, int n_heads, int head_dim, const float *cos_t,
                            const float *sin_t, int row0)
{
    int half = head_dim / 2, i = blockIdx.x, h = blockIdx.y;
    const float *c = cos_t + (size_t)(row0 + i) * half, *sn = sin_t + (size_t)(row0 + i) * half;
    float *v = x + ((size_t)i * n_heads + h) * head_dim;
    for (int d = threadIdx.x; d < half; d += blockDim.x) {
        float a = v[d], b = v[d + half];
        v[d] = cu_sub(cu_mul(a, c[d]), cu_mul(b, sn[d]));
        v[d + half] = cu_add(cu_mul(b, c[d]), cu_mul(a, sn[d]));
    }
}

cudaError_t launch_rope(float *x, int n, int n_heads, int head_dim, const float *cos_t,
                        const float *sin_t, int row0, cudaStream_t s)
{
    if (n < 1) return cudaSuccess;
    int threads = head_dim / 2 < 128 ? (head_dim / 2 + 31) / 32 * 32 : 128;
    rope_kernel<<<dim3(n, n_heads), threads, 0, s>>>(x, n_heads, head_dim, cos_t, sin_t, row0);
    return cudaPeekAtLastError();
}

__global__ void rope_rank_kernel(float *x, int n_heads, int div, int head_dim, const float *cos_t,
                                 const float *sin_t, const int *base, int delta)
{
    int half = head_dim / 2, i = blockIdx.x, h = blockIdx.y;
    size_t row = (size_t)(base[h / div] + delta + i);
    const float *c = cos_t + row * half, *sn = sin_t + row * half;
    float *v = x + ((size_t)i * n_heads + h) * head_dim;
    for (int d = threadIdx.x; d < half; d += blockDim.x) {
        float a = v[d], b = v[d + half];
        v[d] = cu_sub(cu_mul(a, c[d]), cu_mul(b, sn[d]));
        v[d + half] = cu_add(cu_mul(b, c[d]), cu_mul(a, sn[d]));
    }
}

cudaError_t launch_rope_rank(float *x, int n, int n_heads, int div, int head_dim,
                             const float *cos_t, const float *sin_t, const int *base, int delta,
                             cudaStream_t s)
{
    if (n < 1) return cudaSuccess;
    if (div < 1) return cudaErrorInvalidValue;
    int threads = head_dim / 2 < 128 ? (head_dim / 2 + 31) / 32 * 32 : 128;
    rope_rank_kernel<<<dim3(n, n_heads), threads, 0, s>>>(x, n_heads, div, head_dim, cos_t, sin_t,
                                                         base, delta);
    return cudaPeekAtLastError();
}

/* grid (n_kv_heads, min(max_len, 65535)), 32 threads: block (g, y) rotates slots y, y + gridDim.y,
 * ...; the rank of a slot is counted by the block over the region's positions. */
template <typename T>
__global__ void rope_live_kernel(float *kr, const T *kc, const int32_t *pos, const size_t *off,
                                 const int *len, int n_extra, int head_dim, const float *cos_t,
                                 const float *sin_t)
{
    __shared__ float red[32];
    const int g = blockIdx.x, L = len[g] + n_extra, half = head_dim / 2;
    const int32_t *P = pos + off[g];
    for (int j = blockIdx.y; j < L; j += gridDim.y) {
        const int32_t pj = P[j];
        float cnt = 0.0f;
        for (int i = threadIdx.x; i < L; i += blockDim.x) cnt += P[i] < pj ? 1.0f : 0.0f;
        const size_t rank = (size_t)block_sum(cnt, red);
        const float *c = cos_t + rank * half, *sn = sin_t + rank * half;
        const T *src = kc + (off[g] + (size_t)j) * head_dim;
        float *dst = kr + (off[g] + (size_t)j) * head_dim;
        for (int d = threadIdx.x; d < half; d += blockDim.x) {
            float a = to_f32(src[d]), b = to_f32(src[d + half]);
            dst[d] = cu_sub(cu_mul(a, c[d]), cu_mul(b, sn[d]));
            dst[d + half] = cu_add(cu_mul(b, c[d]), cu_mul(a, sn[d]));
        }
    }
}

template <typename T>
static cudaError_t rope_live_go(float *kr, const void *kc, const int32_t *pos, const size_t *off,
                                const int *len, int n_extra, int n_kv_heads, int head_dim,
                                const float *cos_t, const float *sin_t, int max_len, cudaStream_t s)
{
    int gy = max_len < 65535 ? max_len : 65535;
    rope_live_kernel<T><<<dim3(n_kv_heads, gy), 32, 0, s>>>(kr, (const T *)kc, pos, off, len, n_extra,
                                                           head_dim, cos_t, sin_t);
    return cudaPeekAtLastError();
}

cudaError_t launch_rope_live(float *kr, const void *kc, int kv_dt, const int32_t *pos,
                             const size_t *off, const int *len, int n_extra, int n_kv_heads,
                             int head_dim, const float *cos_t, const float *sin_t, int max_len,
                             cudaStream_t s)
{
    if (max_len < 1) return cudaSuccess;
    return CU_DISPATCH(kv_dt, rope_live_go, kr, kc, pos, off, len, n_extra, n_kv_heads, head_dim, cos_t,
                       sin_t, max_len, s);
}

__global__ void swiglu_kernel(float *gate, const float *up, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

__global__ void add_kernel(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}

/* grid-stride loops: at most 65535 blocks of 256 threads */
static unsigned grid_for(size_t n)
{
    unsigned b = cu_blocks(n, 256);
    return b < 1 ? 1 : b > 65535 ? 65535 : b;
}

cudaError_t launch_swiglu(float *gate, const float *up, size_t n, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    swiglu_kernel<<<grid_for(n), 256, 0, s>>>(gate, up, n);
    return cudaPeekAtLastError();
}

cudaError_t launch_add(float *y, const float *x, size_t n, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    add_kernel<<<grid_for(n), 256, 0, s>>>(y, x, n);
    return cudaPeekAtLastError();
}

template <typename T> __global__ void cast_kernel(const float *x, T *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_f32<T>(x[i]);
}

template <typename T> static cudaError_t cast_go(const float *x, void *y, size_t n, cudaStream_t s)
{
    cast_kernel<T><<<grid_for(n), 256, 0, s>>>(x, (T *)y, n);
    return cudaPeekAtLastError();
}

cudaError_t launch_cast(const float *x, void *y, int dt, size_t n, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    return CU_DISPATCH(dt, cast_go, x, y, n, s);
}

template <typename T> __global__ void round_kernel(float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = to_f32(from_f32<T>(x[i]));
}

template <typename T> static cudaError_t round_go(float *x, size_t n, cudaStream_t s)
{
    round_kernel<T><<<grid_for(n), 256, 0, s>>>(x, n);
    return cudaPeekAtLastError();
}

cudaError_t launch_round(float *x, int dt, size_t n, cudaStream_t s)
{
    if (n == 0 || dt == CU_F32) return cudaSuccess;
    return CU_DISPATCH(dt, round_go, x, n, s);
}
