/* kernels/cpu internal: the SIMD kernel families and their run-time dispatch.
 *
 * Each family (scalar, avx2, avx512) fills one cpu_simd_ops table with the same kernels; the
 * scalar one is the portable reference every other is tested against (tests/test_kernels.c).
 * dispatch.c picks the widest family the CPU supports (__builtin_cpu_supports) on first use;
 * LLM_SIMD=scalar|avx2|avx512 in the environment or cpu_simd_select() overrides it. The binary
 * is built for the baseline ISA; the SIMD families are compiled with target attributes, so
 * nothing needs -march=native. Not a public interface: only kernels/cpu and its tests use it. */
#ifndef LLM_KERNELS_CPU_SIMD_H
#define LLM_KERNELS_CPU_SIMD_H

#include <stddef.h>
#include <stdint.h>

/* Attention tile sizes (keys per tile, query rows per block) of attn_prefill_head, and the most
 * query rows any family's scores_rows / acc_rows_n take at once (cpu_simd_ops.att_rows). */
#define ATT_BK 64
#define ATT_BQ 128
#define ATT_QR_MAX 4

typedef struct {
    const char *name;
    /* y[r] = W[r][0..cols) · x for r in [r0, r1); W row-major [rows][cols] (row stride cols)
     * in f32, IEEE binary16 or bfloat16 bits. One pass over each row. */
    void (*matvec_f32)(float *y, const float *W, const float *x, int r0, int r1, int cols);
    void (*matvec_f16)(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols);
    void (*matvec_bf16)(float *y, const uint16_t *W, const float *x, int r0, int r1, int cols);
    /* out[i] = (float)in[i], i < n (exact). */
    void (*widen_f16)(float *out, const uint16_t *in, size_t n);
    void (*widen_bf16)(float *out, const uint16_t *in, size_t n);
    /* out[i] = in[i] rounded to binary16 / bfloat16 (nearest even; NaN stays NaN), i < n:
     * bit-identical to f32_to_f16 / f32_to_bf16 (kernels/dtype.c) for every input. */
    void (*narrow_f16)(uint16_t *out, const float *in, size_t n);
    void (*narrow_bf16)(uint16_t *out, const float *in, size_t n);
    /* a · b over n floats. */
    float (*dot)(const float *a, const float *b, int n);
    /* y[i] += a * x[i], i < n. */
    void (*axpy)(float *y, float a, const float *x, int n);
    /* The largest of x[0..n) ignoring NaNs (-inf when n = 0 or all are NaN): the value of the
     * loop `if (x[j] > m) m = x[j]` from m = -inf (a zero's sign may differ). */
    float (*max)(const float *x, int n);
    /* x[j] *= a for j < n. */
    void (*scale)(float *x, int n, float a);
    /* p[j] = exp(s[j] - m) for j < n (p may alias s); returns Σ p[j]. m ≥ every s[j]. */
    float (*exp_sum)(float *p, const float *s, int n, float m);
    /* SwiGLU (LLaMA's MLP, silu(gate) ⊙ up): gate[i] = gate[i] / (1 + exp(-gate[i])) · up[i]
     * for i < n, f32. The scalar family calls expf; the vector ones exp_sum's polynomial on
     * -|gate| (within a few ulp of expf; the same bits for any split of [0, n)). */
    void (*swiglu)(float *gate, const float *up, size_t n);
    /* o[d] += Σ_j p[j] · rows[j][d] for d < head_dim, j < n (in j order per d). */
    void (*acc_rows)(float *o, const float *p, const float *const *rows, int n, int head_dim);
    /* s[j] = scale * (q · Kt[·][j]) for j < ATT_BK: Kt is a key tile transposed
     * [head_dim][ATT_BK] (columns past the live keys are zero). */
    void (*scores_tile)(float *s, const float *q, const float *Kt, int head_dim, float scale);
    /* 16-bit KV cache rows (IEEE binary16 / bfloat16 bits), widened to f32 in registers and
     * accumulated in f32 (the same sums as dot / acc_rows on the widened rows):
     * a · b over n elements, a f32; */
    float (*dot_f16)(const float *a, const uint16_t *b, int n);
    float (*dot_bf16)(const float *a, const uint16_t *b, int n);
    /* o[d] += Σ_j p[j] · rows[j][d] for d < head_dim, j < n (in j order per d). */
    void (*acc_rows_f16)(float *o, const float *p, const uint16_t *const *rows, int n, int head_dim);
    void (*acc_rows_bf16)(float *o, const float *p, const uint16_t *const *rows, int n, int head_dim);
    /* Decode scores: s[j] = dot(q, K + j·head_dim, head_dim) · scale for j < n, K rows of f32 /
     * binary16 / bfloat16 — exactly dot / dot_f16 / dot_bf16 per row (the same operations in
     * the same order, so the same floats), several rows at a time to overlap their latencies. */
    void (*dots_f32)(float *s, const float *q, const float *K, int n, int head_dim, float scale);
    void (*dots_f16)(float *s, const float *q, const uint16_t *K, int n, int head_dim, float scale);
    void (*dots_bf16)(float *s, const float *q, const uint16_t *K, int n, int head_dim, float scale);
    /* Grouped-query decode (optional: NULL in a family that has none; attention.c then runs
     * dots_* / acc_rows_* head by head over L1-sized blocks, with the same floats):
     * dots_group: s[g·s_stride + j] = dots_*(q + g·hd, K + j·hd) · scale for g < G, j < n —
     * bit-identical to that family's dots_* per head; each key row widened once for the G heads.
     * acc_group: o[g·hd + d] += Σ_j p[g·p_stride + j] · V[j·hd + d] for g < G, d < ncols
     * (ncols a multiple of 16, V and o already offset to the first column), in j order per
     * element: bit-identical to acc_rows_* per head. kdt / vdt: DT_F32, DT_F16 or DT_BF16. */
    void (*dots_group)(float *s, int s_stride, const float *q, int G, const void *K, int kdt, int n, int hd,
                       float scale);
    void (*acc_group)(float *o, const float *p, int p_stride, int G, const void *V, int vdt, int n, int hd,
                      int ncols);
    /* Prefill attention, nr ≤ att_rows query rows at once (optional: NULL, att_rows 0 in a
     * family that has none; attention.c then runs scores_tile / acc_rows* row by row), each
     * key-tile row or value row loaded once for the nr queries, the same floats as row by row:
     * scores_rows: s[r·ATT_BK + j] = scores_tile(q + r·q_stride)[j] for r < nr, j < ATT_BK;
     * acc_rows_n*: o[r·o_stride + d] += Σ_j p[r·p_stride + j] · rows[j][d] for r < nr,
     * d < head_dim, j < n, in j order per element (acc_rows* per query row). */
    int att_rows;
    void (*scores_rows)(float *s, const float *q, int q_stride, int nr, const float *Kt, int head_dim, float scale);
    void (*acc_rows_n)(float *o, int o_stride, const float *p, int p_stride, int nr, const float *const *rows, int n,
                       int head_dim);
    void (*acc_rows_n_f16)(float *o, int o_stride, const float *p, int p_stride, int nr, const uint16_t *const *rows,
                           int n, int head_dim);
    void (*acc_rows_n_bf16)(float *o, int o_stride, const float *p, int p_stride, int nr, const uint16_t *const *rows,
                            int n, int head_dim);
    /* Prefill GEMM (optional: NULL in a family that has none; matmul.c then calls the BLAS):
     * y[j·ldy + r] = x[j·K .. +K) · W[r·K .. +K) for j < n, r in [r0, r1); x [n][K] and W
     * [rows][K] row-major f32. Each output is the same floats for any n, r0, r1 (a thread
     * split of the rows or of the tokens changes nothing). gemm_avx512.c. */
    void (*gemm_nt_f32)(float *y, int ldy, const float *x, int n, const float *W, int r0, int r1, int K);
} cpu_simd_ops;

