/* test_tokenizer.c — the SentencePiece wrapper, the streaming detokenizer and the chat template.
 *
 * Fixtures: tests/fixtures/tokenizer/<model>.jsonl, written by scripts/make_tokenizer_fixtures.py
 * with the Python sentencepiece package (ids = encode(text) without BOS, decoded = decode(ids)).
 * Models and the data files the fixtures refer to are read from $LLM_SHARED (default ../shared;
 * run from the repository root). A test whose model is absent is skipped with the reason printed.
 * Kept whole (over ~500 lines): one suite over the SentencePiece wrapper, its streaming decoder and the chat
 * template, sharing the fixture loaders; each part is small, the file is long because the cases are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tokenizer/tokenizer.h"

#define FIXTURE_DIR "tests/fixtures/tokenizer"

typedef struct {
    const char *name;  /* folder under $LLM_SHARED/models and fixture file name */
    int vocab;
} model_info;

static const model_info STORIES260K = {"stories260K", 512};
static const model_info BABYLLAMA = {"babyllama-tok105", 105};
static const model_info LLAMA2 = {"llama2-tokenizer", 32000};

/* ----------------------------------------------------------------------------- helpers */

static const char *shared_dir(void) {
    const char *s = getenv("LLM_SHARED");
    return s && s[0] ? s : "../shared";
}

