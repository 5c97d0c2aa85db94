/* gguf_get.c — typed access to a parsed GGUF file's metadata (gguf_find and the gguf_get_*
 * getters of model.h), split out of gguf.c; the values were validated by gguf_parse. */
#include "model/internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail model_fail

/* ------------------------------------------------------------------------- metadata */

const gguf_kv *gguf_find(const gguf_file *g, const char *key) {
    int lo = 0, hi = g->n_kv - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(key, g->kv[mid].key);
        if (c == 0) return &g->kv[mid];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

int gguf_get_int(const gguf_file *g, const char *key, int64_t *out, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) return 0;
    const uint8_t *v = kv->val;
    switch (kv->type) {
    case GGUF_TYPE_UINT8: *out = v[0]; return 1;
    case GGUF_TYPE_INT8: *out = (int8_t)v[0]; return 1;
    case GGUF_TYPE_BOOL: *out = v[0] != 0; return 1;
    case GGUF_TYPE_UINT16: { uint16_t x; memcpy(&x, v, 2); *out = x; return 1; }
    case GGUF_TYPE_INT16: { int16_t x; memcpy(&x, v, 2); *out = x; return 1; }
    case GGUF_TYPE_UINT32: { uint32_t x; memcpy(&x, v, 4); *out = x; return 1; }
    case GGUF_TYPE_INT32: { int32_t x; memcpy(&x, v, 4); *out = x; return 1; }
    case GGUF_TYPE_INT64: { int64_t x; memcpy(&x, v, 8); *out = x; return 1; }
    case GGUF_TYPE_UINT64: {
        uint64_t x;
        memcpy(&x, v, 8);
        if (x > INT64_MAX) break;
        *out = (int64_t)x;
        return 1;
    }
    }
    return fail(err, errlen, "%s: %s is %s, expected an integer", g->path, key, gguf_type_name(kv->type));
}

int gguf_get_float(const gguf_file *g, const char *key, double *out, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) return 0;
    if (kv->type == GGUF_TYPE_FLOAT32) { float f; memcpy(&f, kv->val, 4); *out = f; return 1; }
    if (kv->type == GGUF_TYPE_FLOAT64) { memcpy(out, kv->val, 8); return 1; }
    int64_t i;
    if (kv->type != GGUF_TYPE_STRING && kv->type != GGUF_TYPE_ARRAY && gguf_get_int(g, key, &i, NULL, 0) == 1) {
        *out = (double)i;
        return 1;
    }
    return fail(err, errlen, "%s: %s is %s, expected a number", g->path, key, gguf_type_name(kv->type));
}

/* The string at p (u64 length + bytes, bounds checked at parse time) as a malloc'd C string. */
static char *dup_gstr(const uint8_t *p, const uint8_t **next) {
    uint64_t n;
    memcpy(&n, p, 8);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p + 8, n);
        s[n] = 0;
    }
    if (next) *next = p + 8 + n;
    return s;
}

int gguf_get_str(const gguf_file *g, const char *key, char **out, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(g, key);
    *out = NULL;
    if (!kv) return 0;
    if (kv->type != GGUF_TYPE_STRING)
        return fail(err, errlen, "%s: %s is %s, expected a string", g->path, key, gguf_type_name(kv->type));
    if (!(*out = dup_gstr(kv->val, NULL))) return fail(err, errlen, "%s: out of memory", g->path);
    return 1;
}

int gguf_get_str_array(const gguf_file *g, const char *key, char ***out, int *n, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(g, key);
    *out = NULL;
    *n = 0;
    if (!kv) return 0;
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type != GGUF_TYPE_STRING)
        return fail(err, errlen, "%s: %s is not an array of strings", g->path, key);
    if (kv->n > INT32_MAX) return fail(err, errlen, "%s: %s: too many strings", g->path, key);
    char **a = calloc(kv->n ? kv->n : 1, sizeof *a);
    if (!a) return fail(err, errlen, "%s: out of memory", g->path);
    const uint8_t *p = kv->val;
    for (uint64_t i = 0; i < kv->n; i++)
        if (!(a[i] = dup_gstr(p, &p))) {
            gguf_free_str_array(a, (int)i);
            return fail(err, errlen, "%s: out of memory", g->path);
        }
    *out = a;
    *n = (int)kv->n;
    return 1;
}

void gguf_free_str_array(char **a, int n) {
    for (int i = 0; a && i < n; i++) free(a[i]);
    free(a);
}

int gguf_get_num_array(const gguf_file *g, const char *key, double **out, int *n, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(g, key);
    *out = NULL;
    *n = 0;
    if (!kv) return 0;
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type == GGUF_TYPE_STRING || kv->n > INT32_MAX)
        return fail(err, errlen, "%s: %s is not an array of numbers", g->path, key);
    double *a = malloc(sizeof *a * (kv->n ? kv->n : 1));
    if (!a) return fail(err, errlen, "%s: out of memory", g->path);
    const uint8_t *p = kv->val;
    for (uint64_t i = 0; i < kv->n; i++, p += gguf_type_size(kv->arr_type)) {
        union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
                float f32; uint64_t u64; int64_t i64; double f64; } u;
        memcpy(&u, p, (size_t)gguf_type_size(kv->arr_type));
        switch (kv->arr_type) {
        case GGUF_TYPE_UINT8: case GGUF_TYPE_BOOL: a[i] = u.u8; break;
        case GGUF_TYPE_INT8: a[i] = u.i8; break;
        case GGUF_TYPE_UINT16: a[i] = u.u16; break;
        case GGUF_TYPE_INT16: a[i] = u.i16; break;
        case GGUF_TYPE_UINT32: a[i] = u.u32; break;
        case GGUF_TYPE_INT32: a[i] = u.i32; break;
        case GGUF_TYPE_FLOAT32: a[i] = u.f32; break;
        case GGUF_TYPE_UINT64: a[i] = (double)u.u64; break;
        case GGUF_TYPE_INT64: a[i] = (double)u.i64; break;
        default: a[i] = u.f64; break;
        }
    }
    *out = a;
    *n = (int)kv->n;
    return 1;
}
