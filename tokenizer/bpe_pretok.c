/* bpe_pretok.c — the byte-level BPE pipeline before the merges: special-token partition
 * (llama.cpp's longest-first split, or tokenizers' leftmost-longest added-token matching with
 * lstrip/rstrip/single_word), UTF-8 decoding, normalisers, and the pre-tokenizer steps (PCRE2
 * Split, Digits, ByteLevel). See bpe.h for the two rule sets (llama.cpp / tokenizers). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/bpe.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---------------------------------------------------------------- pre-tokenizer steps */

typedef struct {
    const uint32_t *cp;   /* code points (the word bytes are made from these) */
    const char *u8;       /* regex subject (valid UTF-8; llama.cpp surrogates → U+E000) */
    const uint32_t *off;  /* off[i]: offset of cp[i] in u8; off[n] the end */
    int n;
} tview;

typedef struct {
    const bpe_model *m;
    const bpe_step *steps;
    int n_steps;
    pcre2_match_data *md;
    bpe_word_fn word;
    bpe_tok_fn tok;
    void *ctx;
    char *wbuf;           /* word bytes */
    size_t wcap;
} pt_ctx;

typedef struct { int a, b, match; } span;
typedef struct { span *v; int n, cap; } spans;

static int spans_add(spans *s, int a, int b, int match) {
    if (s->n == s->cap) {
        const int cap = s->cap ? s->cap * 2 : 16;
        span *v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (span){a, b, match};
    return 0;
}

static int run_steps(pt_ctx *c, tview v, int k);

static int emit_word(pt_ctx *c, tview v) {
    const size_t need = (size_t)v.n * 4;
    if (need > c->wcap) {
        char *nb = realloc(c->wbuf, need);
        if (!nb) return -1;
        c->wbuf = nb;
        c->wcap = need;
    }
    size_t o = 0;
    for (int i = 0; i < v.n; i++) o += (size_t)bpe_utf8_put(v.cp[i], c->wbuf + o);
    return c->word(c->ctx, c->wbuf, o);
}

/* Regex matches over the view as (cp range, is_match) parts covering it (tokenizers' Pattern
 * for a regex: gaps between matches are non-matches; empty matches are skipped). */
static int regex_parts(pt_ctx *c, pcre2_code *re, tview v, spans *out) {
    const PCRE2_SPTR subj = (PCRE2_SPTR)(v.u8 + v.off[0]);
    const PCRE2_SIZE len = v.off[v.n] - v.off[0];
    PCRE2_SIZE start = 0;
    int prev = 0, ci = 0;  /* ci: cp index of the byte offset being searched from */
    while (start < len) {
        const int r = pcre2_match(re, subj, len, start, PCRE2_NO_UTF_CHECK, c->md, NULL);
        if (r == PCRE2_ERROR_NOMATCH) break;
        if (r < 0) return -1;
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        if (ov[1] == ov[0]) {  /* empty match: step over one character */
            start = ov[0] + 1;
            while (start < len && (subj[start] & 0xC0) == 0x80) start++;
            continue;
        }
        int a = ci;
        while (v.off[a] - v.off[0] < ov[0]) a++;
        int b = a;
        while (v.off[b] - v.off[0] < ov[1]) b++;
        if (prev < a && spans_add(out, prev, a, 0)) return -1;
        if (spans_add(out, a, b, 1)) return -1;
        prev = ci = b;
        start = ov[1];
    }
    if (prev < v.n && spans_add(out, prev, v.n, 0)) return -1;
    return 0;
}

static int is_numeric_cp(uint32_t cp) {
    const utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)cp);
    return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
           cat == UTF8PROC_CATEGORY_NO;
}

