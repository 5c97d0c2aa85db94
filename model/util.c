/* util.c — small helpers every file of model/ shares (model/internal.h): the one-line error and
 * reading a small text file (config.json, the safetensors index). */
#include "model/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
