/* bpe_text.c — text primitives of the byte-level BPE: the GPT-2 byte map, UTF-8 decoding (lax
 * as llama.cpp, strict as Unicode) and repair, PCRE2 regexes (with llama.cpp's pre-tokenizer
 * table) and the utf8proc normalisers. See bpe.h. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/bpe.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include <stdarg.h>
#include <stdio.h>

void tok_set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *c = err; *c; c++)   /* control characters from the input: stay one line */
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}

/* ------------------------------------------------------------------ GPT-2 byte map */

/* bytes_to_unicode(): printable bytes (! .. ~, ¡ .. ¬, ® .. ÿ) stand for themselves; the other 68
 * bytes, in increasing order, get U+0100 upwards. */
uint32_t bpe_byte_to_cp(unsigned b) {
    b &= 0xFF;
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 256 + b;                /* 0x00..0x20 → 256..288 */
    if (b <= 0xA0) return 256 + 33 + (b - 0x7F);  /* 0x7F..0xA0 → 289..322 */
    return 256 + 67;                              /* 0xAD → 323 */
}

int bpe_cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp >= 256 && cp <= 288) return (int)(cp - 256);
    if (cp >= 289 && cp <= 322) return (int)(0x7F + cp - 289);
    if (cp == 323) return 0xAD;
    return -1;
}

/* ------------------------------------------------------------------------- UTF-8 */

int bpe_utf8_put(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = 0xC0 | (cp >> 6); o[1] = 0x80 | (cp & 0x3F); return 2; }
    if (cp < 0x10000) {
        o[0] = 0xE0 | (cp >> 12); o[1] = 0x80 | ((cp >> 6) & 0x3F); o[2] = 0x80 | (cp & 0x3F);
        return 3;
    }
    o[0] = 0xF0 | (cp >> 18); o[1] = 0x80 | ((cp >> 12) & 0x3F);
    o[2] = 0x80 | ((cp >> 6) & 0x3F); o[3] = 0x80 | (cp & 0x3F);
    return 4;
}

static int is_trail(unsigned char c) { return (c & 0xC0) == 0x80; }

/* llama.cpp's unicode_cpt_from_utf8: accepts overlong forms and surrogates; returns the length
 * consumed, or 0 when s[0] is invalid there (then: U+FFFD, one byte). Code points above
 * U+10FFFF (leads F4 90.., F5..F7), on which llama.cpp throws, are treated as invalid too. */
int bpe_decode_lax(const unsigned char *s, size_t n, uint32_t *cp) {
    const unsigned c = s[0];
    if (!(c & 0x80)) { *cp = c; return 1; }
    if (!(c & 0x40)) return 0;
    if (!(c & 0x20)) {
        if (n < 2 || !is_trail(s[1])) return 0;
        *cp = ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
        return 2;
    }
    if (!(c & 0x10)) {
        if (n < 3 || !is_trail(s[1]) || !is_trail(s[2])) return 0;
        *cp = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return 3;
    }
    if (!(c & 0x08)) {
        if (n < 4 || !is_trail(s[1]) || !is_trail(s[2]) || !is_trail(s[3])) return 0;
        *cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) |
              (s[3] & 0x3Fu);
        return *cp <= 0x10FFFF ? 4 : 0;
    }
    return 0;
}

/* Well-formed UTF-8 (Unicode table 3-7): the length of the character at s, or 0. */
int bpe_decode_strict(const unsigned char *s, size_t n, uint32_t *cp) {
    const unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xC2 && c <= 0xDF) {
        if (n < 2 || !is_trail(s[1])) return 0;
        *cp = ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (n < 3 || s[1] < lo || s[1] > hi || !is_trail(s[2])) return 0;
        *cp = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (n < 4 || s[1] < lo || s[1] > hi || !is_trail(s[2]) || !is_trail(s[3])) return 0;
        *cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) |
              (s[3] & 0x3Fu);
        return 4;
    }
    return 0;
}

/* How many bytes of s (1..n) are a prefix of some well-formed character (the "maximal subpart"
 * of an ill-formed sequence is this prefix when it is not a whole character). */
static int valid_prefix_len(const unsigned char *s, size_t n) {
    const unsigned c = s[0];
    int want;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) want = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        want = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        want = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    int k = 1;
    if (k < (int)n && k < want && s[k] >= lo && s[k] <= hi) k++;
    else return k;
    while (k < (int)n && k < want && is_trail(s[k])) k++;
    return k;
}

size_t bpe_utf8_repair(const unsigned char *s, size_t n, int policy, int final, char *out,
                       size_t *outn) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        const int len = bpe_decode_strict(s + i, n - i, &cp);
        if (len > 0) { memcpy(out + o, s + i, (size_t)len); o += (size_t)len; i += (size_t)len; continue; }
        const int pre = valid_prefix_len(s + i, n - i);
        if (!final && pre > 0 && i + (size_t)pre == n) break;  /* may still complete */
        memcpy(out + o, "\xEF\xBF\xBD", 3);
        o += 3;
        i += policy == UTF8_MAXIMAL_SUBPART && pre > 0 ? (size_t)pre : 1;
    }
    *outn = o;
    return i;
}

/* ------------------------------------------------------------------------- regexes */

/* Unicode White_Space, which is what \s means in Oniguruma (tokenizers) and in llama.cpp's
 * tables; PCRE2 10.42's \s also matches U+180E. */
