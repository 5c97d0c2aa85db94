/* Tests for model/weights.c: tiny model folders built from C (tests/support/files.h) in a fresh
 * temporary folder per test: one file or two shards with an index, tied and untied lm_head,
 * F32/F16/BF16 weights and model_to_f32, every missing or inconsistent piece a one-line error;
 * then the stories260K folder of ../shared when it is there. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "model/model.h"
#include "tests/support/files.h"

/* ----------------------------------------------------------------- model folders */

typedef struct {
    const char *dtype;         /* of every tensor; "F32" when NULL */
    int with_lm_head;
    int with_inv_freq;
    int shards;                /* 0: model.safetensors; 2: two shards + index.json */
    const char *omit;          /* tensor left out of the files (and the index) */
    const char *reshape;       /* tensor written with shape [reshape_rows][reshape_cols] */
    int reshape_rows, reshape_cols;
    const char *config_extra;
} model_spec;

enum { DIM = 8, FFN = 16, LAYERS = 2, HEADS = 2, KV = 1, HD = DIM / HEADS, VOCAB = 10 };

typedef struct { char name[96]; int rows, cols; } tshape;   /* rows 0: 1-D */

static int tiny_tensors(tshape *t, const model_spec *s) {
    int n = 0;
#define ADD(r, c, ...) (snprintf(t[n].name, sizeof t[n].name, __VA_ARGS__), t[n].rows = (r), t[n].cols = (c), n++)
    ADD(VOCAB, DIM, "model.embed_tokens.weight");
    for (int l = 0; l < LAYERS; l++) {
        ADD(0, DIM, "model.layers.%d.input_layernorm.weight", l);
        ADD(HEADS * HD, DIM, "model.layers.%d.self_attn.q_proj.weight", l);
        ADD(KV * HD, DIM, "model.layers.%d.self_attn.k_proj.weight", l);
        ADD(KV * HD, DIM, "model.layers.%d.self_attn.v_proj.weight", l);
        ADD(DIM, HEADS * HD, "model.layers.%d.self_attn.o_proj.weight", l);
        if (s->with_inv_freq) ADD(0, HD / 2, "model.layers.%d.self_attn.rotary_emb.inv_freq", l);
        ADD(0, DIM, "model.layers.%d.post_attention_layernorm.weight", l);
        ADD(FFN, DIM, "model.layers.%d.mlp.gate_proj.weight", l);
        ADD(FFN, DIM, "model.layers.%d.mlp.up_proj.weight", l);
        ADD(DIM, FFN, "model.layers.%d.mlp.down_proj.weight", l);
    }
    ADD(0, DIM, "model.norm.weight");
    if (s->with_lm_head) ADD(VOCAB, DIM, "lm_head.weight");
#undef ADD
    return n;
}

/* The value written at element i of tensor name (exact in bf16 and f16). */
static float tval(const char *name, size_t i) {
    unsigned h = 5381;
    for (const char *p = name; *p; p++) h = h * 33 + (unsigned char)*p;
    return (float)(h % 61) - 30.0f + (float)(i % 8) * 0.125f;
}

