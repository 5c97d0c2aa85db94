/* The 16-row interleaved layout of the 32-element block weights (WL_X16, kernels.h):
 * packing, unpacking and when to use it. The decode kernels that read it are in
 * quant_x16_avx512.c and quant_x16_avx2.c, the prefill GEMMs in qpack16_x16.inc; every other
 * product (another family, 8-bit activations, the sgemm mode, a group cut by a row split, the
 * no-memory path) unpacks the rows it needs back to ggml's layout (quant_gemm.c).
 *
 * Layout of block b of a group of 16 rows (kernels.h): f16 d[16]; Q4_1/Q5_1 f16 m[16];
 * Q5_0/Q5_1 8 × {uint32 lo, hi} 5th-bit masks, or the planes pl[32], ph[32] (x16_use_planes:
 * CPUs without AVX512-BW); 8 chunks (Q8_0: 16) of 32 bytes (qs[2c],
 * qs[2c + 1] of each row). Same size as the 16 ggml blocks, so nothing about the bytes per row
 * changes.
 *
 * Q4_K and Q6_K (the AVX512-VNNI 16-bit family: quant_x16k_avx512.c; the 256-bit ones:
 * quant_x16k_avx2.c, each 64-byte run index as two halves of 8 rows): a group-block is the 16
 * rows' super-blocks b (16 × 144 / 210 bytes), the scale bytes transposed and the quants in
 * 4-byte runs, 64 bytes a run index (kq_move). Q4_K: f16 d[16], f16 dmin[16], the 12 packed scale
 * bytes (byte i of row r at 64 + 16i + r), 32 runs (qs[4q .. 4q + 4) of row r at 256 + 64q + 4r).
 * Q6_K: f16 d[16], the 16 int8 scales (scale j of row r at 32 + 16j + r), 48 runs of its first 192
 * bytes (ql's 32, qh's 16: bytes 4q .. 4q + 4 of row r at x16k_q6_run(hh, t, k) + 4r, quant.h, the
 * order a decode step reads them: ql run q = 16hh + 8k + t for k = 0, 1, qh run q − 32 = 8hh + t
 * for k = 2). */
#include "kernels/cpu/quant.h"

#include <string.h>
#ifdef LLM_SIMD_X86
#include <immintrin.h>
#endif

/* Offsets inside a group-block of 16 blocks of dtype dt: m[16], the masks, the chunks. */
/* use BMI2 pext for the Q5 masks: 1, 0, or -1 (not decided: whether the CPU has it) */
static int x16_bmi2 = -1;

static int x16_bmi2_now(void)
{
    int v = __atomic_load_n(&x16_bmi2, __ATOMIC_RELAXED);
    return v < 0 ? x16_use_bmi2(-1) : v;
}

int x16_use_bmi2(int on)
{
#ifdef LLM_SIMD_X86
    int v = on < 0 ? (__builtin_cpu_supports("bmi2") ? 1 : 0) : on && __builtin_cpu_supports("bmi2");
#else
    int v = 0;
    (void)on;
#endif
    __atomic_store_n(&x16_bmi2, v, __ATOMIC_RELAXED);
    return v;
}
/* Q5 5th bits as planes (1) or masks (0); -1: not decided (by the CPU, x16_use_planes) */
static int x16_planes = -1;

int x16_use_planes(int on)
{
#ifdef LLM_SIMD_X86
    int v = on < 0 ? !__builtin_cpu_supports("avx512bw") : on != 0;
#else
    int v = on != 0;
#endif
    __atomic_store_n(&x16_planes, v, __ATOMIC_RELAXED);
    return v;
}

int x16_planes_now(void)
{
    int v = __atomic_load_n(&x16_planes, __ATOMIC_RELAXED);
    return v < 0 ? x16_use_planes(-1) : v;
}

/* bits 0, 2, .., 14 of x to bits 0..7 (the others of x must be 0), and back */
static uint32_t even_to_byte(uint32_t x)
{
    x = (x | x >> 1) & 0x3333u;
    x = (x | x >> 2) & 0x0F0Fu;
    return (x | x >> 4) & 0x00FFu;
}
static uint32_t byte_to_even(uint32_t x)
{
    x = (x | x << 4) & 0x0F0Fu;
    x = (x | x << 2) & 0x3333u;
    return (x | x << 1) & 0x5555u;
}

