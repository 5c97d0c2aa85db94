/* GGUF reader (v2 and v3, little-endian): mmap the file, validate the whole header before
 * anything is used, then hand out metadata values and a tensor table in the same form the
 * safetensors reader produces (st_file: names, dtype, shape outermost-first, data pointers).
 *
 * Layout (ggml/docs/gguf.md): u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv; n_kv
 * key/value pairs (key: u64 length + bytes; u32 value type; value); n_tensors tensor infos
 * (name; u32 n_dims; u64 ne[n_dims], ne[0] innermost; u32 ggml type; u64 offset relative to the
 * data section); padding to general.alignment (default 32); the data section. */
#include "model/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define fail model_fail

#define GGUF_MAGIC 0x46554747u   /* "GGUF" little-endian */
#define GGUF_MAX_STR (1u << 30)  /* no single key or string value above 1 GiB */


static const char *TYPE_NAMES[GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
    "string", "array", "uint64", "int64", "float64",
};
static const int TYPE_SIZE[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

int gguf_type_size(int type) {
    return type >= 0 && type < GGUF_TYPE_COUNT ? TYPE_SIZE[type] : 0;
}

const char *gguf_type_name(int type) {
    return type >= 0 && type < GGUF_TYPE_COUNT ? TYPE_NAMES[type] : "unknown";
}

/* ggml_type (ggml.h) → our dtype; -1 for the types we do not run. */
static int ggml_to_dtype(uint32_t t) {
    switch (t) {
    case 0: return DT_F32;
    case 1: return DT_F16;
    case 2: return DT_Q4_0;
    case 3: return DT_Q4_1;
    case 6: return DT_Q5_0;
    case 7: return DT_Q5_1;
    case 8: return DT_Q8_0;
    case 12: return DT_Q4_K;
    case 13: return DT_Q5_K;
    case 14: return DT_Q6_K;
    case 30: return DT_BF16;
    }
    return -1;
}

static const char *ggml_type_name(uint32_t t) {
    static const char *names[] = {"F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1",
        "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS",
        "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64",
        "F64", "IQ1_M", "BF16"};
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* ------------------------------------------------------------------ bounded reading */

typedef struct {
    const uint8_t *p, *end, *base;
    const char *path;
    char *err;
    size_t errlen;
} cursor;

static int need(cursor *c, uint64_t n, const char *what) {
    if ((uint64_t)(c->end - c->p) < n)
        return fail(c->err, c->errlen, "%s: truncated: %s at byte %lld needs %llu bytes, %lld left",
                    c->path, what, (long long)(c->p - c->base), (unsigned long long)n,
                    (long long)(c->end - c->p));
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) {
    if (need(c, 4, what)) return -1;
    memcpy(v, c->p, 4);
    c->p += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what) {
    if (need(c, 8, what)) return -1;
    memcpy(v, c->p, 8);
    c->p += 8;
    return 0;
}

/* A GGUF string: u64 length + bytes (not NUL-terminated in the file). */
static int rd_str(cursor *c, const uint8_t **s, uint64_t *len, const char *what) {
    if (rd_u64(c, len, what)) return -1;
    if (*len > GGUF_MAX_STR)
        return fail(c->err, c->errlen, "%s: %s: string length %llu is implausible (> 1 GiB)",
                    c->path, what, (unsigned long long)*len);
    if (need(c, *len, what)) return -1;
    *s = c->p;
    c->p += *len;
    return 0;
}

/* Skips one value of `type` (not ARRAY), checking it lies inside the file. */
static int skip_scalar(cursor *c, int type, const char *key) {
    if (type == GGUF_TYPE_STRING) {
        const uint8_t *s;
        uint64_t n;
        return rd_str(c, &s, &n, key);
    }
    if (need(c, (uint64_t)TYPE_SIZE[type], key)) return -1;
    c->p += TYPE_SIZE[type];
    return 0;
}

/* Reads the value of key kv (its type already read) and records where it lies. */
static int rd_value(cursor *c, gguf_kv *kv) {
    kv->n = 1;
    if (kv->type != GGUF_TYPE_ARRAY) {
        kv->val = c->p;
        return skip_scalar(c, kv->type, kv->key);
    }
    uint32_t et;
    if (rd_u32(c, &et, kv->key) || rd_u64(c, &kv->n, kv->key)) return -1;
    if (et >= GGUF_TYPE_COUNT)
        return fail(c->err, c->errlen, "%s: %s: array of unknown value type %u", c->path, kv->key, et);
    if (et == GGUF_TYPE_ARRAY)
        return fail(c->err, c->errlen, "%s: %s: arrays of arrays are not supported", c->path, kv->key);
    kv->arr_type = (int)et;
    kv->val = c->p;
    if (et != GGUF_TYPE_STRING) {
        /* fixed-size elements: the count times the size must fit in what is left */
        uint64_t left = (uint64_t)(c->end - c->p);
        if (kv->n > left / (uint64_t)TYPE_SIZE[et])
            return fail(c->err, c->errlen, "%s: %s: array of %llu %s does not fit in the file",
                        c->path, kv->key, (unsigned long long)kv->n, TYPE_NAMES[et]);
        c->p += kv->n * (uint64_t)TYPE_SIZE[et];
        return 0;
    }
    /* strings: each needs at least its 8-byte length */
    if (kv->n > (uint64_t)(c->end - c->p) / 8)
        return fail(c->err, c->errlen, "%s: %s: array of %llu strings does not fit in the file",
                    c->path, kv->key, (unsigned long long)kv->n);
    for (uint64_t i = 0; i < kv->n; i++)
        if (skip_scalar(c, GGUF_TYPE_STRING, kv->key)) return -1;
    return 0;
}

/* ---------------------------------------------------------------------------- parsing */

static int cmp_kv(const void *a, const void *b) {
    return strcmp(((const gguf_kv *)a)->key, ((const gguf_kv *)b)->key);
}

static int parse_kvs(cursor *c, gguf_file *g, uint64_t n_kv) {
    /* each pair needs ≥ 8 (key length) + 4 (type) + 1 bytes */
    if (n_kv > (uint64_t)(c->end - c->p) / 13)
        return fail(c->err, c->errlen, "%s: header claims %llu metadata pairs, more than the file can hold",
                    c->path, (unsigned long long)n_kv);
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    if (!g->kv) return fail(c->err, c->errlen, "%s: out of memory", c->path);
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        const uint8_t *k;
        uint64_t klen;
        uint32_t type;
        if (rd_str(c, &k, &klen, "metadata key")) return -1;
        if (!(kv->key = malloc(klen + 1))) return fail(c->err, c->errlen, "%s: out of memory", c->path);
        memcpy(kv->key, k, klen);
        kv->key[klen] = 0;
        g->n_kv = (int)(i + 1);
        if (strlen(kv->key) != klen || klen == 0)
            return fail(c->err, c->errlen, "%s: metadata key %llu is empty or contains a NUL byte",
                        c->path, (unsigned long long)i);
        if (rd_u32(c, &type, kv->key)) return -1;
        if (type >= GGUF_TYPE_COUNT)
            return fail(c->err, c->errlen, "%s: %s: unknown value type %u", c->path, kv->key, type);
        kv->type = (int)type;
        if (rd_value(c, kv)) return -1;
    }
    qsort(g->kv, (size_t)g->n_kv, sizeof *g->kv, cmp_kv);
    for (int i = 1; i < g->n_kv; i++)
        if (!strcmp(g->kv[i - 1].key, g->kv[i].key))
            return fail(c->err, c->errlen, "%s: metadata key %s appears twice", c->path, g->kv[i].key);
    return 0;
}

typedef struct {
    uint64_t offset;
    uint32_t ggml_type;
    int64_t ne[4];
    int n_dims;
} tinfo;

static int parse_tensor_infos(cursor *c, gguf_file *g, uint64_t n_tensors, tinfo *ti) {
    st_file *t = &g->tensors;
    for (uint64_t i = 0; i < n_tensors; i++) {
        st_tensor *tt = &t->tensors[i];
        const uint8_t *s;
        uint64_t len;
        uint32_t n_dims;
        if (rd_str(c, &s, &len, "tensor name")) return -1;
        if (len >= sizeof tt->name)
            return fail(c->err, c->errlen, "%s: tensor %llu: name longer than %zu bytes", c->path,
                        (unsigned long long)i, sizeof tt->name - 1);
        memcpy(tt->name, s, len);
        tt->name[len] = 0;
        t->n_tensors = (int)(i + 1);
        if (strlen(tt->name) != len || len == 0)
            return fail(c->err, c->errlen, "%s: tensor %llu: name is empty or contains a NUL byte",
                        c->path, (unsigned long long)i);
        if (rd_u32(c, &n_dims, tt->name)) return -1;
        if (n_dims == 0 || n_dims > 4)
            return fail(c->err, c->errlen, "%s: %s: %u dimensions (1 to 4)", c->path, tt->name, n_dims);
        ti[i].n_dims = (int)n_dims;
        uint64_t elems = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            uint64_t ne;
            if (rd_u64(c, &ne, tt->name)) return -1;
            if (ne == 0 || ne > INT32_MAX)
                return fail(c->err, c->errlen, "%s: %s: ne[%u] = %llu (must be 1..%d)", c->path,
                            tt->name, d, (unsigned long long)ne, INT32_MAX);
            if (elems > UINT64_MAX / ne)
                return fail(c->err, c->errlen, "%s: %s: element count overflows", c->path, tt->name);
            elems *= ne;
            ti[i].ne[d] = (int64_t)ne;
        }
        if (rd_u32(c, &ti[i].ggml_type, tt->name) || rd_u64(c, &ti[i].offset, tt->name)) return -1;
        int dt = ggml_to_dtype(ti[i].ggml_type);
        if (dt < 0)
            return fail(c->err, c->errlen, "%s: %s: tensor type %s (%u) is not supported (F32, F16, "
                        "BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)", c->path, tt->name,
                        ggml_type_name(ti[i].ggml_type), ti[i].ggml_type);
        tt->dtype = (dtype_t)dt;
        if (ti[i].ne[0] % dtype_block(tt->dtype))
            return fail(c->err, c->errlen, "%s: %s: row length ne[0] = %lld is not a multiple of the "
                        "%s block size %d", c->path, tt->name, (long long)ti[i].ne[0],
                        dtype_name(tt->dtype), dtype_block(tt->dtype));
        uint64_t rows = elems / (uint64_t)ti[i].ne[0];
        uint64_t row_bytes = dtype_row_bytes(tt->dtype, ti[i].ne[0]);
        if (rows > UINT64_MAX / row_bytes)
            return fail(c->err, c->errlen, "%s: %s: byte size overflows", c->path, tt->name);
        tt->nbytes = (size_t)(rows * row_bytes);
        /* our shape is outermost-first, as safetensors: ne reversed */
        tt->ndim = (int)n_dims;
        for (int d = 0; d < 4; d++) tt->shape[d] = d < (int)n_dims ? ti[i].ne[n_dims - 1 - d] : 0;
    }
    return 0;
}