static void make_model(const char *dir, const model_spec *s) {
    ts_write_config(dir, s->config_extra);
    tshape ts[64];
    int n = tiny_tensors(ts, s);
    const char *dtype = s->dtype ? s->dtype : "F32";
    ts_tdesc td[64];
    void *bufs[64];
    int nt = 0;
    for (int i = 0; i < n; i++) {
        if (s->omit && !strcmp(ts[i].name, s->omit)) continue;
        int rows = ts[i].rows, cols = ts[i].cols;
        if (s->reshape && !strcmp(ts[i].name, s->reshape)) rows = s->reshape_rows, cols = s->reshape_cols;
        size_t count = (size_t)(rows ? rows : 1) * (size_t)cols;
        bufs[nt] = malloc(count * 4);
        for (size_t k = 0; k < count; k++) {
            float v = tval(ts[i].name, k);
            if (!strcmp(dtype, "F32")) ((float *)bufs[nt])[k] = v;
            else if (!strcmp(dtype, "F16")) ((uint16_t *)bufs[nt])[k] = f32_to_f16(v);
            else ((uint16_t *)bufs[nt])[k] = f32_to_bf16(v);
        }
        td[nt] = (ts_tdesc){ts[i].name, dtype, rows ? 2 : 1, {rows ? rows : cols, cols}, bufs[nt]};
        nt++;
    }
    if (!s->shards) {
        ts_write_st_tensors(ts_at(dir, "model.safetensors"), td, nt);
    } else {
        /* tensor i goes to shard i % 2; the index maps every name to its shard */
        const char *names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
        ts_tdesc part[2][64];
        int np[2] = {0, 0};
        cJSON *root = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
        cJSON_AddNumberToObject(meta, "total_size", 1234);
        cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
        for (int i = 0; i < nt; i++) {
            part[i % 2][np[i % 2]++] = td[i];
            cJSON_AddStringToObject(map, td[i].name, names[i % 2]);
        }
        for (int k = 0; k < 2; k++) ts_write_st_tensors(ts_at(dir, names[k]), part[k], np[k]);
        char *json = cJSON_Print(root);
        ts_write_text(ts_at(dir, "model.safetensors.index.json"), json);
        free(json);
        cJSON_Delete(root);
    }
    for (int i = 0; i < nt; i++) free(bufs[i]);
}

/* Writes the model of s into dir and loads it; the load must succeed (its message is printed
 * when it does not). */
static void load_ok(const char *dir, const model_spec *s, model_weights *m) {
    char err[LLM_ERR_LEN];
    make_model(dir, s);
    int rc = model_load(dir, m, err, sizeof err);
    if (rc != 0) print_message("model_load: %s\n", err);
    assert_int_equal(rc, 0);
}

static void expect_load_error(const char *dir, const char *want1, const char *want2) {
    model_weights m;
    char err[LLM_ERR_LEN] = "";
    assert_int_equal(model_load(dir, &m, err, sizeof err), -1);
    assert_null(m.files);                              /* cleaned up */
    assert_null(m.layers);
    if (!strstr(err, want1)) fail_msg("error \"%s\" lacks \"%s\"", err, want1);
    if (want2 && !strstr(err, want2)) fail_msg("error \"%s\" lacks \"%s\"", err, want2);
}

/* Every weight of m holds the values make_model wrote (as F32 after model_to_f32, or in
 * the file dtype). */
static void check_weight(const weight_t *w, const char *name, int rows, int cols) {
    assert_int_equal(w->rows, rows);
    assert_int_equal(w->cols, cols);
    assert_non_null(w->data);
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++) {
        float v = w->dtype == DT_F32 ? ((const float *)w->data)[i]
                : w->dtype == DT_F16 ? f16_to_f32(((const uint16_t *)w->data)[i])
                                     : bf16_to_f32(((const uint16_t *)w->data)[i]);
        if (v != tval(name, i)) fail_msg("%s[%zu] = %g, expected %g", name, i, v, tval(name, i));
    }
}

static void check_tiny_model(const model_weights *m) {
    assert_int_equal(m->cfg.hidden_size, DIM);
    assert_int_equal(m->cfg.n_layers, LAYERS);
    check_weight(&m->embed, "model.embed_tokens.weight", VOCAB, DIM);
    check_weight(&m->final_norm, "model.norm.weight", 1, DIM);
    for (int l = 0; l < LAYERS; l++) {
        const layer_weights *lw = &m->layers[l];
        char name[96];
#define CHECK(field, suffix, r, c) \
        (snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, suffix), check_weight(&lw->field, name, r, c))
        CHECK(attn_norm, "input_layernorm", 1, DIM);
        CHECK(wq, "self_attn.q_proj", HEADS * HD, DIM);
        CHECK(wk, "self_attn.k_proj", KV * HD, DIM);
        CHECK(wv, "self_attn.v_proj", KV * HD, DIM);
        CHECK(wo, "self_attn.o_proj", DIM, HEADS * HD);
        CHECK(ffn_norm, "post_attention_layernorm", 1, DIM);
        CHECK(w_gate, "mlp.gate_proj", FFN, DIM);
        CHECK(w_up, "mlp.up_proj", FFN, DIM);
        CHECK(w_down, "mlp.down_proj", DIM, FFN);
#undef CHECK
    }
}

