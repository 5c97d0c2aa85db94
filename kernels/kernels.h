/* kernels/ — the math of the forward pass, one implementation per backend behind this
 * interface (kernels/cpu now; kernels/cuda is the GPU backend). Everything above it
 * (model/, eviction/) is backend-neutral.
 *
 * Conventions: activations f32, row-major; weights as stored (weight_t, HF Linear layout
 * [out][in]); head vectors [head_dim] contiguous, heads of a token contiguous. */
#ifndef LLM_KERNELS_H
#define LLM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------ dtypes and weights (kernels/dtype.c) */

/* Storage types of weights and caches. F32/F16/BF16 are per element; the others are ggml's
 * block formats (ggml-common.h), kept quantized in memory: a row of n elements is n / block
 * blocks of block_bytes each (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1: 32 elements; Q4_K, Q5_K, Q6_K: 256). */
typedef enum {
    DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2,
    DT_Q8_0, DT_Q4_0, DT_Q4_1, DT_Q5_0, DT_Q5_1, DT_Q4_K, DT_Q5_K, DT_Q6_K,
    DT_COUNT
} dtype_t;

/* Bytes per element of F32/F16/BF16; 0 for the block formats (use dtype_row_bytes). */
size_t dtype_size(dtype_t dt);
/* "F32", "F16", "BF16", "Q8_0", ... ("?" when out of range). */
const char *dtype_name(dtype_t dt);
/* The dtype called name (case-insensitive, as dtype_name prints it), or -1. */
int dtype_from_name(const char *name);
/* Elements per block: 1 for F32/F16/BF16, 32 or 256 for the block formats. */
int dtype_block(dtype_t dt);
/* Bytes per block (per element for F32/F16/BF16). */
size_t dtype_block_bytes(dtype_t dt);
/* Bytes of a row of n elements (n a multiple of dtype_block); 0 when it is not. */
size_t dtype_row_bytes(dtype_t dt, int64_t n);
/* 1 for the block formats. */
int dtype_is_quant(dtype_t dt);

/* A weight matrix as stored: row-major [rows][cols] (HF Linear: [out][in]); a row of a block
 * format is cols / dtype_block blocks (rows are contiguous, dtype_row_bytes(dtype, cols) apart)
 * when layout is WL_ROWS (0, what every initializer without it gets). WL_X16 (the CPU's resident
 * copy, weight_x16_pack) interleaves groups of 16 rows: the same bytes per 16 rows, so a range
 * of rows starting at a multiple of 16 is still at row · dtype_row_bytes. */
enum { WL_ROWS = 0, WL_X16 = 1 };
typedef struct {
    dtype_t dtype;
    const void *data;
    int rows, cols;
    int layout;
} weight_t;

/* Bytes of w's data. */
size_t weight_bytes(const weight_t *w);

/* ------------------------------------ 16-row interleaved block weights (kernels/cpu/quant_x16.c)
 *
 * WL_X16, for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 with rows a multiple of 16: the matrix is groups of
 * 16 rows (g = row / 16), each the nb = cols / 32 blocks of its rows in order; block b of a group
 * holds the 16 rows' block b, same bytes as the 16 ggml blocks, arranged so that one 32-bit lane
 * per row meets a broadcast activation pair (the decode kernels of quant_x16_avx512.c, _avx2.c):
 *   f16 d[16] (row r's d at r), then for Q4_1/Q5_1 f16 m[16];
 *   Q5_0/Q5_1, 64 bytes of 5th bits, as masks (CPUs with AVX512-BW) or planes (others; the
 *     choice is process-wide, kernels/cpu/quant.h x16_use_planes): masks, 8 × {uint32 lo,
 *     uint32 hi}: for chunk c, bit 2r+i of lo is the 5th bit of element 2c+i of row r, of hi
 *     that of element 2c+16+i (i = 0, 1); planes, uint8 pl[32], ph[32]: bit c of pl[2r+i] is
 *     the 5th bit of element 2c+i of row r, of ph[2r+i] that of element 2c+16+i;
 *   8 chunks of 32 bytes: chunk c holds bytes qs[2c], qs[2c+1] of each row r at 2r, 2r+1 (the
 *     low nibble of qs[j] is element j, the high one element j+16, as ggml stores them); Q8_0:
 *     f16 d[16], then 16 such chunks of its 32 signed quants.
 * Why: ggml's 18-34-byte blocks put each row's quants and scales 18-34 bytes apart, and the Q4_1
 * decode kernel spent about half its port-5 slots gathering them (bench/cpu.md, session 8); here
 * no gather, no unpack beyond one byte->word widening, and 16 rows' scales in one load.
 * Q4_K and Q6_K (AVX512-VNNI and AVX2, 16-bit activations): super-block b of the 16 rows, scale bytes
 * transposed and quants in 4-byte runs per row (kernels/cpu/quant_x16.c), so the decode's
 * vpdpbusd lanes are rows and 16 rows' scales decode in a few vector operations. */

