/* chat.c — prompt templates. See tokenizer.h for the exact formats.
 *
 * Each family is rendered by C code that follows its reference Jinja template statement by
 * statement (ChatML as SmolLM2's and Qwen2.5's templates, Meta-Llama-3-Instruct, Llama-2-chat as
 * in Hugging Face's tokenizer_config.json); tests/test_bpe.c compares the output with
 * transformers' apply_chat_template. */
#include "tokenizer/bpe.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define set_err tok_set_err

/* Llama-2 chat as in Meta's llama/generation.py (B_INST "[INST]", E_INST "[/INST]",
 * B_SYS "<<SYS>>\n", E_SYS "\n<</SYS>>\n\n"): one user turn, no BOS, nothing trimmed. */
char *chat_format_llama2(const char *system, const char *user) {
    if (!user) return NULL;
    if (system && system[0] == '\0') system = NULL;
    size_t len = strlen("[INST] ") + strlen(user) + strlen(" [/INST]") + 1;
    if (system) len += strlen("<<SYS>>\n") + strlen(system) + strlen("\n<</SYS>>\n\n");
    char *out = malloc(len);
    if (!out) return NULL;
    if (system) snprintf(out, len, "[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]", system, user);
    else snprintf(out, len, "[INST] %s [/INST]", user);
    return out;
}

struct chat_template {
    chat_family family;
    char *default_system;  /* owned or NULL */
    char *bos, *eos;       /* owned, "" when absent */
};

static const char *const FAMILY_NAMES[] = {"none", "chatml", "llama3", "llama2"};

/* ------------------------------------------------------------ Jinja string literals */

/* Appends the UTF-8 encoding of cp to o (cp <= 0x10FFFF). */
static size_t put_utf8(uint32_t cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Jinja's lexer decodes a string literal with Python's "unicode-escape" (\n, \t, \r, \\, \',
 * \", \xhh, \uhhhh, \Uhhhhhhhh; other escapes stay as written). s[0..n) is the body without
 * quotes; returns a malloc'd NUL-terminated string. */
static char *unescape_literal(const char *s, size_t n) {
    char *out = malloc(n + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) { *o++ = s[i]; continue; }
        const char c = s[++i];
        const int hex = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
        if (hex && i + (size_t)hex < n) {
            uint32_t cp = 0;
            int ok = 1;
            for (int k = 1; k <= hex && ok; k++) {
                const char h = s[i + (size_t)k];
                const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                            : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                ok = v >= 0;
                cp = cp * 16 + (uint32_t)(v & 15);
            }
            if (ok && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF)) {
                o += put_utf8(cp, o);
                i += (size_t)hex;
                continue;
            }
        }
        switch (c) {
            case 'n': *o++ = '\n'; break;
            case 't': *o++ = '\t'; break;
            case 'r': *o++ = '\r'; break;
            case '\\': case '\'': case '"': *o++ = c; break;
            case '\n': break;  /* line continuation */
            default: *o++ = '\\'; *o++ = c; break;
        }
    }
    *o = '\0';
    return out;
}

/* The default system prompt of a ChatML template: the text between "<|im_start|>system\n" and
 * "<|im_end|>" inside one string literal of a Jinja expression or statement. */
static char *find_default_system(const char *jinja) {
    static const char head[] = "<|im_start|>system\n", tail[] = "<|im_end|>";
    int in_code = 0;
    for (const char *p = jinja; *p; p++) {
        if (!in_code) {
            if (p[0] == '{' && (p[1] == '{' || p[1] == '%')) { in_code = 1; p++; }
            continue;
        }
        if ((p[0] == '}' || p[0] == '%') && p[1] == '}') { in_code = 0; p++; continue; }
        if (*p != '\'' && *p != '"') continue;
        const char q = *p;
        const char *b = p + 1, *e = b;
        while (*e && *e != q) e += (e[0] == '\\' && e[1]) ? 2 : 1;
        if (!*e) return NULL;
        char *lit = unescape_literal(b, (size_t)(e - b));
        if (!lit) return NULL;
        const char *h = strstr(lit, head), *t = h ? strstr(h + sizeof head - 1, tail) : NULL;
        if (h && t && t > h + sizeof head - 1) {
            const size_t n = (size_t)(t - (h + sizeof head - 1));
            memmove(lit, h + sizeof head - 1, n);
            lit[n] = '\0';
            return lit;
        }
        free(lit);
        p = e;
    }
    return NULL;
}

