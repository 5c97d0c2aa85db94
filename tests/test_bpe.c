/* test_bpe.c — the byte-level BPE tokenizer against its references on two real models
 * (SmolLM2-135M-Instruct: pre "smollm"; Qwen2.5-Coder-0.5B-Instruct: pre "qwen2").
 *
 * For each model, tests/bpe_prepare.sh fetches the GGUF (scripts/fetch_model.sh) and rebuilds
 * the original tokenizer.json from it (scripts/make_tokenizer_json.py; merges as "a b" strings
 * for SmolLM2, [a, b] pairs for Qwen2) plus gguf_spec.json, the GGUF metadata as JSON, into
 * $BUILD/bpe-data/<model>. Then, over the ~5,000 strings of tests/fixtures/bpe/<model>.jsonl.gz
 * (scripts/make_bpe_fixtures.py):
 *   - tokenizer.json mode (tokenizer_load) gives the ids of the `tokenizers` library;
 *   - GGUF mode (tokenizer_load_bpe on the metadata) gives the ids of llama.cpp's llama-tokenize;
 *   - decode(encode(x)) == x (tokenizers' decode for the NFC model), streaming decode ==
 *     one-shot decode, arbitrary id sequences decode as the references do;
 *   - end-of-generation ids equal llama.cpp's list; chat prompts render byte-identical to
 *     transformers' apply_chat_template (tests/fixtures/bpe/chat.jsonl);
 *   - a 100 kB prompt encodes (its time is printed, not asserted).
 * When a model cannot be fetched the tests of that model are skipped, except under CI (the CI
 * environment variable set), where that is a failure.
 * Kept whole (over ~500 lines): one table-driven suite per reference (tokenizers, llama.cpp, the GGUF vocabulary)
 * over the two real models, sharing the model set-up that tests/bpe_prepare.sh provides.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <zlib.h>

#include "tokenizer/tokenizer.h"

#define FIXTURE_DIR "tests/fixtures/bpe"

/* ------------------------------------------------------------------------- helpers */

static const char *shared_dir(void) {
    const char *s = getenv("LLM_SHARED");
    return s && s[0] ? s : "../shared";
}

