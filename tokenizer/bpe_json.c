/* bpe_json.c — loads a Hugging Face tokenizer.json (byte-level BPE) and the tokenizer_config.json
 * beside it into a bpe_model (BPE_MODE_JSON). Supported: model BPE (vocab, merges as "a b" strings
 * or [a, b] arrays, ignore_merges, unk_token), added_tokens (special, normalized, lstrip, rstrip,
 * single_word), normalizers null/NFC/NFD/NFKC/NFKD/Sequence, pre-tokenizers
 * Sequence/Split/Digits/ByteLevel, the ByteLevel decoder, post-processors
 * null/ByteLevel/TemplateProcessing/Sequence (for BOS/EOS). Anything else is a one-line error
 * naming the field.
 * Kept whole (over ~500 lines): one reader of one JSON document; each section (model, added tokens, normalizer,
 * pre-tokenizer, decoder, post-processor) is a function, and they share the error and lookup helpers.
 */
#include "tokenizer/bpe.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} jctx;

static int fail(jctx *j, const char *fmt, ...) {
    if (!j->err || j->errlen == 0) return -1;
    int o = snprintf(j->err, j->errlen, "%s: ", j->path);
    if (o < 0 || (size_t)o >= j->errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->err + o, j->errlen - (size_t)o, fmt, ap);
    va_end(ap);
    return -1;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = (n + 65536 + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); errno = ENOMEM; return NULL; }
            buf = nb;
        }
        const size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); errno = EIO; return NULL; }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static cJSON *parse_file(jctx *j, const char *path) {
    size_t len;
    char *buf = read_all(path, &len);
    if (!buf) {
        if (j->err) snprintf(j->err, j->errlen, "%s: cannot read (%s)", path, strerror(errno));
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!root && j->err)
        snprintf(j->err, j->errlen, "%s: invalid JSON at byte %zu", path,
                 end && end >= buf ? (size_t)(end - buf) : (size_t)0);
    free(buf);
    return root;
}

static const char *type_of(const cJSON *o) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

static int get_bool(const cJSON *o, const char *key, int dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* -------------------------------------------------------------------------- pieces */

static int add_norm(jctx *j, bpe_build *b, const cJSON *n, const char *field) {
    if (!n || cJSON_IsNull(n)) return 0;
    const char *t = type_of(n);
    if (!t) return fail(j, "%s: missing \"type\"", field);
    if (strcmp(t, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "normalizers");
        if (!cJSON_IsArray(list)) return fail(j, "%s.normalizers: missing array", field);
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, list) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.normalizers[%d]", field, i++);
            if (add_norm(j, b, e, sub)) return -1;
        }
        return 0;
    }
    static const char *const names[] = {"NFC", "NFD", "NFKC", "NFKD"};
    for (int k = 0; k < 4; k++) {
        if (strcmp(t, names[k]) != 0) continue;
        if (b->n_norms == BPE_MAX_NORMS) return fail(j, "%s: too many normalizers", field);
        b->norms[b->n_norms++] = k;  /* NORM_NFC.. in the same order */
        return 0;
    }
    return fail(j, "%s.type \"%s\" is not supported (null, NFC, NFD, NFKC, NFKD, Sequence)", field,
                t);
}

static bpe_step *new_step(jctx *j, bpe_build *b, const char *field, int kind) {
    if (b->n_steps == BPE_MAX_STEPS) { fail(j, "%s: too many pre-tokenizers", field); return NULL; }
    bpe_step *s = &b->steps[b->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    return s;
}

static char *escape_literal(const char *s) {
    char *o = malloc(2 * strlen(s) + 1), *p = o;
    if (!o) return NULL;
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                          (c >= 'A' && c <= 'Z')))
            *p++ = '\\';
        *p++ = *s;
    }
    *p = '\0';
    return o;
}

