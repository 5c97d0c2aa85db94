/* eval/text.c — UTF-8, Python whitespace, string interning (see text.h). */
#include "eval/text.h"

#include <stdlib.h>
#include <string.h>

int utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp)
{
    unsigned c = s[0];
    int len; uint32_t v, min;
    if (c < 0x80) { *cp = c; return 1; }
    if ((c & 0xE0) == 0xC0) { len = 2; v = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; v = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; v = c & 0x07; min = 0x10000; }
    else { *cp = 0xFFFD; return 1; }
    if ((size_t)len > avail) { *cp = 0xFFFD; return 1; }
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) { *cp = 0xFFFD; return 1; }
    *cp = v;
    return len;
}

int py_isspace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

int ivec_push(ivec *a, int x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int *v = realloc(a->v, cap * sizeof *v);
        if (!v) return -1;
        a->v = v; a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

void ivec_free(ivec *a) { free(a->v); a->v = NULL; a->n = a->cap = 0; }

static uint64_t fnv1a(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}

static int strtab_grow(strtab *t)
{
    size_t cap = t->cap ? 2 * t->cap : 256;
    char **key = calloc(cap, sizeof *key);
    size_t *klen = calloc(cap, sizeof *klen);
    int *id = calloc(cap, sizeof *id);
    if (!key || !klen || !id) { free(key); free(klen); free(id); return -1; }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->key[i]) continue;
        size_t h = fnv1a(t->key[i], t->klen[i]) & (cap - 1);
        while (key[h]) h = (h + 1) & (cap - 1);
        key[h] = t->key[i]; klen[h] = t->klen[i]; id[h] = t->id[i];
    }
    free(t->key); free(t->klen); free(t->id);
    t->key = key; t->klen = klen; t->id = id; t->cap = cap;
    return 0;
}

int strtab_id(strtab *t, const char *s, size_t len)
{
    if (2 * (t->n + 1) > t->cap && strtab_grow(t)) return -1;
    size_t h = fnv1a(s, len) & (t->cap - 1);
    while (t->key[h]) {
        if (t->klen[h] == len && !memcmp(t->key[h], s, len)) return t->id[h];
        h = (h + 1) & (t->cap - 1);
    }
    char *k = malloc(len + 1);
    if (!k) return -1;
    memcpy(k, s, len); k[len] = 0;
    t->key[h] = k; t->klen[h] = len; t->id[h] = (int)t->n++;
    return t->id[h];
}

void strtab_free(strtab *t)
{
    for (size_t i = 0; i < t->cap; i++) free(t->key[i]);
    free(t->key); free(t->klen); free(t->id);
    memset(t, 0, sizeof *t);
}

int py_split_ids(const char *s, size_t len, strtab *t, ivec *out)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (py_isspace(cp)) {
            i += (size_t)k;
            continue;
        }
        size_t st = i;
        while (i < len) {
            k = utf8_decode((const unsigned char *)s + i, len - i, &cp);
            if (py_isspace(cp)) break;
            i += (size_t)k;
        }
        int id = strtab_id(t, s + st, i - st);
        if (id < 0 || ivec_push(out, id)) return -1;
    }
    return 0;
}
