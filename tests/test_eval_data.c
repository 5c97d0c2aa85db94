/* Unit tests of the sweep's readers and prompt templates (eval/data.c, eval/prompt.c) and the
 * confidence-interval quantile (eval/summary.c). Prompts are compared with the strings EVAL.md
 * quotes from the papers' code. Run from the repository root (configs/prompts/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"

static int parse(eval_task t, const char *line, eval_example *ex, char *err)
{
    return eval_parse_example(t, line, strlen(line), ex, err, 256);
}

static void test_xsum_helm_request_gives_the_document(void **state)
{
    (void)state;
    eval_example ex;
    char err[256];
    const char *line = "{\"article\": \"###\\nArticle: Prison Link Cymru had 1,099 referrals.\\n\\nSummarize the above article in 1 sentence.\\n\", "
                       "\"summary_gt\": \"There is a need.\", \"max_tokens\": 64}";
    assert_int_equal(parse(EVAL_TASK_XSUM, line, &ex, err), 0);
    assert_string_equal(ex.document, "Prison Link Cymru had 1,099 referrals.");
    assert_string_equal(ex.reference, "There is a need.");
    assert_string_equal(ex.id, "");
    eval_example_free(&ex);
}

static void test_cnndm_article_highlights_and_idx(void **state)
{
    (void)state;
    eval_example ex;
    char err[256];
    assert_int_equal(parse(EVAL_TASK_CNNDM, "{\"idx\": 3, \"article\": \"(CNN)A b.\", \"highlights\": \"A .\"}", &ex, err), 0);
    assert_string_equal(ex.document, "(CNN)A b.");
    assert_string_equal(ex.reference, "A .");
    assert_string_equal(ex.id, "3");
    eval_example_free(&ex);
}

static const char *LITM_LINE =
    "{\"question\": \"who wrote it\", \"answers\": [\"Ann\", \"Ann B.\"], \"ctxs\": ["
    "{\"title\": \"T1\", \"text\": \"one two three\", \"isgold\": false},"
    "{\"title\": \"T2\", \"text\": \"four five\", \"isgold\": true}]}";

static void test_litm_record(void **state)
{
    (void)state;
    eval_example ex;
    char err[256];
    assert_int_equal(parse(EVAL_TASK_LITM, LITM_LINE, &ex, err), 0);
    assert_string_equal(ex.question, "who wrote it");
    assert_int_equal(ex.n_answers, 2);
    assert_string_equal(ex.answers[1], "Ann B.");
    assert_int_equal(ex.n_docs, 2);
    assert_string_equal(ex.docs[1].title, "T2");
    assert_int_equal(ex.gold_index, 1);
    eval_example_free(&ex);
}

static void test_bad_records_name_the_line(void **state)
{
    (void)state;
    eval_example ex;
    char err[256];
    const struct { eval_task t; const char *line, *msg; } cases[] = {
        {EVAL_TASK_XSUM, "{\"article\": \"x\"", "xsum: not valid JSON"},
        {EVAL_TASK_XSUM, "[1, 2]", "xsum: expected a JSON object"},
        {EVAL_TASK_XSUM, "{\"summary\": \"s\"}", "xsum: missing \"document\" or \"article\""},
        {EVAL_TASK_CNNDM, "{\"article\": \"a\"}", "cnndm: missing \"summary\", \"summary_gt\" or \"highlights\""},
        {EVAL_TASK_LITM, "{\"question\": \"q\", \"answers\": [1], \"ctxs\": []}", "litm: \"answers\" is not a list of strings"},
        {EVAL_TASK_LITM, "{\"question\": \"q\", \"answers\": [], \"ctxs\": []}", "litm: missing \"answers\" (a non-empty list)"},
        {EVAL_TASK_LITM, "{\"question\": \"q\", \"answers\": [\"a\"], \"ctxs\": [{\"title\": \"t\"}]}", "litm: ctxs[0] needs string \"title\" and \"text\""},
        {EVAL_TASK_WIKITEXT, "{\"text\": 5}", "wikitext: missing \"text\" (a string)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&ex, 0x5a, sizeof ex);
        assert_int_equal(parse(cases[i].t, cases[i].line, &ex, err), -1);
        assert_string_equal(err, cases[i].msg);
        assert_null(ex.document);
        assert_int_equal(ex.n_docs, 0);
    }
    /* a buffer that is not NUL-terminated: only len bytes are read */
    char buf[] = "{\"text\": \"ab\"}GARBAGE";
    assert_int_equal(eval_parse_example(EVAL_TASK_WIKITEXT, buf, 14, &ex, err, sizeof err), 0);
    assert_string_equal(ex.document, "ab");
    eval_example_free(&ex);
}