static void model_path(const model_info *m, char *out, size_t n) {
    snprintf(out, n, "%s/models/%s/tokenizer.model", shared_dir(), m->name);
}

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* Loads the model's tokenizer, or skips the test (printing why) when the model is absent. */
static tokenizer *load_or_skip(const model_info *m) {
    char path[1024], err[512];
    model_path(m, path, sizeof path);
    if (!file_exists(path)) {
        print_message("[  SKIP    ] %s: %s not found (set LLM_SHARED)\n", m->name, path);
        skip();
    }
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    if (!t) fail_msg("tokenizer_load(%s): %s", path, err);
    return t;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

static uint64_t fnv1a64(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Prints s as a C string literal (control bytes escaped, UTF-8 kept) into out. */
static const char *quoted(const char *s, size_t n, char *out, size_t outlen) {
    size_t o = 0;
    if (outlen < 8) return "";
    out[o++] = '"';
    for (size_t i = 0; i < n && o + 8 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') o += (size_t)snprintf(out + o, outlen - o, "\\n");
        else if (c == '\t') o += (size_t)snprintf(out + o, outlen - o, "\\t");
        else if (c == '"' || c == '\\') o += (size_t)snprintf(out + o, outlen - o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
        else out[o++] = (char)c;
    }
    if (o + 5 >= outlen) o = outlen - 5;
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

static const char *id_list(const int *ids, int n, char *out, size_t outlen) {
    size_t o = 0;
    out[0] = '\0';
    o += (size_t)snprintf(out, outlen, "[");
    for (int i = 0; i < n && o + 16 < outlen; i++)
        o += (size_t)snprintf(out + o, outlen - o, i ? ", %d" : "%d", ids[i]);
    if (o + 16 >= outlen) o += (size_t)snprintf(out + o, outlen - o, ", ...");
    snprintf(out + o, outlen - o, "] (%d ids)", n);
    return out;
}

/* ------------------------------------------------------------------------- fixtures */

/* A data file named by fixture refs, split into lines (XSum: the "article" of each line). */
typedef struct {
    char file[256];
    char *buf;      /* owned text of the whole file (or NULL) */
    int n_lines;
    char **lines;   /* [n_lines], NUL-terminated; point into buf or are owned (JSON field) */
    size_t *lens;
    int owned;      /* lines[] are malloc'd */
} data_file;

typedef struct {
    data_file files[4];
    int n_files;
} data_cache;

static data_file *data_get(data_cache *c, const char *file, const char *field) {
    for (int i = 0; i < c->n_files; i++)
        if (strcmp(c->files[i].file, file) == 0) return &c->files[i];
    if (c->n_files == 4) return NULL;
    data_file *d = &c->files[c->n_files++];
    memset(d, 0, sizeof *d);
    snprintf(d->file, sizeof d->file, "%s", file);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", shared_dir(), file);
    size_t len;
    d->buf = read_file(path, &len);
    if (!d->buf) return d;
    int cap = 1;
    for (size_t i = 0; i < len; i++) cap += d->buf[i] == '\n';
    d->lines = calloc((size_t)cap, sizeof *d->lines);
    d->lens = calloc((size_t)cap, sizeof *d->lens);
    d->owned = field != NULL;
    char *p = d->buf;
    while (p && d->n_lines < cap) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        if (!field) {
            d->lines[d->n_lines] = p;
            d->lens[d->n_lines] = strlen(p);
        } else {
            cJSON *j = cJSON_Parse(p);
            const cJSON *v = j ? cJSON_GetObjectItemCaseSensitive(j, field) : NULL;
            const char *s = cJSON_IsString(v) ? v->valuestring : "";
            d->lines[d->n_lines] = strdup(s);
            d->lens[d->n_lines] = strlen(s);
            cJSON_Delete(j);
        }
        d->n_lines++;
        p = nl ? nl + 1 : NULL;
    }
    return d;
}

static void data_free(data_cache *c) {
    for (int i = 0; i < c->n_files; i++) {
        data_file *d = &c->files[i];
        if (d->owned)
            for (int k = 0; k < d->n_lines; k++) free(d->lines[k]);
        free(d->lines);
        free(d->lens);
        free(d->buf);
    }
    c->n_files = 0;
}

/* One fixture row, resolved: the text (inline or read through its ref) and what Python gave. */
typedef struct {
    int id;
    const char *kind;
    char *text;            /* owned */
    size_t text_len;
    int *ids;              /* owned */
    int n_ids;
    const char *decoded;   /* NULL for refs: then decoded_len / decoded_fnv are used */
    size_t decoded_len;
    uint64_t decoded_fnv;
} fixture_row;

typedef struct {
    char *buf;
    int n_rows;
    fixture_row *rows;
    cJSON **json;          /* parsed lines, kept alive for the strings they own */
    char spm_version[32];
    int n_unresolved;      /* refs whose data file is missing */
    char unresolved_reason[512];
} fixture;

static void fixture_free(fixture *fx) {
    for (int i = 0; i < fx->n_rows; i++) {
        free(fx->rows[i].text);
        free(fx->rows[i].ids);
        cJSON_Delete(fx->json[i]);
    }
    free(fx->rows);
    free(fx->json);
    free(fx->buf);
    memset(fx, 0, sizeof *fx);
}

static uint64_t parse_hex64(const char *s) { return s ? strtoull(s, NULL, 16) : 0; }

/* Reads FIXTURE_DIR/<model>.jsonl. Rows whose data file is missing are counted and dropped (the
 * reason is printed by the caller); a data file whose snippet hash differs fails the test. */
static void fixture_load(const model_info *m, fixture *fx) {
    memset(fx, 0, sizeof *fx);
    char path[512];
    snprintf(path, sizeof path, FIXTURE_DIR "/%s.jsonl", m->name);
    size_t len;
    fx->buf = read_file(path, &len);
    if (!fx->buf) fail_msg("%s: cannot read the fixture (run from the repository root)", path);
    int cap = 1;
    for (size_t i = 0; i < len; i++) cap += fx->buf[i] == '\n';
    fx->rows = calloc((size_t)cap, sizeof *fx->rows);
    fx->json = calloc((size_t)cap, sizeof *fx->json);
    assert_non_null(fx->rows);
    assert_non_null(fx->json);
    data_cache cache = {0};
    int line_no = 0, expected = -1;
    for (char *p = fx->buf; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        line_no++;
        cJSON *j = cJSON_Parse(p);
        if (!j) fail_msg("%s:%d: not JSON", path, line_no);
        p = nl ? nl + 1 : NULL;
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "meta");
        if (meta) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, "sentencepiece");
            snprintf(fx->spm_version, sizeof fx->spm_version, "%s",
                     cJSON_IsString(v) ? v->valuestring : "?");
            v = cJSON_GetObjectItemCaseSensitive(meta, "count");
            expected = cJSON_IsNumber(v) ? v->valueint : -1;
            cJSON_Delete(j);
            continue;
        }
        fixture_row *r = &fx->rows[fx->n_rows];
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(j, "ref");
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(j, "ids");
        const cJSON *dec = cJSON_GetObjectItemCaseSensitive(j, "decoded");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(kind) || !cJSON_IsArray(ids) ||
            !(cJSON_IsString(text) || cJSON_IsObject(ref)))
            fail_msg("%s:%d: row lacks id/kind/ids/text|ref", path, line_no);
        r->id = id->valueint;
        r->kind = kind->valuestring;
        r->n_ids = cJSON_GetArraySize(ids);
        r->ids = malloc(((size_t)r->n_ids + 1) * sizeof(int));
        assert_non_null(r->ids);
        int k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, ids) r->ids[k++] = e->valueint;
        if (cJSON_IsString(text)) {
            r->text = strdup(text->valuestring);
            r->text_len = strlen(r->text);
            if (!cJSON_IsString(dec)) fail_msg("%s:%d: row lacks decoded", path, line_no);
            r->decoded = dec->valuestring;
            r->decoded_len = strlen(r->decoded);
        } else {
            const cJSON *file = cJSON_GetObjectItemCaseSensitive(ref, "file");
            const cJSON *field = cJSON_GetObjectItemCaseSensitive(ref, "field");
            const cJSON *line = cJSON_GetObjectItemCaseSensitive(ref, "line");
            const cJSON *start = cJSON_GetObjectItemCaseSensitive(ref, "start");
            const cJSON *end = cJSON_GetObjectItemCaseSensitive(ref, "end");
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(ref, "fnv1a64");
            const cJSON *dl = cJSON_GetObjectItemCaseSensitive(j, "decoded_len");
            const cJSON *dh = cJSON_GetObjectItemCaseSensitive(j, "decoded_fnv1a64");
            if (!cJSON_IsString(file) || !cJSON_IsNumber(line) || !cJSON_IsNumber(start) ||
                !cJSON_IsNumber(end) || !cJSON_IsString(h) || !cJSON_IsNumber(dl) ||
                !cJSON_IsString(dh))
                fail_msg("%s:%d: malformed ref row", path, line_no);
            data_file *d = data_get(&cache, file->valuestring,
                                    cJSON_IsString(field) ? field->valuestring : NULL);
            if (!d || !d->buf) {
                fx->n_unresolved++;
                if (!strstr(fx->unresolved_reason, file->valuestring)) {
                    size_t o = strlen(fx->unresolved_reason);
                    snprintf(fx->unresolved_reason + o, sizeof fx->unresolved_reason - o,
                             "%s%s/%s not found", o ? "; " : "", shared_dir(), file->valuestring);
                }
                free(r->ids);
                r->ids = NULL;
                cJSON_Delete(j);
                continue;
            }
            const int ln = line->valueint;
            const size_t a = (size_t)start->valuedouble, b = (size_t)end->valuedouble;
            if (ln < 1 || ln > d->n_lines || b < a || b > d->lens[ln - 1])
                fail_msg("%s:%d: ref %s line %d [%zu, %zu) is outside the data file",
                         path, line_no, file->valuestring, ln, a, b);
            const char *src = d->lines[ln - 1] + a;
            if (fnv1a64(src, b - a) != parse_hex64(h->valuestring))
                fail_msg("%s:%d: %s line %d [%zu, %zu) differs from the text the fixture was "
                         "made from (data file changed?)", path, line_no, file->valuestring, ln,
                         a, b);
            r->text = strndup(src, b - a);
            r->text_len = b - a;
            r->decoded = NULL;
            r->decoded_len = (size_t)dl->valuedouble;
            r->decoded_fnv = parse_hex64(dh->valuestring);
        }
        assert_non_null(r->text);
        fx->json[fx->n_rows] = j;
        fx->n_rows++;
    }
    data_free(&cache);
    if (expected >= 0 && expected != fx->n_rows + fx->n_unresolved)
        fail_msg("%s: meta says %d rows, found %d", path, expected, fx->n_rows + fx->n_unresolved);
}