/* Whole file (gzip-compressed or not: zlib reads both), NUL-terminated. */
static char *read_any(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    int r;
    while (buf && (r = gzread(f, buf + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)r;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    gzclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

static uint64_t fnv1a64(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static const char *quoted(const char *s, size_t n, char *out, size_t outlen) {
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < n && o + 8 < outlen; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '\n') o += (size_t)snprintf(out + o, outlen - o, "\\n");
        else if (c == '"' || c == '\\') o += (size_t)snprintf(out + o, outlen - o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
        else out[o++] = (char)c;
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

static const char *id_list(const int *ids, int n, char *out, size_t outlen) {
    size_t o = (size_t)snprintf(out, outlen, "[");
    for (int i = 0; i < n && o + 16 < outlen; i++)
        o += (size_t)snprintf(out + o, outlen - o, i ? ", %d" : "%d", ids[i]);
    snprintf(out + o, outlen - o, "] (%d)", n);
    return out;
}

static int *int_array(const cJSON *a, int *n) {
    *n = cJSON_GetArraySize(a);
    int *v = malloc((size_t)(*n ? *n : 1) * sizeof *v);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) v[i++] = e->valueint;
    return v;
}

static char *str_dup(const cJSON *s) { return cJSON_IsString(s) ? strdup(s->valuestring) : NULL; }

/* ----------------------------------------------------------------- shared data refs */

typedef struct { char file[256]; char *buf; char **lines; int n; } data_file;
static data_file g_data[8];
static int g_n_data;

static data_file *data_get(const char *file) {
    for (int i = 0; i < g_n_data; i++) if (strcmp(g_data[i].file, file) == 0) return &g_data[i];
    if (g_n_data == 8) return NULL;
    data_file *d = &g_data[g_n_data++];
    memset(d, 0, sizeof *d);
    snprintf(d->file, sizeof d->file, "%s", file);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", shared_dir(), file);
    size_t len;
    d->buf = read_any(path, &len);
    if (!d->buf) return d;
    int cap = 1;
    for (size_t i = 0; i < len; i++) cap += d->buf[i] == '\n';
    d->lines = calloc((size_t)cap, sizeof *d->lines);
    for (char *p = d->buf; p && d->n < cap;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        d->lines[d->n++] = p;
        p = nl ? nl + 1 : NULL;
    }
    return d;
}

static void data_free(void) {
    for (int i = 0; i < g_n_data; i++) { free(g_data[i].lines); free(g_data[i].buf); }
    g_n_data = 0;
}

/* The snippet a ref names, malloc'd; NULL when the data file is absent. Fails the test when
 * the file is there but the snippet's hash differs (a changed data file). */
static char *resolve_ref(const cJSON *ref, size_t *len) {
    const char *file = cJSON_GetObjectItem(ref, "file")->valuestring;
    const int line = cJSON_GetObjectItem(ref, "line")->valueint;
    const cJSON *field = cJSON_GetObjectItem(ref, "field");
    const size_t a = (size_t)cJSON_GetObjectItem(ref, "start")->valuedouble;
    const size_t b = (size_t)cJSON_GetObjectItem(ref, "end")->valuedouble;
    data_file *d = data_get(file);
    if (!d || !d->buf) return NULL;
    if (line < 1 || line > d->n) fail_msg("%s: no line %d", file, line);
    const char *text = d->lines[line - 1];
    cJSON *j = NULL;
    if (cJSON_IsString(field)) {
        j = cJSON_Parse(text);
        const cJSON *v = j;
        char path[128];
        snprintf(path, sizeof path, "%s", field->valuestring);
        for (char *tok = strtok(path, "."); tok && v; tok = strtok(NULL, "."))
            v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(tok))
                                 : cJSON_GetObjectItemCaseSensitive(v, tok);
        if (!cJSON_IsString(v)) fail_msg("%s:%d: no string field %s", file, line, field->valuestring);
        text = v->valuestring;
    }
    if (b > strlen(text) || a > b) fail_msg("%s:%d: byte range [%zu, %zu) out of range", file, line, a, b);
    char *out = malloc(b - a + 1);
    memcpy(out, text + a, b - a);
    out[b - a] = '\0';
    cJSON_Delete(j);
    char want[32];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)fnv1a64(out, b - a));
    if (strcmp(want, cJSON_GetObjectItem(ref, "fnv1a64")->valuestring) != 0)
        fail_msg("%s:%d: snippet hash %s, fixture says %s (data file changed?)", file, line, want,
                 cJSON_GetObjectItem(ref, "fnv1a64")->valuestring);
    *len = b - a;
    return out;
}

/* --------------------------------------------------------------------- fixture rows */

typedef struct {
    int id;
    char kind[24];
    char *text;          /* NULL for decode rows or unresolved refs */
    size_t len;
    int special;         /* parse specials */
    int *json, n_json, has_json;
    int *gguf, n_gguf;   /* llama.cpp ids (a copy of json when equal) */
    char *json_decoded;  /* tokenizers' decode when != text */
    int *ids, n_ids;     /* decode rows */
    char *json_text, *json_text_skip, *gguf_text;
} row;

typedef struct {
    const char *name, *merges_format;
    int loaded;
    char skip[1024];
    tokenizer *tj, *tg;  /* tokenizer.json mode, GGUF mode */
    cJSON *meta;
    row *rows;
    int n_rows, n_unresolved;
} model;

static model g_models[2] = {{.name = "smollm2-135m", .merges_format = "string"},
                           {.name = "qwen2.5-0.5b", .merges_format = "array"}};

static tokenizer *load_spec(const char *path, char *err, size_t errlen) {
    size_t n;
    char *buf = read_any(path, &n);
    if (!buf) { snprintf(err, errlen, "%s: cannot read", path); return NULL; }
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    if (!j) { snprintf(err, errlen, "%s: invalid JSON", path); return NULL; }
    tok_bpe_spec s;
    tok_bpe_spec_init(&s);
    const cJSON *tk = cJSON_GetObjectItem(j, "tokens"), *mg = cJSON_GetObjectItem(j, "merges");
    s.n_tokens = cJSON_GetArraySize(tk);
    s.n_merges = cJSON_GetArraySize(mg);
    const char **toks = malloc((size_t)s.n_tokens * sizeof *toks);
    const char **merges = malloc((size_t)(s.n_merges + 1) * sizeof *merges);
    int i = 0, nt;
    const cJSON *e;
    cJSON_ArrayForEach(e, tk) toks[i++] = e->valuestring;
    i = 0;
    cJSON_ArrayForEach(e, mg) merges[i++] = e->valuestring;
    int *types = int_array(cJSON_GetObjectItem(j, "token_type"), &nt);
    s.tokens = toks;
    s.merges = merges;
    s.token_type = types;
    s.source = path;
    s.pre = cJSON_GetObjectItem(j, "pre")->valuestring;
    s.bos_id = cJSON_GetObjectItem(j, "bos_id")->valueint;
    s.eos_id = cJSON_GetObjectItem(j, "eos_id")->valueint;
    s.eot_id = cJSON_GetObjectItem(j, "eot_id")->valueint;
    s.eom_id = cJSON_GetObjectItem(j, "eom_id")->valueint;
    s.pad_id = cJSON_GetObjectItem(j, "pad_id")->valueint;
    s.unk_id = cJSON_GetObjectItem(j, "unk_id")->valueint;
    s.add_bos = cJSON_GetObjectItem(j, "add_bos")->valueint;
    s.add_eos = cJSON_GetObjectItem(j, "add_eos")->valueint;
    const cJSON *ct = cJSON_GetObjectItem(j, "chat_template");
    s.chat_template = cJSON_IsString(ct) ? ct->valuestring : NULL;
    tokenizer *t = tokenizer_load_bpe(&s, err, errlen);
    free(toks);
    free(merges);
    free(types);
    cJSON_Delete(j);
    return t;
}

static void load_rows(model *m) {
    char path[1024];
    snprintf(path, sizeof path, FIXTURE_DIR "/%s.jsonl.gz", m->name);
    size_t len;
    char *buf = read_any(path, &len);
    if (!buf) fail_msg("%s: cannot read", path);
    int cap = 0;
    for (size_t i = 0; i < len; i++) cap += buf[i] == '\n';
    m->rows = calloc((size_t)cap + 1, sizeof *m->rows);
    char *p = buf;
    for (int k = -1; p && *p; k++) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        cJSON *j = cJSON_Parse(p);
        if (!j) fail_msg("%s: bad JSON on line %d", path, k + 2);
        p = nl ? nl + 1 : NULL;
        if (k < 0) { m->meta = cJSON_DetachItemFromObject(j, "meta"); cJSON_Delete(j); continue; }
        row *r = &m->rows[m->n_rows];
        r->id = cJSON_GetObjectItem(j, "id")->valueint;
        snprintf(r->kind, sizeof r->kind, "%s", cJSON_GetObjectItem(j, "kind")->valuestring);
        const cJSON *text = cJSON_GetObjectItem(j, "text"), *hex = cJSON_GetObjectItem(j, "hex");
        const cJSON *ref = cJSON_GetObjectItem(j, "ref"), *sp = cJSON_GetObjectItem(j, "special");
        r->special = !cJSON_IsNumber(sp) || sp->valueint != 0;
        if (cJSON_IsString(text)) {
            r->text = strdup(text->valuestring);
            r->len = strlen(r->text);
        } else if (cJSON_IsString(hex)) {
            const char *h = hex->valuestring;
            r->len = strlen(h) / 2;
            r->text = malloc(r->len + 1);
            for (size_t i = 0; i < r->len; i++) {
                unsigned v;
                sscanf(h + 2 * i, "%2x", &v);
                r->text[i] = (char)v;
            }
            r->text[r->len] = '\0';
        } else if (ref) {
            r->text = resolve_ref(ref, &r->len);
            if (!r->text) m->n_unresolved++;
        }
        const cJSON *js = cJSON_GetObjectItem(j, "json"), *gg = cJSON_GetObjectItem(j, "gguf");
        if (js) { r->json = int_array(js, &r->n_json); r->has_json = 1; }
        if (gg) r->gguf = int_array(gg, &r->n_gguf);
        else if (js) r->gguf = int_array(js, &r->n_gguf);
        r->json_decoded = str_dup(cJSON_GetObjectItem(j, "json_decoded"));
        const cJSON *ids = cJSON_GetObjectItem(j, "ids");
        if (ids) r->ids = int_array(ids, &r->n_ids);
        r->json_text = str_dup(cJSON_GetObjectItem(j, "json_text"));
        r->json_text_skip = str_dup(cJSON_GetObjectItem(j, "json_text_skip"));
        r->gguf_text = str_dup(cJSON_GetObjectItem(j, "gguf_text"));
        cJSON_Delete(j);
        m->n_rows++;
    }
    free(buf);
}

