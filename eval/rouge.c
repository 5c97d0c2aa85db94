/* eval/rouge.c — ROUGE-1/2/L/Lsum of one (target, prediction) pair, in two flavours
 * (../shared/docs/EVAL.md, "ROUGE"):
 *   ROUGE_IMPL_GOOGLE: Google rouge-score 0.1.2 (google-research/rouge: tokenize.py,
 *     rouge_scorer.py): lowercase, runs outside [a-z0-9] are separators, optional NLTK Porter
 *     stemming of tokens longer than 3 chars; n-gram counts; LCS; summary-level Lsum over
 *     "\n"-separated sentences with the union LCS and per-token budgets of ROUGE-1.5.5.
 *   ROUGE_IMPL_PLTRDY: the `rouge` 1.0.1 package (pltrdy/rouge: rouge.py, rouge_score.py) with
 *     its defaults (exclusive=True): sentences split on '.', words split on ' ', n-gram SETS,
 *     summary-level "exclusive" union LCS, 1e-8 in F. Its rouge-l is summary level, and it has no
 *     rougeLsum: we report its rouge-l as both rougeL and rougeLsum.
 */
#include "eval/eval.h"
#include "eval/text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------- shared pieces */

/* A tokenised text: words (ids) and, per sentence, the end offset into words. */
typedef struct { ivec w, end; } sents;

static void sents_free(sents *s) { ivec_free(&s->w); ivec_free(&s->end); }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorted n-gram keys (order 1 or 2) of ids t[0..n). *nk = max(n - order + 1, 0). */
static uint64_t *ngram_keys(const int *t, size_t n, int order, size_t *nk)
{
    *nk = n >= (size_t)order ? n - (size_t)order + 1 : 0;
    uint64_t *k = malloc((*nk ? *nk : 1) * sizeof *k);
    if (!k) return NULL;
    for (size_t i = 0; i < *nk; i++)
        k[i] = order == 1 ? (uint64_t)(uint32_t)t[i]
                          : ((uint64_t)(uint32_t)t[i] << 32) | (uint32_t)t[i + 1];
    qsort(k, *nk, sizeof *k, cmp_u64);
    return k;
}

/* Over two sorted key arrays: sum of min counts (multiset overlap), distinct keys of each, and
 * distinct keys in both (set overlap). */
static void ngram_overlap(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                          size_t *multi, size_t *da, size_t *db, size_t *common)
{
    size_t i = 0, j = 0;
    *multi = *da = *db = *common = 0;
    while (i < na || j < nb) {
        if (j >= nb || (i < na && a[i] < b[j])) {
            uint64_t k = a[i]; (*da)++; while (i < na && a[i] == k) i++;
        } else if (i >= na || b[j] < a[i]) {
            uint64_t k = b[j]; (*db)++; while (j < nb && b[j] == k) j++;
        } else {
            uint64_t k = a[i]; size_t ca = 0, cb = 0;
            while (i < na && a[i] == k) { i++; ca++; }
            while (j < nb && b[j] == k) { j++; cb++; }
            (*da)++; (*db)++; (*common)++;
            *multi += ca < cb ? ca : cb;
        }
    }
}

/* LCS DP table of x[0..nx) (rows) against y[0..ny) (columns), (nx+1) x (ny+1), row-major. */
static void lcs_table(const int *x, int nx, const int *y, int ny, int *t)
{
    int w = ny + 1;
    for (int j = 0; j <= ny; j++) t[j] = 0;
    for (int i = 1; i <= nx; i++) {
        t[i * w] = 0;
        for (int j = 1; j <= ny; j++) {
            if (x[i - 1] == y[j - 1]) t[i * w + j] = t[(i - 1) * w + j - 1] + 1;
            else {
                int up = t[(i - 1) * w + j], left = t[i * w + j - 1];
                t[i * w + j] = up > left ? up : left;
            }
        }
    }
}

/* Grows a reusable int buffer to at least n elements. */
static int grow(int **buf, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    int *b = realloc(*buf, n * sizeof *b);
    if (!b) return -1;
    *buf = b; *cap = n;
    return 0;
}

/* ------------------------------------------------------------------- Google rouge-score */