/* Applies a split behaviour (tokenizers' NormalizedString::split) to parts, in place. */
static void apply_behavior(spans *p, int behavior, int invert) {
    if (invert) for (int i = 0; i < p->n; i++) p->v[i].match = !p->v[i].match;
    int n = 0, prev_match = 0;
    switch (behavior) {
        case SB_REMOVED:
            for (int i = 0; i < p->n; i++) if (!p->v[i].match) p->v[n++] = p->v[i];
            break;
        case SB_ISOLATED: n = p->n; break;
        case SB_MERGED_PREV:
            for (int i = 0; i < p->n; i++) {
                const span s = p->v[i];
                if (s.match && !prev_match && n > 0) p->v[n - 1].b = s.b;
                else p->v[n++] = s;
                prev_match = s.match;
            }
            break;
        case SB_MERGED_NEXT:  /* the same from the right */
            n = p->n;
            {
                int w = n;  /* write position from the end */
                for (int i = p->n - 1; i >= 0; i--) {
                    const span s = p->v[i];
                    if (s.match && !prev_match && w < n) p->v[w].a = s.a;
                    else p->v[--w] = s;
                    prev_match = s.match;
                }
                memmove(p->v, p->v + w, (size_t)(n - w) * sizeof *p->v);
                n -= w;
            }
            break;
        default:  /* SB_CONTIGUOUS */
            for (int i = 0; i < p->n; i++) {
                const span s = p->v[i];
                if (i > 0 && s.match == prev_match) p->v[n - 1].b = s.b;
                else p->v[n++] = s;
                prev_match = s.match;
            }
            break;
    }
    p->n = n;
}

static int recurse_parts(pt_ctx *c, tview v, spans *p, int k) {
    int rc = 0;
    for (int i = 0; i < p->n && rc == 0; i++) {
        if (p->v[i].b <= p->v[i].a) continue;
        const tview s = {v.cp + p->v[i].a, v.u8, v.off + p->v[i].a, p->v[i].b - p->v[i].a};
        rc = run_steps(c, s, k + 1);
    }
    return rc;
}

static int run_steps(pt_ctx *c, tview v, int k) {
    if (v.n == 0) return 0;
    if (k == c->n_steps) return emit_word(c, v);
    const bpe_step *st = &c->steps[k];
    spans p = {0};
    int rc = 0;
    if (st->kind == PT_SPLIT) {
        rc = regex_parts(c, st->re, v, &p);
        if (rc == 0) apply_behavior(&p, st->behavior, st->invert);
    } else if (st->kind == PT_DIGITS) {
        int gap = 0;
        for (int i = 0; i < v.n && rc == 0; i++) {
            if (!is_numeric_cp(v.cp[i])) continue;
            if (gap < i) rc = spans_add(&p, gap, i, 0);
            if (rc == 0) rc = spans_add(&p, i, i + 1, 1);
            gap = i + 1;
        }
        if (rc == 0 && gap < v.n) rc = spans_add(&p, gap, v.n, 0);
        if (rc == 0) apply_behavior(&p, st->individual_digits ? SB_ISOLATED : SB_CONTIGUOUS, 0);
    } else {  /* PT_BYTELEVEL: optional prefix space, optional GPT-2 split */
        if (st->add_prefix_space && v.cp[0] != ' ') {
            const size_t bytes = v.off[v.n] - v.off[0];
            uint32_t *cp = malloc((size_t)(v.n + 1) * sizeof *cp);
            uint32_t *off = malloc((size_t)(v.n + 2) * sizeof *off);
            char *u8 = malloc(bytes + 1);
            if (!cp || !off || !u8) rc = -1;
            else {
                cp[0] = ' ';
                off[0] = 0;
                u8[0] = ' ';
                memcpy(cp + 1, v.cp, (size_t)v.n * sizeof *cp);
                memcpy(u8 + 1, v.u8 + v.off[0], bytes);
                for (int i = 0; i <= v.n; i++) off[i + 1] = 1 + v.off[i] - v.off[0];
                bpe_step rest = *st;
                rest.add_prefix_space = 0;
                const bpe_step *saved = c->steps;
                bpe_step local[BPE_MAX_STEPS];
                memcpy(local, c->steps, (size_t)c->n_steps * sizeof *local);
                local[k] = rest;
                c->steps = local;
                rc = run_steps(c, (tview){cp, u8, off, v.n + 1}, k);
                c->steps = saved;
            }
            free(cp);
            free(off);
            free(u8);
            return rc;
        }
        if (!st->re) return run_steps(c, v, k + 1);
        rc = regex_parts(c, st->re, v, &p);
    }
    if (rc == 0) rc = recurse_parts(c, v, &p, k);
    free(p.v);
    return rc;
}

/* ------------------------------------------------------------- special-token partition */

typedef struct { size_t a, b; int id; } frag;  /* id < 0: text [a, b) */
typedef struct { frag *v; int n, cap; } frags;