static int add_pretok(jctx *j, bpe_build *b, const cJSON *p, const char *field) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *t = type_of(p);
    char sub[256], msg[512];
    if (!t) return fail(j, "%s: missing \"type\"", field);
    if (strcmp(t, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
        if (!cJSON_IsArray(list)) return fail(j, "%s.pretokenizers: missing array", field);
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, list) {
            snprintf(sub, sizeof sub, "%s.pretokenizers[%d]", field, i++);
            if (add_pretok(j, b, e, sub)) return -1;
        }
        return 0;
    }
    if (strcmp(t, "ByteLevel") == 0) {
        bpe_step *s = new_step(j, b, field, PT_BYTELEVEL);
        if (!s) return -1;
        s->add_prefix_space = get_bool(p, "add_prefix_space", 1);
        if (get_bool(p, "use_regex", 1)) {
            s->re = bpe_regex_compile("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}"
                                      "\\p{N}]+|\\s+(?!\\S)|\\s+", field, msg, sizeof msg);
            if (!s->re) return fail(j, "%s", msg);
        }
        return 0;
    }
    if (strcmp(t, "Digits") == 0) {
        bpe_step *s = new_step(j, b, field, PT_DIGITS);
        if (!s) return -1;
        s->individual_digits = get_bool(p, "individual_digits", 0);
        return 0;
    }
    if (strcmp(t, "Split") == 0) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
        const cJSON *str = cJSON_GetObjectItemCaseSensitive(pat, "String");
        if (!cJSON_IsString(re) && !cJSON_IsString(str))
            return fail(j, "%s.pattern: expected {\"Regex\": ...} or {\"String\": ...}", field);
        const cJSON *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
        static const char *const behaviors[] = {"Removed", "Isolated", "MergedWithPrevious",
                                                "MergedWithNext", "Contiguous"};
        int bh = -1;
        for (int k = 0; k < 5 && cJSON_IsString(beh); k++)
            if (strcmp(beh->valuestring, behaviors[k]) == 0) bh = k;  /* SB_* order */
        if (bh < 0)
            return fail(j, "%s.behavior: %s%s%s is not one of Removed, Isolated, "
                        "MergedWithPrevious, MergedWithNext, Contiguous", field,
                        cJSON_IsString(beh) ? "\"" : "",
                        cJSON_IsString(beh) ? beh->valuestring : "missing",
                        cJSON_IsString(beh) ? "\"" : "");
        bpe_step *s = new_step(j, b, field, PT_SPLIT);
        if (!s) return -1;
        s->behavior = bh;
        s->invert = get_bool(p, "invert", 0);
        snprintf(sub, sizeof sub, "%s.pattern.%s", field, cJSON_IsString(re) ? "Regex" : "String");
        char *lit = cJSON_IsString(re) ? NULL : escape_literal(str->valuestring);
        if (!cJSON_IsString(re) && !lit) return fail(j, "out of memory");
        s->re = bpe_regex_compile(lit ? lit : re->valuestring, sub, msg, sizeof msg);
        free(lit);
        if (!s->re) { b->n_steps--; return fail(j, "%s", msg); }
        return 0;
    }
    return fail(j, "%s.type \"%s\" is not supported (Sequence, Split, Digits, ByteLevel)", field, t);
}

/* Post-processor: whether it puts a special token first (BOS) / last (EOS), and which. */
static int read_post(jctx *j, const cJSON *p, const char *field, int *bos, int *eos) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *t = type_of(p);
    if (!t) return fail(j, "%s: missing \"type\"", field);
    if (strcmp(t, "ByteLevel") == 0) return 0;
    if (strcmp(t, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "processors");
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, list) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.processors[%d]", field, i++);
            if (read_post(j, e, sub, bos, eos)) return -1;
        }
        return 0;
    }
    if (strcmp(t, "TemplateProcessing") == 0) {
        const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single");
        const cJSON *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
        const int n = cJSON_GetArraySize(single);
        for (int end = 0; end < 2 && n > 0; end++) {
            const cJSON *item = cJSON_GetArrayItem(single, end ? n - 1 : 0);
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(item, "SpecialToken");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(st, "id");
            if (!cJSON_IsString(name)) continue;
            const cJSON *def = cJSON_GetObjectItemCaseSensitive(specials, name->valuestring);
            const cJSON *id0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(def, "ids"), 0);
            if (!cJSON_IsNumber(id0))
                return fail(j, "%s.special_tokens[\"%s\"].ids: missing", field, name->valuestring);
            *(end ? eos : bos) = id0->valueint;
        }
        return 0;
    }
    return fail(j, "%s.type \"%s\" is not supported (null, ByteLevel, TemplateProcessing, "
                "Sequence)", field, t);
}