static void test_model_load_reads_tiny_folder(void **state) {
    model_spec s = {.with_lm_head = 1};
    model_weights m;
    load_ok(*state, &s, &m);
    assert_int_equal(m.n_files, 1);
    assert_int_equal(m.embed.dtype, DT_F32);
    check_tiny_model(&m);
    model_free(&m);
    assert_null(m.files);
}

static void test_model_load_accepts_trailing_slash_in_dir(void **state) {
    model_spec s = {0};
    make_model(*state, &s);
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/", (const char *)*state);
    model_weights m;
    char err[LLM_ERR_LEN];
    assert_int_equal(model_load(dir, &m, err, sizeof err), 0);
    model_free(&m);
    snprintf(dir, sizeof dir, "%s/", (const char *)*state);
    remove(ts_at(*state, "model.safetensors"));
    snprintf(dir, sizeof dir, "%s/", (const char *)*state);
    assert_int_equal(model_load(dir, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "no model.safetensors or model.safetensors.index.json"));
}

static void test_model_load_ties_lm_head_when_absent(void **state) {
    model_spec s = {.with_lm_head = 0};
    model_weights m;
    load_ok(*state, &s, &m);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    assert_int_equal(m.lm_head.rows, VOCAB);
    assert_int_equal(m.lm_head.cols, DIM);
    model_free(&m);
}

static void test_model_load_keeps_separate_lm_head_when_untied(void **state) {
    model_spec s = {.with_lm_head = 1};
    model_weights m;
    load_ok(*state, &s, &m);
    assert_int_equal(m.cfg.tie_word_embeddings, 0);
    assert_ptr_not_equal(m.lm_head.data, m.embed.data);
    check_weight(&m.lm_head, "lm_head.weight", VOCAB, DIM);
    model_free(&m);
}

static void test_model_load_ties_when_config_says_so_even_with_lm_head(void **state) {
    model_spec s = {.with_lm_head = 1, .config_extra = "\"tie_word_embeddings\": true"};
    model_weights m;
    load_ok(*state, &s, &m);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    model_free(&m);
}

static void test_model_load_reports_missing_tensor(void **state) {
    model_spec s = {.omit = "model.layers.1.mlp.up_proj.weight"};
    make_model(*state, &s);
    char want[1200];
    snprintf(want, sizeof want, "%s/model.safetensors: missing tensor model.layers.1.mlp.up_proj.weight",
             (const char *)*state);
    expect_load_error(*state, want, NULL);
    s.omit = "model.norm.weight";
    make_model(*state, &s);
    expect_load_error(*state, "missing tensor model.norm.weight", NULL);
}

static void test_model_load_reports_shape_mismatch_with_both_shapes(void **state) {
    model_spec s = {.reshape = "model.layers.1.mlp.up_proj.weight", .reshape_rows = 12, .reshape_cols = DIM};
    make_model(*state, &s);
    expect_load_error(*state, "model.safetensors: model.layers.1.mlp.up_proj.weight: shape [12, 8], config says [16, 8]", NULL);
    s = (model_spec){.reshape = "model.norm.weight", .reshape_rows = 0, .reshape_cols = 6};
    make_model(*state, &s);
    expect_load_error(*state, "model.norm.weight: shape [6], config says [8]", NULL);
    s = (model_spec){.reshape = "model.layers.0.input_layernorm.weight", .reshape_rows = 1, .reshape_cols = DIM};
    make_model(*state, &s);
    expect_load_error(*state, "model.layers.0.input_layernorm.weight: shape [1, 8], config says [8]", NULL);
    s = (model_spec){.reshape = "model.layers.0.self_attn.k_proj.weight", .reshape_rows = DIM, .reshape_cols = DIM};
    make_model(*state, &s);
    expect_load_error(*state, "k_proj.weight: shape [8, 8], config says [4, 8]", NULL);
}