static void test_text_lines_for_perplexity(void **state)
{
    (void)state;
    eval_example ex;
    char err[256];
    assert_int_equal(parse(EVAL_TASK_TINYSTORIES, "Once upon a time {not json}", &ex, err), 0);
    assert_string_equal(ex.document, "Once upon a time {not json}");
    eval_example_free(&ex);
    assert_int_equal(parse(EVAL_TASK_WIKITEXT, "{\"text\": \" = Robert = \\n\"}", &ex, err), 0);
    assert_string_equal(ex.document, " = Robert = \n");
    eval_example_free(&ex);
}

static void test_prompts_are_the_papers(void **state)
{
    (void)state;
    eval_prompt_style ps;
    char err[256];
    eval_example ex;
    assert_int_equal(parse(EVAL_TASK_LITM, LITM_LINE, &ex, err), 0);
    int tr;
    /* Lost in the Middle qa.prompt */
    assert_int_equal(eval_prompt_load("litm", &ps, err, sizeof err), 0);
    char *p = eval_prompt_render(&ps, EVAL_TASK_LITM, &ex, -1, &tr);
    assert_string_equal(p, "Write a high-quality answer for the given question using only the provided search results (some of which might be irrelevant).\n\n"
                           "Document [1](Title: T1) one two three\nDocument [2](Title: T2) four five\n\nQuestion: who wrote it\nAnswer:");
    assert_int_equal(tr, 0);
    free(p);
    /* every document cut to 1 word */
    p = eval_prompt_render(&ps, EVAL_TASK_LITM, &ex, 1, &tr);
    assert_non_null(strstr(p, "Document [1](Title: T1) one\nDocument [2](Title: T2) four\n"));
    assert_int_equal(tr, 1);
    free(p);
    assert_null(eval_prompt_render(&ps, EVAL_TASK_XSUM, &ex, -1, &tr)); /* no template */
    eval_prompt_free(&ps);
    /* BUZZ run_ten_doc_qa_em.py */
    assert_int_equal(eval_prompt_load("buzz", &ps, err, sizeof err), 0);
    assert_int_equal(ps.bos, 1);
    p = eval_prompt_render(&ps, EVAL_TASK_LITM, &ex, -1, &tr);
    assert_string_equal(p, "Documents are following: T1\none two three\nT2\nfour five\n. Based on the provided documents, give an brief answer to this question: who wrote it. "
                           "The answer has to directly answer the question and be BRIEF. ");
    free(p);
    eval_example_free(&ex);
    assert_int_equal(parse(EVAL_TASK_XSUM, "{\"document\": \"A b  c.\", \"summary\": \"s\"}", &ex, err), 0);
    p = eval_prompt_render(&ps, EVAL_TASK_XSUM, &ex, -1, &tr);
    assert_string_equal(p, "Text: A b  c.\n\nSUMMARIZE the previous text to 50 words!");
    free(p);
    p = eval_prompt_render(&ps, EVAL_TASK_XSUM, &ex, 2, &tr);
    assert_string_equal(p, "Text: A b\n\nSUMMARIZE the previous text to 50 words!");
    assert_int_equal(tr, 1);
    free(p);
    eval_prompt_free(&ps);
    /* HELM / H2O: no BOS, stop ###, H2O's 0-shot request string */
    assert_int_equal(eval_prompt_load("helm", &ps, err, sizeof err), 0);
    assert_int_equal(ps.bos, 0);
    assert_string_equal(ps.stop, "###");
    p = eval_prompt_render(&ps, EVAL_TASK_XSUM, &ex, -1, &tr);
    assert_string_equal(p, "###\nArticle: A b  c.\n\nSummarize the above article in 1 sentence.\n");
    free(p);
    eval_prompt_free(&ps);
    eval_example_free(&ex);
    assert_int_equal(eval_prompt_load("nope", &ps, err, sizeof err), -1);
    assert_non_null(strstr(err, "--prompt-style: nope: no such prompt style"));
}

static void test_t95_quantiles(void **state)
{
    (void)state;
    /* scipy.stats.t.ppf(0.975, df) */
    assert_true(fabs(eval_t95(1) - 12.7062) < 1e-3);
    assert_true(fabs(eval_t95(10) - 2.2281) < 1e-3);
    assert_true(fabs(eval_t95(31) - 2.0395) < 1e-3);
    assert_true(fabs(eval_t95(49) - 2.0096) < 1e-3);
    assert_true(fabs(eval_t95(100) - 1.9840) < 1e-3);
    assert_true(fabs(eval_t95(100000) - 1.9600) < 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xsum_helm_request_gives_the_document),
        cmocka_unit_test(test_cnndm_article_highlights_and_idx),
        cmocka_unit_test(test_litm_record),
        cmocka_unit_test(test_bad_records_name_the_line),
        cmocka_unit_test(test_text_lines_for_perplexity),
        cmocka_unit_test(test_prompts_are_the_papers),
        cmocka_unit_test(test_t95_quantiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
