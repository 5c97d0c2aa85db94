/* kernels/cpu internal: ggml's block formats on the CPU — quantized activation rows, the
 * weight-row × activation-row dot-product kernels of each SIMD family and their run-time choice.
 * Not a public interface: only kernels/cpu, its tests and bench/bench_quant.c use it.
 *
 * Weights stay in ggml's block layout (ggml-common.h; kernels.h describes it), or for the
 * 32-element dtypes on the AVX2 and AVX-512 families the same blocks interleaved 16 rows at a time (WL_X16,
 * kernels.h; quant_x16*.c, qpack16_x16.inc), which the resident copy uses. Activations are
 * quantized per matmul call, to int16 (the default; the 16-bit formats below, quant16*.c) or,
 * with cpu_quant_act_bits(8), exactly as llama.cpp quantizes them for the dot products
 * (ggml-quants.c quantize_row_q8_0_ref / q8_1_ref / q8_K_ref; quant.c, quant_avx*.c):
 *   - "A32" (ggml's Q8_0 and Q8_1, which share their quants and scale) for Q8_0, Q4_0, Q5_0
 *     (the Q8_0 part) and Q4_1, Q5_1 (which also use Q8_1's s = f16(d · Σq));
 *   - "A256" (ggml's Q8_K) for Q4_K, Q5_K, Q6_K.
 * A quantized activation row is stored planar rather than as an array of ggml blocks (the same
 * numbers, laid out for vector loads); each part starts 64-byte aligned within the row:
 *   A32, K = cols, nb = K/32:  int8 qs[K]; float d[nb] (the f16 scale, widened);
 *       float s2[2·nb] (pairs {0, s_b}, s_b = f16(d_b · Σ_j qs_bj) widened: Q8_1's s);
 *       int32 corr[nb] when the format's corr c ≠ 0: −c · Σ_j qs_bj (the SIMD kernels start
 *       their per-block integer sums from it when they use weights offset to unsigned:
 *       Σ (q + c) y − c Σ y).
 *   A256, nk = K/256: int8 qs[K]; float d[nk] (Q8_K's d, f32); int16 bs16[K/16] (Σ of each 16
 *       quants: Q8_K's bsums); int16 bs32[K/32] (Σ of each 32); float bs32f[K/32] (the same as
 *       f32); int32 c16[K/16] (−32 · bs16: Q6_K's offset, for the packed GEMM).
 */
#ifndef LLM_KERNELS_CPU_QUANT_H
#define LLM_KERNELS_CPU_QUANT_H

#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <stddef.h>
#include <stdint.h>

#define QK32 32    /* elements per block of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (and A32) */
#define QKK 256    /* elements per super-block of Q4_K, Q5_K, Q6_K (and A256) */

/* Activation row format: kind A32 or A256, for A32 the correction factor c (0: no corr part),
 * and the bits of the quants (8: the layouts above; 16: the ones below). */
enum { QA_32 = 0, QA_256 = 1 };
typedef struct {
    int kind;
    int corr;
    int bits;
} qact_fmt;

static inline size_t qa_align(size_t n) { return (n + 63) & ~(size_t)63; }

/* Offsets (bytes from the row start) of the parts of a row of K columns. */
static inline size_t qa_off_d(int K) { return qa_align((size_t)K); }
static inline size_t qa_off_s2(int K) { return qa_off_d(K) + qa_align((size_t)(K / QK32) * 4); }
static inline size_t qa_off_corr(int K) { return qa_off_s2(K) + qa_align((size_t)(K / QK32) * 8); }
static inline size_t qa_off_bs16(int K) { return qa_off_d(K) + qa_align((size_t)(K / QKK) * 4); }
static inline size_t qa_off_bs32(int K) { return qa_off_bs16(K) + qa_align((size_t)(K / 16) * 2); }
static inline size_t qa_off_bs32f(int K) { return qa_off_bs32(K) + qa_align((size_t)(K / QK32) * 2); }
static inline size_t qa_off_c16(int K) { return qa_off_bs32f(K) + qa_align((size_t)(K / QK32) * 4); }