/* The model's tokenizers and fixture rows, loaded once; skips (or fails under CI) when the
 * model cannot be had. */
static model *get_model(int which) {
    model *m = &g_models[which];
    if (!m->loaded) {
        m->loaded = 1;
        const char *build = getenv("BUILD");
        char dir[512], cmd[1200], out[1024] = "", err[1024];
        snprintf(dir, sizeof dir, "%s/bpe-data/%s", build && build[0] ? build : "build", m->name);
        snprintf(cmd, sizeof cmd, "tests/bpe_prepare.sh %s %s --merges-format %s 2>&1", m->name,
                 dir, m->merges_format);
        FILE *p = popen(cmd, "r");
        size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[n] = '\0';
        const int rc = p ? pclose(p) : -1;
        if (rc != 0) {
            snprintf(m->skip, sizeof m->skip, "%s: tests/bpe_prepare.sh failed: %s", m->name, out);
        } else {
            char path[600];
            snprintf(path, sizeof path, "%s", dir);  /* a folder: finds tokenizer.json */
            m->tj = tokenizer_load(path, err, sizeof err);
            if (!m->tj) fail_msg("tokenizer_load(%s): %s", path, err);
            snprintf(path, sizeof path, "%s/gguf_spec.json", dir);
            m->tg = load_spec(path, err, sizeof err);
            if (!m->tg) fail_msg("tokenizer_load_bpe(%s): %s", path, err);
            load_rows(m);
            if (m->n_unresolved)
                print_message("[  NOTE    ] %s: %d data-set rows skipped (%s/data absent)\n",
                              m->name, m->n_unresolved, shared_dir());
        }
    }
    if (m->skip[0]) {
        if (getenv("CI") && getenv("CI")[0]) fail_msg("%s (CI: the model must be available)", m->skip);
        print_message("[  SKIP    ] %s\n", m->skip);
        skip();
    }
    return m;
}

