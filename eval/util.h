/* eval/util.h — small helpers private to eval/ (data.c, prompt.c, results.c, generate.c, ppl.c,
 * summary.c and the sweep files): error formatting, a monotonic clock, mkdir -p, reading a
 * small JSON file and a growing string. Not part of the public interface (that is eval.h). */
#ifndef LLM_EVAL_UTIL_H
#define LLM_EVAL_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* snprintf into err[errlen] (nothing when err is NULL or errlen 0). */
void eval_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Seconds on the monotonic clock. */
double eval_now_s(void);

/* mkdir -p path (mode 0755). Returns 0, or -1 with err set. */
int eval_mkdirs(const char *path, char *err, size_t errlen);

/* The JSON of a small file (its first 8191 bytes), or NULL when it does not parse. *exists: 1
 * when the file could be opened (NULL allowed). The caller cJSON_Deletes the result. */
cJSON *eval_read_json(const char *path, int *exists);

/* A growing NUL-terminated string: append n bytes of s (s need not be terminated). On out of
 * memory b->oom is set and every later append is ignored; the caller frees b->s. */
typedef struct { char *s; size_t n, cap; int oom; } eval_sbuf;
void eval_sb_add(eval_sbuf *b, const char *s, size_t n);

#endif