static int check_decoder(jctx *j, const cJSON *d, const char *field) {
    const char *t = d && !cJSON_IsNull(d) ? type_of(d) : NULL;
    if (t && strcmp(t, "ByteLevel") == 0) return 0;
    if (t && strcmp(t, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(d, "decoders");
        if (cJSON_GetArraySize(list) == 1) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.decoders[0]", field);
            return check_decoder(j, cJSON_GetArrayItem(list, 0), sub);
        }
    }
    return fail(j, "%s: %s%s%s is not supported (a byte-level BPE needs the ByteLevel decoder)",
                field, t ? "type \"" : "", t ? t : "missing", t ? "\"" : "");
}

/* A tokenizer_config.json token field: "text" or {"content": "text"}. */
static const char *config_token(const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---------------------------------------------------------------------------- load */

static int find_id(const bpe_build *b, const char *s) {
    if (!s) return -1;
    for (int i = 0; i < b->n_added; i++) if (strcmp(b->added[i].text, s) == 0) return b->added[i].id;
    for (int i = 0; i < b->n_vocab; i++) if (b->tok[i] && strcmp(b->tok[i], s) == 0) return i;
    return -1;
}

static bpe_model *from_root(jctx *jp, cJSON *root, const char *path, int with_config);

bpe_model *bpe_model_from_json(const char *path, char *err, size_t errlen) {
    jctx j = {path, err, errlen};
    cJSON *root = parse_file(&j, path);
    if (!root) return NULL;
    return from_root(&j, root, path, 1);
}

bpe_model *bpe_model_from_json_text(const char *text, size_t len, const char *name, char *err, size_t errlen) {
    jctx j = {name, err, errlen};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        if (err) snprintf(err, errlen, "%s: invalid JSON at byte %zu", name,
                          end && end >= text ? (size_t)(end - text) : (size_t)0);
        return NULL;
    }
    return from_root(&j, root, name, 0);
}

