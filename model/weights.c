/* Model folder → model_weights: config.json, then model.safetensors or the shards listed in
 * model.safetensors.index.json; every tensor checked against the config. Also the scalar
 * f16/bf16 conversions and model_convert (dtype of the weights). */
#include "model/model.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <omp.h>

#define INDEX_MAX_BYTES (64 << 20)

/* Formats the one-line error (control characters from the input become '?'). */
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *c = err; err && errlen && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return -1;
}

/* ---------------------------------------------------------------------------- loading */

typedef struct {
    const char *dir;
    char index_path[1100];
    int sharded;               /* 1: files come from the index (ix), parallel to ix.shards */
    st_index ix;
    model_weights *m;
} loader;

static int join(char *out, size_t outlen, const char *dir, const char *name, char *err, size_t errlen) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if ((size_t)snprintf(out, outlen, "%.*s/%s", (int)n, dir, name) >= outlen)
        return fail(err, errlen, "%s/%s: path too long", dir, name);
    return 0;
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static char *read_text(const char *path, size_t *len, char *err, size_t errlen) {
    struct stat pre;
    if (stat(path, &pre) == 0 && !S_ISREG(pre.st_mode)) {   /* a FIFO would block fopen */
        fail(err, errlen, "%s: not a regular file", path);
        return NULL;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    char *buf = NULL;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) why = "not a regular file";
    else if (st.st_size > INDEX_MAX_BYTES) why = "file too large";
    else if (!(buf = malloc((size_t)st.st_size + 1))) why = "out of memory";
    else if (fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) why = "read error";
    fclose(fp);
    if (why) {
        fail(err, errlen, "%s: %s", path, why);
        free(buf);
        return NULL;
    }
    buf[st.st_size] = 0;
    *len = (size_t)st.st_size;
    return buf;
}

/* A shard name that would leave the model folder: absolute, or with a ".." component. */
static int escapes_dir(const char *name) {
    if (name[0] == '/') return 1;
    for (const char *c = name; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.') return 1;
        c += n + (c[n] == '/');
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int st_index_parse(const char *text, size_t len, const char *path, st_index *ix,
                   char *err, size_t errlen) {
    memset(ix, 0, sizeof *ix);
    ix->root = cJSON_ParseWithLength(text, len);
    if (!ix->root) return fail(err, errlen, "%s: malformed JSON", path);
    ix->weight_map = cJSON_GetObjectItemCaseSensitive(ix->root, "weight_map");
    if (!cJSON_IsObject(ix->weight_map)) {
        st_index_free(ix);
        return fail(err, errlen, "%s: missing \"weight_map\" object", path);
    }
    int n_entries = cJSON_GetArraySize(ix->weight_map);
    ix->shards = calloc((size_t)(n_entries ? n_entries : 1), sizeof *ix->shards);
    if (!ix->shards) {
        st_index_free(ix);
        return fail(err, errlen, "%s: out of memory", path);
    }
    for (const cJSON *e = ix->weight_map->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0]) {
            fail(err, errlen, "%s: weight_map[\"%.256s\"] is not a file name", path, e->string);
            ix->n_shards = 0;   /* nothing strdup'd yet */
            st_index_free(ix);
            return -1;
        }
        if (escapes_dir(e->valuestring)) {
            fail(err, errlen, "%s: weight_map[\"%.256s\"]: shard \"%.256s\" is outside the model folder",
                 path, e->string, e->valuestring);
            ix->n_shards = 0;
            st_index_free(ix);
            return -1;
        }
        ix->shards[ix->n_shards++] = e->valuestring;   /* borrowed until deduplicated */
    }
    /* sorted and deduplicated: O(n log n), a hostile index with many shards cannot stall */
    qsort(ix->shards, (size_t)ix->n_shards, sizeof *ix->shards, cmp_str);
    int n = 0;
    for (int i = 0; i < ix->n_shards; i++)
        if (n == 0 || strcmp(ix->shards[n - 1], ix->shards[i])) ix->shards[n++] = ix->shards[i];
    ix->n_shards = n;
    for (int i = 0; i < n; i++)
        if (!(ix->shards[i] = strdup(ix->shards[i]))) {
            ix->n_shards = i;
            st_index_free(ix);
            return fail(err, errlen, "%s: out of memory", path);
        }
    return 0;
}