/* 1 when w (WL_ROWS) would run faster as WL_X16 on this CPU: its dtype and shape are ones
 * WL_X16 serves and the active quantized kernels (cpu_quant) have its decode kernel. */
int weight_x16_wanted(const weight_t *w);
/* Writes rows [r0, r0 + n) (r0, n multiples of 16) of the WL_ROWS matrix src (dtype dt, cols
 * columns; src points at row r0) to dst in WL_X16: n · dtype_row_bytes(dt, cols) bytes. */
void weight_x16_pack(dtype_t dt, const void *src, void *dst, int n, int cols);
/* The inverse: the 16-row group at src (WL_X16) back to ggml rows: rows [r, r + n) of the group
 * (0 <= r, r + n <= 16) to dst, dtype_row_bytes(dt, cols) apart. */
void weight_x16_unpack(dtype_t dt, const void *src, void *dst, int r, int n, int cols);

/* ---------------------------------------------- ggml block formats (kernels/cpu/quant.c) */

/* dst[n] = the row src as f32: n elements of dtype dt (n / dtype_block(dt) blocks laid out as
 * ggml-common.h's block_q8_0 / q4_0 / q4_1 / q5_0 / q5_1 / q4_K / q5_K / q6_K; F32/F16/BF16
 * are copied/widened). For the block formats the arithmetic is ggml-quants.c's
 * dequantize_row_<type> operation for operation, so the floats are bit-identical with ggml's
 * and with the gguf Python package's gguf.quants.dequantize. Writes nothing when n is not a
 * multiple of dtype_block(dt). */
void dequantize_row(dtype_t dt, const void *src, float *dst, int64_t n);

/* dst = src[n] quantized to dt = DT_Q8_0 or DT_Q4_0 (n / 32 blocks, 34 or 18 bytes each)
 * exactly as ggml's reference quantizers quantize_row_q8_0_ref / quantize_row_q4_0_ref
 * (bit-identical with gguf.quants.quantize): Q8_0 d = max|x| / 127, q = roundf(x / d);
 * Q4_0 d = x_maxabs / −8, q = min(15, (int8)(x / d + 8.5)); d stored as f16 (round to nearest
 * even). Returns 0, or -1 (nothing written) for another dt or n not a multiple of 32. */
int quantize_row(dtype_t dt, const float *src, void *dst, int64_t n);

/* Scalar conversions (exact for f16/bf16 → f32). */
float f16_to_f32(uint16_t h);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);   /* round to nearest even */
uint16_t f32_to_f16(float f);    /* round to nearest even */

/* Sets the number of OpenMP threads the CPU kernels use (≥ 1); the BLAS runs single-threaded
 * inside them (matmul splits its rows over the threads). */
void cpu_set_threads(int n);
/* The decode thread team (kernels/cpu/team.c): a share of a decode step's work, computed by
 * thread t of T (0 ≤ t < T). Callers split their work so that the results do not depend on T
 * (each output element computed whole by one share), so a run may always fall back to T = 1. */
typedef void (*cpu_team_fn)(void *arg, int t, int T);
/* Runs fn(arg, t, T) for t = 0..T-1 and returns when all are done: t = 0 on the calling thread,
 * the others on the team's spinning workers (started on first use; ≤ 256 threads). T ≤ 1, a
 * call from inside a run, from inside an OpenMP region, or while another thread's run holds
 * the team: fn(arg, 0, 1) on the calling thread, no fork. No allocation after the first run of
 * a given T; no error (a worker that cannot be started lowers T). Decode only: prefill stays on
 * OpenMP (its regions are few and long). */
void cpu_team_run(int T, cpu_team_fn fn, void *arg);
/* Inside a cpu_team_run share: waits for the run's T shares to reach it (spinning; the release
 * and acquire order memory). Every share must call it the same number of times. At T = 1 (or
 * outside a run) it returns at once. */