static void test_model_load_ignores_rotary_inv_freq(void **state) {
    model_spec s = {.with_inv_freq = 1};
    model_weights m;
    load_ok(*state, &s, &m);
    check_tiny_model(&m);
    model_free(&m);
}

static void test_model_load_reads_two_shards_via_index(void **state) {
    model_spec s = {.with_lm_head = 1, .with_inv_freq = 1, .shards = 2, .dtype = "BF16"};
    model_weights m;
    load_ok(*state, &s, &m);
    assert_int_equal(m.n_files, 2);
    assert_int_equal(m.layers[1].w_down.dtype, DT_BF16);
    check_tiny_model(&m);
    check_weight(&m.lm_head, "lm_head.weight", VOCAB, DIM);
    model_free(&m);
}

static void test_model_load_ties_lm_head_absent_from_index(void **state) {
    model_spec s = {.shards = 2, .dtype = "F16"};
    model_weights m;
    load_ok(*state, &s, &m);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    check_tiny_model(&m);
    model_free(&m);
}

static void test_model_load_reports_missing_shard(void **state) {
    model_spec s = {.shards = 2};
    make_model(*state, &s);
    remove(ts_at(*state, "model-00002-of-00002.safetensors"));
    expect_load_error(*state, "model.safetensors.index.json: shard", "model-00002-of-00002.safetensors is missing");
}

static void test_model_load_reports_tensor_missing_from_index_or_shard(void **state) {
    model_spec s = {.shards = 2, .omit = "model.layers.0.mlp.gate_proj.weight"};
    make_model(*state, &s);
    expect_load_error(*state, "model.safetensors.index.json: missing tensor model.layers.0.mlp.gate_proj.weight", NULL);
    /* the index names shard 1 for a tensor that only shard 2 holds */
    s.omit = NULL;
    make_model(*state, &s);
    const char *index = ts_at(*state, "model.safetensors.index.json");
    ts_write_text(index, "{\"weight_map\": {\"model.embed_tokens.weight\": \"model-00002-of-00002.safetensors\", "
                         "\"model.norm.weight\": \"model-00001-of-00002.safetensors\"}}");
    expect_load_error(*state, "model-00002-of-00002.safetensors: missing tensor model.embed_tokens.weight", NULL);
}

static void test_model_load_rejects_malformed_index(void **state) {
    const char *index = ts_at(*state, "model.safetensors.index.json");
    ts_write_config(*state, NULL);
    ts_write_text(index, "{\"weight_map\": ");
    expect_load_error(*state, "model.safetensors.index.json: malformed JSON", NULL);
    ts_write_text(index, "{\"metadata\": {}}");
    expect_load_error(*state, "missing \"weight_map\"", NULL);
    ts_write_text(index, "{\"weight_map\": {\"model.norm.weight\": 3}}");
    expect_load_error(*state, "weight_map[\"model.norm.weight\"] is not a file name", NULL);
}