/* Planes pl[32], ph[32] of a group-block from the 16 rows' qh: bit c of pl[2r + k] is bit 2c + k
 * of qh[r] (the 5th bit of element 2c + k: chunk c's byte 2r + k, low nibble), of ph[2r + k]
 * bit 2c + 16 + k (the high nibble's). */
static void qh_to_planes(const uint32_t qh[16], uint8_t pl[32], uint8_t ph[32])
{
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 2; k++) {
            pl[2 * r + k] = (uint8_t)even_to_byte((qh[r] >> k) & 0x5555u);
            ph[2 * r + k] = (uint8_t)even_to_byte((qh[r] >> (16 + k)) & 0x5555u);
        }
}
static uint32_t planes_to_qh(const uint8_t *pl, const uint8_t *ph, int r)
{
    uint32_t v = 0;
    for (int k = 0; k < 2; k++) v |= byte_to_even(pl[2 * r + k]) << k | byte_to_even(ph[2 * r + k]) << (16 + k);
    return v;
}

static int x16_has_m(dtype_t dt) { return dt == DT_Q4_1 || dt == DT_Q5_1; }
static int x16_five(dtype_t dt) { return dt == DT_Q5_0 || dt == DT_Q5_1; }
static size_t x16_off_qh(dtype_t dt) { return x16_has_m(dt) ? 64 : 32; }
static size_t x16_off_qs(dtype_t dt) { return x16_off_qh(dt) + (x16_five(dt) ? 64 : 0); }
/* chunks of 32 bytes per group-block (Q8_0: 32 bytes of quants per row, the others 16), and
 * where a ggml block keeps its quants */
static int x16_nch(dtype_t dt) { return dt == DT_Q8_0 ? 16 : 8; }
static size_t x16_qo(dtype_t dt) { return dt == DT_Q8_0 ? 2 : dtype_block_bytes(dt) - 16; }

int x16_dtype(dtype_t dt)
{
    return dt == DT_Q8_0 || dt == DT_Q4_0 || dt == DT_Q4_1 || dt == DT_Q5_0 || dt == DT_Q5_1 || dt == DT_Q4_K || dt == DT_Q6_K;
}

static int x16_kq(dtype_t dt) { return dt == DT_Q4_K || dt == DT_Q6_K; }

int weight_x16_wanted(const weight_t *w)
{
    if (!w || w->layout != WL_ROWS || !x16_dtype(w->dtype) || w->rows <= 0 || w->rows % 16 ||
        w->cols <= 0 || w->cols % dtype_block(w->dtype) || (x16_kq(w->dtype) && w->cols > X16K_MAX_K))
        return 0;
    return cpu_quant_x16(cpu_quant(), w->dtype) != NULL;
}

/* Where a K-quant super-block's bytes stand in its group-block: n runs of len bytes, run i at
 * block offset b0 + len·i and, for row r, group offset g0 + gstep·i + len·r (the layout above). */
typedef struct { short b0, len, n, g0, gstep; } kq_run;
static const kq_run KQ_Q4K[] = {{0, 2, 1, 0, 0}, {2, 2, 1, 32, 0}, {4, 1, 12, 64, 16}, {16, 4, 32, 256, 64}};
/* Q6_K's quant runs in step order (x16k_q6_run(hh, t, k) = 288 + 64·(24hh + 3t + k)): ql runs
 * 16hh + 8k + t (k = 0, 1) and qh runs 32 + 8hh + t (k = 2), t = 0..7, each set 192 bytes a step */
static const kq_run KQ_Q6K[] = {{208, 2, 1, 0, 0},     {192, 1, 16, 32, 16}, {0, 4, 8, 288, 192}, {32, 4, 8, 352, 192},
                                {64, 4, 8, 1824, 192}, {96, 4, 8, 1888, 192}, {128, 4, 8, 416, 192}, {160, 4, 8, 1952, 192}};

/* Super-block blk (ggml's layout) into row r of the K-quant group-block gbk (put), or back;
 * each run's length a constant for the compiler (prefill unpacks every K-quant group per call,
 * 46-68 runs a row). */