void cpu_team_barrier(void);
/* Inside a cpu_team_run share on a worker (t ≥ 1): fn() runs on that worker after it has
 * reported its share done, while it would otherwise wait for the next run (the caller is
 * already past the join). Once; the last registration of a share counts. On the calling
 * thread (t = 0) or outside a run: ignored. */
void cpu_team_after(void (*fn)(void));
/* Inside a cpu_team_after function: 1 when the team's next run has started (the worker should
 * return to take its share), else 0 (and 0 outside a worker). */
int cpu_team_next_posted(void);
/* Physical cores this process may run on (distinct package/core pairs of its CPU affinity). */
int cpu_num_cores(void);
/* Whether the BLAS can get its work buffers for n_threads threads (≤ 0: the BLAS's own thread
 * count) (kernels/cpu/blas_reserve.c: OpenBLAS hangs instead of failing when it cannot, and
 * exit() then hangs too: a caller that gets -1 should _exit). Returns 0, or -1 with
 * "out of memory: ..." in err. */
int cpu_blas_reserve_check(int n_threads, char *err, size_t errlen);

/* The SIMD kernel family in use: "scalar", "avx2" (AVX2+FMA+F16C) or "avx512" (AVX-512F),
 * the widest the CPU supports unless the environment sets LLM_SIMD to one of those names. The
 * block-format kernels follow it (with AVX-VNNI / AVX512-VNNI where the CPU has them;
 * LLM_QUANT_SIMD=scalar|avx2|avxvnni|avx512|avx512vnni pins one: kernels/cpu/quant.h). */
const char *cpu_simd_name(void);
/* Switches to the named family; -1 (err: the name) when unknown or not supported here. */
int cpu_simd_use(const char *name, char *err, size_t errlen);

/* The precision of the activations the block-format matmuls quantize (see matmul): 16 (the
 * default: int16 per block, products in int16 × int16 pairs) or 8 (llama.cpp's Q8_0/Q8_1/Q8_K,
 * its numbers exactly: for speed comparisons). 8 also rounds the activations of BF16-weight
 * prefill products (n > 1) to bf16, as llama.cpp's CPU backend does, on CPUs with AVX512-BF16
 * (kernels/cpu/gemm_bf16_avx512.c, vdpbf16ps); decode and the other dtypes keep f32 there.
 * bits = 8 or 16 sets it (for every thread; set it before a model runs, not while a matmul is in
 * flight); 0 only asks. Returns the setting in effect, or -1 (nothing changed) for another value. */
int cpu_quant_act_bits(int bits);

/* y[n][w.rows] = x[n][w.cols] · wᵀ, weights in any dtype as stored.
 * F32, F16, BF16: n = 1 (decode): our matrix-vector kernels, OpenMP over the output rows,
 * F16/BF16 widened in registers (memory-bound: bytes read per token is what counts). n > 1
 * (prefill): matrix-matrix through our gemm_nt_f32 or the BLAS (F16/BF16 widened one tile of
 * rows at a time; BF16 with cpu_quant_act_bits 8 on AVX512-BF16: x rounded to bf16, vdpbf16ps).
 * Results of the families differ only by summation order.
 * Block formats (kernels/cpu/quant_gemm.c): the weights stay quantized; x is quantized once per
 * call, per block of 32 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 weights) or 256 (Q4_K, Q5_K, Q6_K), and
 * each block's integer dot product is scaled in f32. cpu_quant_act_bits picks the activations:
 *   16 (default, kernels/cpu/quant16.c): int16, d = max|x|/32767 (f32), round to nearest even;
 *     exact block sums for the weights' min terms (Q4_1, Q5_1: m·d·Σq; Q4_K, Q5_K: dmin·m·Σq
 *     per 32); int32 block sums (K-quants: per sub-block or bounded lanes, never overflowing).
 *     The error against f32 activations is about 2⁻¹⁶ relative per block.
 *   8 (llama.cpp's, quant.c): Q8_0 for Q8_0/Q4_0/Q5_0 weights (int8, d = max|x|/127 as f16,
 *     roundf); Q8_1 for Q4_1/Q5_1 (Q8_0's quants and d, plus s = f16(d·Σq) for the min term
 *     m·s); Q8_K for the K-quants (int8, f32 d = max/−127, round to nearest even, sums of each
 *     16 quants); ggml's vec_dot_<w>_q8_<x> numbers. About 2⁻⁸ relative per block.
 * n = 1: the row dot products split over the threads; n > 1: a blocked quantized GEMM (weight
 * rows decoded into interleaved panels once per call, every activation row run over them;
 * below 5 rows register tiles). w.cols must be a whole number of blocks (else y is all NaN).
 * Prefill and decode of the same row agree up to f32 rounding; a row's result does not depend
 * on how the rows are split over the threads. */