/* Appends one token (lowercase [a-z0-9]+) to out, stemmed when asked and longer than 3. */
static int google_emit(const char *tok, int len, int stem, strtab *tab, ivec *out, char *tmp)
{
    int id;
    if (stem && len > 3) {
        int n = porter_stem(tok, len, tmp);
        id = strtab_id(tab, tmp, (size_t)n);
    } else {
        id = strtab_id(tab, tok, (size_t)len);
    }
    return id < 0 ? -1 : ivec_push(out, id);
}

/* rouge_score.tokenize.tokenize(text, stemmer) on s[0..len). Python's str.lower() maps only two
 * non-ASCII code points to ASCII letters: U+0130 -> "i" + U+0307 and U+212A (Kelvin) -> "k";
 * every other non-ASCII code point ends up as a separator. */
static int google_tokenize(const char *s, size_t len, int stem, strtab *tab, ivec *out)
{
    char *tok = malloc(len + 2), *tmp = malloc(len + 2);
    int n = 0, rc = 0;
    if (!tok || !tmp) { free(tok); free(tmp); return -1; }
    for (size_t i = 0; i < len && !rc;) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)s + i, len - i, &cp);
        i += (size_t)k;
        char c = 0;
        if (cp >= 'A' && cp <= 'Z') c = (char)(cp - 'A' + 'a');
        else if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9')) c = (char)cp;
        else if (cp == 0x212A) c = 'k';
        if (c) { tok[n++] = c; continue; }
        if (cp == 0x130) tok[n++] = 'i';      /* followed by U+0307, a separator */
        if (n) rc = google_emit(tok, n, stem, tab, out, tmp);
        n = 0;
    }
    if (!rc && n) rc = google_emit(tok, n, stem, tab, out, tmp);
    free(tok); free(tmp);
    return rc;
}

static double google_f(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0.0; }

static int google_rouge(const char *target, const char *prediction, int stem, rouge_scores *out)
{
    strtab tab = {0};
    ivec tt = {0}, pt = {0};
    sents ts = {0}, ps = {0};
    uint64_t *ka = NULL, *kb = NULL;
    int *tbl = NULL, *cnt_t = NULL, *cnt_p = NULL;
    char *mark = NULL;
    size_t tcap = 0;
    int rc = -1;

    if (google_tokenize(target, strlen(target), stem, &tab, &tt) ||
        google_tokenize(prediction, strlen(prediction), stem, &tab, &pt)) goto done;

    /* rouge1, rouge2: n-gram counts */
    for (int order = 1; order <= 2; order++) {
        size_t na, nb, multi, da, db, common;
        free(ka); free(kb);
        ka = ngram_keys(tt.v, tt.n, order, &na);
        kb = ngram_keys(pt.v, pt.n, order, &nb);
        if (!ka || !kb) goto done;
        ngram_overlap(ka, na, kb, nb, &multi, &da, &db, &common);
        rouge_prf *s = order == 1 ? &out->rouge1 : &out->rouge2;
        s->p = (double)multi / (double)(nb > 1 ? nb : 1);
        s->r = (double)multi / (double)(na > 1 ? na : 1);
        s->f = google_f(s->p, s->r);
    }

    /* rougeL: LCS over all tokens (two rolling rows) */
    memset(&out->rougeL, 0, sizeof out->rougeL);
    if (tt.n && pt.n) {
        if (grow(&tbl, &tcap, 2 * (pt.n + 1))) goto done;
        int *prev = tbl, *cur = tbl + pt.n + 1;
        for (size_t j = 0; j <= pt.n; j++) prev[j] = 0;
        for (size_t i = 1; i <= tt.n; i++) {
            cur[0] = 0;
            for (size_t j = 1; j <= pt.n; j++)
                cur[j] = tt.v[i - 1] == pt.v[j - 1] ? prev[j - 1] + 1
                         : (prev[j] > cur[j - 1] ? prev[j] : cur[j - 1]);
            int *t = prev; prev = cur; cur = t;
        }
        double lcs = prev[pt.n];
        out->rougeL.p = lcs / (double)pt.n;
        out->rougeL.r = lcs / (double)tt.n;
        out->rougeL.f = google_f(out->rougeL.p, out->rougeL.r);
    }

    /* rougeLsum: sentences are the non-empty "\n"-separated pieces */
    const char *texts[2] = { target, prediction };
    sents *ss[2] = { &ts, &ps };
    for (int k = 0; k < 2; k++) {
        const char *s = texts[k];
        for (;;) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) : strlen(s);
            if (len) {
                if (google_tokenize(s, len, stem, &tab, &ss[k]->w) ||
                    ivec_push(&ss[k]->end, (int)ss[k]->w.n)) goto done;
            }
            if (!nl) break;
            s = nl + 1;
        }
    }
    memset(&out->rougeLsum, 0, sizeof out->rougeLsum);
    size_t m = ts.w.n, n = ps.w.n;
    if (ts.end.n && ps.end.n && m && n) {
        cnt_t = calloc(tab.n, sizeof *cnt_t);
        cnt_p = calloc(tab.n, sizeof *cnt_p);
        mark = malloc(m);
        if (!cnt_t || !cnt_p || !mark) goto done;
        for (size_t i = 0; i < m; i++) cnt_t[ts.w.v[i]]++;
        for (size_t i = 0; i < n; i++) cnt_p[ps.w.v[i]]++;
        size_t hits = 0;
        for (size_t a = 0; a < ts.end.n; a++) {
            int r0 = a ? ts.end.v[a - 1] : 0, nr = ts.end.v[a] - r0;
            const int *r = ts.w.v + r0;
            memset(mark, 0, (size_t)nr);
            for (size_t b = 0; b < ps.end.n; b++) {
                int c0 = b ? ps.end.v[b - 1] : 0, nc = ps.end.v[b] - c0;
                const int *c = ps.w.v + c0;
                if (grow(&tbl, &tcap, (size_t)(nr + 1) * (size_t)(nc + 1))) goto done;
                lcs_table(r, nr, c, nc, tbl);
                int i = nr, j = nc, w = nc + 1;      /* _backtrack_norec */
                while (i > 0 && j > 0) {
                    if (r[i - 1] == c[j - 1]) { mark[i - 1] = 1; i--; j--; }
                    else if (tbl[i * w + j - 1] > tbl[(i - 1) * w + j]) j--;
                    else i--;
                }
            }
            for (int i = 0; i < nr; i++) {
                if (!mark[i]) continue;
                int t = r[i];
                if (cnt_p[t] > 0 && cnt_t[t] > 0) { hits++; cnt_p[t]--; cnt_t[t]--; }
            }
        }
        out->rougeLsum.r = (double)hits / (double)m;
        out->rougeLsum.p = (double)hits / (double)n;
        out->rougeLsum.f = google_f(out->rougeLsum.p, out->rougeLsum.r);
    }
    rc = 0;
