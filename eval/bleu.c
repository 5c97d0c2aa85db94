/* eval/bleu.c — Self-BLEU of one generated text as the BUZZ paper computed it
 * (danielfang001/buzz-llm entry_function/eval_inside_forward/run_bleu_eval.py, after Texygen's
 * utils/metrics/SelfBleu.py; EVAL.md "BLEU / Self-BLEU"):
 *   sentences = [s.strip() for s in text.split(".")]   (empty pieces kept)
 *   for each i: nltk.translate.bleu_score.sentence_bleu(
 *       [other sentences' .split()], sentences[i].split(), weights=(1/3, 1/3, 1/3),
 *       smoothing_function=SmoothingFunction().method1)
 *   score = mean over i.
 * NLTK's sentence_bleu (3.x, corpus_bleu on one pair): modified n-gram precision with counts
 * clipped by the maximum count in any reference, denominator max(1, #hyp n-grams); BLEU = 0 when
 * no unigram matches; method1 replaces a zero numerator by epsilon 0.1; brevity penalty against
 * the closest reference length (ties: the shorter); exp(fsum(w * log p)).
 */
#include "eval/eval.h"
#include "eval/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* math.fsum of n doubles (Shewchuk's exact partials, as CPython's). */
static double fsum(const double *x, int n)
{
    double p[64];
    int np = 0;
    for (int k = 0; k < n; k++) {
        double v = x[k];
        int i = 0;
        for (int j = 0; j < np; j++) {
            double y = p[j];
            if (fabs(v) < fabs(y)) { double t = v; v = y; y = t; }
            double hi = v + y, lo = y - (hi - v);
            if (lo != 0.0) p[i++] = lo;
            v = hi;
        }
        np = i;
        if (v != 0.0) p[np++] = v;
    }
    double hi = 0.0;
    if (np > 0) {
        hi = p[--np];
        while (np > 0) {
            double v = hi, y = p[--np];
            hi = v + y;
            double lo = y - (hi - v);
            if (lo != 0.0) {
                if (np > 0 && ((lo < 0 && p[np - 1] < 0) || (lo > 0 && p[np - 1] > 0))) {
                    y = lo * 2; v = hi + y;
                    if (y == v - hi) hi = v;
                }
                break;
            }
        }
    }
    return hi;
}

typedef struct { int start, len; } span;             /* a sentence: ids w[start..start+len) */

/* count of the n-gram g (n ids) in s */
static int count_in(const int *w, span s, const int *g, int n)
{
    int c = 0;
    for (int i = 0; i + n <= s.len; i++)
        if (!memcmp(w + s.start + i, g, (size_t)n * sizeof *g)) c++;
    return c;
}

static double sentence_bleu3(const int *w, const span *sp, int ns, int h)
{
    span hy = sp[h];
    long num[4] = {0}, den[4] = {0};
    for (int n = 1; n <= 3; n++) {
        long total = 0;
        for (int i = 0; i + n <= hy.len; i++) {
            const int *g = w + hy.start + i;
            total++;
            /* count each distinct n-gram once: at its first occurrence */
            int first = 1;
            for (int k = 0; k < i && first; k++)
                if (!memcmp(w + hy.start + k, g, (size_t)n * sizeof *g)) first = 0;
            if (!first) continue;
            int c = count_in(w, hy, g, n), mx = 0;
            for (int r = 0; r < ns; r++) {
                if (r == h) continue;
                int rc = count_in(w, sp[r], g, n);
                if (rc > mx) mx = rc;
            }
            num[n] += c < mx ? c : mx;
        }
        den[n] = total > 1 ? total : 1;
    }
    /* closest reference length: min by (|r - c|, r) */
    int c = hy.len, best = -1;
    for (int r = 0; r < ns; r++) {
        if (r == h) continue;
        int rl = sp[r].len;
        if (best < 0 || abs(rl - c) < abs(best - c) || (abs(rl - c) == abs(best - c) && rl < best))
            best = rl;
    }
    if (num[1] == 0) return 0.0;
    double bp = c > best ? 1.0 : c == 0 ? 0.0 : exp(1.0 - (double)best / (double)c);
    double terms[3];
    int nt = 0;
    for (int n = 1; n <= 3; n++) {
        double p = num[n] == 0 ? (0 + 0.1) / (double)den[n] : (double)num[n] / (double)den[n];
        if (p > 0) terms[nt++] = (1.0 / 3) * log(p);
    }
    return bp * exp(fsum(terms, nt));
}

double self_bleu(const char *text)
{
    strtab tab = {0};
    ivec w = {0};
    span *sp = NULL;
    int ns = 0, cap = 0;
    double result = NAN;
    const char *s = text;
    for (;;) {                                          /* text.split("."), strip, split */
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        if (ns == cap) {
            cap = cap ? 2 * cap : 16;
            span *t = realloc(sp, (size_t)cap * sizeof *t);
            if (!t) goto done;
            sp = t;
        }
        sp[ns].start = (int)w.n;
        if (py_split_ids(s, len, &tab, &w)) goto done;
        sp[ns].len = (int)w.n - sp[ns].start;
        ns++;
        if (!dot) break;
        s = dot + 1;
    }
    if (ns < 2) goto done;            /* NLTK raises: no references (closest_ref_length) */
    double sum = 0.0;
    for (int i = 0; i < ns; i++) sum += sentence_bleu3(w.v, sp, ns, i);
    result = sum / ns;
done:
    free(sp); ivec_free(&w); strtab_free(&tab);
    return result;
}
