/* .safetensors reader: mmap the file, validate the whole header, then hand out pointers.
 * Layout: u64 LE header length N, N bytes of JSON, then the data buffer; data_offsets are
 * relative to the start of the data buffer. */
#include "model/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define fail model_fail

#define ST_MAX_HEADER (100u << 20)

/* Formats the one-line error; control characters (a tensor name with "\n" in it) become '?'
 * so the message stays one line. */

/* A JSON number that is a non-negative integer exactly representable in a double. */
static int json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0 && d == floor(d))) return 0;
    *out = (uint64_t)d;
    return 1;
}

/* Validates one header entry and fills t (data pointer set from the data buffer base). */
static int parse_entry(const cJSON *e, st_tensor *t, const uint8_t *data, uint64_t data_size,
                       const char *path, char *err, size_t errlen) {
    const char *name = e->string;
    if (strlen(name) >= sizeof t->name)
        return fail(err, errlen, "%s: tensor name longer than %zu bytes: %.64s...", path,
                    sizeof t->name - 1, name);
    memcpy(t->name, name, strlen(name) + 1);
    if (!cJSON_IsObject(e)) return fail(err, errlen, "%s: %s: entry is not an object", path, name);

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!cJSON_IsString(dt)) return fail(err, errlen, "%s: %s: missing dtype", path, name);
    if (!strcmp(dt->valuestring, "F32")) t->dtype = DT_F32;
    else if (!strcmp(dt->valuestring, "F16")) t->dtype = DT_F16;
    else if (!strcmp(dt->valuestring, "BF16")) t->dtype = DT_BF16;
    else return fail(err, errlen, "%s: %s: unsupported dtype %.32s (F32, F16, BF16 only)",
                     path, name, dt->valuestring);

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(shape)) return fail(err, errlen, "%s: %s: missing shape", path, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > 4) return fail(err, errlen, "%s: %s: %d dimensions (at most 4)", path, name, ndim);
    t->ndim = ndim;
    uint64_t elems = 1;
    int too_big = 0;
    for (int i = 0; i < ndim; i++) {
        uint64_t d;
        if (!json_uint(cJSON_GetArrayItem(shape, i), &d))
            return fail(err, errlen, "%s: %s: shape[%d] is not a non-negative integer", path, name, i);
        t->shape[i] = (int64_t)d;
        if (d && elems > UINT64_MAX / d) too_big = 1;
        else elems *= d;
    }
    for (int i = ndim; i < 4; i++) t->shape[i] = 0;

    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    uint64_t begin, end;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
        !json_uint(cJSON_GetArrayItem(off, 0), &begin) || !json_uint(cJSON_GetArrayItem(off, 1), &end))
        return fail(err, errlen, "%s: %s: data_offsets must be [begin, end]", path, name);
    if (begin > end || end > data_size)
        return fail(err, errlen, "%s: %s: data_offsets [%llu, %llu] outside the data buffer of %llu bytes",
                    path, name, (unsigned long long)begin, (unsigned long long)end,
                    (unsigned long long)data_size);
    uint64_t esz = dtype_size(t->dtype);
    if (too_big || elems > UINT64_MAX / esz || elems * esz != end - begin) {
        char dims[128] = "";
        for (int i = 0, k = 0; i < ndim; i++)
            k += snprintf(dims + k, sizeof dims - (size_t)k, i ? ", %lld" : "%lld", (long long)t->shape[i]);
        if (too_big || elems > UINT64_MAX / esz)
            return fail(err, errlen, "%s: %s: shape [%s] is too large", path, name, dims);
        return fail(err, errlen, "%s: %s: data_offsets span %llu bytes, shape [%s] of %s needs %llu",
                    path, name, (unsigned long long)(end - begin), dims, dtype_name(t->dtype),
                    (unsigned long long)(elems * esz));
    }
    t->data = data + begin;
    t->nbytes = (size_t)(end - begin);
    return 0;
}

/* Entries sorted by begin must not overlap; names must be unique. */
static int check_layout(st_file *f, char *err, size_t errlen) {
    return model_check_tensor_layout(f->tensors, f->n_tensors, f->path, err, errlen);
}

static int parse_header(st_file *f, const uint8_t *base, char *err, size_t errlen) {
    if (f->size < 8) return fail(err, errlen, "%s: %zu bytes, too short for a safetensors header", f->path, f->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | base[i];
    if (hlen > ST_MAX_HEADER)
        return fail(err, errlen, "%s: header length %llu is larger than %u bytes", f->path,
                    (unsigned long long)hlen, ST_MAX_HEADER);
    if (hlen > f->size - 8)
        return fail(err, errlen, "%s: header length %llu runs past the end of the file (%zu bytes)",
                    f->path, (unsigned long long)hlen, f->size);
    const char *text = (const char *)base + 8, *end = text;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, 0);
    while (root && end < text + hlen && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
        end++;                                   /* writers pad the header with spaces */
    if (!root || end != text + hlen || !cJSON_IsObject(root)) {
        if (root && end == text + hlen) fail(err, errlen, "%s: header is not a JSON object", f->path);
        else fail(err, errlen, "%s: malformed JSON header near byte %ld", f->path, (long)(end - text) + 8);
        cJSON_Delete(root);
        return -1;
    }

    const uint8_t *data = base + 8 + hlen;
    uint64_t data_size = f->size - 8 - hlen;
    int n = 0;
    for (const cJSON *e = root->child; e; e = e->next)
        if (strcmp(e->string, "__metadata__") != 0) n++;
    f->tensors = calloc((size_t)(n ? n : 1), sizeof *f->tensors);
    if (!f->tensors) {
        cJSON_Delete(root);
        return fail(err, errlen, "%s: out of memory", f->path);
    }
    int rc = 0;
    for (const cJSON *e = root->child; e && rc == 0; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        rc = parse_entry(e, &f->tensors[f->n_tensors], data, data_size, f->path, err, errlen);
        if (rc == 0) f->n_tensors++;
    }
    cJSON_Delete(root);
    return rc ? rc : check_layout(f, err, errlen);
}

int st_parse(const void *buf, size_t size, const char *name, st_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    if (strlen(name) >= sizeof f->path) return fail(err, errlen, "%.200s...: path too long", name);
    strcpy(f->path, name);
    f->size = size;
    if (parse_header(f, buf, err, errlen) != 0) {
        st_close(f);
        return -1;
    }
    return 0;
}

int st_open(const char *path, st_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    if (strlen(path) >= sizeof f->path) return fail(err, errlen, "%.200s...: path too long", path);
    strcpy(f->path, path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "%s: not a regular file", path);
    }
    f->size = (size_t)st.st_size;
    if (f->size < 8) {
        close(fd);
        return fail(err, errlen, "%s: %zu bytes, too short for a safetensors header", path, f->size);
    }
    void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return fail(err, errlen, "%s: mmap failed: %s", path, strerror(errno));
    if (st_parse(map, (size_t)st.st_size, path, f, err, errlen) != 0) {
        munmap(map, (size_t)st.st_size);
        return -1;
    }
    f->map = map;
    return 0;
}

const st_tensor *st_find(const st_file *f, const char *name) {
    int lo = 0, hi = f->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, f->tensors[mid].name);
        if (c == 0) return &f->tensors[mid];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

void st_close(st_file *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->size);
    free(f->tensors);
    memset(f, 0, sizeof *f);
}
