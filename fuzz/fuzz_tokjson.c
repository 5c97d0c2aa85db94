/* Fuzz target: the tokenizer.json reader (tokenizer/bpe_json.c through tokenizer_load_mem): the
 * input is a whole tokenizer.json. On failure: one non-empty line. On success the tokenizer must
 * work: a few fixed strings encode without error into ids < vocab size, and decode back without
 * error (any bytes: the decoder repairs invalid UTF-8), streaming decode included. */
#include "fuzz/fuzz.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    tokenizer *t = tokenizer_load_mem(data, size, "fuzz/tokenizer.json", err, sizeof err);
    if (!t) {
        fuzz_check_err(err);
        return 0;
    }
    static const char *const texts[] = {"", "Hello world", " a  2\n\n2015 ", "<|im_start|>x<|im_end|>", "\xe4\xbd\xa0\xff"};
    const int vocab = tokenizer_vocab_size(t);
    tok_decoder *d = tok_decoder_new(t);
    char *piece = malloc(tok_decoder_buf_size(t));
    if (!d || !piece) fuzz_fail("out of memory", "");
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int *ids = NULL, n = 0;
        if (tokenizer_encode_ex(t, texts[i], strlen(texts[i]), TOK_PARSE_SPECIAL, &ids, &n, err, sizeof err) != 0) {
            fuzz_check_err(err);
            continue;
        }
        for (int k = 0; k < n; k++)
            if (ids[k] < 0 || ids[k] >= vocab) fuzz_fail("id out of range", texts[i]);
        char *text = NULL;
        size_t len = 0;
        if (tokenizer_decode_ex(t, ids, n, 0, &text, &len, err, sizeof err) != 0) fuzz_fail("decode failed", err);
        tok_decoder_reset(d, -1);
        for (int k = 0; k < n; k++)
            if (tok_decoder_push(d, ids[k], piece, tok_decoder_buf_size(t)) < 0) fuzz_fail("streaming decode failed", texts[i]);
        free(text);
        free(ids);
    }
    free(piece);
    tok_decoder_free(d);
    tokenizer_free(t);
    return 0;
}