static int place_tensors(cursor *c, gguf_file *g, const tinfo *ti) {
    st_file *t = &g->tensors;
    uint64_t here = (uint64_t)(c->p - c->base);
    uint64_t data_off = (here + g->alignment - 1) / g->alignment * g->alignment;
    if (data_off > (uint64_t)(c->end - c->base) && t->n_tensors)
        return fail(c->err, c->errlen, "%s: truncated: the data section would start at byte %llu of %llu",
                    c->path, (unsigned long long)data_off, (unsigned long long)(c->end - c->base));
    g->data_offset = (size_t)data_off;
    uint64_t data_size = data_off <= (uint64_t)(c->end - c->base) ? (uint64_t)(c->end - c->base) - data_off : 0;
    for (int i = 0; i < t->n_tensors; i++) {
        st_tensor *tt = &t->tensors[i];
        if (ti[i].offset % g->alignment)
            return fail(c->err, c->errlen, "%s: %s: offset %llu is not a multiple of the alignment %zu",
                        c->path, tt->name, (unsigned long long)ti[i].offset, g->alignment);
        if (ti[i].offset > data_size || tt->nbytes > data_size - ti[i].offset)
            return fail(c->err, c->errlen, "%s: %s: data [%llu, +%zu) outside the data section of %llu bytes",
                        c->path, tt->name, (unsigned long long)ti[i].offset, tt->nbytes,
                        (unsigned long long)data_size);
        tt->data = c->base + data_off + ti[i].offset;
    }
    /* no two tensors share bytes, no name twice; sorted by name */
    return model_check_tensor_layout(t->tensors, t->n_tensors, c->path, c->err, c->errlen);
}

