/* Matrix-vector products of a decode step (one token), for weights of every storage type, with
 * what comes before and after them fused in (kernels_cuda.cuh, launch_gemv):
 *   prologue: the input vector staged in shared memory as f32 (padded, quant.cuh xpad), RMSNorm
 *             applied on the way when asked (every block computes the row's norm itself: the
 *             vector is small, a separate normalisation kernel and its round trip are not);
 *   body:     one warp per output row (two for the paired epilogues); lanes take consecutive
 *             8-element units of the row (coalesced), dequantize them in registers and
 *             accumulate weight × activation in f32; a warp-shuffle sum;
 *   epilogue: store, residual add (+ bias), SwiGLU of a gate row and an up row, or the attention
 *             input: q/k/v rows + biases, RoPE of the pair (d, d + head_dim/2) at the step's
 *             position, k/v rounded to the cache's dtype and, in append mode, written straight
 *             into the cache slot len[g] with its position (the policies' device decode step).
 * Activations stay f32 (never rounded to 16 bits or quantized to 8 as the CPU's block-format
 * kernels do); weights are exact (quant.cuh). */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/quant.cuh"

#define GV_WARPS 8
#define GV_THREADS (GV_WARPS * 32)

template <int DT> __device__ __forceinline__ float units_dot(const uint8_t *row, int n_units, const float *xs, int lane)
{
    float acc = 0.0f;
#pragma unroll 2
    for (int v = lane; v < n_units; v += 32) {
        float w[8];
        int e0, e1;
        unit_deq<DT>(row, v, w, e0, e1);
        const float *x0 = xs + xpad(e0), *x1 = xs + xpad(e1);
        acc = fmaf(w[0], x0[0], acc);
        acc = fmaf(w[1], x0[1], acc);
        acc = fmaf(w[2], x0[2], acc);
        acc = fmaf(w[3], x0[3], acc);
        acc = fmaf(w[4], x1[0], acc);
        acc = fmaf(w[5], x1[1], acc);
        acc = fmaf(w[6], x1[2], acc);
        acc = fmaf(w[7], x1[3], acc);
    }
    return acc;
}

/* dot(row r of m, x) summed over the warp (every lane gets it) */
__device__ __forceinline__ float row_dot(const cu_mat &m, int r, const float *xs, int lane)
{
    const uint8_t *row = (const uint8_t *)m.w + (size_t)r * cu_row_bytes(m.dt, m.cols);
    float acc;
    if (m.dt <= CU_BF16 && (m.cols & 7)) { /* plain rows of a length not a multiple of 8 */
        acc = 0.0f;
        for (int e = lane; e < m.cols; e += 32) acc = fmaf(plain_elem(row, m.dt, e), xs[xpad(e)], acc);
    } else {
        const int nu = m.cols >> 3;
        acc = CU_DISPATCH_ALL(m.dt, 0.0f, units_dot, row, nu, xs, lane);
    }
    return warp_sum(acc);
}

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

