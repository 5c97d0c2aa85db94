/* fuzz/ — libFuzzer targets for the parsers that read files from the internet (issue 7).
 *
 * Each fuzz_NAME.c defines LLVMFuzzerTestOneInput (and optionally LLVMFuzzerInitialize). It is
 * built twice: with clang -fsanitize=fuzzer,address,undefined by `make fuzz` (the fuzzer), and
 * with the normal compiler together with replay.c (build/fuzz/replay_NAME), which feeds every
 * file of fuzz/corpus/NAME to the same function as part of `make check`.
 *
 * A target checks the parser's contract on every input: success → the invariants the rest of
 * llm-run relies on hold; failure → a non-empty, one-line error. A broken contract calls
 * fuzz_fail, which prints the reason and aborts (a libFuzzer crash, a replay failure). */
#ifndef LLM_FUZZ_H
#define LLM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static inline void fuzz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz: contract broken: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* A parser's error message: non-empty and a single line. */
static inline void fuzz_check_err(const char *err)
{
    if (!err[0]) fuzz_fail("failure without an error message", "");
    if (strchr(err, '\n') || strchr(err, '\r')) fuzz_fail("error message spans lines", err);
}

#endif