/* Compares got (n bytes) with the row's decoded text; on mismatch prints both. */
static int decoded_equal(const fixture_row *r, const char *got, size_t n) {
    if (r->decoded) return n == r->decoded_len && memcmp(got, r->decoded, n) == 0;
    return n == r->decoded_len && fnv1a64(got, n) == r->decoded_fnv;
}

static void report_decode_mismatch(const char *model, const char *what, const fixture_row *r,
                                   const char *got, size_t n) {
    static char q1[4096], q2[4096], q3[4096], il[4096];
    print_message("%s: %s mismatch at fixture row %d (%s)\n  text:     %s\n  ids:      %s\n"
                  "  expected: %s\n  got:      %s\n", model, what, r->id, r->kind,
                  quoted(r->text, r->text_len, q1, sizeof q1),
                  id_list(r->ids, r->n_ids, il, sizeof il),
                  r->decoded ? quoted(r->decoded, r->decoded_len, q2, sizeof q2)
                             : "(data snippet: compared by length and FNV-1a hash)",
                  quoted(got, n, q3, sizeof q3));
}

static void print_unresolved(const model_info *m, const fixture *fx) {
    if (fx->n_unresolved)
        print_message("[  NOTE    ] %s: %d data-snippet rows not checked: %s\n", m->name,
                      fx->n_unresolved, fx->unresolved_reason);
}