static void test_model_load_reports_missing_weights_and_config(void **state) {
    char want[1200];
    ts_write_config(*state, NULL);
    snprintf(want, sizeof want, "%s: no model.safetensors or model.safetensors.index.json", (const char *)*state);
    expect_load_error(*state, want, NULL);
    remove(ts_at(*state, "config.json"));
    expect_load_error(*state, "no config.json: not a Hugging Face model folder (give a folder with config.json", NULL);
    model_spec s = {0};
    make_model(*state, &s);
    ts_write_text(ts_at(*state, "config.json"), "{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
                     "\"num_attention_heads\": 2, \"num_key_value_heads\": 3, \"vocab_size\": 10}");
    expect_load_error(*state, "config.json: num_key_value_heads=3 does not divide num_attention_heads=2", NULL);
}

static void test_model_load_reports_corrupt_safetensors(void **state) {
    ts_write_config(*state, NULL);
    ts_write_st_raw(ts_at(*state, "model.safetensors"), 999, "{}", NULL, 0);
    expect_load_error(*state, "model.safetensors: header length 999", NULL);
}

static void test_model_to_f32_converts_and_shares_tied_buffer(void **state) {
    model_spec s = {.dtype = "BF16"};
    model_weights m;
    char err[LLM_ERR_LEN];
    load_ok(*state, &s, &m);
    assert_int_equal(m.embed.dtype, DT_BF16);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);
    assert_int_equal(m.n_owned, 2 + 9 * LAYERS);        /* embed, norm, layers; lm_head shared */
    assert_int_equal(m.embed.dtype, DT_F32);
    assert_int_equal(m.layers[0].wq.dtype, DT_F32);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    assert_int_equal(m.lm_head.dtype, DT_F32);
    check_tiny_model(&m);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);   /* already F32: no-op */
    assert_int_equal(m.n_owned, 2 + 9 * LAYERS);
    model_free(&m);
}

static void test_model_to_f32_converts_untied_f16_lm_head(void **state) {
    model_spec s = {.dtype = "F16", .with_lm_head = 1};
    model_weights m;
    char err[LLM_ERR_LEN];
    load_ok(*state, &s, &m);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);
    assert_int_equal(m.n_owned, 3 + 9 * LAYERS);
    assert_ptr_not_equal(m.lm_head.data, m.embed.data);
    check_weight(&m.lm_head, "lm_head.weight", VOCAB, DIM);
    check_tiny_model(&m);
    model_free(&m);
}

static void test_model_free_is_safe_on_zeroed_struct(void **state) {
    model_weights m;
    memset(&m, 0, sizeof m);
    model_free(&m);
    model_free(&m);
    model_free(NULL);
    char err[LLM_ERR_LEN];
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);
    model_free(&m);
}