void matmul(float *y, const float *x, const weight_t *w, int n);

/* matmul(y[i], x, w[i], n) for i < k, all w[i] with the same cols: for decode one parallel
 * region over all their rows (q/k/v, gate/up), the same results as k calls. */
void matmul_multi(float *const *y, const weight_t *const *w, int k, const float *x, int n);

/* The SwiGLU MLP's first half: gate = x·W_gateᵀ, up = x·W_upᵀ, then swiglu(gate, up) — the
 * same floats as matmul_multi + swiglu. Decode (n = 1, threads, gate and up of one shape and
 * kind): one parallel region, the products as matmul_multi's, then swiglu after a barrier. */
void matmul_swiglu(float *gate, float *up, const weight_t *w_gate, const weight_t *w_up, const float *x, int n);
/* Decode hint: the next matmul / matmul_multi / matmul_swiglu call on this thread (n = 1) is
 * followed by a product over w[0..k) (k ≤ 4, the order matmul_multi would get). That call's
 * team workers, once their share is done, prefetch the first bytes of their first block of
 * the following product while the caller runs the serial code between the two (norms,
 * RoPE, attention set-up). Only timing changes, never a result; the hint is used by one call
 * and then cleared. The matrices must stay alive until that following product has run. */
void matmul_next_hint(const weight_t *const *w, int k);
/* Decode hint, after matmul_next_hint (k may be 0): thread t (1 ≤ t < 8) of that call's team
 * reads [p, p + bytes) right after it (the keys of the heads its share of the attention
 * computes: model/decode_attn.c); that worker prefetches the span whole into its L2, after the
 * matrices' read-ahead. At most 4 spans a thread (more are ignored); none with cpu_pf.idle 0. */
void matmul_next_hint_bytes(int t, const void *p, size_t bytes);

/* out[w.cols] = row `row` of w as f32 (the embedding lookup; block formats: dequantize_row). */
void widen_row(float *out, const weight_t *w, int row);

/* out[n][dim] = x / rms(x) * weight, rms over each row (LLaMA RMSNorm, eps inside the sqrt).
 * weight: [dim] in any dtype. out may alias x. */
void rmsnorm(float *out, const float *x, const weight_t *weight, int n, int dim, float eps);

/* RoPE tables for positions pos[0..n): cos/sin [n][head_dim/2], Hugging Face convention:
 * inv_freq[i] = theta^(-2i/head_dim) (f32), angle = (pos / scaling_factor) · inv_freq[i]
 * (linear rope_scaling). */
void rope_tables(float *cos_t, float *sin_t, const int *pos, int n, int head_dim, float theta,
                 float scaling_factor);

/* rope_tables with per-frequency divisors: inv_freq[i] / freq_factors[i] (freq_factors NULL or
 * [head_dim/2]): Llama-3.1's rope_scaling "llama3" and GGUF's rope_freqs tensor (llama.cpp's
 * freq_factors) are both such divisors. */
void rope_tables_freq(float *cos_t, float *sin_t, const int *pos, int n, int head_dim, float theta,
                      float scaling_factor, const float *freq_factors);

/* Rotates x [n][n_heads][head_dim] in place with the tables of its token (rotate_half: pairs
 * (i, i + head_dim/2), as HF checkpoints store q/k rows). */
void rope_apply(float *x, int n, int n_heads, int head_dim, const float *cos_t, const float *sin_t);

/* gate[i] = silu(gate[i]) * up[i] for i < n (SwiGLU). */
void swiglu(float *gate, const float *up, size_t n);

/* y[r][i] += bias[i] for r < n, i < dim (q/k/v/o biases: Qwen2, llama attention_bias).
 * bias: [1][dim] F32, F16 or BF16. */
void add_bias(float *y, const weight_t *bias, int n, int dim);

/* y[i] += x[i]. */
void add_inplace(float *y, const float *x, size_t n);

