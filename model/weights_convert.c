/* weights_convert.c — what happens to loaded weights before they run: dtype conversion and
 * quantization (model_convert), copies into huge-page memory (model_make_resident), alignment
 * fix-ups (model_align_weights) and the finite check (model_check_finite). */
#include "model/internal.h"

#include <omp.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define fail model_fail


int model_reserve_owned(model_weights *m, size_t more, char *err, size_t errlen) {
    void **owned = realloc(m->owned, ((size_t)m->n_owned + more) * sizeof *owned);
    if (!owned) return fail(err, errlen, "out of memory");
    m->owned = owned;
    return 0;
}

/* ------------------------------------------------------------------- dtype conversion */

/* A weight buffer of `bytes`, 2 MiB-aligned and marked for transparent huge pages before its
 * first touch: decode streams every weight each token, and with 4 KiB pages every 4 KiB costs
 * a TLB miss (on a KVM guest one core's streaming read measured ~12 GB/s with 4 KiB pages vs
 * ~21 GB/s with huge pages). Only the whole 2 MiB pages inside the buffer are huge; its last
 * partial one is marked MADV_NOHUGEPAGE, so a 2.25 MiB matrix costs 2.25 MiB of RSS, not the
 * 4 MiB of two huge pages (stories110M F32: 84 of 578 MiB went to such tails). Freed with free(). */
void *model_alloc_weight(size_t bytes) {
    const size_t huge = (size_t)2 << 20, page = 4096;
    void *p = NULL;
    if (bytes < huge) return malloc(bytes ? bytes : 1);
    size_t len = (bytes + page - 1) / page * page, whole = bytes / huge * huge;
    if (posix_memalign(&p, huge, len) != 0) return NULL;
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
    madvise(p, whole, MADV_HUGEPAGE);   /* advice only: without THP it is plain memory */
    if (len > whole) madvise((char *)p + whole, len - whole, MADV_NOHUGEPAGE);
#endif
    return p;
}

/* Converts w to dtype `to` in a newly owned buffer, row by row: F16/BF16/block formats → F32
 * exact (dequantize_row); → F16/BF16 rounds to nearest even; → Q8_0/Q4_0 with ggml's reference
 * quantizers (quantize_row). A weight whose row length is not a multiple of the target's block
 * stays as it is (*kept = 1). */
static int convert(model_weights *m, weight_t *w, dtype_t to, int *kept, char *err, size_t errlen) {
    if (kept) *kept = 0;
    if (w->dtype == to || !w->data) return 0;
    if (w->cols % dtype_block(to)) {
        if (kept) *kept = 1;
        return 0;
    }
    size_t in_rb = dtype_row_bytes(w->dtype, w->cols), out_rb = dtype_row_bytes(to, w->cols);
    char *out = model_alloc_weight(out_rb * (size_t)w->rows);
    float *tmp = malloc(sizeof *tmp * (size_t)w->cols * (size_t)(omp_get_max_threads() + 1));
    if (!out || !tmp) {
        free(out);
        free(tmp);
        return fail(err, errlen, "model_convert: out of memory converting a [%d, %d] weight to %s",
                    w->rows, w->cols, dtype_name(to));
    }
    const dtype_t from = w->dtype;
    const char *in = w->data;
    #pragma omp parallel for schedule(static) if ((size_t)w->rows * w->cols >= (1 << 18))
    for (int r = 0; r < w->rows; r++) {
        float *row = tmp + (size_t)omp_get_thread_num() * w->cols;
        dequantize_row(from, in + (size_t)r * in_rb, row, w->cols);
        char *dst = out + (size_t)r * out_rb;
        if (to == DT_F32) memcpy(dst, row, sizeof *row * (size_t)w->cols);
        else if (to == DT_F16) for (int i = 0; i < w->cols; i++) ((uint16_t *)dst)[i] = f32_to_f16(row[i]);
        else if (to == DT_BF16) for (int i = 0; i < w->cols; i++) ((uint16_t *)dst)[i] = f32_to_bf16(row[i]);
        else quantize_row(to, row, dst, w->cols);
    }
    free(tmp);
    m->owned[m->n_owned++] = out;
    *w = (weight_t){.dtype = to, .data = out, .rows = w->rows, .cols = w->cols};
    return 0;
}

