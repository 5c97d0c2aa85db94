/* The whole CUDA backend (kernels + model/cuda/engine_*.cu) on the CPU: the kernels through
 * tests/cuda_emu/emu.h, and the CUDA runtime / cuBLAS calls the engine makes replaced by host
 * versions here (device memory = host memory, every stream synchronous, cublasGemmEx as a loop
 * in fp32, graphs as recorded launches replayed in order). Linked with the CUDA=1 objects of the
 * C code into build/emu/llm-run-emu, so `--device cuda` runs the device engine's host logic
 * (mirror, keep-lists, gathers, rounds, replays, graph capture) and its kernels end to end
 * against `--device cpu` (tests/test_cuda_emu.sh). Fresh device allocations are filled with NaN
 * bytes, so a read of memory the engine never wrote shows up in the logits.
 *
 * Environment:
 *   EMU_STATS=FILE   at exit, one JSON object of counters (emu.h emu_counters: kernels run,
 *                    graph launches, host synchronisations, device→host copies, allocations and
 *                    the ones still live) — the tests difference two runs to get per-token counts
 *   EMU_FAIL_ALLOC=K the K-th device or pinned allocation fails (cudaErrorMemoryAllocation): the
 *                    error paths must free what was allocated (live allocations at exit)
 *   EMU_GPU_FREE=B   cudaMemGetInfo reports B bytes free (the does-not-fit path)
 *   EMU_SMS=N        multiprocessors reported (default 2: small GEMV grids)
 *   EMU_SEED=S       block / thread order (emu.h)
 *   EMU_TOUCH=1      device allocations are page-aligned mappings, protected before every graph
 *                    launch (a decode step): the pages its kernels and copies read or write fault
 *                    once each and are counted — the step's distinct device bytes (the DRAM
 *                    traffic of a step whose every byte is moved once), in EMU_STATS as
 *                    touch_bytes (the sum over graph launches) (bench/roofline.py) */
#include "tests/cuda_emu/emu.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elementwise.inc"
#include "attn_prefill.inc"
#include "attn_decode.inc"
#include "select.inc"
#include "sample.inc"
#include "gemv.inc"
#include "dequant.inc"
#include "ss_insert.inc"
#include "ss_attend.inc"
#include "snap_recompress.inc"
#include "subgen_recompress.inc"
#include "ada_recompress.inc"

#include "model/cuda/engine_init.cu"
#include "model/cuda/engine_linear.cu"
#include "model/cuda/engine_prefill.cu"
#include "model/cuda/engine_decode.cu"
#include "model/cuda/engine_mirror.cu"
#include "model/cuda/engine_policy.cu"

static std::set<void *> &emu_live()
{
    static std::set<void *> *s = new std::set<void *>; /* never destroyed: used at exit */
    return *s;
}
static long emu_alloc_no;

/* EMU_TOUCH: device allocation → mapped bytes; pages touched during graph launches */
static std::map<char *, size_t> &emu_maps()
{
    static std::map<char *, size_t> *m = new std::map<char *, size_t>;
    return *m;
}
static bool emu_touch = getenv("EMU_TOUCH") && *getenv("EMU_TOUCH") == '1';
static long emu_touched;
static long emu_touch_bytes;
static size_t emu_page = (size_t)sysconf(_SC_PAGESIZE);

static void emu_segv(int sig, siginfo_t *si, void *)
{
    char *a = (char *)si->si_addr;
    auto &m = emu_maps();
    auto it = m.upper_bound(a);
    if (it != m.begin()) {
        --it;
        if (a >= it->first && a < it->first + it->second) {
            char *pg = (char *)((uintptr_t)a & ~(uintptr_t)(emu_page - 1));
            mprotect(pg, emu_page, PROT_READ | PROT_WRITE);
            emu_touched++;
            return;
        }
    }
    signal(sig, SIG_DFL); /* a real fault: crash as usual */
}
static void emu_protect_all(int prot)
{
    for (auto &e : emu_maps()) mprotect(e.first, e.second, prot);
}