/* 16-bit activations (cpu_quant_act_bits(16), the default): int16 quants, round to nearest even
 * of x · (32767 / amax) (|q| ≤ 32767), scale d = amax / 32767 in f32, per block of 32 (A32/16)
 * or of 256 (A256/16); the block sums the weights' offsets and mins need are exact (integers, or
 * f32 of an integer below 2^24):
 *   A32/16, nb = K/32 blocks in groups of 4 (ng = ⌈nb/4⌉; a last group of fewer blocks is padded
 *       with zero blocks, d = 0): int16 qs[128·ng]: qs[qa16_idx32(b, e)] = quant of element e of
 *       block b, i.e. group g = b/4 is 4 vectors of 64 bytes, vector v holding elements
 *       8v..8v+7 of the group's 4 blocks, block b%4 in 128-bit lane b%4 (so one 512-bit
 *       multiply-add keeps each block in lanes of its own); float d[4·ng];
 *       float s2[2·4·ng] (pairs {0, d_b · Σ_j q_bj}: the Q4_1/Q5_1 min term m·s);
 *       int32 corr[4·ng] when the format's corr c ≠ 0: −c · Σ_j q_bj (kernels that take the
 *       weights unsigned: Σ (q + c) y − c Σ y).
 *   A256/16, nk = K/256: int16 qs[K] in element order; float d[nk]; float bs32f[K/32] (Σ of
 *       each 32 quants; the Q4_K/Q5_K min term).
 * Every integer block sum a kernel forms fits int32 (|Σ_32 q_w·q_x| ≤ 32·128·32767 for the
 * A32 dtypes; the K-quant kernels bound theirs in quant16.c). */
/* d = amax / 32767 and *id = 32767 / amax; both 0 when amax < 2^-100 (or NaN): the block is
 * quantized to zero (32767 / amax could overflow). */
static inline float qa16_scale(float amax, float *id)
{
    if (!(amax >= 0x1p-100f)) {
        *id = 0.0f;
        return 0.0f;
    }
    *id = 32767.0f / amax;
    return amax / 32767.0f;
}
static inline int qa16_groups(int K) { return (K / QK32 + 3) / 4; }
static inline int qa16_idx32(int b, int e) { return 128 * (b >> 2) + 32 * (e >> 3) + 8 * (b & 3) + (e & 7); }
static inline size_t qa16_off_d32(int K) { return (size_t)qa16_groups(K) * 256; }
static inline size_t qa16_off_s2(int K) { return qa16_off_d32(K) + qa_align((size_t)qa16_groups(K) * 16); }
static inline size_t qa16_off_corr(int K) { return qa16_off_s2(K) + qa_align((size_t)qa16_groups(K) * 32); }
static inline size_t qa16_off_d256(int K) { return (size_t)K * 2; }
static inline size_t qa16_off_bs32f(int K) { return qa16_off_d256(K) + qa_align((size_t)(K / QKK) * 4); }

/* Bytes of one quantized activation row of K columns in format f (a multiple of 64). */
static inline size_t qact_row_bytes(qact_fmt f, int K)
{
    if (f.bits == 16) {
        if (f.kind == QA_256) return qa16_off_bs32f(K) + qa_align((size_t)(K / QK32) * 4);
        return qa16_off_corr(K) + (f.corr ? qa_align((size_t)qa16_groups(K) * 16) : 0);
    }
    if (f.kind == QA_256) return qa_off_c16(K) + qa_align((size_t)(K / 16) * 4);
    return qa_off_corr(K) + (f.corr ? qa_align((size_t)(K / QK32) * 4) : 0);
}

/* The activation kind a weight dtype's dot products use (QA_32 or QA_256), -1 if none. */
int quant_act_kind(dtype_t wdt);

/* Decoders shared by the families: 6-bit scale and min j (0..7) of a Q4_K/Q5_K super-block
 * (ggml's get_scale_min_k4). */