const char *st_index_shard(const st_index *ix, const char *tensor) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ix->weight_map, tensor);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void st_index_free(st_index *ix) {
    if (!ix) return;
    for (int i = 0; ix->shards && i < ix->n_shards; i++) free(ix->shards[i]);
    free(ix->shards);
    cJSON_Delete(ix->root);
    memset(ix, 0, sizeof *ix);
}

/* Parses index.json and opens each distinct shard named in its weight_map once. */
static int open_shards(loader *L, char *err, size_t errlen) {
    size_t len;
    char *text = read_text(L->index_path, &len, err, errlen);
    if (!text) return -1;
    int rc = st_index_parse(text, len, L->index_path, &L->ix, err, errlen);
    free(text);
    if (rc) return -1;
    L->sharded = 1;
    model_weights *m = L->m;
    m->files = calloc((size_t)(L->ix.n_shards ? L->ix.n_shards : 1), sizeof *m->files);
    if (!m->files) return fail(err, errlen, "%s: out of memory", L->index_path);
    for (int i = 0; i < L->ix.n_shards; i++) {
        char path[1024];
        if (join(path, sizeof path, L->dir, L->ix.shards[i], err, errlen)) return -1;
        if (!is_file(path)) return fail(err, errlen, "%s: shard %s is missing", L->index_path, path);
        if (st_open(path, &m->files[m->n_files], err, errlen)) return -1;
        m->n_files++;
    }
    return 0;
}

static int open_files(loader *L, char *err, size_t errlen) {
    char path[1024];
    if (join(path, sizeof path, L->dir, "model.safetensors", err, errlen) ||
        join(L->index_path, sizeof L->index_path, L->dir, "model.safetensors.index.json", err, errlen))
        return -1;
    if (is_file(path)) {
        if (!(L->m->files = calloc(1, sizeof *L->m->files))) return fail(err, errlen, "%s: out of memory", path);
        if (st_open(path, &L->m->files[0], err, errlen)) return -1;
        L->m->n_files = 1;
        return 0;
    }
    if (is_file(L->index_path)) return open_shards(L, err, errlen);
    return fail(err, errlen, "%s: no model.safetensors or model.safetensors.index.json", L->dir);
}

/* The tensor called name, or NULL; *file is the file it was (or should have been) found in,
 * or NULL when a sharded index does not list it. */
static const st_tensor *lookup(const loader *L, const char *name, const st_file **file) {
    *file = NULL;
    if (!L->sharded) {
        *file = &L->m->files[0];
        return st_find(*file, name);
    }
    const char *shard = st_index_shard(&L->ix, name);
    if (!shard) return NULL;
    char *const *hit = bsearch(&shard, L->ix.shards, (size_t)L->m->n_files, sizeof *L->ix.shards, cmp_str);
    if (!hit) return NULL;
    *file = &L->m->files[hit - L->ix.shards];
    return st_find(*file, name);
}

/* Whether the checkpoint lists tensor name (a sharded index may list it in a shard that
 * lacks it; bind() reports that). */
static int listed(const loader *L, const char *name) {
    if (L->sharded) return cJSON_GetObjectItemCaseSensitive(L->ix.weight_map, name) != NULL;
    return st_find(&L->m->files[0], name) != NULL;
}