static int frags_add(frags *f, size_t a, size_t b, int id) {
    if (f->n == f->cap) {
        const int cap = f->cap ? f->cap * 2 : 16;
        frag *v = realloc(f->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (frag){a, b, id};
    return 0;
}

/* llama.cpp's tokenizer_st_partition: for each token (longest first), split every text
 * fragment at each of its occurrences. No lstrip/rstrip (set only for a few model names). */
static int partition_gguf(const bpe_model *m, const char *s, size_t len, int parse_special,
                          frags *out) {
    int n_added;
    const bpe_added *added = bpe_model_added(m, &n_added);
    if (len > 0 && frags_add(out, 0, len, -1)) return -1;
    frags next = {0};
    for (int t = 0; t < n_added; t++) {
        const bpe_added *tk = &added[t];
        if (tk->special && !parse_special) continue;
        next.n = 0;
        for (int i = 0; i < out->n; i++) {
            frag f = out->v[i];
            if (f.id >= 0) { if (frags_add(&next, f.a, f.b, f.id)) goto oom; continue; }
            size_t pos = f.a;
            for (;;) {
                const char *hit = memmem(s + pos, f.b - pos, tk->text, tk->len);
                if (!hit) break;
                const size_t at = (size_t)(hit - s);
                if (at > pos && frags_add(&next, pos, at, -1)) goto oom;
                if (frags_add(&next, at, at + tk->len, tk->id)) goto oom;
                pos = at + tk->len;
            }
            if (pos < f.b && frags_add(&next, pos, f.b, -1)) goto oom;
        }
        frags tmp = *out;
        *out = next;
        next = tmp;
    }
    free(next.v);
    return 0;
oom:
    free(next.v);
    return -1;
}

static int is_ws_cp(uint32_t cp) {  /* Rust's char::is_whitespace (White_Space) */
    return (cp >= 9 && cp <= 13) || cp == ' ' || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/* regex_syntax::is_word_character, Unicode \w (what tokenizers' single_word looks at):
 * Alphabetic, marks, decimal digits, connector punctuation, joiners. Alphabetic is taken as
 * the letter categories, Nl and the circled letters (its Other_Alphabetic members outside the
 * mark categories). */
static int is_word_cp(uint32_t cp) {
    if (cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9)) return 1;
    const utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ME) ||
           c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_PC;
}

/* The code point ending at s[0..end) (valid UTF-8), or 0 at the start. */
static uint32_t cp_before(const char *s, size_t end, size_t *start) {
    size_t i = end;
    while (i > 0 && (s[i - 1] & 0xC0) == 0x80) i--;
    if (i > 0) i--;
    uint32_t cp = 0;
    if (end > 0) bpe_decode_lax((const unsigned char *)s + i, end - i, &cp);
    if (start) *start = i;
    return cp;
}

/* tokenizers' AddedVocabulary::find_matches over s[0..len): leftmost-longest matches of the
 * tokens whose normalized flag equals `normalized`, with single_word, lstrip and rstrip. */
static int partition_json(const bpe_model *m, const char *s, size_t len, int parse_special,
                          int normalized, frags *out) {
    int n_added;
    const bpe_added *added = bpe_model_added(m, &n_added);
    size_t start_off = 0, pos = 0;
    while (pos < len) {
        int best = -1;
        size_t at = pos;
        for (; at < len && best < 0; at++) {
            if (!m->added_first[(unsigned char)s[at]]) continue;
            for (int t = 0; t < n_added; t++) {
                const bpe_added *tk = &added[t];
                if (tk->normalized != normalized || tk->len == 0 || tk->len > len - at) continue;
                if ((unsigned char)tk->text[0] != (unsigned char)s[at]) continue;
                if (memcmp(s + at, tk->text, tk->len) != 0) continue;
                if (best < 0 || tk->len > added[best].len) best = t;
            }
        }
        if (best < 0) break;
        at--;
        const bpe_added *tk = &added[best];
        size_t a = at, b = at + tk->len;
        pos = b;
        if (tk->special && !parse_special) continue;
        if (tk->single_word) {
            const int left_ok = a == 0 || !is_word_cp(cp_before(s, a, NULL));
            uint32_t next = 0;
            if (b < len) bpe_decode_lax((const unsigned char *)s + b, len - b, &next);
            const int right_ok = b == len || !is_word_cp(next);
            if (!left_ok || !right_ok) continue;
        }
        if (tk->lstrip) {
            size_t st;
            while (a > start_off && is_ws_cp(cp_before(s, a, &st))) a = st;
        }
        if (tk->rstrip) {
            uint32_t cp;
            int l;
            while (b < len && (l = bpe_decode_lax((const unsigned char *)s + b, len - b, &cp)) > 0 &&
                   is_ws_cp(cp))
                b += (size_t)l;
            pos = b;
        }
        if (start_off < a && frags_add(out, start_off, a, -1)) return -1;
        if (frags_add(out, a, b, tk->id)) return -1;
        start_off = b;
    }
    if (start_off < len && frags_add(out, start_off, len, -1)) return -1;
    return 0;
}

/* ------------------------------------------------------------------------- driver */

/* Decodes s[0..n) to code points (lax or strict) and builds the regex subject. */
static int make_view(int lax, const char *s, size_t n, uint32_t **cp_out, char **u8_out,
                     uint32_t **off_out, int *n_out) {
    uint32_t *cp = malloc((n + 1) * sizeof *cp), *off = malloc((n + 2) * sizeof *off);
    char *u8 = malloc(3 * n + 1);
    if (!cp || !off || !u8) { free(cp); free(off); free(u8); return -1; }
    size_t i = 0, o = 0;
    int k = 0;
    while (i < n) {
        uint32_t c;
        const unsigned char *p = (const unsigned char *)s + i;
        int l = lax ? bpe_decode_lax(p, n - i, &c) : bpe_decode_strict(p, n - i, &c);
        if (l == 0) { c = 0xFFFD; l = 1; }
        i += (size_t)l;
        cp[k] = c;
        off[k++] = (uint32_t)o;
        o += (size_t)bpe_utf8_put(c >= 0xD800 && c <= 0xDFFF ? 0xE000 : c, u8 + o);
    }
    off[k] = (uint32_t)o;
    *cp_out = cp;
    *u8_out = u8;
    *off_out = off;
    *n_out = k;
    return 0;
}

static int pretok_text(pt_ctx *c, int lax, const char *s, size_t n) {
    uint32_t *cp, *off;
    char *u8;
    int k;
    if (make_view(lax, s, n, &cp, &u8, &off, &k)) return -1;
    const int rc = run_steps(c, (tview){cp, u8, off, k}, 0);
    free(cp);
    free(u8);
    free(off);
    return rc;
}

int bpe_pretokenize(const bpe_model *m, const char *text, size_t len, int parse_special,
                    bpe_word_fn word, bpe_tok_fn tok, void *ctx) {
    pt_ctx c = {0};
    c.m = m;
    c.steps = bpe_model_steps(m, &c.n_steps);
    c.word = word;
    c.tok = tok;
    c.ctx = ctx;
    c.md = pcre2_match_data_create(32, NULL);
    if (!c.md) return -1;
    const int json = bpe_model_mode(m) == BPE_MODE_JSON;
    int n_norms;
    const int *norms = bpe_model_norms(m, &n_norms);
    frags f = {0};
    int rc = json ? partition_json(m, text, len, parse_special, 0, &f)
                  : partition_gguf(m, text, len, parse_special, &f);
    for (int i = 0; i < f.n && rc == 0; i++) {
        if (f.v[i].id >= 0) { rc = tok(ctx, f.v[i].id); continue; }
        const char *s = text + f.v[i].a;
        const size_t n = f.v[i].b - f.v[i].a;
        if (!json) { rc = pretok_text(&c, 1, s, n); continue; }
        /* tokenizers: valid UTF-8, normalise, then the normalized added tokens, then steps */
        uint32_t *cp, *off;
        char *u8;
        int k;
        if (make_view(0, s, n, &cp, &u8, &off, &k)) { rc = -1; break; }
        size_t nn = off[k];
        char *norm = n_norms ? bpe_normalize(norms, n_norms, u8, nn, &nn) : u8;
        if (norm != u8) free(u8);
        free(cp);
        free(off);
        if (!norm) { rc = -1; break; }
        frags g = {0};
        rc = partition_json(m, norm, nn, parse_special, 1, &g);
        for (int j = 0; j < g.n && rc == 0; j++)
            rc = g.v[j].id >= 0 ? tok(ctx, g.v[j].id)
                                : pretok_text(&c, 0, norm + g.v[j].a, g.v[j].b - g.v[j].a);
        free(g.v);
        free(norm);
    }
    free(f.v);
    free(c.wbuf);
    pcre2_match_data_free(c.md);
    return rc;
}