int model_convert(model_weights *m, dtype_t to, char *err, size_t errlen) {
    if (to != DT_F32 && to != DT_F16 && to != DT_BF16 && to != DT_Q8_0 && to != DT_Q4_0)
        return fail(err, errlen, "model_convert: unsupported target dtype %s", dtype_name(to));
    m->n_kept = 0;
    int n_layers = m->cfg.n_layers;
    if (model_reserve_owned(m, 3 + 9 * (size_t)n_layers, err, errlen)) return -1;
    int tied = m->lm_head.data == m->embed.data, kept;
#define CONVERT(w, dt, name) do { \
        if (convert(m, (w), (dt), &kept, err, errlen)) return -1; \
        if (kept && m->n_kept < MODEL_MAX_KEPT) snprintf(m->kept[m->n_kept++], sizeof m->kept[0], "%s", (name)); \
        else if (kept) m->n_kept++; \
    } while (0)
    CONVERT(&m->embed, to, "model.embed_tokens.weight");
    if (tied) m->lm_head = m->embed;
    else CONVERT(&m->lm_head, to, "lm_head.weight");
    /* norm weights: to F32 with everything else, otherwise kept as stored (tiny) */
    if (to == DT_F32) CONVERT(&m->final_norm, DT_F32, "model.norm.weight");
    static const char *names[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                  "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
    for (int l = 0; l < n_layers && m->layers; l++) {
        layer_weights *lw = &m->layers[l];
        weight_t *ws[] = {&lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->w_gate, &lw->w_up, &lw->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            char name[96];
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, names[i]);
            CONVERT(ws[i], to, name);
        }
        if (to == DT_F32) {
            CONVERT(&lw->attn_norm, DT_F32, "input_layernorm");
            CONVERT(&lw->ffn_norm, DT_F32, "post_attention_layernorm");
        }
    }
#undef CONVERT
    return 0;
}

/* Copies w to arena + *off (64-byte aligned; *off advances). Out of the file mapping: in 8 MiB
 * blocks, giving each block's whole pages of the mapping back to the kernel once copied
 * (MADV_DONTNEED): the mapping is never read again for w, so peak RSS stays one copy of the
 * weights plus a block, not two (issue 17: llama.cpp keeps one mapped copy). Out of an owned
 * buffer (a converted weight, model_convert): the buffer is freed once copied. Converted buffers
 * are 2 MiB-aligned huge pages only in their whole 2 MiB pages (model_alloc_weight), so a
 * 768x768 F16 matrix (1.2 MiB) sat in 4 KiB pages: with every matrix in the arena the 2-thread
 * F16 decode of the 110M shape streamed its layers at the LM head's rate (bench/cpu.md). With
 * arena NULL it only adds w's size to *off (the sizing pass). */
static void drop_mappings(const model_weights *m);
static void drop_if_mapped(const model_weights *m, const void *p, size_t bytes);

static void make_resident(model_weights *m, weight_t *w, char *arena, size_t *off) {
    int owned = -1;
    for (int i = 0; i < m->n_owned; i++)
        if (m->owned[i] && m->owned[i] == w->data) owned = i;
    size_t bytes = weight_bytes(w), at = *off;
    *off += (bytes + 63) & ~(size_t)63;
    if (!arena) return;
    char *out = arena + at;
    const char *src = w->data;
    size_t block = (size_t)8 << 20;
    const size_t rb = bytes / (size_t)w->rows;
    /* the 32-element block formats the CPU's decode kernels read faster interleaved 16 rows
     * at a time (WL_X16, kernels.h): the copy is that repack (same bytes), in whole groups */
    const int x16 = weight_x16_wanted(w);
    if (x16) block = (block / (16 * rb) > 0 ? block / (16 * rb) : 1) * 16 * rb;
    for (size_t b0 = 0; b0 < bytes; b0 += block) {
        size_t b1 = bytes - b0 < block ? bytes : b0 + block;
        if (x16) {
            int g0 = (int)(b0 / (16 * rb)), g1 = (int)(b1 / (16 * rb));
            #pragma omp parallel for schedule(static) if (b1 - b0 >= (1 << 22))
            for (int g = g0; g < g1; g++)
                weight_x16_pack(w->dtype, src + (size_t)g * 16 * rb, out + (size_t)g * 16 * rb, 16, w->cols);
        } else {
            #pragma omp parallel for schedule(static) if (b1 - b0 >= (1 << 22))
            for (size_t o = b0; o < b1; o += 1 << 16)
                memcpy(out + o, src + o, b1 - o < (1 << 16) ? b1 - o : (1 << 16));
        }
        /* the whole pages inside [src + b0, src + b1): no other tensor shares them */
        if (owned < 0) drop_if_mapped(m, src + b0, b1 - b0);
    }
    if (owned >= 0) {
        free(m->owned[owned]);
        m->owned[owned] = NULL;
#ifdef __GLIBC__
        malloc_trim(0);   /* a buffer below the mmap threshold: back to the kernel now, not at exit */
#endif
    }
    w->data = out;
    if (x16) w->layout = WL_X16;
}

