/* Model folder → model_weights: config.json, then model.safetensors or the shards listed in
 * model.safetensors.index.json; every tensor checked against the config. Also the scalar
 * f16/bf16 conversions and model_convert (dtype of the weights). */
#include "model/model.h"
#include "model/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <omp.h>

#define fail model_fail

#define INDEX_MAX_BYTES (64 << 20)


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
    char *text = model_read_text(L->index_path, INDEX_MAX_BYTES, &len, err, errlen);
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
        if (rc == 0 && m->cfg.arch == ARCH_LLAMA) rc = gguf_unpermute_qk(m, err, errlen);
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
        if (rc == 0) rc = model_align_weights(m, err, errlen);
    } else {
        rc = fail(err, errlen, "%s: not a regular file or folder", path);
    }
    st_index_free(&L.ix);
    if (rc) model_free(m);
    return rc;
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

int model_mlock(const model_weights *m, char *err, size_t errlen) {
    const model_config *c = &m->cfg;
    const weight_t *w[13];
    for (int l = -1; l < c->n_layers && m->layers; l++) {
        int n = 0;
        if (l < 0) {
            w[n++] = &m->embed, w[n++] = &m->final_norm, w[n++] = &m->lm_head;
        } else {
            const layer_weights *lw = &m->layers[l];
            const weight_t *lws[] = {&lw->attn_norm, &lw->wq, &lw->wk, &lw->wv, &lw->wo, &lw->bq, &lw->bk,
                                     &lw->bv, &lw->bo, &lw->ffn_norm, &lw->w_gate, &lw->w_up, &lw->w_down};
            for (size_t i = 0; i < sizeof lws / sizeof lws[0]; i++) w[n++] = lws[i];
        }
        for (int i = 0; i < n; i++)
            if (w[i]->data && mlock(w[i]->data, weight_bytes(w[i])) != 0) {
                snprintf(err, errlen, "mlock of %zu bytes of weights: %s (the limit: ulimit -l)", weight_bytes(w[i]),
                         strerror(errno));
                return -1;
            }
    }
    return 0;
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