static void test_model_load_reads_stories260K(void **state) {
    const char *shared = getenv("LLM_SHARED");
    char dir[1024], cfg[1100];
    snprintf(dir, sizeof dir, "%s/models/stories260K", shared && *shared ? shared : "../shared");
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (access(cfg, R_OK) != 0) skip();
    model_weights m;
    char err[LLM_ERR_LEN];
    if (model_load(dir, &m, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(m.cfg.hidden_size, 64);
    assert_int_equal(m.cfg.n_layers, 5);
    assert_int_equal(m.cfg.n_heads, 8);
    assert_int_equal(m.cfg.n_kv_heads, 4);
    assert_int_equal(m.cfg.head_dim, 8);
    assert_int_equal(m.cfg.vocab_size, 512);
    assert_int_equal(m.cfg.intermediate_size, 172);
    assert_int_equal(m.cfg.tie_word_embeddings, 1);
    assert_ptr_equal(m.lm_head.data, m.embed.data);
    assert_int_equal(m.layers[4].w_down.rows, 64);
    assert_int_equal(m.layers[4].w_down.cols, 172);
    assert_int_equal(model_to_f32(&m, err, sizeof err), 0);   /* F32 already: nothing owned */
    assert_int_equal(m.n_owned, 0);
    model_free(&m);
}

/* model_check_finite on a matrix big enough for the threaded, chunked scan (2^21 elements):
 * for F32, F16 and BF16, a NaN or an inf at the first element, either side of a 4096-element
 * chunk boundary, in the second thread's half and at the last element is reported at its own
 * element (row, column); with two bad values the first is named; a clean matrix passes. */
static void test_finite_check_names_the_first_nonfinite_element(void **state) {
    (void)state;
    const int rows = 1024, cols = 2048;
    const int64_t n = (int64_t)rows * cols;
    const int64_t at[] = {0, 4095, 4096, 4097, n / 2 + 12345, n - 1};
    const dtype_t dts[] = {DT_F32, DT_F16, DT_BF16};
    for (int d = 0; d < 3; d++) {
        size_t es = dts[d] == DT_F32 ? 4 : 2;
        uint8_t *buf = calloc((size_t)n, es);
        assert_non_null(buf);
        model_weights m;
        memset(&m, 0, sizeof m);
        m.cfg.n_layers = 0;
        m.embed = (weight_t){.dtype = dts[d], .data = buf, .rows = rows, .cols = cols};
        m.lm_head = m.embed;
        char err[512];
        assert_int_equal(model_check_finite(&m, err, sizeof err), 0);
        for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
            for (int inf = 0; inf < 2; inf++) {
                float bad = inf ? INFINITY : NAN;
                uint32_t u32;
                memcpy(&u32, &bad, 4);
                uint16_t u16 = dts[d] == DT_F16 ? f32_to_f16(bad) : f32_to_bf16(bad);
                uint8_t *p = buf + (size_t)at[i] * es;
                if (es == 4) memcpy(p, &u32, 4);
                else memcpy(p, &u16, 2);
                /* a second bad value after it (when there is room) must not be the one named */
                int64_t later = at[i] + 5000 < n ? at[i] + 5000 : -1;
                if (later >= 0) {
                    if (es == 4) memcpy(buf + (size_t)later * 4, &u32, 4);
                    else memcpy(buf + (size_t)later * 2, &u16, 2);
                }
                assert_int_not_equal(model_check_finite(&m, err, sizeof err), 0);
                char want[160];
                snprintf(want, sizeof want, "element %lld (row %lld, column %lld)", (long long)at[i],
                         (long long)(at[i] / cols), (long long)(at[i] % cols));
                if (!strstr(err, want)) fail_msg("%s: %s at %lld: got '%s'", dtype_name(dts[d]), inf ? "inf" : "nan",
                                                 (long long)at[i], err);
                memset(p, 0, es);
                if (later >= 0) memset(buf + (size_t)later * es, 0, es);
            }
        assert_int_equal(model_check_finite(&m, err, sizeof err), 0);
        free(buf);
    }
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, ts_make_tmpdir, ts_remove_tmpdir)
    const struct CMUnitTest tests[] = {
        T(test_model_load_reads_tiny_folder),
        T(test_model_load_accepts_trailing_slash_in_dir),
        T(test_model_load_ties_lm_head_when_absent),
        T(test_model_load_keeps_separate_lm_head_when_untied),
        T(test_model_load_ties_when_config_says_so_even_with_lm_head),
        T(test_model_load_reports_missing_tensor),
        T(test_model_load_reports_shape_mismatch_with_both_shapes),
        T(test_model_load_ignores_rotary_inv_freq),
        T(test_model_load_reads_two_shards_via_index),
        T(test_model_load_ties_lm_head_absent_from_index),
        T(test_model_load_reports_missing_shard),
        T(test_model_load_reports_tensor_missing_from_index_or_shard),
        T(test_model_load_rejects_malformed_index),
        T(test_model_load_reports_missing_weights_and_config),
        T(test_model_load_reports_corrupt_safetensors),
        T(test_model_to_f32_converts_and_shares_tied_buffer),
        T(test_model_to_f32_converts_untied_f16_lm_head),
        T(test_model_free_is_safe_on_zeroed_struct),
        T(test_model_load_reads_stories260K),
        T(test_finite_check_names_the_first_nonfinite_element),
    };
#undef T
    return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
