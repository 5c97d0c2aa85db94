/* results.c — OUT/results.jsonl: one JSON line per (example, policy, budget), appended with a
 * single write and fsync'ed, so a killed run loses at most the line in flight; a rerun keeps the
 * complete lines, cuts a torn last line and skips the triples already done. */
#include "eval/eval.h"
#include "eval/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void eval_result_key(char *out, size_t outlen, const char *id, const char *policy, double budget)
{
    snprintf(out, outlen, "%s|%s|%.6g", id, policy, budget);
}

/* ---- a small open-addressing set of keys (n_keys entries in a table of cap_keys slots) */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int eval_results_done(const eval_results *r, const char *key)
{
    if (!r->cap_keys) return 0;
    for (size_t i = fnv1a(key) % (size_t)r->cap_keys;; i = (i + 1) % (size_t)r->cap_keys) {
        if (!r->keys[i]) return 0;
        if (!strcmp(r->keys[i], key)) return 1;
    }
}

static int key_add(eval_results *r, const char *key)
{
    if (eval_results_done(r, key)) return 0;
    if (2 * (r->n_keys + 1) > r->cap_keys) {
        int nc = r->cap_keys ? 2 * r->cap_keys : 1024;
        char **nk = calloc((size_t)nc, sizeof *nk);
        if (!nk) return -1;
        for (int j = 0; j < r->cap_keys; j++) {
            if (!r->keys[j]) continue;
            size_t i = fnv1a(r->keys[j]) % (size_t)nc;
            while (nk[i]) i = (i + 1) % (size_t)nc;
            nk[i] = r->keys[j];
        }
        free(r->keys);
        r->keys = nk;
        r->cap_keys = nc;
    }
    size_t i = fnv1a(key) % (size_t)r->cap_keys;
    while (r->keys[i]) i = (i + 1) % (size_t)r->cap_keys;
    if (!(r->keys[i] = strdup(key))) return -1;
    r->n_keys++;
    return 0;
}

/* The key of a results line ("id", "policy", "budget"); -1 when the line lacks them. */
static int line_key(const cJSON *o, char *key, size_t keylen)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    const cJSON *pol = cJSON_GetObjectItemCaseSensitive(o, "policy");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "budget");
    if (!cJSON_IsString(id) || !cJSON_IsString(pol) || !cJSON_IsNumber(b)) return -1;
    eval_result_key(key, keylen, id->valuestring, pol->valuestring, b->valuedouble);
    return 0;
}

/* Reads the whole file; *buf malloc'd (NUL-terminated), *len its size. Missing → empty. */
static int read_all(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT) {
            *buf = calloc(1, 1);
            return *buf ? 0 : -1;
        }
        eval_seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        eval_seterr(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    char *b = malloc((size_t)st.st_size + 1);
    size_t n = 0;
    while (b && n < (size_t)st.st_size) {
        ssize_t k = read(fd, b + n, (size_t)st.st_size - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
    }
    close(fd);
    if (!b || n != (size_t)st.st_size) {
        eval_seterr(err, errlen, "%s: cannot read", path);
        free(b);
        return -1;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int eval_read_lines(const char *path, char ***lines, int *n, char *err, size_t errlen)
{
    *lines = NULL;
    *n = 0;
    char *buf;
    size_t len;
    if (read_all(path, &buf, &len, err, errlen) != 0) return -1;
    int cap = 0;
    char *p = buf;
    for (;;) {
        char *nl = memchr(p, '\n', len - (size_t)(p - buf));
        if (!nl) break; /* a torn last line is not a result */
        *nl = '\0';
        if (*p) {
            if (*n == cap) {
                char **nv = realloc(*lines, (size_t)(cap = cap ? 2 * cap : 256) * sizeof *nv);
                if (!nv) goto oom;
                *lines = nv;
            }
            if (!((*lines)[(*n)++] = strdup(p))) goto oom;
        }
        p = nl + 1;
    }
    free(buf);
    return 0;
oom:
    eval_seterr(err, errlen, "%s: out of memory", path);
    free(buf);
    for (int i = 0; i < *n; i++) free((*lines)[i]);
    free(*lines);
    *lines = NULL;
    *n = 0;
    return -1;
}

int eval_results_open(eval_results *r, const char *dir, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    snprintf(r->path, sizeof r->path, "%s/results.jsonl", dir);
    char *buf;
    size_t len;
    if (read_all(r->path, &buf, &len, err, errlen) != 0) return -1;
    /* complete lines: remember their keys; the tail after the last newline is torn */
    size_t good = 0;
    long line_no = 0;
    char *p = buf;
    for (;;) {
        char *nl = memchr(p, '\n', len - (size_t)(p - buf));
        if (!nl) break;
        line_no++;
        *nl = '\0';
        if (*p) {
            cJSON *o = cJSON_Parse(p);
            char key[512];
            if (!o || line_key(o, key, sizeof key) != 0) {
                eval_seterr(err, errlen, "%s: line %ld: not a results line (JSON with \"id\", \"policy\", \"budget\")",
                            r->path, line_no);
                cJSON_Delete(o);
                free(buf);
                eval_results_close(r);
                return -1;
            }
            cJSON_Delete(o);
            if (key_add(r, key) != 0) {
                eval_seterr(err, errlen, "%s: out of memory", r->path);
                free(buf);
                eval_results_close(r);
                return -1;
            }
        }
        p = nl + 1;
        good = (size_t)(p - buf);
    }
    r->n_torn = good < len;
    free(buf);
    r->fd = open(r->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (r->fd < 0) {
        eval_seterr(err, errlen, "%s: cannot open for appending: %s", r->path, strerror(errno));
        eval_results_close(r);
        return -1;
    }
    if (r->n_torn && (ftruncate(r->fd, (off_t)good) != 0 || fsync(r->fd) != 0)) {
        eval_seterr(err, errlen, "%s: cannot cut the torn last line: %s", r->path, strerror(errno));
        eval_results_close(r);
        return -1;
    }
    r->size = (off_t)good;
    return 0;
}

int eval_results_append(eval_results *r, const char *key, const char *line, char *err,
                        size_t errlen)
{
    size_t n = strlen(line);
    char *b = malloc(n + 2);
    if (!b) {
        eval_seterr(err, errlen, "%s: out of memory", r->path);
        return -1;
    }
    memcpy(b, line, n);
    b[n++] = '\n';
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(r->fd, b + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        done += (size_t)k;
    }
    int e = errno;
    free(b);
    if (done < n || fsync(r->fd) != 0) {
        if (done == n) e = errno;
        /* keep the file intact up to its last complete line */
        int cut = ftruncate(r->fd, r->size);
        eval_seterr(err, errlen, "%s: write failed: %s%s", r->path, strerror(e ? e : ENOSPC),
                    cut ? " (and the partial line could not be cut)" : "");
        return -1;
    }
    r->size += (off_t)n;
    if (key_add(r, key) != 0) {
        eval_seterr(err, errlen, "%s: out of memory", r->path);
        return -1;
    }
    return 0;
}

void eval_results_close(eval_results *r)
{
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    for (int i = 0; i < r->cap_keys; i++) free(r->keys[i]);
    free(r->keys);
    r->keys = NULL;
    r->n_keys = r->cap_keys = 0;
}

int eval_results_mark(eval_results *r, const char *key) { return key_add(r, key); }