static inline void q_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* The integer quants of a block (quant.c; the scalar kernels of both activation widths):
 * q_unpack32: the 32 of a Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 block (offsets applied: Q4_0 −8, Q5_0 −16);
 * q_unpack_k45: the 256 (0..31) of a Q4_K/Q5_K super-block and its 8 scales and mins;
 * q_unpack_q6k: the 256 (−32..31) of a Q6_K super-block. */
void q_unpack32(dtype_t dt, const uint8_t *b, int q[32]);
void q_unpack_k45(dtype_t dt, const uint8_t *b, int q[256], int sc[8], int mn[8]);
void q_unpack_q6k(const uint8_t *b, int q[256]);

static inline uint16_t q_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t q_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Y[j·ldy + r] = Σ_k W_r[k] · X_j[k] for r < nr, j < nx: W nr weight rows of K columns in one
 * block dtype (rows wstride bytes apart); X nx activation rows in the family's format for that
 * dtype (xstride bytes apart). K is a multiple of the dtype's block. */
typedef void (*qmm_fn)(float *Y, size_t ldy, const uint8_t *W, size_t wstride, const uint8_t *X,
                       size_t xstride, int nr, int nx, int K);

/* The same product for prefill, through packed weight panels (the family's own layout, built
 * in buf: gemm_buf(dt, K) bytes, 64-byte aligned, per calling thread): the weight rows are
 * decoded and interleaved a group of rows at a time, then every activation row runs over them. */
typedef void (*qgemm_fn)(float *Y, size_t ldy, const uint8_t *W, size_t wstride, const uint8_t *X,
                         size_t xstride, int nr, int nx, int K, uint8_t *buf);

typedef struct cpu_quant_ops {
    const char *name;
    /* the activation bits of this table (8 or 16), and the family's tables of each */
    int bits;
    const struct cpu_quant_ops *w8, *w16;
    /* kernels per weight dtype (NULL for F32/F16/BF16) */
    qmm_fn mm[DT_COUNT];
    /* packed-panel GEMM per weight dtype (NULL: mm serves prefill too) and its buffer size */
    qgemm_fn gemm[DT_COUNT];
    size_t (*gemm_buf)(dtype_t dt, int K);
    /* the A32 correction factor each A32 dtype's kernel wants (0: none) */
    int corr[DT_COUNT];
    /* Quantize x[K] into one activation row (A32 with correction c, or A256, in the table's
     * bits); every family writes the same bytes as the scalar one. */
    void (*act32)(uint8_t *row, const float *x, int K, int c);
    void (*act256)(uint8_t *row, const float *x, int K);
} cpu_quant_ops;

/* 8-bit activations (quant.c, quant_avx2.c, quant_avx512.c) and 16-bit ones (quant16.c,
 * quant16_avx2.c, quant16_avx512.c), one table of each per family. */
extern const cpu_quant_ops cpu_quant_scalar, cpu_quant_scalar16;
#ifdef LLM_SIMD_X86
extern const cpu_quant_ops cpu_quant_avx2;        /* AVX2 + FMA + F16C (maddubs) */
extern const cpu_quant_ops cpu_quant_avxvnni;     /* the same with AVX-VNNI vpdpbusd (256-bit) */
extern const cpu_quant_ops cpu_quant_avx512;      /* AVX-512 F/BW/VL/DQ (maddubs) */
extern const cpu_quant_ops cpu_quant_avx512vnni;  /* the same with AVX512-VNNI vpdpbusd */
extern const cpu_quant_ops cpu_quant_avx2_16;     /* 16-bit: vpmaddwd (256-bit) */
extern const cpu_quant_ops cpu_quant_avxvnni16;   /* 16-bit: AVX-VNNI vpdpwssd (256-bit) */
extern const cpu_quant_ops cpu_quant_avx512_16;   /* 16-bit: vpmaddwd (512-bit) */
extern const cpu_quant_ops cpu_quant_avx512vnni16;/* 16-bit: AVX512-VNNI vpdpwssd */
/* the AVX2 activation quantizers (quant_avx2.c, quant16_avx2.c), shared by the AVX-512 tables */
void cpu_quant_act32_avx2(uint8_t *row, const float *x, int K, int c);
void cpu_quant_act256_avx2(uint8_t *row, const float *x, int K);
void cpu_quant_act32_16_avx2(uint8_t *row, const float *x, int K, int c);
void cpu_quant_act256_16_avx2(uint8_t *row, const float *x, int K);
#endif