/* ------------------------------------------------------------------------- encoding */

static void check_encode(int which, int gguf) {
    model *m = get_model(which);
    tokenizer *t = gguf ? m->tg : m->tj;
    int checked = 0, bad = 0;
    char q[600], a[600], b[600], err[512];
    for (int i = 0; i < m->n_rows; i++) {
        const row *r = &m->rows[i];
        if (!r->text || (gguf ? !r->gguf : !r->has_json)) continue;
        int *ids, n;
        if (tokenizer_encode_ex(t, r->text, r->len, r->special ? TOK_PARSE_SPECIAL : 0, &ids, &n,
                                err, sizeof err))
            fail_msg("row %d: %s", r->id, err);
        const int *want = gguf ? r->gguf : r->json;
        const int nw = gguf ? r->n_gguf : r->n_json;
        checked++;
        if (n != nw || memcmp(ids, want, (size_t)n * sizeof *ids) != 0) {
            if (bad++ < 5)
                print_message("  %s %s row %d (%s): %s\n    got  %s\n    want %s\n", m->name,
                              gguf ? "GGUF" : "tokenizer.json", r->id, r->kind,
                              quoted(r->text, r->len < 120 ? r->len : 120, q, sizeof q),
                              id_list(ids, n, a, sizeof a), id_list(want, nw, b, sizeof b));
        }
        free(ids);
    }
    print_message("  %s %s: %d/%d strings give the ids of %s\n", m->name,
                  gguf ? "GGUF metadata" : "tokenizer.json", checked - bad, checked,
                  gguf ? "llama.cpp" : "tokenizers");
    assert_true(checked >= 5000);  /* the issue asks for at least 5,000 strings per model */
    assert_int_equal(bad, 0);
}

static void test_smollm2_json_encode(void **s) { (void)s; check_encode(0, 0); }
static void test_smollm2_gguf_encode(void **s) { (void)s; check_encode(0, 1); }
static void test_qwen2_json_encode(void **s) { (void)s; check_encode(1, 0); }
static void test_qwen2_gguf_encode(void **s) { (void)s; check_encode(1, 1); }