static void kq_move(dtype_t dt, uint8_t *gbk, uint8_t *blk, int r, int put)
{
    const kq_run *t = dt == DT_Q4_K ? KQ_Q4K : KQ_Q6K;
    const int nt = dt == DT_Q4_K ? 4 : 8;
    for (int k = 0; k < nt; k++) {
        const int len = t[k].len, n = t[k].n, gs = t[k].gstep;
        uint8_t *g = gbk + t[k].g0 + len * r, *b = blk + t[k].b0;
        for (int i = 0; i < n; i++) {
            uint8_t *gi = g + gs * i, *bi = b + len * i;
            uint8_t *dst = put ? gi : bi, *src = put ? bi : gi;
            if (len == 1) *dst = *src;
            else if (len == 2) memcpy(dst, src, 2);
            else memcpy(dst, src, 4);
        }
    }
}

/* Block r of the group-block gbk back in ggml's layout (bb bytes at blk). */
static void get_block(dtype_t dt, const uint8_t *gbk, uint8_t *blk, int r)
{
    if (x16_kq(dt)) {
        kq_move(dt, (uint8_t *)gbk, blk, r, 0);
        return;
    }
    uint8_t *qs = blk + x16_qo(dt);
    memcpy(blk, gbk + 2 * r, 2);
    if (x16_has_m(dt)) memcpy(blk + 2, gbk + 32 + 2 * r, 2);
    if (x16_five(dt) && x16_planes_now()) {
        const uint8_t *mk = gbk + x16_off_qh(dt);
        uint32_t qh = planes_to_qh(mk, mk + 32, r);
        uint8_t *o = blk + (x16_has_m(dt) ? 4 : 2);
        for (int k = 0; k < 4; k++) o[k] = (uint8_t)(qh >> (8 * k));
    } else if (x16_five(dt)) {
        const uint8_t *mk = gbk + x16_off_qh(dt);
        uint32_t qh = 0;
        for (int c = 0; c < 8; c++)
            for (int i = 0; i < 2; i++) {
                uint32_t lo = q_rd32(mk + 8 * c), hi = q_rd32(mk + 8 * c + 4);
                qh |= ((lo >> (2 * r + i)) & 1u) << (2 * c + i);
                qh |= ((hi >> (2 * r + i)) & 1u) << (2 * c + 16 + i);
            }
        uint8_t *o = blk + (x16_has_m(dt) ? 4 : 2);
        for (int k = 0; k < 4; k++) o[k] = (uint8_t)(qh >> (8 * k));
    }
    const uint8_t *ch = gbk + x16_off_qs(dt);
    for (int c = 0; c < x16_nch(dt); c++) {
        qs[2 * c] = ch[32 * c + 2 * r];
        qs[2 * c + 1] = ch[32 * c + 2 * r + 1];
    }
}

void x16_block(dtype_t dt, const void *W, int cols, int r, int b, uint8_t *blk)
{
    const size_t rb = dtype_row_bytes(dt, cols), gb = 16 * dtype_block_bytes(dt);
    get_block(dt, (const uint8_t *)W + (size_t)(r / 16) * 16 * rb + (size_t)b * gb, blk, r % 16);
}

/* The masks lo[8], hi[8] of a group-block from the 16 rows' qh (the inverse of masks_to_qh). */
static void qh_to_masks(const uint32_t qh[16], uint32_t lo[8], uint32_t hi[8])
{
    for (int c = 0; c < 8; c++) lo[c] = hi[c] = 0;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 8; c++) {
            lo[c] |= ((qh[r] >> (2 * c)) & 3u) << (2 * r);
            hi[c] |= ((qh[r] >> (2 * c + 16)) & 3u) << (2 * r);
        }
}