/* ------------------------------------------------------------- fixture-driven properties */

static void check_encode_matches_python(const model_info *m) {
    tokenizer *t = load_or_skip(m);
    fixture fx;
    fixture_load(m, &fx);
    print_unresolved(m, &fx);
    int mismatches = 0;
    char err[512];
    for (int i = 0; i < fx.n_rows; i++) {
        const fixture_row *r = &fx.rows[i];
        int *ids = NULL, n = 0;
        if (tokenizer_encode(t, r->text, &ids, &n, err, sizeof err) != 0)
            fail_msg("%s: encode of row %d failed: %s", m->name, r->id, err);
        if (n != r->n_ids || memcmp(ids, r->ids, (size_t)n * sizeof(int)) != 0) {
            if (mismatches++ == 0) {
                static char q[4096], a[8192], b[8192];
                print_message("%s: first encode mismatch at fixture row %d (%s)\n  text:   %s\n"
                              "  python: %s\n  C:      %s\n", m->name, r->id, r->kind,
                              quoted(r->text, r->text_len, q, sizeof q),
                              id_list(r->ids, r->n_ids, a, sizeof a), id_list(ids, n, b, sizeof b));
            }
        }
        free(ids);
    }
    print_message("[  INFO    ] %s: %d strings encoded, %d mismatches (fixture: sentencepiece "
                  "%s)\n", m->name, fx.n_rows, mismatches, fx.spm_version);
    fixture_free(&fx);
    tokenizer_free(t);
    assert_int_equal(mismatches, 0);
}

static void check_full_decode_matches_python(const model_info *m) {
    tokenizer *t = load_or_skip(m);
    fixture fx;
    fixture_load(m, &fx);
    int mismatches = 0;
    char err[512];
    for (int i = 0; i < fx.n_rows; i++) {
        const fixture_row *r = &fx.rows[i];
        char *text = NULL;
        if (tokenizer_decode(t, r->ids, r->n_ids, &text, err, sizeof err) != 0)
            fail_msg("%s: decode of row %d failed: %s", m->name, r->id, err);
        if (!decoded_equal(r, text, strlen(text)) && mismatches++ == 0)
            report_decode_mismatch(m->name, "first full-decode", r, text, strlen(text));
        free(text);
    }
    print_message("[  INFO    ] %s: %d id sequences decoded, %d mismatches\n", m->name, fx.n_rows,
                  mismatches);
    fixture_free(&fx);
    tokenizer_free(t);
    assert_int_equal(mismatches, 0);
}

/* Pushes ids one at a time (reset with prev_token = BOS, as after a BOS-prefixed prompt), then
 * flushes; returns the concatenated output (malloc'd). */
static char *stream_decode(tok_decoder *d, int prev, const int *ids, int n, size_t *len) {
    size_t cap = 64 + (size_t)n * TOK_DECODER_BUF, o = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    tok_decoder_reset(d, prev);
    for (int i = 0; i < n; i++) {
        int r = tok_decoder_push(d, ids[i], out + o, TOK_DECODER_BUF);
        if (r < 0) fail_msg("tok_decoder_push(%d) failed at position %d", ids[i], i);
        assert_int_equal(out[o + (size_t)r], '\0'); /* (<0x00> emits a NUL byte inside) */
        o += (size_t)r;
    }
    int r = tok_decoder_flush(d, out + o, TOK_DECODER_BUF);
    assert_true(r >= 0);
    o += (size_t)r;
    *len = o;
    return out;
}

static void check_stream_decode_matches_python(const model_info *m) {
    tokenizer *t = load_or_skip(m);
    tok_decoder *d = tok_decoder_new(t);
    assert_non_null(d);
    fixture fx;
    fixture_load(m, &fx);
    int mismatches = 0;
    for (int i = 0; i < fx.n_rows; i++) {
        const fixture_row *r = &fx.rows[i];
        size_t n;
        char *got = stream_decode(d, tokenizer_bos_id(t), r->ids, r->n_ids, &n);
        if (!decoded_equal(r, got, n) && mismatches++ == 0)
            report_decode_mismatch(m->name, "first streaming-decode", r, got, n);
        free(got);
    }
    print_message("[  INFO    ] %s: %d id sequences stream-decoded, %d mismatches\n", m->name,
                  fx.n_rows, mismatches);
    fixture_free(&fx);
    tok_decoder_free(d);
    tokenizer_free(t);
    assert_int_equal(mismatches, 0);
}

