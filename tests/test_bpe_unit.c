/* test_bpe_unit.c — the parts of tokenizer/ that need no real model:
 *   - tokenizer.json features the two real models do not use (added-token lstrip / rstrip /
 *     single_word / normalized, ByteLevel add_prefix_space, Split behaviours and invert, String
 *     patterns, Digits runs, NFKC/NFD, ignore_merges, "a b" merges, TemplateProcessing,
 *     tokenizer_config.json add_bos_token): ids and decoded text equal the `tokenizers` library
 *     on tests/fixtures/bpe/synthetic (scripts/make_bpe_synthetic_fixtures.py);
 *   - one-line errors naming the field for broken tokenizer.json files and GGUF specs;
 *   - chat template detection and its errors, the --messages parser;
 *   - SentencePiece with TOK_PARSE_SPECIAL / TOK_ADD_SPECIAL (../shared/models/llama2-tokenizer);
 *   - the streaming decoder refusing a too-small buffer without losing state.
 * Kept whole (over ~500 lines): one case per tokenizer.json feature, all driven by the same synthetic-fixture
 * reader; a few lines each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tokenizer/tokenizer.h"

#define SYN_DIR "tests/fixtures/bpe/synthetic"

static char g_tmp[256];  /* a private temporary folder */

static int setup(void **s) {
    (void)s;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/test_bpe_unit.XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **s) {
    (void)s;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    const size_t r = fread(b, 1, (size_t)n, f);
    b[r] = '\0';
    fclose(f);
    return b;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ------------------------------------------------------------ synthetic tokenizer.json */

static void test_synthetic_configs(void **s) {
    (void)s;
    char *buf = slurp(SYN_DIR "/cases.jsonl"), err[512], name[64] = "";
    assert_non_null(buf);
    tokenizer *t = NULL;
    int rows = 0, bad = 0;
    for (char *p = strchr(buf, '\n') + 1; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        cJSON *j = cJSON_Parse(p);
        p = nl ? nl + 1 : NULL;
        const char *cfg = cJSON_GetObjectItem(j, "config")->valuestring;
        if (strcmp(cfg, name) != 0) {
            tokenizer_free(t);
            char dir[256];
            snprintf(dir, sizeof dir, SYN_DIR "/%s", cfg);
            t = tokenizer_load(dir, err, sizeof err);
            if (!t) fail_msg("%s: %s", dir, err);
            snprintf(name, sizeof name, "%s", cfg);
            if (strcmp(cfg, "split_behaviors") == 0) {  /* TemplateProcessing: BOS and EOS */
                assert_int_equal(tokenizer_add_bos(t), 1);
                assert_int_equal(tokenizer_add_eos(t), 1);
                assert_string_equal(tokenizer_piece(t, tokenizer_bos_id(t)), "<bos>");
            } else if (strcmp(cfg, "config_bos") == 0) {  /* tokenizer_config.json overrides */
                assert_int_equal(tokenizer_add_bos(t), 0);
                assert_int_equal(tokenizer_add_eos(t), 1);
                assert_string_equal(tokenizer_piece(t, tokenizer_eos_id(t)), "<eos>");
            } else {
                assert_int_equal(tokenizer_add_bos(t), 0);
            }
        }
        const char *text = cJSON_GetObjectItem(j, "text")->valuestring;
        const unsigned flags = (cJSON_GetObjectItem(j, "special")->valueint ? TOK_PARSE_SPECIAL : 0) |
                               (cJSON_GetObjectItem(j, "add_special")->valueint ? TOK_ADD_SPECIAL : 0);
        int *ids, n;
        assert_int_equal(tokenizer_encode_ex(t, text, strlen(text), flags, &ids, &n, err,
                                             sizeof err), 0);
        const cJSON *want = cJSON_GetObjectItem(j, "ids"), *e;
        int k = 0, same = n == cJSON_GetArraySize(want);
        cJSON_ArrayForEach(e, want) same = same && k < n && ids[k++] == e->valueint;
        char *dec;
        assert_int_equal(tokenizer_decode_ex(t, ids, n, TOK_DECODE_SPECIAL, &dec, NULL, err,
                                             sizeof err), 0);
        const char *wdec = cJSON_GetObjectItem(j, "decoded")->valuestring;
        if (!same || strcmp(dec, wdec) != 0) {
            bad++;
            char *ws = cJSON_PrintUnformatted(want), *ts = cJSON_PrintUnformatted(
                cJSON_GetObjectItem(j, "text")), got[512];
            size_t o = 0;
            for (int q = 0; q < n && o + 16 < sizeof got; q++)
                o += (size_t)snprintf(got + o, sizeof got - o, q ? ",%d" : "%d", ids[q]);
            got[o] = '\0';
            print_message("  %s %s flags %u: ids [%s] (want %s), decoded \"%s\" (want \"%s\")\n",
                          cfg, ts, flags, got, ws, dec, wdec);
            free(ws);
            free(ts);
        }
        rows++;
        free(dec);
        free(ids);
        cJSON_Delete(j);
    }
    tokenizer_free(t);
    free(buf);
    print_message("  synthetic tokenizer.json: %d/%d cases equal tokenizers\n", rows - bad, rows);
    assert_true(rows > 400);
    assert_int_equal(bad, 0);
}

/* ----------------------------------------------------------------- bad tokenizer.json */

/* A small valid byte-level tokenizer.json: the 256 byte characters, "ab", merge (a, b). */
static cJSON *base_json(void) {
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    for (unsigned b = 0; b < 256; b++) {
        unsigned cp = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? b
                    : b <= 0x20 ? 256 + b : b <= 0xA0 ? 289 + b - 0x7F : 323;
        char u[3] = {0};
        if (cp < 0x80) u[0] = (char)cp;
        else { u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3F)); }
        cJSON_AddNumberToObject(vocab, u, b);
    }
    cJSON_AddNumberToObject(vocab, "ab", 256);
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    cJSON_AddItemToArray(merges, cJSON_CreateString("a b"));
    cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "ByteLevel");
    cJSON_AddFalseToObject(pre, "add_prefix_space");
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON_AddStringToObject(dec, "type", "ByteLevel");
    return root;
}