#ifdef LLM_SIMD_X86
/* The same with BMI2 pdep: 4 bits of row r's qh to its 2-bit fields of two masks at a time. */
__attribute__((target("bmi2"))) static void qh_to_masks_bmi2(const uint32_t qh[16], uint32_t lo[8], uint32_t hi[8])
{
    uint64_t L[4] = {0}, H[4] = {0};
    for (int r = 0; r < 16; r++) {
        const uint64_t m = (3ull << (2 * r)) | (3ull << (2 * r + 32));
        for (int k = 0; k < 4; k++) {
            L[k] |= _pdep_u64((qh[r] >> (4 * k)) & 0xF, m);
            H[k] |= _pdep_u64((qh[r] >> (4 * k + 16)) & 0xF, m);
        }
    }
    for (int k = 0; k < 4; k++) {
        lo[2 * k] = (uint32_t)L[k], lo[2 * k + 1] = (uint32_t)(L[k] >> 32);
        hi[2 * k] = (uint32_t)H[k], hi[2 * k + 1] = (uint32_t)(H[k] >> 32);
    }
}
#endif

void weight_x16_pack(dtype_t dt, const void *src, void *dst, int n, int cols)
{
    const size_t bb = dtype_block_bytes(dt), rb = dtype_row_bytes(dt, cols), gb = 16 * bb, qo = x16_qo(dt);
    const size_t ho = x16_has_m(dt) ? 4 : 2;
    const int nb = cols / dtype_block(dt), bmi2 = x16_bmi2_now(), nch = x16_nch(dt), planes = x16_planes_now();
    for (int g = 0; g < n / 16; g++)
        for (int b = 0; b < nb; b++) {
            uint8_t *gbk = (uint8_t *)dst + (size_t)g * 16 * rb + (size_t)b * gb, *ch = gbk + x16_off_qs(dt);
            if (x16_kq(dt)) {
                for (int r = 0; r < 16; r++) kq_move(dt, gbk, (uint8_t *)src + (size_t)(16 * g + r) * rb + (size_t)b * bb, r, 1);
                continue;
            }
            uint32_t qh[16];
            for (int r = 0; r < 16; r++) {
                const uint8_t *blk = (const uint8_t *)src + (size_t)(16 * g + r) * rb + (size_t)b * bb;
                memcpy(gbk + 2 * r, blk, 2);
                if (x16_has_m(dt)) memcpy(gbk + 32 + 2 * r, blk + 2, 2);
                if (x16_five(dt)) qh[r] = q_rd32(blk + ho);
                for (int c = 0; c < nch; c++) memcpy(ch + 32 * c + 2 * r, blk + qo + 2 * c, 2);
            }
            if (x16_five(dt) && planes) {
                uint8_t *mk = gbk + x16_off_qh(dt);
                qh_to_planes(qh, mk, mk + 32);
            } else if (x16_five(dt)) {
                uint32_t lo[8], hi[8];
#ifdef LLM_SIMD_X86
                if (bmi2) qh_to_masks_bmi2(qh, lo, hi);
                else
#endif
                    qh_to_masks(qh, lo, hi);
                uint8_t *mk = gbk + x16_off_qh(dt);
                for (int c = 0; c < 8; c++)
                    for (int k = 0; k < 4; k++) {
                        mk[8 * c + k] = (uint8_t)(lo[c] >> (8 * k));
                        mk[8 * c + 4 + k] = (uint8_t)(hi[c] >> (8 * k));
                    }
            }
        }
}

/* The 16 rows' qh (ggml's 32 5th bits of a Q5 block) from the masks lo[8], hi[8]: bit 2c + i
 * of row r's qh is bit 2r + i of lo[c], bit 2c + 16 + i that of hi[c]. */
static void masks_to_qh(const uint32_t lo[8], const uint32_t hi[8], uint32_t qh[16])
{
    for (int r = 0; r < 16; r++) {
        uint32_t v = 0;
        for (int c = 0; c < 8; c++) v |= ((lo[c] >> (2 * r)) & 3u) << (2 * c) | ((hi[c] >> (2 * r)) & 3u) << (2 * c + 16);
        qh[r] = v;
    }
}

#ifdef LLM_SIMD_X86
/* The same with BMI2 pext: per row, the 2-bit fields r of 4 pairs of masks at a time (a third
 * of the operations: prefill unpacks every Q5 group per call). */