/* ------------------------------------------------------------------------- decoding */

/* Streams ids through a tok_decoder (render: TOK_DECODE_SPECIAL) and checks the result equals
 * tokenizer_decode_ex. */
static void check_stream(tokenizer *t, const int *ids, int n, int render, int rowid) {
    char *one, err[512];
    size_t one_len;
    if (tokenizer_decode_ex(t, ids, n, render ? TOK_DECODE_SPECIAL : 0, &one, &one_len, err,
                            sizeof err))
        fail_msg("row %d: decode: %s", rowid, err);
    tok_decoder *d = tok_decoder_new(t);
    tok_decoder_set_special(d, render);
    const size_t cap = tok_decoder_buf_size(t);
    char *buf = malloc(cap), *acc = malloc(one_len * 3 + 64);
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        const int r = tok_decoder_push(d, ids[i], buf, cap);
        if (r < 0) { fail_msg("row %d: tok_decoder_push(%d) failed", rowid, ids[i]); return; }
        memcpy(acc + o, buf, (size_t)r);
        o += (size_t)r;
    }
    const int fr = tok_decoder_flush(d, buf, cap);
    if (fr < 0) { fail_msg("row %d: tok_decoder_flush failed", rowid); return; }
    memcpy(acc + o, buf, (size_t)fr);
    o += (size_t)fr;
    if (o != one_len || memcmp(acc, one, o) != 0) {
        char q1[600], q2[600];
        fail_msg("row %d: streaming %s != one-shot %s", rowid, quoted(acc, o, q1, sizeof q1),
                 quoted(one, one_len, q2, sizeof q2));
    }
    free(buf);
    free(acc);
    free(one);
    tok_decoder_free(d);
}

static int expect_text(tokenizer *t, const int *ids, int n, unsigned flags, const char *want,
                       size_t want_len, int rowid, const char *what) {
    char *got, err[512], q1[600], q2[600];
    size_t len;
    if (tokenizer_decode_ex(t, ids, n, flags, &got, &len, err, sizeof err))
        fail_msg("row %d: decode: %s", rowid, err);
    const int ok = len == want_len && memcmp(got, want, len) == 0;
    if (!ok)
        print_message("  row %d %s: got %s\n    want %s\n", rowid, what,
                      quoted(got, len < 200 ? len : 200, q1, sizeof q1),
                      quoted(want, want_len < 200 ? want_len : 200, q2, sizeof q2));
    free(got);
    return ok;
}

/* True when every byte of s has its byte-level character in the vocabulary (SmolLM2 lacks a
 * few control bytes, which llama.cpp drops and tokenizers maps to <|endoftext|>). */
static int bytes_known(const tokenizer *t, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const unsigned c = (unsigned char)s[i];
        if ((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE) continue;
        const unsigned cp = c <= 0x20 ? 256 + c : c <= 0xA0 ? 289 + c - 0x7F : 323;
        char u[3] = {(char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F)), 0};
        if (tokenizer_piece_to_id(t, u) < 0) return 0;
    }
    return 1;
}