/* Writes j (or raw text) as <tmp>/<name>/tokenizer.json, loads it, expects an error that
 * mentions every needle, is one line and names the file. */
static void expect_json_error(const char *name, cJSON *j, const char *raw,
                              const char *needle1, const char *needle2) {
    char dir[512], path[600], err[512];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, name);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    char *text = j ? cJSON_PrintUnformatted(j) : strdup(raw);
    write_file(path, text);
    free(text);
    cJSON_Delete(j);
    err[0] = '\0';
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    if (t) fail_msg("%s: loaded, expected an error mentioning %s", name, needle1);
    if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)) || strchr(err, '\n') ||
        !strstr(err, "tokenizer.json"))
        fail_msg("%s: error \"%s\" should be one line naming the file, %s%s%s", name, err,
                 needle1, needle2 ? " and " : "", needle2 ? needle2 : "");
}

static void test_bad_tokenizer_json(void **s) {
    (void)s;
    char path[600], err[512];
    cJSON *j = base_json();  /* the base itself loads */
    snprintf(path, sizeof path, "%s/good.json", g_tmp);
    char *text = cJSON_PrintUnformatted(j);
    write_file(path, text);
    free(text);
    cJSON_Delete(j);
    tokenizer *t = tokenizer_load(path, err, sizeof err);  /* any name: sniffed as JSON */
    if (!t) fail_msg("%s", err);
    int *ids, n;
    assert_int_equal(tokenizer_encode(t, "abc", &ids, &n, NULL, 0), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 256);
    free(ids);
    tokenizer_free(t);

    expect_json_error("not_json", NULL, "{\"model\": [1, 2", "invalid JSON", NULL);
    j = base_json();
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "model"), "vocab");
    expect_json_error("no_vocab", j, NULL, "model.vocab", "missing");
    j = base_json();
    cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "merges"),
                         cJSON_CreateString("ab zz"));
    expect_json_error("merge_unknown", j, NULL, "model.merges[1]", "\"zz\" is not in the vocabulary");
    j = base_json();
    cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "merges"),
                         cJSON_CreateString("b a"));
    expect_json_error("merge_result", j, NULL, "model.merges[1]", "merged token \"ba\"");
    j = base_json();
    cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "merges"),
                         cJSON_CreateString("abc"));
    expect_json_error("merge_shape", j, NULL, "model.merges[1]", "expected \"a b\"");
    j = base_json();
    cJSON_ReplaceItemInObject(j, "pre_tokenizer", cJSON_Parse(
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
        "{\"Regex\":\"(\\\\p{L}+\"},\"behavior\":\"Isolated\",\"invert\":false}]}"));
    expect_json_error("bad_regex", j, NULL, "pre_tokenizer.pretokenizers[0].pattern.Regex",
                      "bad regex");
    j = base_json();
    cJSON_ReplaceItemInObject(j, "pre_tokenizer", cJSON_Parse("{\"type\":\"Metaspace\"}"));
    expect_json_error("pre_type", j, NULL, "pre_tokenizer.type \"Metaspace\"", "not supported");
    j = base_json();
    cJSON_ReplaceItemInObject(j, "pre_tokenizer", cJSON_Parse(
        "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Sideways\"}"));
    expect_json_error("behavior", j, NULL, "pre_tokenizer.behavior", "Sideways");
    j = base_json();
    cJSON_AddItemToObject(j, "normalizer", cJSON_Parse("{\"type\":\"Lowercase\"}"));
    expect_json_error("norm_type", j, NULL, "normalizer.type \"Lowercase\"", NULL);
    j = base_json();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "model"), "type",
                              cJSON_CreateString("WordPiece"));
    expect_json_error("model_type", j, NULL, "model.type \"WordPiece\"", NULL);
    j = base_json();
    cJSON_DeleteItemFromObject(j, "decoder");
    expect_json_error("no_decoder", j, NULL, "decoder", NULL);
    j = base_json();
    cJSON_AddItemToObject(j, "added_tokens", cJSON_Parse("[{\"id\": 3}]"));
    expect_json_error("added", j, NULL, "added_tokens[0]", NULL);

    /* tokenizer_config.json naming a token that does not exist */
    snprintf(path, sizeof path, "%s/cfg", g_tmp);
    mkdir(path, 0755);
    j = base_json();
    text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/cfg/tokenizer.json", g_tmp);
    write_file(path, text);
    free(text);
    snprintf(path, sizeof path, "%s/cfg/tokenizer_config.json", g_tmp);
    write_file(path, "{\"bos_token\": \"<nope>\"}");
    snprintf(path, sizeof path, "%s/cfg", g_tmp);
    assert_null(tokenizer_load(path, err, sizeof err));
    assert_non_null(strstr(err, "tokenizer_config.json: bos_token \"<nope>\""));
    assert_null(tokenizer_load("/nonexistent/tokenizer.json", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/tokenizer.json"));
}

/* ----------------------------------------------------------------------- bad GGUF specs */

static void test_bad_spec(void **s) {
    (void)s;
    static char texts[257][4];
    const char *toks[257];
    for (unsigned b = 0; b < 256; b++) {
        unsigned cp = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? b
                    : b <= 0x20 ? 256 + b : b <= 0xA0 ? 289 + b - 0x7F : 323;
        if (cp < 0x80) texts[b][0] = (char)cp;
        else { texts[b][0] = (char)(0xC0 | (cp >> 6)); texts[b][1] = (char)(0x80 | (cp & 0x3F)); }
        toks[b] = texts[b];
    }
    toks[256] = "ab";
    const char *merges[] = {"a b", "ab zz", "ab"};
    char err[512];
    tok_bpe_spec sp;
    static const char *const ok_pre[] = {NULL, "default", "gpt-2", "smollm", "qwen2", "llama-bpe",
                                         "llama3"};
    for (size_t i = 0; i < sizeof ok_pre / sizeof *ok_pre; i++) {
        tok_bpe_spec_init(&sp);
        sp.tokens = toks; sp.n_tokens = 257; sp.merges = merges; sp.n_merges = 1;
        sp.pre = ok_pre[i]; sp.bos_id = 256; sp.source = "x.gguf";
        tokenizer *t = tokenizer_load_bpe(&sp, err, sizeof err);
        if (!t) fail_msg("pre %s: %s", ok_pre[i] ? ok_pre[i] : "(null)", err);
        /* llama.cpp's default: llama3 adds BOS, the others do not */
        assert_int_equal(tokenizer_add_bos(t), ok_pre[i] && strncmp(ok_pre[i], "llama", 5) == 0);
        int *ids, n;
        assert_int_equal(tokenizer_encode_ex(t, "ab", 2, TOK_ADD_SPECIAL, &ids, &n, NULL, 0), 0);
        assert_int_equal(ids[n - 1], 256);
        free(ids);
        tokenizer_free(t);
    }
    tok_bpe_spec_init(&sp);
    sp.tokens = toks; sp.n_tokens = 257; sp.merges = merges; sp.n_merges = 1; sp.pre = "foo";
    sp.source = "x.gguf";
    assert_null(tokenizer_load_bpe(&sp, err, sizeof err));
    assert_non_null(strstr(err, "x.gguf: tokenizer.ggml.pre \"foo\" is not supported"));
    sp.pre = "qwen2";
    sp.n_merges = 2;
    assert_null(tokenizer_load_bpe(&sp, err, sizeof err));
    assert_non_null(strstr(err, "tokenizer.ggml.merges[1] \"ab zz\": \"zz\" is not in the vocabulary"));
    sp.merges = merges + 2;
    sp.n_merges = 1;
    assert_null(tokenizer_load_bpe(&sp, err, sizeof err));
    assert_non_null(strstr(err, "tokenizer.ggml.merges[0] \"ab\" is not \"a b\""));
    sp.merges = merges;
    int types[257];
    for (int i = 0; i < 257; i++) types[i] = 1;
    types[3] = 9;
    sp.token_type = types;
    assert_null(tokenizer_load_bpe(&sp, err, sizeof err));
    assert_non_null(strstr(err, "tokenizer.ggml.token_type[3] = 9"));
    sp.token_type = NULL;
    sp.add_bos = 1;
    assert_null(tokenizer_load_bpe(&sp, err, sizeof err));
    assert_non_null(strstr(err, "add_bos_token"));
    sp.add_bos = -1;
    sp.n_tokens = 0;
    assert_null(tokenizer_load_bpe(&sp, err, sizeof err));
    assert_non_null(strstr(err, "tokenizer.ggml.tokens"));
    assert_null(tokenizer_load_bpe(NULL, err, sizeof err));
}

/* ------------------------------------------------------------------- chat templates */

static void test_template_detection(void **s) {
    (void)s;
    char err[512];
    chat_template *ct = chat_template_new(
        "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + "
        "'<|im_end|>\\n'}}{% endfor %}", NULL, NULL, NULL, err, sizeof err);
    assert_non_null(ct);
    assert_int_equal(chat_template_family(ct), CHAT_FAMILY_CHATML);
    assert_null(chat_template_default_system(ct));  /* plain ChatML: no default */
    const chat_message m1[] = {{"user", "hi"}};
    char *out = chat_template_render(ct, m1, 1, 1, err, sizeof err);
    assert_string_equal(out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    free(out);
    const chat_message bad_role[] = {{"user", "hi"}, {"tool", "x"}};
    assert_null(chat_template_render(ct, bad_role, 2, 0, err, sizeof err));
    assert_non_null(strstr(err, "message 2: role \"tool\""));
    assert_null(chat_template_render(ct, m1, 0, 0, err, sizeof err));
    chat_template_free(ct);

    /* a default system prompt written with Jinja escapes in a double-quoted literal */
    ct = chat_template_new("{{ \"<|im_start|>system\\nBe \\\"brief\\\"\\u00e9<|im_end|>\\n\" }}",
                           NULL, NULL, NULL, err, sizeof err);
    assert_string_equal(chat_template_default_system(ct), "Be \"brief\"\xc3\xa9");
    chat_template_free(ct);

    /* no template (SentencePiece folders): Llama-2 */
    ct = chat_template_new(NULL, NULL, "<s>", "</s>", err, sizeof err);
    assert_int_equal(chat_template_family(ct), CHAT_FAMILY_LLAMA2);
    assert_string_equal(chat_template_name(ct), "llama2");
    const chat_message m2[] = {{"system", " S "}, {"user", " u "}, {"assistant", " a "},
                               {"user", "v"}};
    out = chat_template_render(ct, m2, 4, 1, err, sizeof err);
    assert_string_equal(out, "<s>[INST] <<SYS>>\n S \n<</SYS>>\n\n u [/INST] a </s><s>[INST] v [/INST]");
    free(out);
    const chat_message m3[] = {{"user", "a"}, {"user", "b"}};
    assert_null(chat_template_render(ct, m3, 2, 0, err, sizeof err));
    assert_non_null(strstr(err, "message 2"));
    assert_non_null(strstr(err, "alternate"));
    chat_template_free(ct);

    ct = chat_template_new("{{ '<|start_header_id|>' }}{{ '<|end_header_id|>' }}", NULL,
                           "<|begin_of_text|>", "<|eot_id|>", err, sizeof err);
    assert_int_equal(chat_template_family(ct), CHAT_FAMILY_LLAMA3);
    chat_template_free(ct);

    /* errors name --chat-template */
    assert_null(chat_template_new("{{ messages | tojson }}", NULL, NULL, NULL, err, sizeof err));
    assert_non_null(strstr(err, "--chat-template chatml|llama3|llama2"));
    assert_null(chat_template_new(NULL, "vicuna", NULL, NULL, err, sizeof err));
    assert_non_null(strstr(err, "unknown chat template \"vicuna\" (--chat-template"));
    assert_null(chat_template_new("<|start_header_id|><|end_header_id|>Cutting Knowledge Date",
                                  NULL, NULL, NULL, err, sizeof err));
    assert_non_null(strstr(err, "--chat-template llama3"));
    assert_null(chat_template_new("[INST][SYSTEM_PROMPT]", NULL, NULL, NULL, err, sizeof err));
    /* an override renders anything */
    ct = chat_template_new("{{ messages | tojson }}", "chatml", NULL, NULL, err, sizeof err);
    assert_int_equal(chat_template_family(ct), CHAT_FAMILY_CHATML);
    chat_template_free(ct);
    ct = chat_template_new("{{ '<|im_start|>system\\nX<|im_end|>' }}", "llama3", "<b>", "",
                           err, sizeof err);
    assert_null(chat_template_default_system(ct));  /* the default belongs to ChatML only */
    out = chat_template_render(ct, m1, 1, 0, err, sizeof err);
    assert_string_equal(out, "<b><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>");
    free(out);
    chat_template_free(ct);
}

static void test_messages_file(void **s) {
    (void)s;
    char path[600], err[512];
    chat_message *m;
    int n;
    snprintf(path, sizeof path, "%s/msgs.json", g_tmp);
    write_file(path, "[{\"role\": \"system\", \"content\": \"be brief\", \"name\": \"x\"},\n"
                     " {\"role\": \"user\", \"content\": \"hi \\u00e9\\n\"}]");
    assert_int_equal(chat_messages_load(path, &m, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(m[0].role, "system");
    assert_string_equal(m[1].content, "hi \xc3\xa9\n");
    chat_messages_free(m, n);
    static const struct { const char *json, *needle; } bad[] = {
        {"[{\"role\": \"user\", \"content\": \"x\"}", "invalid JSON at byte"},
        {"{\"role\": \"user\"}", "expected a JSON array"},
        {"[]", "no messages"},
        {"[{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"user\"}]",
         "message 2 missing \"content\""},
        {"[{\"content\": \"x\"}]", "message 1 missing \"role\""},
        {"[{\"role\": \"user\", \"content\": 3}]", "message 1 missing \"content\""},
        {"[\"hi\"]", "message 1 is not an object"},
        {"[{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"b\"}, "
         "{\"role\": \"tool\", \"content\": \"c\"}]", "message 3: unknown role \"tool\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_file(path, bad[i].json);
        assert_int_equal(chat_messages_load(path, &m, &n, err, sizeof err), -1);
        assert_null(m);
        if (!strstr(err, bad[i].needle) || !strstr(err, path) || strchr(err, '\n'))
            fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err, bad[i].needle);
    }
    assert_int_equal(chat_messages_load("/nonexistent.json", &m, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent.json: cannot open"));
}

/* ----------------------------------------------------------------------- SentencePiece */

static void test_spm_specials(void **s) {
    (void)s;
    const char *sh = getenv("LLM_SHARED");
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/models/llama2-tokenizer", sh && sh[0] ? sh : "../shared");
    if (access(path, R_OK) != 0) {
        print_message("[  SKIP    ] %s not found\n", path);
        skip();
    }
    tokenizer *t = tokenizer_load(path, err, sizeof err);  /* a folder: tokenizer.model */
    if (!t) fail_msg("%s", err);
    assert_int_equal(tokenizer_kind(t), TOK_KIND_SPM);
    assert_int_equal(tokenizer_add_bos(t), 1);
    assert_null(tokenizer_chat_template(t));
    const int *eog;
    assert_int_equal(tokenizer_eog_ids(t, &eog), 1);
    assert_int_equal(eog[0], 2);
    const char *text = "<s>[INST] hi [/INST] ok </s>";
    int *a, na, *b, nb, *c, nc;
    assert_int_equal(tokenizer_encode_ex(t, text, strlen(text), TOK_PARSE_SPECIAL | TOK_ADD_SPECIAL,
                                         &a, &na, err, sizeof err), 0);
    assert_int_equal(tokenizer_encode(t, "[INST] hi [/INST] ok ", &b, &nb, err, sizeof err), 0);
    assert_int_equal(na, nb + 3);  /* BOS (added), <s> (parsed), ..., </s> (parsed) */
    assert_int_equal(a[0], 1);
    assert_int_equal(a[1], 1);
    assert_memory_equal(a + 2, b, (size_t)nb * sizeof *b);
    assert_int_equal(a[na - 1], 2);
    /* the historical encode does not parse them */
    assert_int_equal(tokenizer_encode(t, text, &c, &nc, err, sizeof err), 0);
    assert_true(nc > na);
    free(a);
    free(b);
    free(c);
    tokenizer_free(t);
}

/* ------------------------------------------------------------------- streaming buffer */

static void test_stream_small_buffer(void **s) {
    (void)s;
    char err[512];
    tokenizer *t = tokenizer_load(SYN_DIR "/prefix_space", err, sizeof err);
    if (!t) fail_msg("%s", err);
    int *ids, n;
    const char *text = "Привет, мир! 👍🏽 hello world";
    assert_int_equal(tokenizer_encode(t, text, &ids, &n, err, sizeof err), 0);
    tok_decoder *d = tok_decoder_new(t);
    char small[2], big[TOK_DECODER_BUF], acc[256] = "";
    for (int i = 0; i < n; i++) {
        int r = tok_decoder_push(d, ids[i], small, sizeof small);
        if (r < 0) r = tok_decoder_push(d, ids[i], big, sizeof big);  /* nothing was lost */
        else memcpy(big, small, sizeof small);
        assert_true(r >= 0);
        strncat(acc, big, (size_t)r);
    }
    assert_true(tok_decoder_flush(d, big, sizeof big) == 0);
    assert_string_equal(acc, " Привет, мир! 👍🏽 hello world");  /* add_prefix_space */
    assert_int_equal(tok_decoder_push(d, -1, big, sizeof big), -1);
    assert_int_equal(tok_decoder_push(d, tokenizer_vocab_size(t), big, sizeof big), -1);
    tok_decoder_free(d);
    free(ids);
    tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_configs), cmocka_unit_test(test_bad_tokenizer_json),
        cmocka_unit_test(test_bad_spec),          cmocka_unit_test(test_template_detection),
        cmocka_unit_test(test_messages_file),     cmocka_unit_test(test_spm_specials),
        cmocka_unit_test(test_stream_small_buffer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