__global__ void __launch_bounds__(GV_THREADS, 1) gemv_kernel(gv_args a)
{
    extern __shared__ float sm[]; /* the input, padded: [cols + cols/32] */
    __shared__ float red[32];
    const int cols = a.m[0].cols, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float inv = 1.0f;
    if (a.norm_w) {
        float ss = 0.0f;
        for (int d = tid; d < cols; d += GV_THREADS) ss += a.x[d] * a.x[d];
        ss = block_sum(ss, red);
        inv = 1.0f / sqrtf(ss / (float)cols + a.eps);
    }
    for (int d = tid; d < cols; d += GV_THREADS)
        sm[xpad(d)] = a.norm_w ? a.norm_w[d] * (a.x[d] * inv) : a.x[d];
    __syncthreads();

    /* tasks: one row (STORE, ADD), a gate/up row pair (SWIGLU), a RoPE pair of q, k or v (QKV) */
    int n_tasks;
    const int hd = a.qkv.head_dim, half = hd / 2;
    if (a.epi == GV_QKV) n_tasks = (a.m[0].rows + a.m[1].rows + a.m[2].rows) / 2;
    else n_tasks = a.m[0].rows;
    for (int task = blockIdx.x * GV_WARPS + warp; task < n_tasks; task += gridDim.x * GV_WARPS) {
        if (a.epi == GV_STORE || a.epi == GV_ADD) {
            float y = row_dot(a.m[0], task, sm, lane);
            if (lane == 0) {
                if (a.bias) y += a.bias[task];
                if (a.epi == GV_ADD) a.y[0][task] += y;
                else a.y[0][task] = y;
            }
        } else if (a.epi == GV_SWIGLU) {
            float g = row_dot(a.m[0], task, sm, lane), u = row_dot(a.m[1], task, sm, lane);
            if (lane == 0) a.y[0][task] = silu_mul(g, u);
        } else { /* GV_QKV */
            int mi = 0, t = task;
            if (t >= a.m[0].rows / 2) {
                t -= a.m[0].rows / 2;
                mi = 1;
                if (t >= a.m[1].rows / 2) {
                    t -= a.m[1].rows / 2;
                    mi = 2;
                }
            }
            const int head = t / half, d = t - head * half, ra = head * hd + d, rb = ra + half;
            /* selected by value: indexing the parameter arrays with a run-time index would copy
             * them to local memory */
            const cu_mat m = mi == 0 ? a.m[0] : mi == 1 ? a.m[1] : a.m[2];
            float ya = row_dot(m, ra, sm, lane), yb = row_dot(m, rb, sm, lane);
            if (lane == 0) {
                const gv_qkv &k = a.qkv;
                const int pos = k.step ? k.step[1] : 0;
                const float *bias = mi == 0 ? k.bias[0] : mi == 1 ? k.bias[1] : k.bias[2];
                float *y = mi == 0 ? a.y[0] : mi == 1 ? a.y[1] : a.y[2];
                if (bias) ya += bias[ra], yb += bias[rb];
                if (mi < 2 && k.cos_t) { /* RoPE, rotate_half pairs, as kernels/cpu/ops.c rope_apply */
                    const float c = k.cos_t[(size_t)pos * half + d], s = k.sin_t[(size_t)pos * half + d];
                    const float na = cu_sub(cu_mul(ya, c), cu_mul(yb, s));
                    const float nb = cu_add(cu_mul(yb, c), cu_mul(ya, s));
                    ya = na, yb = nb;
                }
                if (mi > 0) { /* the values the cache will hold */
                    ya = kv_round(k.kv_dt, ya);
                    yb = kv_round(k.kv_dt, yb);
                }
                y[ra] = ya;
                y[rb] = yb;
                if (mi > 0 && k.kc) { /* append at slot len[head] (the attention's kernel counts it) */
                    const size_t slot = k.off[head] + (size_t)k.len[head];
                    void *dst = mi == 1 ? k.kc : k.vc;
                    kv_store(dst, k.kv_dt, slot * hd + d, ya);
                    kv_store(dst, k.kv_dt, slot * hd + d + half, yb);
                    if (mi == 1 && d == 0) {
                        k.pos[slot] = pos;
                        if (k.score) k.score[slot] = 0.0f;
                    }
                }
            }
        }
    }
}

static size_t gemv_smem(int cols) { return ((size_t)cols + (size_t)cols / 32 + 1) * sizeof(float); }

cudaError_t gemv_prepare(int max_cols)
{
    size_t smem = gemv_smem(max_cols);
    if (smem <= 48 * 1024) return cudaSuccess;
    return cudaFuncSetAttribute(gemv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
}

cudaError_t launch_gemv(const gv_args *a, int max_blocks, cudaStream_t s)
{
    const int cols = a->m[0].cols;
    int n_tasks = a->m[0].rows;
    for (int i = 0; i < a->nm; i++) {
        const cu_mat &m = a->m[i];
        if (!cu_dt_valid(m.dt) || m.cols != cols || m.cols % cu_blk_elems(m.dt)) return cudaErrorInvalidValue;
    }
    if (a->epi == GV_QKV) {
        if (a->nm != 3 || a->qkv.head_dim < 2 || a->qkv.head_dim % 2) return cudaErrorInvalidValue;
        for (int i = 0; i < 3; i++)
            if (a->m[i].rows % a->qkv.head_dim) return cudaErrorInvalidValue;
        n_tasks = (a->m[0].rows + a->m[1].rows + a->m[2].rows) / 2;
    } else if (a->epi == GV_SWIGLU && (a->nm != 2 || a->m[1].rows != a->m[0].rows)) {
        return cudaErrorInvalidValue;
    }
    if (n_tasks < 1) return cudaSuccess;
    int blocks = (n_tasks + GV_WARPS - 1) / GV_WARPS;
    if (max_blocks > 0 && blocks > max_blocks) blocks = max_blocks;
    const gv_args args = *a; /* by value: a graph replays the launch after the caller's copy is gone */
    gemv_kernel<<<blocks, GV_THREADS, gemv_smem(cols), s>>>(args);
    return cudaPeekAtLastError();
}