static void check_decode(int which) {
    model *m = get_model(which);
    int rt = 0, rt_bad = 0, dec = 0, dec_bad = 0;
    for (int i = 0; i < m->n_rows; i++) {
        const row *r = &m->rows[i];
        if (r->ids) {  /* arbitrary ids → text */
            dec++;
            dec_bad += !expect_text(m->tj, r->ids, r->n_ids, TOK_DECODE_SPECIAL, r->json_text,
                                    strlen(r->json_text), r->id, "tokenizer.json decode");
            dec_bad += !expect_text(m->tj, r->ids, r->n_ids, 0, r->json_text_skip,
                                    strlen(r->json_text_skip), r->id, "tokenizer.json skip");
            dec_bad += !expect_text(m->tg, r->ids, r->n_ids, TOK_DECODE_SPECIAL, r->gguf_text,
                                    strlen(r->gguf_text), r->id, "GGUF decode");
            for (int render = 0; render < 2; render++) {
                check_stream(m->tj, r->ids, r->n_ids, render, r->id);
                check_stream(m->tg, r->ids, r->n_ids, render, r->id);
            }
            continue;
        }
        if (!r->text) continue;
        if (r->has_json) {  /* valid UTF-8: decode(encode(x)) */
            rt++;
            const char *want = r->json_decoded ? r->json_decoded : r->text;
            rt_bad += !expect_text(m->tj, r->json, r->n_json, TOK_DECODE_SPECIAL, want,
                                   r->json_decoded ? strlen(want) : r->len, r->id,
                                   "tokenizer.json round trip");
            if (bytes_known(m->tg, r->text, r->len))
                rt_bad += !expect_text(m->tg, r->gguf, r->n_gguf, TOK_DECODE_SPECIAL, r->text,
                                       r->len, r->id, "GGUF round trip");
            check_stream(m->tj, r->json, r->n_json, 1, r->id);
            check_stream(m->tj, r->json, r->n_json, 0, r->id);
        }
        check_stream(m->tg, r->gguf, r->n_gguf, 1, r->id);
        check_stream(m->tg, r->gguf, r->n_gguf, 0, r->id);
    }
    print_message("  %s: %d/%d round trips, %d/%d id sequences decode as the references; "
                  "streaming == one-shot on all\n", m->name, rt - rt_bad, rt, dec - dec_bad / 3,
                  dec);
    assert_int_equal(rt_bad, 0);
    assert_int_equal(dec_bad, 0);
}

static void test_smollm2_decode(void **s) { (void)s; check_decode(0); }
static void test_qwen2_decode(void **s) { (void)s; check_decode(1); }

/* ------------------------------------------------------------- specials, BOS, EOG */

static void check_specials(int which, int bos, int eos, const char *eot_text) {
    model *m = get_model(which);
    const cJSON *eog = cJSON_GetObjectItem(m->meta, "eog_llamacpp");
    int n_want;
    int *want = int_array(eog, &n_want);
    const int *got;
    const int n = tokenizer_eog_ids(m->tg, &got);
    char a[300], b[300];
    if (n != n_want || memcmp(got, want, (size_t)n * sizeof *got) != 0)
        fail_msg("%s: EOG ids %s, llama.cpp lists %s", m->name, id_list(got, n, a, sizeof a),
                 id_list(want, n_want, b, sizeof b));
    for (int i = 0; i < n; i++) assert_true(tokenizer_is_eog(m->tg, got[i]));
    tokenizer *ts[2] = {m->tj, m->tg};
    for (int k = 0; k < 2; k++) {
        tokenizer *t = ts[k];
        assert_int_equal(tokenizer_kind(t), TOK_KIND_BPE);
        assert_int_equal(tokenizer_add_bos(t), 0);  /* SmolLM2 and Qwen2 add no BOS */
        assert_int_equal(tokenizer_add_eos(t), 0);
        assert_int_equal(tokenizer_bos_id(t), bos);
        assert_int_equal(tokenizer_eos_id(t), eos);
        const int eot = tokenizer_piece_to_id(t, eot_text);
        assert_true(eot >= 0 && tokenizer_is_eog(t, eot));
        assert_int_equal(tokenizer_token_type(t, eot), TOK_TYPE_CONTROL);
        assert_non_null(tokenizer_chat_template(t));
        /* TOK_ADD_SPECIAL adds nothing for these models */
        int *ids, nn;
        assert_int_equal(tokenizer_encode_ex(t, "hi", 2, TOK_ADD_SPECIAL, &ids, &nn, NULL, 0), 0);
        assert_int_equal(nn, 1);
        free(ids);
        /* control tokens vanish from the default decode and the default stream */
        char *txt;
        assert_int_equal(tokenizer_decode(t, &eot, 1, &txt, NULL, 0), 0);
        assert_string_equal(txt, "");
        free(txt);
    }
    free(want);
}

static void test_smollm2_specials(void **s) { (void)s; check_specials(0, 1, 2, "<|im_end|>"); }
static void test_qwen2_specials(void **s) {
    (void)s;
    check_specials(1, 151643, 151645, "<|im_end|>");
    /* llama.cpp promotes Qwen2.5's NORMAL "</s>" (128247) to control; tokenizers keeps it text */
    model *m = get_model(1);
    assert_int_equal(tokenizer_token_type(m->tg, 128247), TOK_TYPE_CONTROL);
    assert_int_equal(tokenizer_token_type(m->tj, 128247), TOK_TYPE_NORMAL);
}