/* Drops every page of the file mappings from this process (MADV_DONTNEED): what is still read
 * from them after model_make_resident (norms, an untied embedding one row per token) faults back
 * in from the page cache on use, instead of staying counted in RSS from the load-time reads
 * (the finite check reads every tensor). */
static void drop_mappings(const model_weights *m) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < m->n_files; i++)
        if (m->files[i].map) madvise(m->files[i].map, (m->files[i].size + page - 1) / page * page, MADV_DONTNEED);
    if (m->gguf && m->gguf->map) madvise(m->gguf->map, (m->gguf->size + page - 1) / page * page, MADV_DONTNEED);
}

/* make_resident for a vector that may be absent (a bias: data NULL) */
static void make_resident_small(model_weights *m, weight_t *w, char *arena, size_t *off) {
    if (w->data && w->rows > 0 && w->cols > 0) make_resident(m, w, arena, off);
}

/* The whole pages of [p, p + bytes) given back to the kernel (MADV_DONTNEED) when they lie in a
 * file mapping of m (never owned memory, which it would zero): read once, they fault back from
 * the page cache if read again. */
static void drop_if_mapped(const model_weights *m, const void *p, size_t bytes) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const char *c = p;
    int mapped = m->gguf && m->gguf->map && c >= (const char *)m->gguf->map && c + bytes <= (const char *)m->gguf->map + m->gguf->size;
    for (int i = 0; i < m->n_files && !mapped; i++)
        mapped = m->files[i].map && c >= (const char *)m->files[i].map && c + bytes <= (const char *)m->files[i].map + m->files[i].size;
    uintptr_t lo = ((uintptr_t)c + page - 1) / page * page, hi = ((uintptr_t)c + bytes) / page * page;
    if (mapped && hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* The matrices decode streams (lm_head and each layer's seven), mapped or converted, in one
 * owned huge-page arena, back to back at 64-byte alignment: one allocation rounds up to a 2 MiB
 * page once, where one per matrix rounded each (a 768x768 F32 matrix, 2.25 MiB, took 4 MiB of
 * huge pages: 84 MiB of 578 on stories110M F32). A tied embedding follows the LM head. */
int model_make_resident(model_weights *m, char *err, size_t errlen) {
    int n_layers = m->cfg.n_layers;
    if (m->resident) return 0;   /* once: the weights are in the arena */
    if (model_reserve_owned(m, 1, err, errlen)) return -1;
    drop_mappings(m);   /* what the load and the checks read: the copy faults its pages back one block at a time */
    int tied = m->lm_head.data == m->embed.data;
    char *arena = NULL;
    for (int pass = 0; pass < 2; pass++) {
        size_t off = 0;
        make_resident(m, &m->lm_head, arena, &off);
        for (int l = 0; l < n_layers && m->layers; l++) {
            layer_weights *lw = &m->layers[l];
            weight_t *ws[] = {&lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->w_gate, &lw->w_up, &lw->w_down};
            for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) make_resident(m, ws[i], arena, &off);
        }
        /* and the vectors read every token (norms, biases), after the matrices: left in the
         * mapping, each read faulted in the page cache's whole folio around it (up to 2 MiB on a
         * kernel with large folios: 45 MiB of a 438 MiB stories110M F32 GGUF back in RSS) */
        make_resident_small(m, &m->final_norm, arena, &off);
        for (int l = 0; l < n_layers && m->layers; l++) {
            layer_weights *lw = &m->layers[l];
            weight_t *vs[] = {&lw->attn_norm, &lw->ffn_norm, &lw->bq, &lw->bk, &lw->bv, &lw->bo};
            for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) make_resident_small(m, vs[i], arena, &off);
        }
        if (pass == 0) {
            if (off == 0) break;
            if (!(arena = model_alloc_weight(off)))
                return fail(err, errlen, "model_make_resident: out of memory copying %.1f MiB of weights", off / 1048576.0);
        }
    }
    if (arena) m->owned[m->n_owned++] = arena;
    if (tied) m->embed = m->lm_head;   /* the embedding is read one row per token: leave it mapped otherwise */
    drop_mappings(m);
    m->resident = 1;
    return 0;
}

