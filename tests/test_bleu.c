/* test_bleu.c — Self-BLEU as the BUZZ paper computed it (eval/bleu.c).
 *
 * Fixture tests/fixtures/eval/bleu_cases.jsonl (scripts/make_rouge_fixtures.py): {text,
 * self_bleu} with self_bleu from buzz-llm's calculate_selfBleu (NLTK sentence_bleu, weights
 * 1/3 each, SmoothingFunction().method1) on text.split('.'), stripped; null where NLTK raises
 * (no '.', so no references). Texts: synthetic repeats and CNN/DM / XSum leads and highlights.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "eval/eval.h"
#include "tests/support/support.h"

static void test_self_bleu_fixture(void **state)
{
    (void)state;
    char *text = ts_slurp("tests/fixtures/eval/bleu_cases.jsonl");
    assert_non_null(text);
    int n = 0, bad = 0, nonzero = 0;
    double md = 0;
    for (char *s = strtok(text, "\n"); s; s = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(s);
        assert_non_null(j);
        const char *t = cJSON_GetObjectItem(j, "text")->valuestring;
        cJSON *w = cJSON_GetObjectItem(j, "self_bleu");
        double got = self_bleu(t);
        if (cJSON_IsNull(w)) {
            if (!isnan(got)) { bad++; fprintf(stderr, "self-bleu: want NaN for \"%.60s\", got %g\n", t, got); }
        } else {
            double d = fabs(got - w->valuedouble);
            if (d > md) md = d;
            if (!(d < 1e-7)) { bad++; fprintf(stderr, "self-bleu: \"%.60s\": got %.10g want %.10g\n", t, got, w->valuedouble); }
            nonzero += w->valuedouble > 0.01;
        }
        n++;
        cJSON_Delete(j);
    }
    printf("self-bleu: %d texts (%d above 0.01), max |diff| to NLTK %.3g, %d bad\n", n, nonzero, md, bad);
    assert_true(n >= 50 && nonzero >= 20);
    assert_int_equal(bad, 0);
    free(text);
}

static void test_self_bleu_properties(void **state)
{
    (void)state;
    assert_true(fabs(self_bleu("a b c. a b c") - 1.0) < 1e-12);    /* identical sentences */
    assert_true(self_bleu("a b c. d e f") == 0.0);                 /* no shared unigram */
    assert_true(isnan(self_bleu("no dot")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_bleu_fixture),
        cmocka_unit_test(test_self_bleu_properties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