#define WS_CLASS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
                 "\\x{202F}\\x{205F}\\x{3000}"

static char *rewrite_ws(const char *p) {
    const size_t n = strlen(p);
    char *out = malloc(n * (sizeof WS_CLASS + 4) + 1);
    if (!out) return NULL;
    size_t o = 0;
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n) {
            const char c = p[i + 1];
            if (c == 's' || (c == 'S' && !in_class)) {
                const char *pre = in_class ? "" : c == 's' ? "[" : "[^";
                o += (size_t)sprintf(out + o, "%s%s%s", pre, WS_CLASS, in_class ? "" : "]");
            } else {
                out[o++] = p[i];
                out[o++] = c;
            }
            i++;
            continue;
        }
        if (p[i] == '[' && !in_class) {
            in_class = 1;
            out[o++] = p[i];
            if (i + 1 < n && p[i + 1] == '^') out[o++] = p[++i];
            if (i + 1 < n && p[i + 1] == ']') out[o++] = p[++i];  /* literal ] first */
            continue;
        }
        if (p[i] == ']' && in_class) in_class = 0;
        out[o++] = p[i];
    }
    out[o] = '\0';
    return out;
}

void *bpe_regex_compile(const char *pattern, const char *field, char *err, size_t errlen) {
    char *p = rewrite_ws(pattern);
    if (!p) { if (err) snprintf(err, errlen, "%s: out of memory", field); return NULL; }
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                   &code, &at, NULL);
    free(p);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        if (err) snprintf(err, errlen, "%s: bad regex \"%s\": %s", field, pattern, (char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  /* falls back to the interpreter when absent */
    return re;
}

void bpe_regex_free(void *re) { pcre2_code_free((pcre2_code *)re); }

/* ------------------------------------------------------------ llama.cpp pre-tokenizers */

#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_LLAMA3 RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+" \
                  "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2 RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+" \
                 "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* The regex lists of llama-vocab.cpp (llm_tokenizer_bpe), by tokenizer.ggml.pre. */
static const struct {
    const char *names;  /* '|'-separated */
    const char *re[4];
    int ignore_merges, add_bos;
} PRE_TYPES[] = {
    {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, 0, 0},
    {"llama3|llama-v3|llama-bpe|falcon3", {RE_LLAMA3}, 1, 1},
    {"gpt-2|phi-2", {RE_GPT2}, 0, 0},
    {"smollm|starcoder|refact|codeshell", {"\\p{N}", RE_GPT2}, 0, 0},
    {"qwen2|deepseek-r1-qwen|megrez|stablelm2", {RE_QWEN2}, 0, 0},
};

static int name_in(const char *names, const char *name) {
    const size_t n = strlen(name);
    for (const char *p = names; *p;) {
        const char *bar = strchr(p, '|');
        const size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0) return 1;
        p += len + (bar != NULL);
    }
    return 0;
}

int bpe_pretok_from_name(bpe_build *b, const char *name, int *add_bos_default, char *err,
                         size_t errlen) {
    if (!name || !name[0]) name = "default";
    for (size_t i = 0; i < sizeof PRE_TYPES / sizeof *PRE_TYPES; i++) {
        if (!name_in(PRE_TYPES[i].names, name)) continue;
        b->n_steps = 0;
        for (int k = 0; k < 4 && PRE_TYPES[i].re[k]; k++) {
            void *re = bpe_regex_compile(PRE_TYPES[i].re[k], "tokenizer.ggml.pre", err, errlen);
            if (!re) return -1;
            bpe_step *s = &b->steps[b->n_steps++];
            memset(s, 0, sizeof *s);
            s->kind = PT_SPLIT;
            s->re = re;
            s->behavior = SB_ISOLATED;
        }
        bpe_step *s = &b->steps[b->n_steps++];
        memset(s, 0, sizeof *s);
        s->kind = PT_BYTELEVEL;
        b->ignore_merges = PRE_TYPES[i].ignore_merges;
        *add_bos_default = PRE_TYPES[i].add_bos;
        return 0;
    }
    if (err)
        snprintf(err, errlen, "%s: tokenizer.ggml.pre \"%s\" is not supported (known: default, "
                 "llama3, llama-bpe, gpt-2, smollm, qwen2 and their llama.cpp aliases)",
                 b->source ? b->source : "tokenizer", name);
    return -1;
}

/* ------------------------------------------------------------------------ normalisers */

char *bpe_normalize(const int *norms, int n_norms, const char *s, size_t n, size_t *outn) {
    char *cur = malloc(n + 1);
    if (!cur) return NULL;
    memcpy(cur, s, n);
    cur[n] = '\0';
    size_t len = n;
    for (int i = 0; i < n_norms; i++) {
        utf8proc_option_t opt = UTF8PROC_STABLE;
        switch (norms[i]) {
            case NORM_NFC: opt |= UTF8PROC_COMPOSE; break;
            case NORM_NFD: opt |= UTF8PROC_DECOMPOSE; break;
            case NORM_NFKC: opt |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
            default: opt |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
        }
        utf8proc_uint8_t *dst = NULL;
        const utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)cur,
                                                (utf8proc_ssize_t)len, &dst, opt);
        free(cur);
        if (r < 0) { free(dst); return NULL; }  /* cannot happen on valid UTF-8 but memory */
        cur = (char *)dst;
        len = (size_t)r;
    }
    *outn = len;
    return cur;
}