int model_to_f32(model_weights *m, char *err, size_t errlen) {
    return model_convert(m, DT_F32, err, errlen);
}

/* ------------------------------------------------------------------------ alignment */

/* A safetensors header whose length is not a multiple of 4 (legal) leaves the data of F32 (and
 * F16/BF16) tensors at addresses the kernels would read as float * (undefined behaviour):
 * such tensors are copied once into aligned owned memory. */
int model_align_weights(model_weights *m, char *err, size_t errlen) {
    const model_config *c = &m->cfg;
    if (model_reserve_owned(m, 16 * ((size_t)c->n_layers + 1), err, errlen)) return -1;
    for (int l = -1; l < c->n_layers; l++) {
        weight_t *ws[13];
        int k = 0;
        if (l < 0) {
            ws[k++] = &m->embed, ws[k++] = &m->final_norm;
            if (m->lm_head.data != m->embed.data) ws[k++] = &m->lm_head;
        } else {
            layer_weights *lw = &m->layers[l];
            weight_t *all[] = {&lw->attn_norm, &lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->ffn_norm,
                               &lw->w_gate, &lw->w_up, &lw->w_down, &lw->bq, &lw->bk, &lw->bv, &lw->bo};
            for (int i = 0; i < 13; i++) ws[k++] = all[i];
        }
        for (int i = 0; i < k; i++) {
            weight_t *w = ws[i];
            size_t al = w->dtype == DT_F32 ? 4 : w->dtype == DT_F16 || w->dtype == DT_BF16 ? 2 : 1;
            if (!w->data || (uintptr_t)w->data % al == 0) continue;
            size_t bytes = weight_bytes(w);
            int tied = l < 0 && w == &m->embed && m->lm_head.data == m->embed.data;
            void *p = model_alloc_weight(bytes);
            if (!p) return fail(err, errlen, "out of memory aligning a [%d, %d] weight", w->rows, w->cols);
            memcpy(p, w->data, bytes);
            m->owned[m->n_owned++] = p;
            w->data = p;
            if (tied) m->lm_head = m->embed;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ finite check (issue 19) */

/* Whether any of the n 32-/16-bit values at p has its exponent bits all ones (a loop the
 * compiler vectorizes: no early exit, no index). */
static int any_nonfinite32(const uint8_t *p, int64_t n)
{
    uint32_t any = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, p + 4 * i, 4);
        any |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return any != 0;
}

static int any_nonfinite16(const uint8_t *p, int64_t n, uint16_t mask)
{
    uint32_t any = 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t u;
        memcpy(&u, p + 2 * i, 2);
        any |= (u & mask) == mask;
    }
    return any != 0;
}

/* Elements per chunk of the F32/F16/BF16 scan: a chunk is tested whole (vectorized); only a
 * chunk with a hit is searched for its first index. The element-by-element min-reduction this
 * replaces made the check 0.2-1.6 s of a 110M F32 model's load (--no-check: 0.24-0.37 s). */
#define FINITE_CHUNK 4096

/* Index of the first non-finite element of w (the first block with a non-finite scale for the
 * block formats), or -1. Exponent bits all ones = inf or nan, tested on the integer bits. */
static int64_t first_nonfinite(const weight_t *w, int *is_block) {
    const uint8_t *p = w->data;
    int64_t n = (int64_t)w->rows * w->cols;
    *is_block = 0;
    int64_t bad = INT64_MAX;
    switch (w->dtype) {
    case DT_F32:
    case DT_F16:
    case DT_BF16: {
        const int es = w->dtype == DT_F32 ? 4 : 2;
        const uint16_t mask = w->dtype == DT_F16 ? 0x7c00 : 0x7f80;
        int64_t nc = (n + FINITE_CHUNK - 1) / FINITE_CHUNK;
        #pragma omp parallel for reduction(min : bad) schedule(static) if (n >= (1 << 20))
        for (int64_t c = 0; c < nc; c++) {
            int64_t i0 = c * FINITE_CHUNK, len = n - i0 < FINITE_CHUNK ? n - i0 : FINITE_CHUNK;
            const uint8_t *q = p + (size_t)i0 * es;
            if (!(es == 4 ? any_nonfinite32(q, len) : any_nonfinite16(q, len, mask))) continue;
            for (int64_t i = 0; i < len; i++) {   /* the chunk's first hit */
                uint32_t u = 0;
                if (es == 4) memcpy(&u, q + 4 * i, 4);
                else {
                    uint16_t h;
                    memcpy(&h, q + 2 * i, 2);
                    u = h;
                }
                if (es == 4 ? (u & 0x7f800000u) == 0x7f800000u : (u & mask) == mask) {
                    if (i0 + i < bad) bad = i0 + i;
                    break;
                }
            }
        }
        break;
    }
    default: {
        /* the f16 scales of each block: d (and m / dmin) first, Q6_K's d last */
        *is_block = 1;
        size_t bb = dtype_block_bytes(w->dtype);
        int64_t nb = n / dtype_block(w->dtype);
        int two = w->dtype == DT_Q4_1 || w->dtype == DT_Q5_1 || w->dtype == DT_Q4_K || w->dtype == DT_Q5_K;
        size_t at = w->dtype == DT_Q6_K ? bb - 2 : 0;
        #pragma omp parallel for reduction(min : bad) schedule(static) if (nb >= (1 << 16))
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *q = p + (size_t)b * bb + at;
            uint16_t d, m = 0;
            memcpy(&d, q, 2);
            if (two) memcpy(&m, q + 2, 2);
            if (((d & 0x7c00) == 0x7c00 || (m & 0x7c00) == 0x7c00) && b < bad) bad = b;
        }
    }
    }
    return bad == INT64_MAX ? -1 : bad;
}

