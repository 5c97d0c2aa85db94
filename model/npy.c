/* NumPy .npy files (format 1.0 written; 1.0/2.0/3.0 read): "\x93NUMPY", major, minor,
 * header length (u16 LE for v1, u32 LE for v2+), a Python dict literal padded with spaces and
 * ending in '\n', then the raw C-order data. */
#include "model/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define fail model_fail

#define NPY_MAX_HEADER (1 << 20)


int npy_write_f32(const char *path, const float *data, int64_t rows, int64_t cols,
                  char *err, size_t errlen) {
    if (rows < 0 || cols < 0) return fail(err, errlen, "%s: negative shape", path);
    char header[256];
    int n = snprintf(header, sizeof header,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                     (long long)rows, (long long)cols);
    int total = (10 + n + 1 + 63) / 64 * 64;      /* magic + header + '\n', 64-byte aligned */
    memset(header + n, ' ', (size_t)(total - 10 - n - 1));
    header[total - 10 - 1] = '\n';
    int hlen = total - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    FILE *fp = fopen(path, "wb");
    if (!fp) return fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    size_t count = (size_t)rows * (size_t)cols;
    int ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(header, 1, (size_t)hlen, fp) == (size_t)hlen &&
             (count == 0 || fwrite(data, sizeof *data, count, fp) == count);
    if (fclose(fp) != 0) ok = 0;
    return ok ? 0 : fail(err, errlen, "%s: write failed: %s", path, strerror(errno));
}

/* Finds 'key': in the header dict and returns a pointer just past the colon and spaces. */
static const char *dict_value(const char *hdr, const char *key) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *p = strstr(hdr, quoted);
    if (!p) {
        snprintf(quoted, sizeof quoted, "\"%s\"", key);
        if (!(p = strstr(hdr, quoted))) return NULL;
    }
    p += strlen(quoted);
    while (*p == ' ') p++;
    if (*p++ != ':') return NULL;
    while (*p == ' ') p++;
    return p;
}

/* Parses "(a,)", "(a, b)" or "(a, b,)" into dims; returns ndim, or -1. */
static int parse_shape(const char *p, int64_t dims[2]) {
    if (*p++ != '(') return -1;
    int nd = 0;
    for (;;) {
        while (*p == ' ') p++;
        if (*p == ')') return nd;
        if (*p < '0' || *p > '9' || nd == 2) return -1;
        int64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            if (v > (INT64_C(1) << 48)) return -1;
            v = v * 10 + (*p++ - '0');
        }
        dims[nd++] = v;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        else if (*p != ')') return -1;
    }
}

typedef enum { NPY_F4, NPY_F8, NPY_I4, NPY_I8 } npy_kind;

static int parse_header(const char *hdr, npy_kind *kind, int64_t dims[2], int *ndim,
                        const char *path, char *err, size_t errlen) {
    static const struct { const char *descr; npy_kind kind; } kinds[] = {
        {"<f4", NPY_F4}, {"<f8", NPY_F8}, {"<i4", NPY_I4}, {"<i8", NPY_I8},
    };
    const char *d = dict_value(hdr, "descr");
    if (!d || (*d != '\'' && *d != '"')) return fail(err, errlen, "%s: npy header has no descr", path);
    int found = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !found; i++)
        if (!strncmp(d + 1, kinds[i].descr, 3) && d[4] == d[0]) {
            *kind = kinds[i].kind;
            found = 1;
        }
    if (!found) {
        int len = 0;
        while (len < 16 && d[1 + len] && d[1 + len] != d[0]) len++;
        return fail(err, errlen, "%s: npy dtype '%.*s' not supported (<f4, <f8, <i4, <i8)", path, len, d + 1);
    }
    const char *fo = dict_value(hdr, "fortran_order");
    if (!fo || strncmp(fo, "False", 5) != 0)
        return fail(err, errlen, "%s: npy array is not C order", path);
    const char *s = dict_value(hdr, "shape");
    *ndim = s ? parse_shape(s, dims) : -1;
    if (*ndim < 1) return fail(err, errlen, "%s: npy shape must be 1-D or 2-D", path);
    if (*ndim == 1) dims[1] = 1;
    return 0;
}

static float element(const unsigned char *p, npy_kind kind) {
    switch (kind) {
    case NPY_F4: { float v; memcpy(&v, p, 4); return v; }
    case NPY_F8: { double v; memcpy(&v, p, 8); return (float)v; }
    case NPY_I4: { int32_t v; memcpy(&v, p, 4); return (float)v; }
    case NPY_I8: { int64_t v; memcpy(&v, p, 8); return (float)v; }
    }
    return 0;
}

int npy_read_f32(const char *path, float **data, int64_t *rows, int64_t *cols,
                 char *err, size_t errlen) {
    *data = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    unsigned char pre[12];
    char *hdr = NULL;
    unsigned char *raw = NULL;
    int rc = -1;
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        fail(err, errlen, "%s: not a regular file", path);
        goto done;
    }
    if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 || pre[6] > 3) {
        fail(err, errlen, "%s: not a .npy file (version 1-3)", path);
        goto done;
    }
    size_t hlen = pre[8] | (size_t)pre[9] << 8, pre_len = 10;
    if (pre[6] >= 2) {
        if (fread(pre + 10, 1, 2, fp) != 2) {
            fail(err, errlen, "%s: truncated npy header", path);
            goto done;
        }
        hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        pre_len = 12;
    }
    if (hlen > NPY_MAX_HEADER || (int64_t)(pre_len + hlen) > (int64_t)st.st_size) {
        fail(err, errlen, "%s: npy header length %zu past the end of the file", path, hlen);
        goto done;
    }
    if (!(hdr = malloc(hlen + 1)) || fread(hdr, 1, hlen, fp) != hlen) {
        fail(err, errlen, "%s: cannot read npy header", path);
        goto done;
    }
    hdr[hlen] = 0;
    if (strlen(hdr) != hlen) {
        fail(err, errlen, "%s: NUL byte in npy header", path);
        goto done;
    }
    npy_kind kind = NPY_F4;
    int64_t dims[2];
    int ndim;
    if (parse_header(hdr, &kind, dims, &ndim, path, err, errlen)) goto done;
    size_t esz = kind == NPY_F4 || kind == NPY_I4 ? 4 : 8;
    uint64_t data_bytes = (uint64_t)st.st_size - pre_len - hlen;
    int overflow = dims[1] && (uint64_t)dims[0] > UINT64_MAX / esz / (uint64_t)dims[1];
    if (overflow || (uint64_t)dims[0] * (uint64_t)dims[1] * esz != data_bytes) {
        fail(err, errlen, "%s: npy data is %llu bytes, shape (%lld, %lld) needs %s%llu", path,
             (unsigned long long)data_bytes, (long long)dims[0], (long long)dims[1],
             overflow ? "more than " : "",
             overflow ? (unsigned long long)UINT64_MAX : (unsigned long long)((uint64_t)dims[0] * (uint64_t)dims[1] * esz));
        goto done;
    }
    size_t count = (size_t)dims[0] * (size_t)dims[1];
    float *out = malloc(count * sizeof *out + 1);
    if (!out || !(raw = malloc(count * esz + 1)) || fread(raw, esz, count, fp) != count) {
        free(out);
        fail(err, errlen, "%s: cannot read npy data", path);
        goto done;
    }
    for (size_t i = 0; i < count; i++) out[i] = element(raw + i * esz, kind);
    *data = out;
    *rows = dims[0];
    *cols = dims[1];
    rc = 0;
done:
    free(raw);
    free(hdr);
    fclose(fp);
    return rc;
}
