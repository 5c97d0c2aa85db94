/* Fuzz target: a SentencePiece tokenizer.model file (the serialized protobuf, parsed by
 * libsentencepiece through tokenizer_load_mem, then our own pass over its pieces: byte pieces,
 * control pieces, the unk surface). On failure: one non-empty line. On success: fixed strings
 * encode to ids < vocab size and decode without error. */
#include "fuzz/fuzz.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    tokenizer *t = tokenizer_load_mem(data, size, "fuzz/tokenizer.model", err, sizeof err);
    if (!t) {
        fuzz_check_err(err);
        return 0;
    }
    static const char *const texts[] = {"", "Once upon a time", " a  2\n\n", "\xe4\xbd\xa0\xff"};
    const int vocab = tokenizer_vocab_size(t);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int *ids = NULL, n = 0;
        if (tokenizer_encode(t, texts[i], &ids, &n, err, sizeof err) != 0) {
            fuzz_check_err(err);
            continue;
        }
        for (int k = 0; k < n; k++)
            if (ids[k] < 0 || ids[k] >= vocab) fuzz_fail("id out of range", texts[i]);
        char *text = NULL;
        if (tokenizer_decode(t, ids, n, &text, err, sizeof err) != 0) fuzz_fail("decode failed", err);
        free(text);
        free(ids);
    }
    tokenizer_free(t);
    return 0;
}