int model_check_finite(const model_weights *m, char *err, size_t errlen) {
    const model_config *c = &m->cfg;
    for (int l = -1; l <= c->n_layers; l++) {
        const weight_t *ws[13];
        const char *names[13];
        int k = 0;
        if (l < 0) {
            ws[k] = &m->embed, names[k++] = "model.embed_tokens.weight";
        } else if (l == c->n_layers) {
            ws[k] = &m->final_norm, names[k++] = "model.norm.weight";
            if (m->lm_head.data != m->embed.data) ws[k] = &m->lm_head, names[k++] = "lm_head.weight";
        } else {
            const layer_weights *lw = &m->layers[l];
            const weight_t *all[] = {&lw->attn_norm, &lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->ffn_norm,
                                     &lw->w_gate, &lw->w_up, &lw->w_down, &lw->bq, &lw->bk, &lw->bv, &lw->bo};
            static const char *nm[] = {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                       "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                                       "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
                                       "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
                                       "self_attn.o_proj.bias"};
            for (int i = 0; i < 13; i++) ws[k] = all[i], names[k++] = nm[i];
        }
        for (int i = 0; i < k; i++) {
            if (!ws[i]->data) continue;
            int is_block;
            int64_t at = first_nonfinite(ws[i], &is_block);
            /* out of this process's RSS once checked: the check alone used to hold the whole file
             * (peak RSS = the file + the rest at load); model_make_resident re-reads it from the
             * page cache */
            drop_if_mapped(m, ws[i]->data, weight_bytes(ws[i]));
            if (at < 0) continue;
            char name[160];
            if (l >= 0 && l < c->n_layers) snprintf(name, sizeof name, "model.layers.%d.%s", l, names[i]);
            else snprintf(name, sizeof name, "%s", names[i]);
            if (is_block)
                return fail(err, errlen, "%s: non-finite scale in %s block %lld (row %lld): the weights are "
                            "corrupt (--no-check skips this test)", name, dtype_name(ws[i]->dtype), (long long)at,
                            (long long)(at * dtype_block(ws[i]->dtype) / ws[i]->cols));
            return fail(err, errlen, "%s: non-finite value (inf or nan) at element %lld (row %lld, column %lld): "
                        "the weights are corrupt (--no-check skips this test)", name, (long long)at,
                        (long long)(at / ws[i]->cols), (long long)(at % ws[i]->cols));
        }
    }
    return 0;
}