/* -------------------------------------------------------------------- construction */

static chat_family detect(const char *j) {
    if (strstr(j, "<|im_start|>")) return CHAT_FAMILY_CHATML;
    if (strstr(j, "<|start_header_id|>") && strstr(j, "<|end_header_id|>")) return CHAT_FAMILY_LLAMA3;
    if (strstr(j, "[INST]")) return CHAT_FAMILY_LLAMA2;
    return CHAT_FAMILY_NONE;
}

chat_template *chat_template_new(const char *jinja, const char *name, const char *bos_text,
                                 const char *eos_text, char *err, size_t errlen) {
    chat_family fam = CHAT_FAMILY_NONE;
    const chat_family found = jinja && jinja[0] ? detect(jinja) : CHAT_FAMILY_LLAMA2;
    if (name) {
        for (int i = 1; i < 4; i++) if (strcmp(name, FAMILY_NAMES[i]) == 0) fam = (chat_family)i;
        if (fam == CHAT_FAMILY_NONE) {
            set_err(err, errlen, "unknown chat template \"%s\" (--chat-template "
                    "chatml|llama3|llama2)", name);
            return NULL;
        }
    } else {
        fam = found;
        if (fam == CHAT_FAMILY_NONE) {
            set_err(err, errlen, "chat template not recognised (no ChatML <|im_start|>, Llama-3 "
                    "<|start_header_id|> or Llama-2 [INST] markers); choose one with "
                    "--chat-template chatml|llama3|llama2");
            return NULL;
        }
        if (fam == CHAT_FAMILY_LLAMA3 && strstr(jinja, "Cutting Knowledge Date")) {
            set_err(err, errlen, "Llama-3.1-style chat template (date header) is not supported; "
                    "--chat-template llama3 renders the Llama-3 format");
            return NULL;
        }
        if (fam == CHAT_FAMILY_LLAMA2 && jinja && (strstr(jinja, "[SYSTEM_PROMPT]") ||
                                          strstr(jinja, "[AVAILABLE_TOOLS]"))) {
            set_err(err, errlen, "Mistral-style [INST] chat template is not supported; choose "
                    "one with --chat-template chatml|llama3|llama2");
            return NULL;
        }
    }
    chat_template *ct = calloc(1, sizeof *ct);
    if (!ct) goto oom;
    ct->family = fam;
    ct->bos = strdup(bos_text ? bos_text : "");
    ct->eos = strdup(eos_text ? eos_text : "");
    if (!ct->bos || !ct->eos) goto oom;
    if (fam == CHAT_FAMILY_CHATML && found == CHAT_FAMILY_CHATML && jinja)
        ct->default_system = find_default_system(jinja);
    return ct;
oom:
    chat_template_free(ct);
    set_err(err, errlen, "chat template: out of memory");
    return NULL;
}

chat_template *chat_template_for_text(const tokenizer *t, const char *jinja, const char *name, char *err,
                                      size_t errlen) {
    const int bos = tokenizer_bos_id(t), eos = tokenizer_eos_id(t);
    const char *b = bos >= 0 ? tokenizer_piece(t, bos) : NULL;
    const char *e = eos >= 0 ? tokenizer_piece(t, eos) : NULL;
    return chat_template_new(jinja, name, b, e, err, errlen);
}

chat_template *chat_template_for(const tokenizer *t, const char *name, char *err,
                                 size_t errlen) {
    return chat_template_for_text(t, tokenizer_chat_template(t), name, err, errlen);
}

void chat_template_free(chat_template *ct) {
    if (!ct) return;
    free(ct->default_system);
    free(ct->bos);
    free(ct->eos);
    free(ct);
}

chat_family chat_template_family(const chat_template *ct) { return ct ? ct->family : CHAT_FAMILY_NONE; }
const char *chat_template_name(const chat_template *ct) { return FAMILY_NAMES[ct ? ct->family : 0]; }
const char *chat_template_default_system(const chat_template *ct) {
    return ct ? ct->default_system : NULL;
}
int chat_template_bos_in_text(const chat_template *ct) {
    return ct && ct->family != CHAT_FAMILY_CHATML && ct->bos[0] != '\0';
}

/* ------------------------------------------------------------------------ rendering */