/* Binds tensor `name` to w, checking its shape against [rows][cols] (rows = 0: 1-D [cols]). */
static int bind(const loader *L, const char *name, int rows, int cols, weight_t *w,
                char *err, size_t errlen) {
    const st_file *file;
    const st_tensor *t = lookup(L, name, &file);
    if (!t) return fail(err, errlen, "%s: missing tensor %s", file ? file->path : L->index_path, name);
    int want_ndim = rows ? 2 : 1;
    int64_t want[2] = {rows ? rows : cols, cols};
    if (t->ndim != want_ndim || t->shape[0] != want[0] || (rows && t->shape[1] != want[1])) {
        char got[128] = "", exp[64] = "";
        for (int i = 0, k = 0; i < t->ndim; i++)
            k += snprintf(got + k, sizeof got - (size_t)k, i ? ", %lld" : "%lld", (long long)t->shape[i]);
        if (rows) snprintf(exp, sizeof exp, "%d, %d", rows, cols);
        else snprintf(exp, sizeof exp, "%d", cols);
        return fail(err, errlen, "%s: %s: shape [%s], config says [%s]", file->path, name, got, exp);
    }
    *w = (weight_t){.dtype = t->dtype, .data = t->data, .rows = rows ? rows : 1, .cols = cols};
    return 0;
}

static int bind_all(loader *L, char *err, size_t errlen) {
    model_weights *m = L->m;
    const model_config *c = &m->cfg;
    int dim = c->hidden_size, ffn = c->intermediate_size;
    int q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
    if (!(m->layers = calloc((size_t)c->n_layers, sizeof *m->layers)))
        return fail(err, errlen, "%s: out of memory", L->dir);
    if (bind(L, "model.embed_tokens.weight", c->vocab_size, dim, &m->embed, err, errlen) ||
        bind(L, "model.norm.weight", 0, dim, &m->final_norm, err, errlen))
        return -1;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *lw = &m->layers[l];
        const struct { const char *suffix; int rows, cols; weight_t *w; } spec[] = {
            {"input_layernorm", 0, dim, &lw->attn_norm},
            {"self_attn.q_proj", q, dim, &lw->wq},
            {"self_attn.k_proj", kv, dim, &lw->wk},
            {"self_attn.v_proj", kv, dim, &lw->wv},
            {"self_attn.o_proj", dim, q, &lw->wo},
            {"post_attention_layernorm", 0, dim, &lw->ffn_norm},
            {"mlp.gate_proj", ffn, dim, &lw->w_gate},
            {"mlp.up_proj", ffn, dim, &lw->w_up},
            {"mlp.down_proj", dim, ffn, &lw->w_down},
        };
        for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
            char name[128];
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, spec[i].suffix);
            if (bind(L, name, spec[i].rows, spec[i].cols, spec[i].w, err, errlen)) return -1;
        }
        const struct { const char *suffix; int on, n; weight_t *w; } bias[] = {
            {"q_proj", c->qkv_bias, q, &lw->bq}, {"k_proj", c->qkv_bias, kv, &lw->bk},
            {"v_proj", c->qkv_bias, kv, &lw->bv}, {"o_proj", c->o_bias, dim, &lw->bo},
        };
        for (size_t i = 0; i < sizeof bias / sizeof bias[0]; i++) {
            char name[128];
            snprintf(name, sizeof name, "model.layers.%d.self_attn.%s.bias", l, bias[i].suffix);
            if (bias[i].on) {
                if (bind(L, name, 0, bias[i].n, bias[i].w, err, errlen)) return -1;
                if (bias[i].w->dtype != DT_F32 && bias[i].w->dtype != DT_F16 && bias[i].w->dtype != DT_BF16)
                    return fail(err, errlen, "%s: %s is %s (biases must be F32, F16 or BF16)",
                                L->dir, name, dtype_name(bias[i].w->dtype));
            } else if (listed(L, name)) {
                return fail(err, errlen, "%s: has %s but the config declares no such bias "
                            "(attention_bias)", L->dir, name);
            }
        }
    }
    /* Tied (as in HF) when the config says so or when lm_head.weight is absent. */
    if (!listed(L, "lm_head.weight")) m->cfg.tie_word_embeddings = 1;
    if (m->cfg.tie_word_embeddings) {
        m->lm_head = m->embed;
        return 0;
    }
    return bind(L, "lm_head.weight", c->vocab_size, dim, &m->lm_head, err, errlen);
}