/* Element conversions of KV-cache rows (kernels/cpu/ops.c); dt is DT_F32, DT_F16 or DT_BF16
 * (anything else: nothing is written).
 * widen_elems: dst[i] = src[i] as f32 (exact; a copy for F32), i < n; SIMD family in use.
 * narrow_elems: dst[i] = src[i] in dt, round to nearest even (f32_to_f16 / f32_to_bf16; a
 * copy for F32).
 * round_elems: x[i] = widen(narrow(x[i])) in place: the value a cache of dtype dt stores
 * (nothing changes for F32). */
void widen_elems(dtype_t dt, const void *src, float *dst, size_t n);
void narrow_elems(dtype_t dt, const float *src, void *dst, size_t n);
void round_elems(dtype_t dt, float *x, size_t n);

/* Decode attention of one query head over n cached slots (SIMD dot products and a vector
 * exp; one pass over K and one over V):
 * q [head_dim] f32; K [n][head_dim] of dtype k_dt, V [n][head_dim] of dtype v_dt, each DT_F32,
 * DT_F16 or DT_BF16 (a KV cache in 16 bits: rows are widened to f32 in registers, products and
 * sums are f32); out [head_dim] = Σ_j p_j V_j with p = softmax(q·K_j · scale). probs [n]
 * receives p (always written; it is also the scratch for the scores, so statistics cost
 * nothing extra). Slots are summed in slot order. */
void attn_decode_head(const float *q, const void *K, dtype_t k_dt, const void *V, dtype_t v_dt,
                      int n, int head_dim, float scale, float *probs, float *out);

/* Prefill (causal) attention of one query head for a chunk of n_new tokens that follows
 * n_live cached slots, tiled with an online softmax (kernels/cpu/attention.c):
 * q [n_new] rows of stride q_stride; K_live [n_live][head_dim] of dtype k_live_dt, V_live
 * [n_live][head_dim] of dtype v_live_dt (DT_F32, DT_F16 or DT_BF16: the cache's rows, widened
 * to f32 as they are read; f32 accumulation); K_new, V_new [n_new] f32 rows of stride
 * k_stride, v_stride. Row i attends to all live slots and the chunk's tokens 0..i. out [n_new]
 * rows of stride out_stride. colsum (NULL or [n_live + n_new]) gets += Σ_i p_i(j) (the column
 * sums H2O and BUZZ need; a second pass over the scores).
 * scratch: attn_prefill_scratch_floats(head_dim) floats (one tile, whatever the length). */
void attn_prefill_head(const float *q, int q_stride, const void *K_live, dtype_t k_live_dt,
                       const void *V_live, dtype_t v_live_dt, int n_live, const float *K_new,
                       int k_stride, const float *V_new, int v_stride, int n_new, int head_dim,
                       float scale, float *out, int out_stride, float *colsum, float *scratch);

/* Grouped-query decode attention, in three phases a caller may split over threads (GQA: the G
 * query heads sharing one KV head read its cache once, in blocks that stay in the L1 while the
 * G heads go over them). Every float equals attn_decode_head's for each head (the same kernels,
 * operations and order), whatever the split.
 * attn_decode_scores: probs[g·probs_stride + j] = q_g · K_j · scale for g < G, j in [j0, j1);
 *   q [G][head_dim] f32 (contiguous), K [n][head_dim] of k_dt (DT_F32 / DT_F16 / DT_BF16).
 * attn_decode_softmax: p[0..n) = softmax(p) in place (max, vector exp, normalise).
 * attn_decode_values: out[g·head_dim + d] = Σ_{j<n} probs[g·probs_stride + j] · V_j[d] for g < G
 *   and d in [d0, d1), summed in slot order; V [n][head_dim] of v_dt. The columns outside
 *   [d0, d1) are not touched. d0 and d1 must be multiples of attn_decode_dsplit(head_dim) (or
 *   0 and head_dim), so the SIMD kernels take each column the same way whatever the split.
 * No allocation, no errors. */
void attn_decode_scores(const float *q, int G, const void *K, dtype_t k_dt, int j0, int j1, int head_dim,
                        float scale, float *probs, int probs_stride);
void attn_decode_softmax(float *p, int n);
void attn_decode_values(const float *probs, int probs_stride, int G, const void *V, dtype_t v_dt, int n,
                        int head_dim, int d0, int d1, float *out);
/* The column block attn_decode_values can be split by: 32 when head_dim is a multiple of 32
 * (whole vectors in every family), else head_dim. */
int attn_decode_dsplit(int head_dim);

/* Scratch floats attn_prefill_head needs per thread. */
size_t attn_prefill_scratch_floats(int head_dim);

#endif