/* ---------------------------------------------------------------------- chat templates */

static void test_chat_templates(void **s) {
    (void)s;
    model *sm = get_model(0), *qw = get_model(1);
    size_t len;
    char *buf = read_any(FIXTURE_DIR "/chat.jsonl", &len), err[512];
    assert_non_null(buf);
    cJSON *meta = NULL;
    int rows = 0, bad = 0;
    chat_template *cts[4] = {NULL};
    static const char *const names[4] = {"smollm2-135m", "qwen2.5-0.5b", "llama3", "llama2"};
    for (char *p = buf; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        cJSON *j = cJSON_Parse(p);
        p = nl ? nl + 1 : NULL;
        if (!meta) {
            meta = j;
            const cJSON *tp = cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "meta"), "templates");
            cts[0] = chat_template_for(sm->tg, NULL, err, sizeof err);
            cts[1] = chat_template_for(qw->tj, NULL, err, sizeof err);
            for (int k = 2; k < 4; k++) {
                const cJSON *t = cJSON_GetObjectItem(tp, names[k]);
                cts[k] = chat_template_new(cJSON_GetObjectItem(t, "template")->valuestring, NULL,
                                           cJSON_GetObjectItem(t, "bos")->valuestring,
                                           cJSON_GetObjectItem(t, "eos")->valuestring, err,
                                           sizeof err);
            }
            for (int k = 0; k < 4; k++) if (!cts[k]) fail_msg("%s: %s", names[k], err);
            continue;
        }
        const char *name = cJSON_GetObjectItem(j, "template")->valuestring;
        int k = 0;
        while (k < 4 && strcmp(names[k], name) != 0) k++;
        assert_true(k < 4);
        const cJSON *ms = cJSON_GetObjectItem(j, "messages"), *e;
        chat_message msgs[16];
        int n = 0;
        cJSON_ArrayForEach(e, ms) {
            msgs[n].role = cJSON_GetObjectItem(e, "role")->valuestring;
            msgs[n++].content = cJSON_GetObjectItem(e, "content")->valuestring;
        }
        const int agp = cJSON_IsTrue(cJSON_GetObjectItem(j, "add_generation_prompt"));
        char *out = chat_template_render(cts[k], msgs, n, agp, err, sizeof err);
        const cJSON *want = cJSON_GetObjectItem(j, "rendered");
        rows++;
        char q1[2000], q2[2000];
        if (!want && out) {
            bad++;
            print_message("  %s chat row %d: rendered %s, transformers raised an error\n", name,
                          rows, quoted(out, strlen(out), q1, sizeof q1));
        } else if (want && !out) {
            bad++;
            print_message("  %s chat row %d: error \"%s\"\n", name, rows, err);
        } else if (want && strcmp(out, want->valuestring) != 0) {
            bad++;
            print_message("  %s chat row %d:\n    got  %s\n    want %s\n", name, rows,
                          quoted(out, strlen(out), q1, sizeof q1),
                          quoted(want->valuestring, strlen(want->valuestring), q2, sizeof q2));
        }
        free(out);
        cJSON_Delete(j);
    }
    assert_int_equal(chat_template_family(cts[0]), CHAT_FAMILY_CHATML);
    assert_string_equal(chat_template_default_system(cts[0]),
                        "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    assert_string_equal(chat_template_default_system(cts[1]),
                        "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    assert_int_equal(chat_template_family(cts[2]), CHAT_FAMILY_LLAMA3);
    assert_int_equal(chat_template_family(cts[3]), CHAT_FAMILY_LLAMA2);
    assert_true(chat_template_bos_in_text(cts[2]) && chat_template_bos_in_text(cts[3]));
    assert_false(chat_template_bos_in_text(cts[0]));
    for (int k = 0; k < 4; k++) chat_template_free(cts[k]);
    print_message("  chat: %d/%d renderings equal transformers' apply_chat_template\n",
                  rows - bad, rows);
    assert_true(rows >= 40);
    assert_int_equal(bad, 0);
    cJSON_Delete(meta);
    free(buf);
}