/* A GGUF file: config from its metadata, its tensor table renamed to the HF names. */
static int open_gguf(loader *L, char *err, size_t errlen) {
    model_weights *m = L->m;
    if (!(m->gguf = calloc(1, sizeof *m->gguf)) || !(m->files = calloc(1, sizeof *m->files)))
        return fail(err, errlen, "%s: out of memory", L->dir);
    if (gguf_open(L->dir, m->gguf, err, errlen) || gguf_config(m->gguf, &m->cfg, err, errlen) ||
        gguf_map_names(m->gguf, err, errlen))
        return -1;
    m->files[0] = m->gguf->tensors;   /* a view: the gguf_file owns the table and the mapping */
    m->n_files = 1;
    snprintf(L->index_path, sizeof L->index_path, "%s", L->dir);
    return 0;
}

/* llama.cpp's converter stores the q/k rows of architecture llama interleaved for its RoPE
 * (convert_hf_to_gguf.py LlamaModel.permute: per head, rows (half, j) → (j, half)); the HF
 * order is GGUF row h·hd + 2j + half at HF row h·hd + half·hd/2 + j. Copies w with the rows
 * put back (any dtype: rows are whole blocks). */
static void *alloc_weight(size_t bytes);
static int unpermute_rows(model_weights *m, weight_t *w, int n_heads, int head_dim, char *err, size_t errlen) {
    if (!w->data) return 0;
    size_t rb = dtype_row_bytes(w->dtype, w->cols);
    char *out = alloc_weight(rb * (size_t)w->rows);
    if (!out) return fail(err, errlen, "out of memory un-permuting a [%d, %d] weight", w->rows, w->cols);
    const char *in = w->data;
    int half = head_dim / 2;
    for (int h = 0; h < n_heads; h++)
        for (int hf = 0; hf < 2; hf++)
            for (int j = 0; j < half; j++) {
                size_t dst = (size_t)h * head_dim + (size_t)hf * half + j;
                size_t src = (size_t)h * head_dim + 2 * (size_t)j + hf;
                memcpy(out + dst * rb, in + src * rb, rb);
            }
    m->owned[m->n_owned++] = out;
    w->data = out;
    return 0;
}

static int unpermute_qk(model_weights *m, char *err, size_t errlen) {
    const model_config *c = &m->cfg;
    void **owned = realloc(m->owned, ((size_t)m->n_owned + 4 * (size_t)c->n_layers) * sizeof *owned);
    if (!owned) return fail(err, errlen, "out of memory");
    m->owned = owned;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *lw = &m->layers[l];
        /* a bias is a [1][n] "matrix": permute its n elements as rows of one element */
        weight_t bq = lw->bq, bk = lw->bk;
        bq.rows = bq.cols, bq.cols = 1;
        bk.rows = bk.cols, bk.cols = 1;
        if (unpermute_rows(m, &lw->wq, c->n_heads, c->head_dim, err, errlen) ||
            unpermute_rows(m, &lw->wk, c->n_kv_heads, c->head_dim, err, errlen) ||
            (lw->bq.data && unpermute_rows(m, &bq, c->n_heads, c->head_dim, err, errlen)) ||
            (lw->bk.data && unpermute_rows(m, &bk, c->n_kv_heads, c->head_dim, err, errlen)))
            return -1;
        lw->bq.data = bq.data;
        lw->bk.data = bk.data;
    }
    return 0;
}

/* A safetensors header whose length is not a multiple of 4 (legal) leaves the data of F32 (and
 * F16/BF16) tensors at addresses the kernels would read as float * (undefined behaviour):
 * such tensors are copied once into aligned owned memory. */