int gguf_parse(const void *buf, size_t size, const char *name, gguf_file *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s", name);
    snprintf(g->tensors.path, sizeof g->tensors.path, "%s", name);
    cursor c = {.p = buf, .end = (const uint8_t *)buf + size, .base = buf, .path = g->path,
                .err = err, .errlen = errlen};
    uint32_t magic, version;
    uint64_t n_tensors, n_kv;
    if (size < 4 || (memcpy(&magic, buf, 4), magic != GGUF_MAGIC)) {
        fail(err, errlen, "%s: not a GGUF file (no GGUF magic)", g->path);
        goto bad;
    }
    c.p += 4;
    if (rd_u32(&c, &version, "version")) goto bad;
    if (version != 2 && version != 3) {
        fail(err, errlen, "%s: GGUF version %u is not supported (2 or 3)", g->path, version);
        goto bad;
    }
    g->version = version;
    if (rd_u64(&c, &n_tensors, "tensor count") || rd_u64(&c, &n_kv, "metadata count")) goto bad;
    if (parse_kvs(&c, g, n_kv)) goto bad;
    /* each tensor info needs ≥ 8 + 1 + 4 + 8 + 4 + 8 bytes */
    if (n_tensors > (uint64_t)(c.end - c.p) / 33 || n_tensors > INT32_MAX) {
        fail(err, errlen, "%s: header claims %llu tensors, more than the file can hold", g->path,
             (unsigned long long)n_tensors);
        goto bad;
    }
    g->alignment = 32;
    const gguf_kv *al = gguf_find(g, "general.alignment");
    if (al) {
        int64_t a;
        if (gguf_get_int(g, "general.alignment", &a, err, errlen) != 1) goto bad;
        if (a <= 0 || a > (1 << 20) || (a & (a - 1))) {
            fail(err, errlen, "%s: general.alignment = %lld must be a power of two up to 1 MiB", g->path,
                 (long long)a);
            goto bad;
        }
        g->alignment = (size_t)a;
    }
    size_t nt = (size_t)(n_tensors & 0x7fffffffu) + 1;   /* ≤ INT32_MAX, checked above */
    tinfo *ti = calloc(nt, sizeof *ti);
    g->tensors.tensors = calloc(nt, sizeof *g->tensors.tensors);
    if (!ti || !g->tensors.tensors) {
        free(ti);
        fail(err, errlen, "%s: out of memory", g->path);
        goto bad;
    }
    int rc = parse_tensor_infos(&c, g, n_tensors, ti);
    if (rc == 0) rc = place_tensors(&c, g, ti);
    free(ti);
    if (rc) goto bad;
    return 0;
bad:
    gguf_close(g);
    return -1;
}

int gguf_open(const char *path, gguf_file *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    struct stat pre;
    if (stat(path, &pre) == 0 && !S_ISREG(pre.st_mode)) return fail(err, errlen, "%s: not a regular file", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "%s: not a regular file", path);
    }
    if (st.st_size < 24) {
        close(fd);
        return fail(err, errlen, "%s: truncated: %lld bytes is too small for a GGUF header", path,
                    (long long)st.st_size);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return fail(err, errlen, "%s: mmap failed: %s", path, strerror(errno));
    if (gguf_parse(map, (size_t)st.st_size, path, g, err, errlen)) {
        munmap(map, (size_t)st.st_size);
        return -1;
    }
    g->map = map;
    g->size = (size_t)st.st_size;
    return 0;
}

void gguf_close(gguf_file *g) {
    if (!g) return;
    for (int i = 0; i < g->n_kv; i++) free(g->kv[i].key);
    free(g->kv);
    free(g->tensors.tensors);
    if (g->map) munmap(g->map, g->size);
    memset(g, 0, sizeof *g);
}

int gguf_is_gguf_file(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    uint32_t magic = 0;
    int ok = fread(&magic, 4, 1, fp) == 1 && magic == GGUF_MAGIC;
    fclose(fp);
    return ok;
}