/* root: parsed tokenizer.json (freed here); with_config: read tokenizer_config.json beside path. */
static bpe_model *from_root(jctx *jp, cJSON *root, const char *path, int with_config) {
    jctx j = *jp;
    cJSON *cfg = NULL;
    bpe_build b;
    memset(&b, 0, sizeof b);
    b.source = path;
    b.mode = BPE_MODE_JSON;
    b.merges_field = "model.merges";
    b.bos = b.eos = b.eot = b.eom = b.pad = b.unk = -1;
    bpe_merge_src *merges = NULL;
    bpe_model *m = NULL;
    char *cfg_path = NULL;

    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) { fail(&j, "model: missing"); goto done; }
    const char *mt = type_of(model);
    if (mt && strcmp(mt, "BPE") != 0) {
        fail(&j, "model.type \"%s\" is not supported (only BPE)", mt);
        goto done;
    }
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(vocab) || !vocab->child) {
        fail(&j, "model.vocab: missing or empty (expected an object of token: id)");
        goto done;
    }
    const cJSON *drop = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (cJSON_IsNumber(drop) && drop->valuedouble != 0) {
        fail(&j, "model.dropout: %g is not supported (only null)", drop->valuedouble);
        goto done;
    }
    static const char *const empty_only[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int k = 0; k < 2; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, empty_only[k]);
        if (cJSON_IsString(v) && v->valuestring[0]) {
            fail(&j, "model.%s \"%s\" is not supported", empty_only[k], v->valuestring);
            goto done;
        }
    }
    if (get_bool(model, "byte_fallback", 0)) {
        fail(&j, "model.byte_fallback: true is not supported (byte-level BPE only)");
        goto done;
    }
    b.ignore_merges = get_bool(model, "ignore_merges", 0);

    /* ids: the vocabulary and the added tokens */
    int max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 1e8) {
            fail(&j, "model.vocab[\"%s\"]: id is not a non-negative integer", e->string);
            goto done;
        }
        if (e->valueint > max_id) max_id = e->valueint;
    }
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const int n_added = cJSON_GetArraySize(added);
    for (int i = 0; i < n_added; i++) {
        const cJSON *a = cJSON_GetArrayItem(added, i);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(a, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e8 ||
            !cJSON_IsString(content)) {
            fail(&j, "added_tokens[%d]: needs \"id\" (non-negative integer) and \"content\" "
                 "(string)", i);
            goto done;
        }
        if (id->valueint > max_id) max_id = id->valueint;
    }
    b.n_vocab = max_id + 1;
    b.tok = calloc((size_t)b.n_vocab, sizeof *b.tok);
    b.type = malloc((size_t)b.n_vocab);
    b.in_model = calloc((size_t)b.n_vocab, 1);
    b.added = calloc((size_t)(n_added ? n_added : 1), sizeof *b.added);
    if (!b.tok || !b.type || !b.in_model || !b.added) { fail(&j, "out of memory"); goto done; }
    memset(b.type, TOK_TYPE_UNUSED, (size_t)b.n_vocab);
    cJSON_ArrayForEach(e, vocab) {
        const int id = e->valueint;
        if (b.tok[id]) {
            fail(&j, "model.vocab: id %d is used by both \"%s\" and \"%s\"", id, b.tok[id],
                 e->string);
            goto done;
        }
        b.tok[id] = e->string;
        b.type[id] = TOK_TYPE_NORMAL;
        b.in_model[id] = 1;
    }

    /* normaliser and pre-tokenizer before the added tokens (normalized ones need it) */
    if (add_norm(&j, &b, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), "normalizer") ||
        add_pretok(&j, &b, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"),
                   "pre_tokenizer") ||
        check_decoder(&j, cJSON_GetObjectItemCaseSensitive(root, "decoder"), "decoder"))
        goto done;

    for (int i = 0; i < n_added; i++) {
        const cJSON *a = cJSON_GetArrayItem(added, i);
        const int id = cJSON_GetObjectItemCaseSensitive(a, "id")->valueint;
        const char *content = cJSON_GetObjectItemCaseSensitive(a, "content")->valuestring;
        bpe_added *t = &b.added[b.n_added];
        t->id = id;
        t->special = (unsigned char)get_bool(a, "special", 0);
        t->normalized = (unsigned char)get_bool(a, "normalized", !t->special);
        t->lstrip = (unsigned char)get_bool(a, "lstrip", 0);
        t->rstrip = (unsigned char)get_bool(a, "rstrip", 0);
        t->single_word = (unsigned char)get_bool(a, "single_word", 0);
        if (t->normalized && b.n_norms)
            t->text = bpe_normalize(b.norms, b.n_norms, content, strlen(content), &t->len);
        else if ((t->text = strdup(content)))
            t->len = strlen(content);
        if (!t->text) { fail(&j, "out of memory"); goto done; }
        b.n_added++;
        if (!b.tok[id]) b.tok[id] = content;
        b.type[id] = t->special ? TOK_TYPE_CONTROL : TOK_TYPE_USER_DEFINED;
    }

    /* merges */
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsArray(ml)) { fail(&j, "model.merges: missing (expected an array)"); goto done; }
    const int nm = cJSON_GetArraySize(ml);
    merges = malloc((size_t)(nm ? nm : 1) * sizeof *merges);
    if (!merges) { fail(&j, "out of memory"); goto done; }
    int i = 0;
    cJSON_ArrayForEach(e, ml) {
        if (cJSON_IsString(e)) {
            const char *s = e->valuestring, *sp = strchr(s, ' ');
            if (strncmp(s, "#version", 8) == 0) continue;
            if (!sp || strchr(sp + 1, ' ')) {
                fail(&j, "model.merges[%d] \"%s\": expected \"a b\" (two tokens, one space)", i, s);
                goto done;
            }
            merges[b.n_merges++] = (bpe_merge_src){s, sp + 1, (size_t)(sp - s), strlen(sp + 1)};
        } else {
            const cJSON *x = cJSON_GetArrayItem(e, 0), *y = cJSON_GetArrayItem(e, 1);
            if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(x) ||
                !cJSON_IsString(y)) {
                fail(&j, "model.merges[%d]: expected \"a b\" or [\"a\", \"b\"]", i);
                goto done;
            }
            merges[b.n_merges++] = (bpe_merge_src){x->valuestring, y->valuestring,
                                                   strlen(x->valuestring), strlen(y->valuestring)};
        }
        i++;
    }
    b.merges = merges;

    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (cJSON_IsString(unk)) b.unk = find_id(&b, unk->valuestring);
    int post_bos = -1, post_eos = -1;
    if (read_post(&j, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), "post_processor",
                  &post_bos, &post_eos))
        goto done;

    /* tokenizer_config.json beside it: BOS/EOS/PAD, add_bos_token, chat_template */
    const char *slash = strrchr(path, '/');
    const size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    cfg_path = malloc(dirlen + sizeof "tokenizer_config.json");
    if (!cfg_path) { fail(&j, "out of memory"); goto done; }
    memcpy(cfg_path, path, dirlen);
    strcpy(cfg_path + dirlen, "tokenizer_config.json");
    FILE *probe = with_config ? fopen(cfg_path, "rb") : NULL;
    if (probe) {
        fclose(probe);
        if (!(cfg = parse_file(&j, cfg_path))) goto done;
    }
    b.bos = post_bos;
    b.eos = post_eos;
    b.add_bos = post_bos >= 0;
    b.add_eos = post_eos >= 0;
    if (cfg) {
        static const char *const keys[] = {"bos_token", "eos_token", "pad_token", "unk_token"};
        int *dst[] = {&b.bos, &b.eos, &b.pad, &b.unk};
        for (int k = 0; k < 4; k++) {
            const char *s = config_token(cfg, keys[k]);
            if (!s) continue;
            const int id = find_id(&b, s);
            if (id < 0) {
                j.path = cfg_path;
                fail(&j, "%s \"%s\" is not a token of %s", keys[k], s, path);
                goto done;
            }
            *dst[k] = id;
        }
        const cJSON *ab = cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token");
        const cJSON *ae = cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token");
        if (cJSON_IsBool(ab)) b.add_bos = cJSON_IsTrue(ab);
        if (cJSON_IsBool(ae)) b.add_eos = cJSON_IsTrue(ae);
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
        if (cJSON_IsArray(ct)) {  /* [{"name": "default", "template": ...}, ...] */
            const cJSON *x, *pick = NULL;
            cJSON_ArrayForEach(x, ct) {
                const cJSON *nm2 = cJSON_GetObjectItemCaseSensitive(x, "name");
                if (!pick || (cJSON_IsString(nm2) && strcmp(nm2->valuestring, "default") == 0))
                    pick = x;
            }
            ct = cJSON_GetObjectItemCaseSensitive(pick, "template");
        }
        if (cJSON_IsString(ct)) b.chat_template = ct->valuestring;
    }
    if ((b.add_bos && b.bos < 0) || (b.add_eos && b.eos < 0)) {
        fail(&j, "add_%s_token is set but no %s token is defined", b.add_bos && b.bos < 0 ?
             "bos" : "eos", b.add_bos && b.bos < 0 ? "BOS" : "EOS");
        goto done;
    }
    m = bpe_model_build(&b, j.err, j.errlen);
done:
    if (!m) {  /* bpe_model_build frees these itself */
        for (int k = 0; k < b.n_steps; k++) if (b.steps[k].re) bpe_regex_free(b.steps[k].re);
        for (int k = 0; k < b.n_added; k++) free(b.added[k].text);
        free(b.added);
    }
    free(b.tok);
    free(b.type);
    free(b.in_model);
    free(merges);
    free(cfg_path);
    cJSON_Delete(cfg);
    cJSON_Delete(root);
    return m;
}