/* For the SIMD files: the table of a family whose kernels were generated from the .inc files
 * with suffix S (mm_<DT>_S, gemm_<DT>_S, gemm_buf_S): NAME, BITS, its 8- and 16-bit sibling
 * tables W8 and W16, the activation quantizers A32 and A256, then the corr[] initializers. */
#define CPU_QUANT_OPS(NAME, BITS, W8, W16, S, A32, A256, ...)                                  \
    {.name = NAME, .bits = BITS, .w8 = W8, .w16 = W16,                                          \
     .mm = {[DT_Q8_0] = mm_Q8_0_##S, [DT_Q4_0] = mm_Q4_0_##S, [DT_Q4_1] = mm_Q4_1_##S,          \
            [DT_Q5_0] = mm_Q5_0_##S, [DT_Q5_1] = mm_Q5_1_##S, [DT_Q4_K] = mm_Q4_K_##S,          \
            [DT_Q5_K] = mm_Q5_K_##S, [DT_Q6_K] = mm_Q6_K_##S},                                  \
     .gemm = {[DT_Q8_0] = gemm_Q8_0_##S, [DT_Q4_0] = gemm_Q4_0_##S, [DT_Q4_1] = gemm_Q4_1_##S,  \
              [DT_Q5_0] = gemm_Q5_0_##S, [DT_Q5_1] = gemm_Q5_1_##S, [DT_Q4_K] = gemm_Q4_K_##S,  \
              [DT_Q5_K] = gemm_Q5_K_##S, [DT_Q6_K] = gemm_Q6_K_##S},                            \
     .gemm_buf = gemm_buf_##S, .corr = {__VA_ARGS__}, .act32 = A32, .act256 = A256}

/* For the scalar tables (quant.c, quant16.c): mm_<DT>_S for every block dtype as DOT(dt, w_row,
 * x_row, K) per output (no GEMM; the reference every SIMD table is tested against), and the table
 * NAME / BITS / W8 / W16 / A32 / A256 as in CPU_QUANT_OPS. */
#define CPU_QUANT_SCALAR_MM_1(DT, S, DOT)                                                      \
    static void mm_##DT##_##S(float *Y, size_t ldy, const uint8_t *W, size_t ws, const uint8_t *X, \
                              size_t xs, int nr, int nx, int K)                                \
    {                                                                                          \
        for (int j = 0; j < nx; j++)                                                           \
            for (int r = 0; r < nr; r++)                                                       \
                Y[(size_t)j * ldy + r] = DOT(DT_##DT, W + (size_t)r * ws, X + (size_t)j * xs, K); \
    }
#define CPU_QUANT_SCALAR_MM(S, DOT)                                                            \
    CPU_QUANT_SCALAR_MM_1(Q8_0, S, DOT)                                                        \
    CPU_QUANT_SCALAR_MM_1(Q4_0, S, DOT)                                                        \
    CPU_QUANT_SCALAR_MM_1(Q4_1, S, DOT)                                                        \
    CPU_QUANT_SCALAR_MM_1(Q5_0, S, DOT)                                                        \
    CPU_QUANT_SCALAR_MM_1(Q5_1, S, DOT)                                                        \
    CPU_QUANT_SCALAR_MM_1(Q4_K, S, DOT)                                                        \
    CPU_QUANT_SCALAR_MM_1(Q5_K, S, DOT)                                                        \
    CPU_QUANT_SCALAR_MM_1(Q6_K, S, DOT)
#define CPU_QUANT_SCALAR_OPS(NAME, BITS, W8, W16, S, A32, A256)                                \
    {.name = NAME, .bits = BITS, .w8 = W8, .w16 = W16,                                          \
     .mm = {[DT_Q8_0] = mm_Q8_0_##S, [DT_Q4_0] = mm_Q4_0_##S, [DT_Q4_1] = mm_Q4_1_##S,          \
            [DT_Q5_0] = mm_Q5_0_##S, [DT_Q5_1] = mm_Q5_1_##S, [DT_Q4_K] = mm_Q4_K_##S,          \
            [DT_Q5_K] = mm_Q5_K_##S, [DT_Q6_K] = mm_Q6_K_##S},                                  \
     .act32 = A32, .act256 = A256}

/* The activation format the kernels of ops want for weight dtype wdt. */
static inline qact_fmt quant_act_fmt(const cpu_quant_ops *ops, dtype_t wdt)
{
    qact_fmt f = {quant_act_kind(wdt), ops->corr[wdt], ops->bits};
    return f;
}

/* Quantize x[K] into row in format f with ops's quantizer. */
static inline void quant_act_row(const cpu_quant_ops *ops, qact_fmt f, uint8_t *row, const float *x, int K)
{
    if (f.kind == QA_256) ops->act256(row, x, K);
    else ops->act32(row, x, K, f.corr);
}

/* The quantized-kernel table that goes with the active SIMD family (dispatch.c), in the
 * activation bits of cpu_quant_act_bits (kernels.h): scalar → scalar; avx2 → avxvnni when the
 * CPU has AVX-VNNI, else avx2; avx512 → avx512vnni when it has AVX512-VNNI (+BW, VL, DQ), avx512
 * with BW, VL and DQ, else the avx2 choice. LLM_QUANT_SIMD=<name> in the environment (read on
 * first use) or cpu_quant_use() pins a family. */
const cpu_quant_ops *cpu_quant(void);
/* The 8-bit table of the family called name ("scalar", "avx2", "avxvnni", "avx512",
 * "avx512vnni") if this CPU can run it, else NULL (its w16 is the 16-bit one). */
const cpu_quant_ops *cpu_quant_find(const char *name);
/* Pins the family called name (NULL: back to following the SIMD family); -1 if unusable. */
int cpu_quant_use(const char *name);

/* WL_X16 weights (kernels.h; quant_x16.c): 1 for the dtypes that layout serves (Q8_0, Q4_0,
 * Q4_1, Q5_0, Q5_1; Q4_K and Q6_K with the AVX512-VNNI and the 256-bit 16-bit families, rows of
 * at most X16K_MAX_K columns: their decode splits the activation row into planes on the stack). */
int x16_dtype(dtype_t dt);
#define X16K_MAX_K 32768
/* WL_X16 Q6_K: the group-block offset of the 64-byte run index that a decode step (hh 0..1,
 * t 0..7) reads as ql run 16hh + t (k = 0), ql run 16hh + 8 + t (k = 1) or qh run 8hh + t
 * (k = 2): the three side by side, the steps in order, so a super-block is read front to back
 * (quant_x16.c; in ggml's run order the three interleaved runs read 13 GB/s from DRAM on Zen 3
 * where the same bytes in address order read 19-20). */
static inline size_t x16k_q6_run(int hh, int t, int k) { return 288 + 64 * (size_t)(3 * (8 * hh + t) + k); }
/* Block b of row r of the WL_X16 matrix W (cols columns) as ggml stores it, to blk. */
void x16_block(dtype_t dt, const void *W, int cols, int r, int b, uint8_t *blk);
/* Whether weight_x16_pack / weight_x16_unpack convert between Q5 qh and the masks with BMI2
 * pdep / pext (on = 1, when the CPU has it) or portable C (0); -1: by the CPU (the default).
 * Returns the choice. For tests. */
int x16_use_bmi2(int on);
/* How WL_X16 Q5_0/Q5_1 group-blocks keep their 5th bits (kernels.h): as masks (0: 8 × {lo, hi},
 * bit 2r + i of chunk c's lo the 5th bit of element 2c + i of row r, hi for element 2c + 16 + i;
 * what the AVX-512 kernels read) or as planes (1: pl[32], ph[32], bit c of pl[j] the 5th bit of
 * chunk c's byte j's low nibble, of ph[j] its high nibble's: the 256-bit kernels shift a plane
 * so bit c lands on 4, two operations a chunk where the masks take four). on < 0: by the CPU,
 * planes when it has no AVX512-BW (the default, decided on first use). A process-wide setting
 * that weight_x16_pack writes and every reader of the groups follows: change it only while no
 * packed Q5 weights are in use (tests). Returns the choice; x16_planes_now() reads it. */
int x16_use_planes(int on);
int x16_planes_now(void);
/* The decode kernel of ops's family for WL_X16 weights of dt, or NULL (then quant_gemm.c
 * unpacks the rows for the family's own kernels; quant_x16_avx512.c, quant_x16_avx2.c). Its call: Y[r] for r < nr
 * (a multiple of 16; W at the start of a group of 16 rows, wstride unused), nx = 1 activation
 * row X in ops's A32 format for dt (16-bit, with dt's corr). */
qmm_fn cpu_quant_x16(const cpu_quant_ops *ops, dtype_t dt);
/* The family's packed-panel prefill GEMM for WL_X16 weights of dt (quant16_avx512.c,
 * quant16_avx2.c: qpack16_x16.inc), or NULL: nr a multiple of 16, W at the start of a group, wstride =
 * dtype_row_bytes(dt, K); the same results, bit for bit, as ops->gemm[dt] on the ggml rows. */
qgemm_fn cpu_quant_x16_gemm(const cpu_quant_ops *ops, dtype_t dt);
#ifdef LLM_SIMD_X86
/* the per-width halves of those two (quant_x16_avx512.c, quant_x16_avx2.c, quant16_avx512.c,
 * quant16_avx2.c): NULL for another family's table */
qmm_fn cpu_quant_x16_512(const cpu_quant_ops *ops, dtype_t dt);
qmm_fn cpu_quant_x16_256(const cpu_quant_ops *ops, dtype_t dt);
/* the K-quant ones: Q4_K, Q6_K for cpu_quant_avx512vnni16 (quant_x16k_avx512.c) and for
 * cpu_quant_avx2_16 / cpu_quant_avxvnni16 (quant_x16k_avx2.c), else NULL */
qmm_fn cpu_quant_x16k_512(const cpu_quant_ops *ops, dtype_t dt);
qmm_fn cpu_quant_x16k_256(const cpu_quant_ops *ops, dtype_t dt);
qgemm_fn cpu_quant_x16_gemm_512(const cpu_quant_ops *ops, dtype_t dt);
qgemm_fn cpu_quant_x16_gemm_256(const cpu_quant_ops *ops, dtype_t dt);
#endif

/* Prefill strategy for quantized weights (quant_gemm.c): 0 = the quantized GEMM (default: the
 * packed-panel kernels from QG_PACK_MIN rows on when the family has them, else the register
 * tiles), 1 = dequantize a tile of weight rows to f32 and run cblas_sgemm, 2 = the register
 * tiles only (1 and 2 are kept for the comparisons in bench/bench_quant.c and the tests). */
extern int cpu_qgemm_mode;

/* matmul/matmul_multi/widen_row for block dtypes (quant_gemm.c; matmul.c routes to them). */
void qmatmul_multi(float *const *y, const weight_t *const *w, int k, const float *x, int n);

/* matmul_next_hint / matmul_next_hint_bytes (kernels.h): what follows a decode product. */
#define MM_HINT_THREADS 8
#define MM_HINT_SPANS 4
typedef struct {
    const weight_t *w[4];   /* the next product's matrices, k of them */
    int k;
    int n[MM_HINT_THREADS];   /* spans thread t reads after it */
    const char *p[MM_HINT_THREADS][MM_HINT_SPANS];
    size_t len[MM_HINT_THREADS][MM_HINT_SPANS];
} matmul_hint;
/* The hint set on this thread for its next product (NULL: none), marked used. matmul.c keeps
 * it; the struct stays as it is until this thread's next matmul_next_hint, so the workers of
 * the product it is for may read it while that product runs. */
const matmul_hint *matmul_take_hint(void);

#endif