static void emu_write_stats()
{
    const char *p = getenv("EMU_STATS");
    if (!p || !*p) return;
    FILE *f = fopen(p, "w");
    if (!f) return;
    const emu_counters &c = emu_cnt;
    fprintf(f,
            "{\"kernels\": %ld, \"direct_launches\": %ld, \"graph_launches\": %ld, \"graph_nodes\": %ld, "
            "\"syncs\": %ld, \"d2h\": %ld, \"d2h_bytes\": %ld, \"h2d\": %ld, \"h2d_bytes\": %ld, \"blas\": %ld, "
            "\"allocs\": %ld, \"frees\": %ld, \"live\": %zu, \"touch_bytes\": %ld}\n",
            c.kernels, c.direct_launches, c.graph_launches, c.graph_nodes, c.syncs, c.d2h, c.d2h_bytes, c.h2d,
            c.h2d_bytes, c.blas, c.allocs, c.frees, emu_live().size(), emu_touch_bytes);
    fclose(f);
}
static struct emu_atexit {
    emu_atexit() { atexit(emu_write_stats); }
} emu_atexit_once;

static void emu_count_copy(cudaMemcpyKind k, size_t n)
{
    if (k == cudaMemcpyDeviceToHost) emu_cnt.d2h++, emu_cnt.d2h_bytes += (long)n;
    if (k == cudaMemcpyHostToDevice) emu_cnt.h2d++, emu_cnt.h2d_bytes += (long)n;
}

/* a copy now, or recorded into the graph being captured */
static void emu_copy(void *d, const void *s, size_t n, cudaMemcpyKind k)
{
    if (emu_capture) {
        emu_capture->push_back({EMU_NODE_COPY, [d, s, n, k] {
                                    emu_count_copy(k, n);
                                    memmove(d, s, n);
                                }});
        return;
    }
    emu_count_copy(k, n);
    memmove(d, s, n);
}

struct CUgraph_st {
    std::vector<emu_node> nodes;
};
struct CUgraphExec_st {
    std::vector<emu_node> nodes;
};

extern "C" {
cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int)
{
    const char *s = getenv("EMU_SMS");
    *v = a == cudaDevAttrMultiProcessorCount ? (s && *s ? atoi(s) : 2) : 0;
    return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated CUDA error"; }
static cudaError_t emu_alloc(void **p, size_t n, bool device)
{
    *p = NULL;
    const char *f = getenv("EMU_FAIL_ALLOC");
    if (f && *f && ++emu_alloc_no == atol(f)) return cudaErrorMemoryAllocation;
    if (emu_touch && device) {
        size_t len = (n + emu_page - 1) / emu_page * emu_page;
        if (!len) len = emu_page;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
        emu_maps()[(char *)m] = len;
        static bool handler = false;
        if (!handler) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = emu_segv;
            sa.sa_flags = SA_SIGINFO | SA_NODEFER;
            sigaction(SIGSEGV, &sa, NULL);
            handler = true;
        }
        *p = m;
    } else {
        *p = malloc(n ? n : 1);
    }
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n); /* NaN floats, -1 ints */
    emu_cnt.allocs++;
    emu_live().insert(*p);
    return cudaSuccess;
}
static cudaError_t emu_free(void *p)
{
    if (!p) return cudaSuccess;
    if (!emu_live().erase(p)) {
        fprintf(stderr, "emu: free of %p, not a live allocation\n", p);
        abort();
    }
    emu_cnt.frees++;
    auto it = emu_maps().find((char *)p);
    if (it != emu_maps().end()) {
        munmap(it->first, it->second);
        emu_maps().erase(it);
    } else {
        free(p);
    }
    return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) { return emu_alloc(p, n, true); }
cudaError_t cudaFree(void *p) { return emu_free(p); }
cudaError_t cudaMallocHost(void **p, size_t n) { return emu_alloc(p, n, false); }
cudaError_t cudaFreeHost(void *p) { return emu_free(p); }
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k)
{
    if (emu_capture) return cudaErrorStreamCaptureUnsupported;
    if (k == cudaMemcpyDeviceToHost) emu_cnt.syncs++; /* a blocking copy back waits for the device */
    emu_copy(d, s, n, k);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t)
{
    emu_copy(d, s, n, k);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, cudaMemcpyKind k,
                              cudaStream_t)
{
    if (w > dp || w > sp) return cudaErrorInvalidPitchValue;
    if (emu_capture) return cudaErrorStreamCaptureUnsupported;
    emu_count_copy(k, w * h);
    for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n)
{
    if (emu_capture) return cudaErrorStreamCaptureUnsupported;
    memset(p, v, n);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t)
{
    if (emu_capture) {
        emu_capture->push_back({EMU_NODE_COPY, [p, v, n] { memset(p, v, n); }});
        return cudaSuccess;
    }
    memset(p, v, n);
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = (cudaStream_t)0x1; return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t)
{
    if (emu_capture) return cudaErrorStreamCaptureUnsupported; /* as CUDA: no waiting inside a capture */
    emu_cnt.syncs++;
    return emu_last_error;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void)
{
    if (emu_capture) return cudaErrorStreamCaptureUnsupported;
    emu_cnt.syncs++;
    return emu_last_error;
}
cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
    const char *lim = getenv("EMU_GPU_FREE"); /* to test the does-not-fit path */
    *t = (size_t)64 << 30;
    *f = lim ? (size_t)strtoull(lim, NULL, 10) : *t;
    return cudaSuccess;
}