done:
    free(ka); free(kb); free(tbl); free(cnt_t); free(cnt_p); free(mark);
    ivec_free(&tt); ivec_free(&pt); sents_free(&ts); sents_free(&ps); strtab_free(&tab);
    return rc;
}

/* ------------------------------------------------------------------- pltrdy rouge 1.0.1 */

/* Rouge._get_scores' preprocessing and _split_into_words: sentences are the non-empty pieces
 * of text.split("."), each normalised to " ".join(piece.split()); a sentence's words are
 * sentence.split(" "), so a whitespace-only piece gives the single word "". */
static int pltrdy_split(const char *text, strtab *tab, sents *out)
{
    const char *s = text;
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        if (len) {
            size_t before = out->w.n;
            if (py_split_ids(s, len, tab, &out->w)) return -1;
            if (out->w.n == before) {                      /* the empty word "" */
                int id = strtab_id(tab, "", 0);
                if (id < 0 || ivec_push(&out->w, id)) return -1;
            }
            if (ivec_push(&out->end, (int)out->w.n)) return -1;
        }
        if (!dot) break;
        s = dot + 1;
    }
    return 0;
}

static double pltrdy_f(double p, double r) { return 2.0 * ((p * r) / (p + r + 1e-8)); }

static int pltrdy_rouge(const char *target, const char *prediction, rouge_scores *out,
                        char *err, size_t errlen)
{
    strtab tab = {0};
    sents hs = {0}, rs = {0};
    uint64_t *ka = NULL, *kb = NULL;
    int *tbl = NULL;
    char *in_u = NULL, *in_r = NULL, *in_h = NULL;
    size_t tcap = 0;
    int rc = -1;

    if (pltrdy_split(prediction, &tab, &hs) || pltrdy_split(target, &tab, &rs)) {
        snprintf(err, errlen, "rouge (pltrdy): out of memory");
        goto done;
    }
    if (!hs.end.n || !rs.end.n) {
        snprintf(err, errlen, "rouge (pltrdy): %s has no sentence (empty or only '.'; "
                 "rouge 1.0.1 raises ValueError)", hs.end.n ? "reference" : "hypothesis");
        goto done;
    }
    /* rouge-1, rouge-2: SETS of n-grams over the concatenated words */
    for (int order = 1; order <= 2; order++) {
        size_t nh, nr, multi, dh, dr, common;
        free(ka); free(kb);
        ka = ngram_keys(hs.w.v, hs.w.n, order, &nh);
        kb = ngram_keys(rs.w.v, rs.w.n, order, &nr);
        if (!ka || !kb) { snprintf(err, errlen, "rouge (pltrdy): out of memory"); goto done; }
        ngram_overlap(ka, nh, kb, nr, &multi, &dh, &dr, &common);
        rouge_prf *s = order == 1 ? &out->rouge1 : &out->rouge2;
        s->p = dh ? (double)common / (double)dh : 0.0;
        s->r = dr ? (double)common / (double)dr : 0.0;
        s->f = pltrdy_f(s->p, s->r);
    }
    /* rouge-l (summary level, exclusive): |union of LCS words| over distinct words */
    in_u = calloc(tab.n, 1); in_r = calloc(tab.n, 1); in_h = calloc(tab.n, 1);
    if (!in_u || !in_r || !in_h) { snprintf(err, errlen, "rouge (pltrdy): out of memory"); goto done; }
    size_t m = 0, n = 0, llcs = 0;
    for (size_t i = 0; i < rs.w.n; i++) if (!in_r[rs.w.v[i]]) { in_r[rs.w.v[i]] = 1; m++; }
    for (size_t i = 0; i < hs.w.n; i++) if (!in_h[hs.w.v[i]]) { in_h[hs.w.v[i]] = 1; n++; }
    for (size_t a = 0; a < rs.end.n; a++) {
        int x0 = a ? rs.end.v[a - 1] : 0, nx = rs.end.v[a] - x0;
        const int *x = rs.w.v + x0;
        for (size_t b = 0; b < hs.end.n; b++) {
            int y0 = b ? hs.end.v[b - 1] : 0, ny = hs.end.v[b] - y0;
            const int *y = hs.w.v + y0;
            if (grow(&tbl, &tcap, (size_t)(nx + 1) * (size_t)(ny + 1))) {
                snprintf(err, errlen, "rouge (pltrdy): out of memory"); goto done;
            }
            lcs_table(x, nx, y, ny, tbl);
            int i = nx, j = ny, w = ny + 1;                 /* _recon_lcs, unrolled */
            while (i > 0 && j > 0) {
                if (x[i - 1] == y[j - 1]) {
                    if (!in_u[x[i - 1]]) { in_u[x[i - 1]] = 1; llcs++; }
                    i--; j--;
                } else if (tbl[(i - 1) * w + j] > tbl[i * w + j - 1]) i--;
                else j--;
            }
        }
    }
    out->rougeL.r = (double)llcs / (double)m;
    out->rougeL.p = (double)llcs / (double)n;
    out->rougeL.f = pltrdy_f(out->rougeL.p, out->rougeL.r);
    out->rougeLsum = out->rougeL;
    rc = 0;
done:
    free(ka); free(kb); free(tbl); free(in_u); free(in_r); free(in_h);
    sents_free(&hs); sents_free(&rs); strtab_free(&tab);
    return rc;
}

int rouge_pair(const char *target, const char *prediction, rouge_impl impl, int stem,
               rouge_scores *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!target || !prediction) { snprintf(err, errlen, "rouge: NULL text"); return -1; }
    if (impl == ROUGE_IMPL_PLTRDY) return pltrdy_rouge(target, prediction, out, err, errlen);
    if (impl != ROUGE_IMPL_GOOGLE) { snprintf(err, errlen, "rouge: unknown impl %d", (int)impl); return -1; }
    if (google_rouge(target, prediction, stem, out)) {
        snprintf(err, errlen, "rouge: out of memory");
        return -1;
    }
    return 0;
}