static int align_weights(model_weights *m, char *err, size_t errlen) {
    const model_config *c = &m->cfg;
    void **owned = realloc(m->owned, ((size_t)m->n_owned + 16 * ((size_t)c->n_layers + 1)) * sizeof *owned);
    if (!owned) return fail(err, errlen, "out of memory");
    m->owned = owned;
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
            void *p = alloc_weight(bytes);
            if (!p) return fail(err, errlen, "out of memory aligning a [%d, %d] weight", w->rows, w->cols);
            memcpy(p, w->data, bytes);
            m->owned[m->n_owned++] = p;
            w->data = p;
            if (tied) m->lm_head = m->embed;
        }
    }
    return 0;
}

int model_load(const char *path, model_weights *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    loader L = {.dir = path, .m = m};
    struct stat st;
    int rc;
    if (stat(path, &st) != 0) return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode)) {
        /* a file: GGUF (by its magic), else say what a model is */
        if (!gguf_is_gguf_file(path))
            return fail(err, errlen, "%s: not a GGUF file or a model folder (a folder with config.json "
                        "and model.safetensors, or a .gguf file)", path);
        rc = open_gguf(&L, err, errlen);
        if (rc == 0) rc = bind_all(&L, err, errlen);
        if (rc == 0 && m->cfg.arch == ARCH_LLAMA) rc = unpermute_qk(m, err, errlen);
    } else if (S_ISDIR(st.st_mode)) {
        char cpath[1024];
        rc = join(cpath, sizeof cpath, path, "config.json", err, errlen);
        if (rc == 0 && !is_file(cpath)) {
            char tj[1024];
            int tok_only = join(tj, sizeof tj, path, "tokenizer.json", NULL, 0) == 0 && is_file(tj);
            rc = fail(err, errlen, "%s: no config.json: not a Hugging Face model folder%s", path,
                      tok_only ? " (it has a tokenizer.json only: the weights and config.json are missing)"
                               : " (give a folder with config.json and model.safetensors, or a .gguf file)");
        }
        if (rc == 0) rc = config_load(cpath, &m->cfg, err, errlen);
        if (rc == 0) rc = open_files(&L, err, errlen);
        if (rc == 0) rc = bind_all(&L, err, errlen);
        if (rc == 0) rc = align_weights(m, err, errlen);
    } else {
        rc = fail(err, errlen, "%s: not a regular file or folder", path);
    }
    st_index_free(&L.ix);
    if (rc) model_free(m);
    return rc;
}

/* ------------------------------------------------------------------- dtype conversion */

/* A weight buffer of `bytes`, 2 MiB-aligned and marked for transparent huge pages before its
 * first touch: decode streams every weight each token, and with 4 KiB pages every 4 KiB costs
 * a TLB miss (on a KVM guest one core's streaming read measured ~12 GB/s with 4 KiB pages vs
 * ~21 GB/s with huge pages). Freed with free(). */
