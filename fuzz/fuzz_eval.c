/* Fuzz target: the data-set line readers (eval_parse_example, used by eval_load_examples for
 * every task's .jsonl / text lines). The first byte picks the task, the rest is one line (not
 * NUL-terminated). On success every string must be readable to its NUL, litm's gold_index in
 * [-1, n_docs) and every doc/answer present; on failure the error is one non-empty line and
 * *out holds nothing to free. */
#include "fuzz/fuzz.h"
#include "eval/eval.h"
#include "model/model.h"

static size_t touch(const char *s) { return s ? strlen(s) : 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    eval_task task = (eval_task)(data[0] % EVAL_TASK_COUNT);
    eval_example ex;
    memset(&ex, 0x5A, sizeof ex);
    char err[LLM_ERR_LEN] = "";
    if (eval_parse_example(task, (const char *)data + 1, size - 1, &ex, err, sizeof err) != 0) {
        fuzz_check_err(err);
        /* "nothing to free": eval_example_free leaves gold_index = -1, the rest zero */
        if (ex.document || ex.reference || ex.question || ex.docs || ex.n_docs || ex.answers ||
            ex.n_answers || ex.id[0])
            fuzz_fail("failed parse left something in *out", err);
        return 0;
    }
    volatile size_t n = 0;
    if (!memchr(ex.id, '\0', sizeof ex.id)) fuzz_fail("id not NUL-terminated", "");
    n += touch(ex.document) + touch(ex.reference) + touch(ex.question);
    if (ex.n_docs < 0 || ex.n_answers < 0) fuzz_fail("negative count", "");
    if (ex.n_docs && !ex.docs) fuzz_fail("docs missing", "");
    if (ex.n_answers && !ex.answers) fuzz_fail("answers missing", "");
    for (int i = 0; i < ex.n_docs; i++) n += touch(ex.docs[i].title) + touch(ex.docs[i].text);
    for (int i = 0; i < ex.n_answers; i++) {
        if (!ex.answers[i]) fuzz_fail("NULL answer", "");
        n += touch(ex.answers[i]);
    }
    if (task == EVAL_TASK_LITM && (ex.gold_index < -1 || ex.gold_index >= ex.n_docs))
        fuzz_fail("gold_index out of range", "");
    (void)n;
    eval_example_free(&ex);
    return 0;
}