__attribute__((target("bmi2"))) static void masks_to_qh_bmi2(const uint32_t lo[8], const uint32_t hi[8], uint32_t qh[16])
{
    uint64_t L[4], H[4];
    for (int k = 0; k < 4; k++) {
        L[k] = lo[2 * k] | (uint64_t)lo[2 * k + 1] << 32;
        H[k] = hi[2 * k] | (uint64_t)hi[2 * k + 1] << 32;
    }
    for (int r = 0; r < 16; r++) {
        const uint64_t m = (3ull << (2 * r)) | (3ull << (2 * r + 32));
        uint32_t v = 0;
        for (int k = 0; k < 4; k++)
            v |= (uint32_t)_pext_u64(L[k], m) << (4 * k) | (uint32_t)_pext_u64(H[k], m) << (4 * k + 16);
        qh[r] = v;
    }
}
#endif

/* Rows [r, r + n) of one group-block: the whole 16 at once when n = 16 (prefill unpacks whole
 * groups: byte copies and one pass over the masks), else get_block per row. */
static void get_rows(dtype_t dt, const uint8_t *gbk, uint8_t *dst, size_t rb, int r, int n, int bmi2)
{
    if (n < 16 || x16_kq(dt)) {
        for (int i = 0; i < n; i++) get_block(dt, gbk, dst + (size_t)i * rb, r + i);
        return;
    }
    const size_t qo = x16_qo(dt), ho = x16_has_m(dt) ? 4 : 2;
    const int nch = x16_nch(dt);
    const uint8_t *ch = gbk + x16_off_qs(dt), *mk = gbk + x16_off_qh(dt);
    uint32_t lo[8], hi[8], qh[16];
    if (x16_five(dt) && x16_planes_now())
        for (int i = 0; i < 16; i++) qh[i] = planes_to_qh(mk, mk + 32, i);
    else if (x16_five(dt)) {
        for (int c = 0; c < 8; c++) lo[c] = q_rd32(mk + 8 * c), hi[c] = q_rd32(mk + 8 * c + 4);
#ifdef LLM_SIMD_X86
        if (bmi2) masks_to_qh_bmi2(lo, hi, qh);
        else
#endif
            masks_to_qh(lo, hi, qh);
    }
    for (int i = 0; i < 16; i++) {
        uint8_t *blk = dst + (size_t)i * rb;
        memcpy(blk, gbk + 2 * i, 2);
        if (x16_has_m(dt)) memcpy(blk + 2, gbk + 32 + 2 * i, 2);
        if (x16_five(dt))
            for (int k = 0; k < 4; k++) blk[ho + k] = (uint8_t)(qh[i] >> (8 * k));
        for (int c = 0; c < nch; c++) memcpy(blk + qo + 2 * c, ch + 32 * c + 2 * i, 2);
    }
}

void weight_x16_unpack(dtype_t dt, const void *src, void *dst, int r, int n, int cols)
{
    const int bmi2 = x16_bmi2_now();
    const size_t bb = dtype_block_bytes(dt), rb = dtype_row_bytes(dt, cols), gb = 16 * bb;
    const int nb = cols / dtype_block(dt);
    for (int b = 0; b < nb; b++)
        get_rows(dt, (const uint8_t *)src + (size_t)b * gb, (uint8_t *)dst + (size_t)b * bb, rb, r, n, bmi2);
}

qmm_fn cpu_quant_x16(const cpu_quant_ops *ops, dtype_t dt)
{
#ifdef LLM_SIMD_X86
    /* the 512-bit kernels read Q5's 5th bits as masks only */
    qmm_fn k = x16_five(dt) && x16_planes_now() ? NULL : cpu_quant_x16_512(ops, dt);
    return k ? k : cpu_quant_x16_256(ops, dt);
#else
    (void)ops, (void)dt;
    return NULL;
#endif
}

qgemm_fn cpu_quant_x16_gemm(const cpu_quant_ops *ops, dtype_t dt)
{
#ifdef LLM_SIMD_X86
    qgemm_fn g = x16_five(dt) && x16_planes_now() ? NULL : cpu_quant_x16_gemm_512(ops, dt);
    return g ? g : cpu_quant_x16_gemm_256(ops, dt);
#else
    (void)ops, (void)dt;
    return NULL;
#endif
}
