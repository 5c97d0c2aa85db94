/* eval/em.c — Lost-in-the-Middle best_subspan_em (nelson-liu/lost-in-the-middle:
 * src/lost_in_the_middle/metrics.py and scripts/evaluate_qa_responses.py; EVAL.md).
 *
 * prediction = prediction.split("\n")[0].strip(); normalize_answer(s) = SQuAD's, in this order:
 * lower(); drop every char of Python's string.punctuation; regex \b(a|an|the)\b -> " ";
 * " ".join(s.split()). Score 1.0 if any normalised gold answer is a plain substring of the
 * normalised prediction (not token aligned: "1" matches "1901"; an answer that normalises to ""
 * matches everything), else 0.0.
 * Text is UTF-8. Case folding is ASCII only (Python lowercases all of Unicode: answers with
 * non-ASCII capitals can differ); for \b every non-ASCII code point counts as a word char and
 * whitespace is Python's (str.split/strip).
 */
#include "eval/eval.h"
#include "eval/text.h"

#include <stdlib.h>
#include <string.h>

static int is_punct(unsigned char c)       /* Python string.punctuation */
{
    return c < 0x80 && c > 0x20 && c != 0x7F && !(c >= '0' && c <= '9') &&
           !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z');
}

static int is_word(const unsigned char *s, size_t len, size_t i)  /* regex \w at byte i */
{
    if (i >= len) return 0;
    unsigned char c = s[i];
    return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

/* Space-joined words of s[0..len) by Python whitespace, into out (room for len+1). */
static size_t ws_fix(const char *s, size_t len, char *out)
{
    size_t n = 0, i = 0;
    while (i < len) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (py_isspace(cp)) { i += (size_t)k; continue; }
        if (n) out[n++] = ' ';
        while (i < len) {
            k = utf8_decode((const unsigned char *)s + i, len - i, &cp);
            if (py_isspace(cp)) break;
            memcpy(out + n, s + i, (size_t)k); n += (size_t)k; i += (size_t)k;
        }
    }
    out[n] = 0;
    return n;
}

/* normalize_answer(s[0..len)) into a new string (NULL when out of memory). */
static char *normalize(const char *s, size_t len)
{
    char *a = malloc(len + 1), *b = malloc(len + 1);
    if (!a || !b) { free(a); free(b); return NULL; }
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {                   /* lower, remove_punc */
        unsigned char c = (unsigned char)s[i];
        if (is_punct(c)) continue;
        a[n++] = (char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
    }
    size_t m = 0;                                        /* remove_articles */
    const unsigned char *u = (const unsigned char *)a;
    for (size_t i = 0; i < n;) {
        if (!(i > 0 && is_word(u, n, i - 1))) {
            size_t k = 0;
            if (u[i] == 'a' && !is_word(u, n, i + 1)) k = 1;
            else if (u[i] == 'a' && i + 1 < n && u[i + 1] == 'n' && !is_word(u, n, i + 2)) k = 2;
            else if (i + 2 < n && !memcmp(u + i, "the", 3) && !is_word(u, n, i + 3)) k = 3;
            if (k) { b[m++] = ' '; i += k; continue; }
        }
        b[m++] = a[i++];
    }
    ws_fix(b, m, a);                                     /* white_space_fix */
    free(b);
    return a;
}

double em_best_subspan(const char *prediction, const char *const *answers, int n_answers)
{
    /* prediction.split("\n")[0].strip(): the strip is subsumed by white_space_fix */
    const char *nl = strchr(prediction, '\n');
    size_t plen = nl ? (size_t)(nl - prediction) : strlen(prediction);
    char *p = normalize(prediction, plen);
    if (!p) return 0.0;
    double score = 0.0;
    for (int i = 0; i < n_answers && score == 0.0; i++) {
        char *g = normalize(answers[i], strlen(answers[i]));
        if (g && strstr(p, g)) score = 1.0;
        free(g);
    }
    free(p);
    return score;
}