extern const cpu_simd_ops cpu_simd_scalar;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LLM_SIMD_X86 1
extern const cpu_simd_ops cpu_simd_avx2;
extern const cpu_simd_ops cpu_simd_avx512;
void cpu_gemm_nt_f32_avx512(float *y, int ldy, const float *x, int n, const float *W, int r0, int r1, int K);
/* The BF16 × BF16 prefill GEMM of `--act-bits 8` (gemm_bf16_avx512.c; CPUs with AVX512-BF16
 * only): y[j·ldy + r] = x[j][0..K) · W[r][0..K) for j < n, r in [r0, r1), x [n][K] and W [rows][K]
 * row-major bf16, sums in f32 (vdpbf16ps); the same floats for any n, r0, r1. */
void cpu_gemm_nt_bf16_avx512bf16(float *y, int ldy, const uint16_t *x, int n, const uint16_t *W, int r0, int r1, int K);
/* out[i] = bf16(in[i]) for i < n, round to nearest even (vcvtne2ps2bf16: denormals flushed). */
void cpu_round_bf16_avx512bf16(uint16_t *out, const float *in, size_t n);
#endif
/* 1 when this CPU runs AVX512-BF16 (with AVX-512 F/BW/VL), else 0 (gemm_bf16_avx512.c). */
int cpu_has_avx512bf16(void);

/* The active family (chosen on first call). */
const cpu_simd_ops *cpu_simd(void);
/* The family called name if this CPU can run it, else NULL. */
const cpu_simd_ops *cpu_simd_find(const char *name);

#endif
