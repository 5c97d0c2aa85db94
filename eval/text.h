/* eval/text.h — internal helpers shared by the metrics (rouge.c, em.c, bleu.c, score_cli.c):
 * UTF-8 decoding, Python's notion of whitespace, a string → id table and growable int arrays.
 * Not part of the public interface (that is eval.h). */
#ifndef LLM_EVAL_TEXT_H
#define LLM_EVAL_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one UTF-8 code point at s (avail > 0 bytes). Returns its byte length (1..4) and
 * stores the code point; an invalid or truncated sequence reads as one byte, U+FFFD. */
int utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp);

/* 1 if cp is whitespace for Python's str.split()/str.strip() without arguments
 * (Py_UNICODE_ISSPACE: \t\n\v\f\r, U+001C..U+001F, space, U+0085, U+00A0, U+1680,
 * U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). */
int py_isspace(uint32_t cp);

/* Growable int array. */
typedef struct { int *v; size_t n, cap; } ivec;
int  ivec_push(ivec *a, int x);           /* 0, or -1 when out of memory */
void ivec_free(ivec *a);

/* String interning: equal byte strings get equal ids 0, 1, 2, ... in order of first sight. */
typedef struct { char **key; size_t *klen; int *id; size_t cap, n; } strtab;
int  strtab_id(strtab *t, const char *s, size_t len);   /* id, or -1 when out of memory */
void strtab_free(strtab *t);

/* Appends to out the ids (t) of the words of s[0..len), split as Python's str.split() without
 * arguments (runs of py_isspace). Returns 0, or -1 when out of memory. */
int py_split_ids(const char *s, size_t len, strtab *t, ivec *out);

#endif
