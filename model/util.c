/* util.c — small helpers every file of model/ shares (model/internal.h): the one-line error and
 * reading a small text file (config.json, the safetensors index). */
#include "model/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int model_fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *c = err; err && errlen && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return -1;
}

char *model_read_text(const char *path, long long max_bytes, size_t *len, char *err, size_t errlen) {
    struct stat pre;
    if (stat(path, &pre) == 0 && !S_ISREG(pre.st_mode)) {   /* a FIFO would block fopen */
        model_fail(err, errlen, "%s: not a regular file", path);
        return NULL;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        model_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    char *buf = NULL;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) why = "not a regular file";
    else if (st.st_size > max_bytes) why = "file too large";
    else if (!(buf = malloc((size_t)st.st_size + 1))) why = "out of memory";
    else if (fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) why = "read error";
    fclose(fp);
    if (why) {
        model_fail(err, errlen, "%s: %s", path, why);
        free(buf);
        return NULL;
    }
    buf[st.st_size] = 0;
    *len = (size_t)st.st_size;
    return buf;
}

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int cmp_tensor_data(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->data != y->data) return (const uint8_t *)x->data < (const uint8_t *)y->data ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

int model_check_tensor_layout(st_tensor *tensors, int n, const char *path, char *err, size_t errlen)
{
    st_tensor **by = malloc(sizeof *by * ((size_t)(n > 0 ? n : 0) + 1));
    if (!by) return model_fail(err, errlen, "%s: out of memory", path);
    for (int i = 0; i < n; i++) by[i] = &tensors[i];
    qsort(by, (size_t)n, sizeof *by, cmp_tensor_data);
    for (int i = 1; i < n; i++)
        if ((const uint8_t *)by[i - 1]->data + by[i - 1]->nbytes > (const uint8_t *)by[i]->data) {
            model_fail(err, errlen, "%s: tensors %s and %s overlap", path, by[i - 1]->name, by[i]->name);
            free(by);
            return -1;
        }
    free(by);
    qsort(tensors, (size_t)n, sizeof *tensors, cmp_tensor_name);
    for (int i = 1; i < n; i++)
        if (!strcmp(tensors[i - 1].name, tensors[i].name))
            return model_fail(err, errlen, "%s: tensor %s appears twice", path, tensors[i].name);
    return 0;
}

/* Zeroed, 64-byte aligned (one cache line, one zmm load): glibc's calloc returns 16-byte
 * aligned blocks, and the prefill GEMM (gemm_avx512.c) reading its activation rows across
 * cache lines ran at 125 GFLOPS where aligned rows give 168 (bench/gemm_nt.c, one thread,
 * n = 128, 1152 x 768, weights from DRAM). Freed with free(). */
void *model_alloc64(size_t n, size_t size)
{
    if (n == 0) n = 1;
    if (n > SIZE_MAX / size) return NULL;
    size_t bytes = (n * size + 63) / 64 * 64;
    void *p = aligned_alloc(64, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

double model_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