#define PER_MODEL(check, suffix, model) \
    static void test_##check##_##suffix(void **state) { (void)state; check(&model); }
PER_MODEL(check_encode_matches_python, stories260K, STORIES260K)
PER_MODEL(check_encode_matches_python, babyllama_tok105, BABYLLAMA)
PER_MODEL(check_encode_matches_python, llama2, LLAMA2)
PER_MODEL(check_full_decode_matches_python, stories260K, STORIES260K)
PER_MODEL(check_full_decode_matches_python, babyllama_tok105, BABYLLAMA)
PER_MODEL(check_full_decode_matches_python, llama2, LLAMA2)
PER_MODEL(check_stream_decode_matches_python, stories260K, STORIES260K)
PER_MODEL(check_stream_decode_matches_python, babyllama_tok105, BABYLLAMA)
PER_MODEL(check_stream_decode_matches_python, llama2, LLAMA2)

/* ---------------------------------------------------- streaming == DecodeIds on random ids */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random id sequences, biased toward the hard cases (byte pieces, control, unknown, "▁" pieces,
 * both at the start and in the middle): the concatenated stream must equal tokenizer_decode.
 * <0x00> is replaced by <0x01>: tokenizer_decode returns a C string, which cannot carry the NUL
 * that piece decodes to (test_nul_byte_piece_emits_one_nul covers it). */
static void check_stream_equals_decode_on_random_ids(const model_info *m) {
    tokenizer *t = load_or_skip(m);
    tok_decoder *d = tok_decoder_new(t);
    assert_non_null(d);
    const int V = tokenizer_vocab_size(t);
    int special[96], n_special = 0, n_word = 0;
    for (int i = 0; i < V && n_special < 96; i++) {
        const char *p = tokenizer_piece(t, i);
        const int word = strncmp(p, "\xe2\x96\x81", 3) == 0 && p[3] != '\0';
        if (i < 3 || strcmp(p, "\xe2\x96\x81") == 0 || strncmp(p, "<0xE", 4) == 0 ||
            strncmp(p, "<0xF", 4) == 0 || strncmp(p, "<0x8", 4) == 0 ||
            strncmp(p, "<0xC", 4) == 0 || (word && n_word++ < 16))
            special[n_special++] = i;
    }
    const int nul_id = tokenizer_piece_to_id(t, "<0x00>");
    uint64_t seed = 12345;
    int ids[48], mismatches = 0;
    const int trials = 3000;
    char err[512];
    for (int trial = 0; trial < trials; trial++) {
        const int n = (int)(rng_next(&seed) % 48);
        for (int i = 0; i < n; i++) {
            const uint64_t r = rng_next(&seed);
            ids[i] = (r & 1) && n_special ? special[(r >> 8) % (uint64_t)n_special]
                                          : (int)((r >> 8) % (uint64_t)V);
            if (ids[i] == nul_id) ids[i] = nul_id + 1;
        }
        char *want = NULL;
        if (tokenizer_decode(t, ids, n, &want, err, sizeof err) != 0) fail_msg("%s", err);
        size_t len;
        char *got = stream_decode(d, -1, ids, n, &len);
        if ((len != strlen(want) || memcmp(got, want, len) != 0) && mismatches++ == 0) {
            static char il[4096], q1[4096], q2[4096];
            print_message("%s: stream != DecodeIds for ids %s\n  DecodeIds: %s\n  stream:    %s\n",
                          m->name, id_list(ids, n, il, sizeof il),
                          quoted(want, strlen(want), q1, sizeof q1),
                          quoted(got, len, q2, sizeof q2));
        }
        free(want);
        free(got);
    }
    print_message("[  INFO    ] %s: %d random id sequences, %d stream/DecodeIds mismatches\n",
                  m->name, trials, mismatches);
    tok_decoder_free(d);
    tokenizer_free(t);
    assert_int_equal(mismatches, 0);
}
PER_MODEL(check_stream_equals_decode_on_random_ids, stories260K, STORIES260K)
PER_MODEL(check_stream_equals_decode_on_random_ids, babyllama_tok105, BABYLLAMA)
PER_MODEL(check_stream_equals_decode_on_random_ids, llama2, LLAMA2)