static void *alloc_weight(size_t bytes) {
    const size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (bytes < huge) return malloc(bytes ? bytes : 1);
    size_t len = (bytes + huge - 1) / huge * huge;
    if (posix_memalign(&p, huge, len) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);   /* advice only: without THP it is plain memory */
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
    char *out = alloc_weight(out_rb * (size_t)w->rows);
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
    size_t cap = (size_t)m->n_owned + 3 + 9 * (size_t)n_layers;
    void **owned = realloc(m->owned, cap * sizeof *owned);
    if (!owned) return fail(err, errlen, "model_convert: out of memory");
    m->owned = owned;
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

/* Copies w out of the file mapping into an owned huge-page buffer (already owned: nothing). */
static int make_resident(model_weights *m, weight_t *w, char *err, size_t errlen) {
    for (int i = 0; i < m->n_owned; i++)
        if (m->owned[i] == w->data) return 0;
    size_t bytes = weight_bytes(w);
    void *out = alloc_weight(bytes);
    if (!out) return fail(err, errlen, "model_make_resident: out of memory copying a [%d, %d] weight", w->rows, w->cols);
    const char *src = w->data;
    #pragma omp parallel for schedule(static) if (bytes >= (1 << 22))
    for (size_t off = 0; off < bytes; off += 1 << 16)
        memcpy((char *)out + off, src + off, bytes - off < (1 << 16) ? bytes - off : (1 << 16));
    m->owned[m->n_owned++] = out;
    w->data = out;
    return 0;
}

int model_make_resident(model_weights *m, char *err, size_t errlen) {
    int n_layers = m->cfg.n_layers;
    size_t cap = (size_t)m->n_owned + 2 + 7 * (size_t)n_layers;
    void **owned = realloc(m->owned, cap * sizeof *owned);
    if (!owned) return fail(err, errlen, "model_make_resident: out of memory");
    m->owned = owned;
    int tied = m->lm_head.data == m->embed.data;
    if (make_resident(m, &m->lm_head, err, errlen)) return -1;
    if (tied) m->embed = m->lm_head;   /* the embedding is read one row per token: leave it mapped otherwise */
    for (int l = 0; l < n_layers && m->layers; l++) {
        layer_weights *lw = &m->layers[l];
        weight_t *ws[] = {&lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->w_gate, &lw->w_up, &lw->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            if (make_resident(m, ws[i], err, errlen)) return -1;
    }
    return 0;
}

int model_to_f32(model_weights *m, char *err, size_t errlen) {
    return model_convert(m, DT_F32, err, errlen);
}

size_t model_weight_bytes(const model_weights *m, int per_token) {
    const model_config *c = &m->cfg;
    size_t b = 0;
    #define WB(w) ((w).data ? weight_bytes(&(w)) : 0)
    for (int l = 0; l < c->n_layers && m->layers; l++) {
        const layer_weights *lw = &m->layers[l];
        b += WB(lw->attn_norm) + WB(lw->wq) + WB(lw->wk) + WB(lw->wv) + WB(lw->wo) +
             WB(lw->ffn_norm) + WB(lw->w_gate) + WB(lw->w_up) + WB(lw->w_down);
    }
    b += WB(m->final_norm) + WB(m->lm_head);
    if (per_token) b += dtype_row_bytes(m->embed.dtype, c->hidden_size);  /* one embedding row */
    else if (m->embed.data != m->lm_head.data) b += WB(m->embed);
    #undef WB
    return b;
}

void model_free(model_weights *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    if (m->gguf) {                 /* files[0] is a view of the gguf_file's table */
        gguf_close(m->gguf);
        free(m->gguf);
    } else {
        for (int i = 0; i < m->n_files; i++) st_close(&m->files[i]);
    }
    free(m->files);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ finite check (issue 19) */

/* Index of the first non-finite element of w (the first block with a non-finite scale for the
 * block formats), or -1. Exponent bits all ones = inf or nan, tested on the integer bits. */
static int64_t first_nonfinite(const weight_t *w, int *is_block) {
    const uint8_t *p = w->data;
    int64_t n = (int64_t)w->rows * w->cols;
    *is_block = 0;
    int64_t bad = INT64_MAX;
    switch (w->dtype) {
    case DT_F32:
        #pragma omp parallel for reduction(min : bad) schedule(static) if (n >= (1 << 20))
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            if ((u & 0x7f800000u) == 0x7f800000u && i < bad) bad = i;
        }
        break;
    case DT_F16:
    case DT_BF16: {
        const uint16_t mask = w->dtype == DT_F16 ? 0x7c00 : 0x7f80;
        #pragma omp parallel for reduction(min : bad) schedule(static) if (n >= (1 << 20))
        for (int64_t i = 0; i < n; i++) {
            uint16_t u;
            memcpy(&u, p + 2 * i, 2);
            if ((u & mask) == mask && i < bad) bad = i;
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
