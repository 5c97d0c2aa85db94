/* Tests for model/config.c: the fields of config.json and their defaults, rope scaling, and the
 * one-line errors of unsupported, inconsistent, missing or malformed configs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "tests/support/files.h"

/* ------------------------------------------------------------------------ config */

static void expect_config_error(const char *path, const char *want) {
    model_config c;
    char err[LLM_ERR_LEN] = "";
    assert_int_equal(config_load(path, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    if (!strstr(err, want)) fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void test_config_reads_fields_and_defaults(void **state) {
    const char *path = ts_write_config(*state, "\"architectures\": [\"LlamaForCausalLM\"], \"torch_dtype\": \"float32\"");
    model_config c;
    char err[LLM_ERR_LEN];
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_int_equal(c.hidden_size, 8);
    assert_int_equal(c.intermediate_size, 16);
    assert_int_equal(c.n_layers, 2);
    assert_int_equal(c.n_heads, 2);
    assert_int_equal(c.n_kv_heads, 1);
    assert_int_equal(c.head_dim, 4);
    assert_int_equal(c.vocab_size, 10);
    assert_int_equal(c.max_position_embeddings, 2048);
    assert_true(c.rms_norm_eps == 1e-6f);
    assert_true(c.rope_theta == 10000.0f);
    assert_true(c.rope_scaling_factor == 1.0f);
    assert_int_equal(c.tie_word_embeddings, 0);
    assert_int_equal(c.bos_token_id, 1);
    assert_int_equal(c.eos_token_id, 2);

    ts_write_text(path, "{\"hidden_size\": 64, \"intermediate_size\": 172, \"num_hidden_layers\": 5, "
                        "\"num_attention_heads\": 8, \"vocab_size\": 128256, \"max_position_embeddings\": 512, "
                        "\"rms_norm_eps\": 1e-05, \"rope_theta\": 500000.0, \"tie_word_embeddings\": true, "
                        "\"bos_token_id\": 128000, \"eos_token_id\": [128001, 128009], \"rope_scaling\": null}");
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_int_equal(c.n_kv_heads, 8);                 /* defaults to n_heads */
    assert_int_equal(c.head_dim, 8);
    assert_int_equal(c.max_position_embeddings, 512);
    assert_true(c.rms_norm_eps == 1e-5f);
    assert_true(c.rope_theta == 500000.0f);
    assert_int_equal(c.tie_word_embeddings, 1);
    assert_int_equal(c.bos_token_id, 128000);
    assert_int_equal(c.eos_token_id, 128001);          /* first of the list */
}

static void test_config_reads_linear_rope_scaling(void **state) {
    const char *path = ts_write_config(*state, "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 4.0}");
    model_config c;
    char err[LLM_ERR_LEN];
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_true(c.rope_scaling_factor == 4.0f);
    ts_write_config(*state, "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2}");
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_true(c.rope_scaling_factor == 2.0f);
}

static void test_config_rejects_unsupported_rope_scaling(void **state) {
    /* llama3 is supported (Llama-3.1) but needs all four of its fields */
    const char *path = ts_write_config(*state, "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}");
    expect_config_error(path, "must be a positive number (llama3)");
    ts_write_config(*state, "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}");
    expect_config_error(path, "\"dynamic\"");
    ts_write_config(*state, "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 0.5}");
    expect_config_error(path, "rope_scaling.factor=0.5 must be >= 1");
    ts_write_config(*state, "\"rope_scaling\": {\"type\": \"linear\"}");
    expect_config_error(path, "rope_scaling.factor");
    ts_write_config(*state, "\"rope_scaling\": 2");
    expect_config_error(path, "rope_scaling");
}

static void test_config_rejects_kv_heads_not_dividing_heads(void **state) {
    const char *path = ts_at(*state, "config.json");
    ts_write_text(path, "{\"hidden_size\": 64, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
                        "\"num_attention_heads\": 8, \"num_key_value_heads\": 3, \"vocab_size\": 10}");
    expect_config_error(path, "config.json: num_key_value_heads=3 does not divide num_attention_heads=8");
}

static void test_config_rejects_zero_and_missing_sizes(void **state) {
    const char *path = ts_at(*state, "config.json");
    static const struct { const char *json, *want; } cases[] = {
        {"{\"hidden_size\": 0, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "hidden_size=0 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 0, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "num_hidden_layers=0 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": -1}", "vocab_size=-1 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 0, \"vocab_size\": 10}", "num_attention_heads=0 must be positive"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"num_key_value_heads\": 0, \"vocab_size\": 10}",
         "num_key_value_heads=0 must be positive"},
        {"{\"hidden_size\": 8, \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"vocab_size\": 10}",
         "missing intermediate_size"},
        {"{\"hidden_size\": 8.5, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "hidden_size must be an integer"},
        {"{\"hidden_size\": \"8\", \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "hidden_size must be an integer"},
        {"{\"hidden_size\": 8, \"intermediate_size\": 1e12, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "intermediate_size must be an integer"},
        {"{\"hidden_size\": 12, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 8, \"vocab_size\": 10}", "num_attention_heads=8 does not divide hidden_size=12"},
        {"{\"hidden_size\": 6, \"intermediate_size\": 16, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"vocab_size\": 10}", "head_dim=3 must be even"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_write_text(path, cases[i].json);
        expect_config_error(path, cases[i].want);
    }
    ts_write_config(*state, "\"rms_norm_eps\": 0");
    expect_config_error(path, "rms_norm_eps=0 must be positive");
    ts_write_config(*state, "\"rope_theta\": -1");
    expect_config_error(path, "rope_theta=-1 must be positive");
    ts_write_config(*state, "\"max_position_embeddings\": 0");
    expect_config_error(path, "max_position_embeddings=0 must be positive");
    ts_write_config(*state, "\"eos_token_id\": []");
    expect_config_error(path, "eos_token_id");
}

static void test_config_accepts_explicit_head_dim(void **state) {
    const char *path = ts_at(*state, "config.json");
    ts_write_text(path, "{\"hidden_size\": 12, \"intermediate_size\": 16, \"num_hidden_layers\": 1, "
                        "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 4, \"vocab_size\": 10}");
    model_config c;
    char err[LLM_ERR_LEN];
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_int_equal(c.head_dim, 4);
}

static void test_config_rejects_malformed_json_and_missing_file(void **state) {
    const char *path = ts_at(*state, "config.json");
    ts_write_text(path, "{\"hidden_size\": 8,");
    expect_config_error(path, "malformed JSON");
    ts_write_text(path, "{\"hidden_size\": 8} {}");
    expect_config_error(path, "malformed JSON");
    ts_write_text(path, "[8]");
    expect_config_error(path, "not a JSON object");
    ts_write_text(path, "");
    expect_config_error(path, "malformed JSON");
    expect_config_error(ts_at(*state, "absent.json"), "cannot open");
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, ts_make_tmpdir, ts_remove_tmpdir)
    const struct CMUnitTest tests[] = {
        T(test_config_reads_fields_and_defaults),
        T(test_config_reads_linear_rope_scaling),
        T(test_config_rejects_unsupported_rope_scaling),
        T(test_config_rejects_kv_heads_not_dividing_heads),
        T(test_config_rejects_zero_and_missing_sizes),
        T(test_config_accepts_explicit_head_dim),
        T(test_config_rejects_malformed_json_and_missing_file),
    };
#undef T
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