/* ------------------------------------------------------------------------ LLaMA-2 facts */

static void test_llama2_meaning_of_life_ids(void **state) {
    (void)state;
    tokenizer *t = load_or_skip(&LLAMA2);
    int *ids = NULL, n = 0;
    char err[512];
    assert_int_equal(tokenizer_encode(t, "I believe the meaning of life is", &ids, &n, err,
                                      sizeof err), 0);
    const int want[] = {1, 306, 4658, 278, 6593, 310, 2834, 338};
    assert_int_equal(n + 1, 8);
    assert_int_equal(tokenizer_bos_id(t), want[0]);
    for (int i = 0; i < n; i++) assert_int_equal(ids[i], want[i + 1]);
    free(ids);
    tokenizer_free(t);
}

static void check_special_ids_and_vocab_size(const model_info *m) {
    tokenizer *t = load_or_skip(m);
    assert_int_equal(tokenizer_vocab_size(t), m->vocab);
    assert_int_equal(tokenizer_bos_id(t), 1);
    assert_int_equal(tokenizer_eos_id(t), 2);
    assert_string_equal(tokenizer_piece(t, 0), "<unk>");
    assert_string_equal(tokenizer_piece(t, 1), "<s>");
    assert_string_equal(tokenizer_piece(t, 2), "</s>");
    assert_null(tokenizer_piece(t, -1));
    assert_null(tokenizer_piece(t, m->vocab));
    assert_int_equal(tokenizer_piece_to_id(t, "<s>"), 1);
    assert_int_equal(tokenizer_piece_to_id(t, "</s>"), 2);
    assert_int_equal(tokenizer_piece_to_id(t, "<unk>"), -1);
    assert_int_equal(tokenizer_piece_to_id(t, "no such piece, surely"), -1);
    for (int i = 3; i < m->vocab; i++)  /* every piece round-trips */
        assert_int_equal(tokenizer_piece_to_id(t, tokenizer_piece(t, i)), i);
    tokenizer_free(t);
}
PER_MODEL(check_special_ids_and_vocab_size, stories260K, STORIES260K)
PER_MODEL(check_special_ids_and_vocab_size, babyllama_tok105, BABYLLAMA)
PER_MODEL(check_special_ids_and_vocab_size, llama2, LLAMA2)

/* ------------------------------------------------------------------------ load errors */