typedef struct { char *s; size_t n, cap; int oom; } sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) { b->oom = 1; return; }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* Python's str.isspace() characters (what str.strip() and Jinja's trim remove). */
static size_t space_len(const unsigned char *s, size_t n) {
    if (n == 0) return 0;
    if ((s[0] >= 0x09 && s[0] <= 0x0D) || (s[0] >= 0x1C && s[0] <= 0x20)) return 1;
    if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (n >= 3 && s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80) return 3;  /* U+1680 */
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 &&
        (s[2] <= 0x8A || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF)) return 3;
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) return 3;  /* U+205F */
    if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) return 3;  /* U+3000 */
    return 0;
}

static void put_stripped(sbuf *b, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, e = strlen(s), l;
    while (a < e && (l = space_len(u + a, e - a)) > 0) a += l;
    size_t last = a;  /* end of the last non-space character */
    for (size_t i = a; i < e;) {
        if ((l = space_len(u + i, e - i)) > 0) { i += l; continue; }
        i++;
        while (i < e && (u[i] & 0xC0) == 0x80) i++;
        last = i;
    }
    put(b, s + a, last - a);
}

static int role_is(const chat_message *m, const char *r) { return strcmp(m->role, r) == 0; }

char *chat_template_render(const chat_template *ct, const chat_message *msgs, int n,
                           int add_generation_prompt, char *err, size_t errlen) {
    if (!ct || n <= 0 || !msgs) {
        set_err(err, errlen, "chat template: no messages to render");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content) {
            set_err(err, errlen, "message %d: role or content is NULL", i + 1);
            return NULL;
        }
        if (!role_is(&msgs[i], "system") && !role_is(&msgs[i], "user") &&
            !role_is(&msgs[i], "assistant")) {
            set_err(err, errlen, "message %d: role \"%s\" is not system, user or assistant",
                    i + 1, msgs[i].role);
            return NULL;
        }
    }
    sbuf b = {0};
    if (ct->family == CHAT_FAMILY_CHATML) {
        if (ct->default_system && !role_is(&msgs[0], "system")) {
            puts_(&b, "<|im_start|>system\n");
            puts_(&b, ct->default_system);
            puts_(&b, "<|im_end|>\n");
        }
        for (int i = 0; i < n; i++) {
            puts_(&b, "<|im_start|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "\n");
            puts_(&b, msgs[i].content);
            puts_(&b, "<|im_end|>\n");
        }
        if (add_generation_prompt) puts_(&b, "<|im_start|>assistant\n");
    } else if (ct->family == CHAT_FAMILY_LLAMA3) {
        for (int i = 0; i < n; i++) {
            if (i == 0) puts_(&b, ct->bos);
            puts_(&b, "<|start_header_id|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "<|end_header_id|>\n\n");
            put_stripped(&b, msgs[i].content);
            puts_(&b, "<|eot_id|>");
        }
        if (add_generation_prompt) puts_(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    } else {  /* LLAMA2 */
        const int has_sys = role_is(&msgs[0], "system");
        const char *sys = has_sys ? msgs[0].content : NULL;
        for (int i = has_sys; i < n; i++) {
            const int k = i - has_sys;  /* loop.index0 over loop_messages */
            const chat_message *m = &msgs[i];
            if (role_is(m, "user") != (k % 2 == 0)) {
                set_err(err, errlen, "llama2: message %d (%s): roles must alternate "
                        "user/assistant after the system message", i + 1, m->role);
                free(b.s);
                return NULL;
            }
            sbuf c = {0};
            if (k == 0 && sys) {
                puts_(&c, "<<SYS>>\n");
                puts_(&c, sys);
                puts_(&c, "\n<</SYS>>\n\n");
            }
            puts_(&c, m->content);
            if (c.oom) { free(c.s); b.oom = 1; break; }
            if (role_is(m, "user")) {
                puts_(&b, ct->bos);
                puts_(&b, "[INST] ");
                put_stripped(&b, c.s);
                puts_(&b, " [/INST]");
            } else if (role_is(m, "assistant")) {
                puts_(&b, " ");
                put_stripped(&b, c.s);
                puts_(&b, " ");
                puts_(&b, ct->eos);
            }
            free(c.s);
        }
        if (!b.s && !b.oom) puts_(&b, "");
    }
    if (b.oom) {
        free(b.s);
        set_err(err, errlen, "chat template: out of memory");
        return NULL;
    }
    return b.s;
}