/* ------------------------------------------------------------------------ large input */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void encode_large(tokenizer *t, const char *label, const char *text, size_t len) {
    int *ids, n;
    char *back, err[512];
    size_t blen;
    const double t0 = now_ms();
    if (tokenizer_encode_ex(t, text, len, TOK_PARSE_SPECIAL, &ids, &n, err, sizeof err))
        fail_msg("%s: %s", label, err);
    const double t1 = now_ms();
    assert_int_equal(tokenizer_decode_ex(t, ids, n, TOK_DECODE_SPECIAL, &back, &blen, err,
                                         sizeof err), 0);
    print_message("  %-34s %7zu bytes → %6d tokens in %7.1f ms\n", label, len, n, t1 - t0);
    assert_true(n > 0);
    if (blen == len) assert_memory_equal(back, text, len);
    free(ids);
    free(back);
}

/* A 100 kB prompt (news articles, then pathological single-class runs) must complete; the
 * times are printed for the record, not asserted. */
static void test_100kb_prompt(void **s) {
    (void)s;
    model *ms[2] = {get_model(0), get_model(1)};
    const size_t N = 100 * 1024;
    char *text = malloc(N + 1);
    size_t o = 0;
    for (int i = 0; o < N; i++) {  /* the fixture texts, concatenated */
        const row *r = &ms[0]->rows[i % ms[0]->n_rows];
        if (!r->text || !r->has_json) continue;
        const size_t k = r->len < N - o ? r->len : N - o;
        memcpy(text + o, r->text, k);
        o += k;
    }
    while (o > 0 && ((unsigned char)text[o - 1] & 0xC0) == 0x80) o--;  /* whole characters */
    if (o > 0 && (unsigned char)text[o - 1] >= 0xC0) o--;
    text[o] = '\0';
    char label[128];
    for (int k = 0; k < 2; k++) {
        snprintf(label, sizeof label, "%s tokenizer.json, mixed text", ms[k]->name);
        encode_large(ms[k]->tj, label, text, o);
        snprintf(label, sizeof label, "%s GGUF, mixed text", ms[k]->name);
        encode_large(ms[k]->tg, label, text, o);
    }
    static const char fill[] = {'a', ' ', '7', '\n', '!'};
    for (size_t f = 0; f < sizeof fill; f++) {
        memset(text, fill[f], N);
        text[N] = '\0';
        snprintf(label, sizeof label, "qwen2.5 GGUF, 100 kB of 0x%02x", fill[f]);
        encode_large(ms[1]->tg, label, text, N);
    }
    free(text);
}

/* Code points above U+10FFFF (llama.cpp throws on them): each byte becomes U+FFFD. */
static void test_overflow_codepoints(void **s) {
    (void)s;
    model *m = get_model(1);
    int *a, *b, na, nb;
    assert_int_equal(tokenizer_encode_ex(m->tg, "a\xf4\x90\x80\x80" "b", 6, 0, &a, &na, NULL, 0), 0);
    assert_int_equal(tokenizer_encode_ex(m->tg, "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                         "b", 14, 0, &b, &nb, NULL, 0), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na * sizeof *a);
    free(a);
    free(b);
}

static int teardown(void **s) {
    (void)s;
    for (int k = 0; k < 2; k++) {
        model *m = &g_models[k];
        for (int i = 0; i < m->n_rows; i++) {
            row *r = &m->rows[i];
            free(r->text); free(r->json); free(r->gguf); free(r->json_decoded); free(r->ids);
            free(r->json_text); free(r->json_text_skip); free(r->gguf_text);
        }
        free(m->rows);
        cJSON_Delete(m->meta);
        tokenizer_free(m->tj);
        tokenizer_free(m->tg);
    }
    data_free();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smollm2_json_encode), cmocka_unit_test(test_smollm2_gguf_encode),
        cmocka_unit_test(test_qwen2_json_encode),   cmocka_unit_test(test_qwen2_gguf_encode),
        cmocka_unit_test(test_smollm2_decode),      cmocka_unit_test(test_qwen2_decode),
        cmocka_unit_test(test_smollm2_specials),    cmocka_unit_test(test_qwen2_specials),
        cmocka_unit_test(test_chat_templates),      cmocka_unit_test(test_100kb_prompt),
        cmocka_unit_test(test_overflow_codepoints),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