static void test_missing_model_fails_naming_the_path(void **state) {
    (void)state;
    char err[512] = "";
    const char *path = "/nonexistent/dir/tokenizer.model";
    assert_null(tokenizer_load(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_null(strchr(err, '\n'));
    print_message("[  INFO    ] missing: %s\n", err);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void test_corrupt_model_fails_naming_the_path(void **state) {
    (void)state;
    char path[] = "/tmp/test_tokenizer_corrupt_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512];
    /* garbage that is not a protobuf */
    const char garbage[] = "this is not a sentencepiece model\xff\xff\xff\xff";
    write_file(path, garbage, sizeof garbage);
    assert_null(tokenizer_load(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_null(strchr(err, '\n'));
    print_message("[  INFO    ] garbage: %s\n", err);
    /* empty file */
    write_file(path, "", 0);
    assert_null(tokenizer_load(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    print_message("[  INFO    ] empty: %s\n", err);
    /* a real model cut in half */
    char real[1024];
    model_path(&LLAMA2, real, sizeof real);
    size_t len;
    char *buf = read_file(real, &len);
    if (buf) {
        write_file(path, buf, len / 2);
        assert_null(tokenizer_load(path, err, sizeof err));
        assert_non_null(strstr(err, path));
        print_message("[  INFO    ] truncated: %s\n", err);
        free(buf);
    }
    /* a directory */
    assert_null(tokenizer_load("/tmp", err, sizeof err));
    assert_non_null(strstr(err, "/tmp"));
    remove(path);
}

/* --------------------------------------------------------------- streaming specifics */

static int id_of(const tokenizer *t, const char *piece) {
    int id = tokenizer_piece_to_id(t, piece);
    if (id < 0) fail_msg("piece %s not in the vocabulary", piece);
    return id;
}

static void test_split_multibyte_char_emits_nothing_until_complete(void **state) {
    (void)state;
    tokenizer *t = load_or_skip(&STORIES260K); /* 中 is not a piece there: byte fallback */
    tok_decoder *d = tok_decoder_new(t);
    char out[TOK_DECODER_BUF];
    tok_decoder_reset(d, tokenizer_bos_id(t));
    /* 中 = E4 B8 AD */
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0xE4>"), out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0xB8>"), out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0xAD>"), out, sizeof out), 3);
    assert_string_equal(out, "\xe4\xb8\xad");
    /* 😀 = F0 9F 98 80, then a word piece */
    const char *emoji[] = {"<0xF0>", "<0x9F>", "<0x98>"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(tok_decoder_push(d, id_of(t, emoji[i]), out, sizeof out), 0);
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0x80>"), out, sizeof out), 4);
    assert_string_equal(out, "\xf0\x9f\x98\x80");
    assert_int_equal(tok_decoder_push(d, id_of(t, "\xe2\x96\x81the"), out, sizeof out), 4);
    assert_string_equal(out, " the");
    /* an incomplete character cut by a normal piece: U+FFFD per byte, then the piece */
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0xE4>"), out, sizeof out), 0);
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0xB8>"), out, sizeof out), 0);
    assert_int_equal(tok_decoder_push(d, id_of(t, "a"), out, sizeof out), 7);
    assert_string_equal(out, "\xef\xbf\xbd\xef\xbf\xbd" "a");
    /* a lead byte followed by a non-continuation byte fails at once */
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0xE4>"), out, sizeof out), 0);
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0x41>"), out, sizeof out), 4);
    assert_string_equal(out, "\xef\xbf\xbd" "A");
    /* pending bytes at the end come out of flush */
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0xF0>"), out, sizeof out), 0);
    assert_int_equal(tok_decoder_flush(d, out, sizeof out), 3);
    assert_string_equal(out, "\xef\xbf\xbd");
    assert_int_equal(tok_decoder_flush(d, out, sizeof out), 0);
    tok_decoder_free(d);
    tokenizer_free(t);
}

static void test_invalid_utf8_input_encodes_as_replacement_chars(void **state) {
    (void)state;
    tokenizer *t = load_or_skip(&LLAMA2);
    int *ids = NULL, n = 0;
    char err[512], *text = NULL;
    assert_int_equal(tokenizer_encode(t, "a\xff" "b", &ids, &n, err, sizeof err), 0);
    assert_int_equal(tokenizer_decode(t, ids, n, &text, err, sizeof err), 0);
    assert_string_equal(text, "a\xef\xbf\xbd" "b");
    free(ids);
    free(text);
    tokenizer_free(t);
}

static void test_nul_byte_piece_emits_one_nul(void **state) {
    (void)state;
    tokenizer *t = load_or_skip(&LLAMA2);
    tok_decoder *d = tok_decoder_new(t);
    char out[TOK_DECODER_BUF];
    tok_decoder_reset(d, tokenizer_bos_id(t));
    assert_int_equal(tok_decoder_push(d, id_of(t, "<0x00>"), out, sizeof out), 1);
    assert_int_equal(out[0], '\0');
    assert_int_equal(tok_decoder_push(d, id_of(t, "\xe2\x96\x81" "a"), out, sizeof out), 2);
    assert_string_equal(out, " a"); /* the NUL counted as output: no stripping after it */
    tok_decoder_free(d);
    tokenizer_free(t);
}

static void test_leading_space_stripped_only_at_text_start(void **state) {
    (void)state;
    tokenizer *t = load_or_skip(&LLAMA2);
    tok_decoder *d = tok_decoder_new(t);
    char out[TOK_DECODER_BUF];
    const int hello = id_of(t, "\xe2\x96\x81Hello"), world = id_of(t, "\xe2\x96\x81world");
    tok_decoder_reset(d, tokenizer_bos_id(t));
    assert_int_equal(tok_decoder_push(d, tokenizer_bos_id(t), out, sizeof out), 0);
    assert_int_equal(tok_decoder_push(d, hello, out, sizeof out), 5);
    assert_string_equal(out, "Hello");
    assert_int_equal(tok_decoder_push(d, world, out, sizeof out), 6);
    assert_string_equal(out, " world");
    assert_int_equal(tok_decoder_push(d, tokenizer_eos_id(t), out, sizeof out), 0);
    /* continuing after a prompt token: the space stays */
    tok_decoder_reset(d, hello);
    assert_int_equal(tok_decoder_push(d, world, out, sizeof out), 6);
    assert_string_equal(out, " world");
    /* prev_token -1: start of text */
    tok_decoder_reset(d, -1);
    assert_int_equal(tok_decoder_push(d, world, out, sizeof out), 5);
    assert_string_equal(out, "world");
    tok_decoder_free(d);
    tokenizer_free(t);
}

static void test_push_with_small_buffer_consumes_nothing(void **state) {
    (void)state;
    tokenizer *t = load_or_skip(&LLAMA2);
    tok_decoder *d = tok_decoder_new(t);
    char out[TOK_DECODER_BUF];
    const int hello = id_of(t, "\xe2\x96\x81Hello");
    tok_decoder_reset(d, hello);
    assert_int_equal(tok_decoder_push(d, hello, out, 3), -1);
    assert_string_equal(out, "");
    assert_int_equal(tok_decoder_push(d, hello, out, 7), 6);
    assert_string_equal(out, " Hello");
    assert_int_equal(tok_decoder_push(d, -1, out, sizeof out), -1);
    assert_int_equal(tok_decoder_push(d, 32000, out, sizeof out), -1);
    char err[512], *text = NULL;
    const int bad[] = {1, 32000};
    assert_int_equal(tokenizer_decode(t, bad, 2, &text, err, sizeof err), -1);
    assert_null(text);
    assert_non_null(strstr(err, "32000"));
    tok_decoder_free(d);
    tokenizer_free(t);
}

static void test_unknown_emits_the_unk_surface(void **state) {
    (void)state;
    tokenizer *t = load_or_skip(&LLAMA2);
    tok_decoder *d = tok_decoder_new(t);
    char out[TOK_DECODER_BUF];
    tok_decoder_reset(d, tokenizer_bos_id(t));
    assert_int_equal(tok_decoder_push(d, 0, out, sizeof out), 5);
    assert_string_equal(out, " \xe2\x81\x87 ");
    tok_decoder_free(d);
    tokenizer_free(t);
}

/* ------------------------------------------------------------------------ chat template */

static void test_chat_format_llama2(void **state) {
    (void)state;
    char *s = chat_format_llama2("You are helpful.", "Hi there");
    assert_string_equal(s, "[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHi there [/INST]");
    free(s);
    s = chat_format_llama2(NULL, "Hi there");
    assert_string_equal(s, "[INST] Hi there [/INST]");
    free(s);
    s = chat_format_llama2("", "Hi");
    assert_string_equal(s, "[INST] Hi [/INST]");
    free(s);
    assert_null(chat_format_llama2("x", NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_encode_matches_python_stories260K),
        cmocka_unit_test(test_check_encode_matches_python_babyllama_tok105),
        cmocka_unit_test(test_check_encode_matches_python_llama2),
        cmocka_unit_test(test_check_full_decode_matches_python_stories260K),
        cmocka_unit_test(test_check_full_decode_matches_python_babyllama_tok105),
        cmocka_unit_test(test_check_full_decode_matches_python_llama2),
        cmocka_unit_test(test_check_stream_decode_matches_python_stories260K),
        cmocka_unit_test(test_check_stream_decode_matches_python_babyllama_tok105),
        cmocka_unit_test(test_check_stream_decode_matches_python_llama2),
        cmocka_unit_test(test_check_stream_equals_decode_on_random_ids_stories260K),
        cmocka_unit_test(test_check_stream_equals_decode_on_random_ids_babyllama_tok105),
        cmocka_unit_test(test_check_stream_equals_decode_on_random_ids_llama2),
        cmocka_unit_test(test_llama2_meaning_of_life_ids),
        cmocka_unit_test(test_check_special_ids_and_vocab_size_stories260K),
        cmocka_unit_test(test_check_special_ids_and_vocab_size_babyllama_tok105),
        cmocka_unit_test(test_check_special_ids_and_vocab_size_llama2),
        cmocka_unit_test(test_missing_model_fails_naming_the_path),
        cmocka_unit_test(test_corrupt_model_fails_naming_the_path),
        cmocka_unit_test(test_split_multibyte_char_emits_nothing_until_complete),
        cmocka_unit_test(test_invalid_utf8_input_encodes_as_replacement_chars),
        cmocka_unit_test(test_nul_byte_piece_emits_one_nul),
        cmocka_unit_test(test_leading_space_stripped_only_at_text_start),
        cmocka_unit_test(test_push_with_small_buffer_consumes_nothing),
        cmocka_unit_test(test_unknown_emits_the_unk_surface),
        cmocka_unit_test(test_chat_format_llama2),
    };
    return cmocka_run_group_tests_name("tokenizer", tests, NULL, NULL);
}