/* graphs: the capture records launches, copies and memsets; a launch replays them in order */
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode)
{
    if (emu_capture) return cudaErrorIllegalState;
    emu_capture = new std::vector<emu_node>;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g)
{
    *g = NULL;
    if (!emu_capture) return cudaErrorIllegalState;
    CUgraph_st *gr = new CUgraph_st;
    gr->nodes.swap(*emu_capture);
    delete emu_capture;
    emu_capture = NULL;
    *g = gr;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long)
{
    *e = NULL;
    const char *f = getenv("EMU_FAIL_ALLOC"); /* instantiation allocates too */
    if (f && *f && ++emu_alloc_no == atol(f)) return cudaErrorMemoryAllocation;
    CUgraphExec_st *x = new CUgraphExec_st;
    x->nodes = g->nodes;
    emu_cnt.allocs++;
    emu_live().insert(x);
    *e = x;
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e)
{
    if (!emu_live().erase(e)) abort();
    emu_cnt.frees++;
    delete e;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t)
{
    if (emu_capture) return cudaErrorStreamCaptureUnsupported;
    emu_cnt.graph_launches++;
    if (emu_touch) {
        emu_touched = 0;
        emu_protect_all(PROT_NONE);
    }
    for (const emu_node &n : e->nodes) {
        emu_cnt.graph_nodes++;
        n.fn();
    }
    if (emu_touch) {
        emu_protect_all(PROT_READ | PROT_WRITE);
        emu_touch_bytes += emu_touched * (long)emu_page;
    }
    return emu_last_error;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) { *h = (cublasHandle_t)0x1; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy_v2(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t) { return "emulated cuBLAS status"; }

static void emu_widen(const void *p, cudaDataType t, size_t n, float *out)
{
    if (t == CUDA_R_32F) memcpy(out, p, n * sizeof(float));
    else if (t == CUDA_R_16F)
        for (size_t i = 0; i < n; i++) out[i] = __half2float(((const __half *)p)[i]);
    else
        for (size_t i = 0; i < n; i++) out[i] = __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

/* column-major C[m×n] = alpha·op(A)·op(B) + beta·C, the case the engine uses (A transposed, B
 * not, A and B of one type, C f32, fp32 accumulation) */
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B,
                            cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
                            cublasComputeType_t comp, cublasGemmAlgo_t)
{
    if (emu_capture) return CUBLAS_STATUS_NOT_SUPPORTED; /* no cuBLAS in a decode graph */
    if (ta != CUBLAS_OP_T || tb != CUBLAS_OP_N || ct != CUDA_R_32F || comp != CUBLAS_COMPUTE_32F || at != bt ||
        lda < k || ldb < k || ldc < m || (at != CUDA_R_32F && at != CUDA_R_16F && at != CUDA_R_16BF))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    emu_cnt.blas++;
    emu_cnt.kernels++;
    emu_cnt.direct_launches++;
    const float a = *(const float *)alpha, b = *(const float *)beta;
    std::vector<float> Af((size_t)m * k), Bf((size_t)n * k);
    for (int i = 0; i < m; i++) emu_widen((const char *)A + (size_t)i * lda * (at == CUDA_R_32F ? 4 : 2), at, k, &Af[(size_t)i * k]);
    for (int j = 0; j < n; j++) emu_widen((const char *)B + (size_t)j * ldb * (bt == CUDA_R_32F ? 4 : 2), bt, k, &Bf[(size_t)j * k]);
    float *c = (float *)C;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            const float *ar = &Af[(size_t)i * k], *br = &Bf[(size_t)j * k];
            float s = 0.0f;
            for (int p = 0; p < k; p++) s += ar[p] * br[p];
            float &o = c[(size_t)j * ldc + i];
            o = b == 0.0f ? a * s : a * s + b * o;
        }
    return CUBLAS_STATUS_SUCCESS;
}
}
