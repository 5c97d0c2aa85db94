/* Fuzz target: the tokenizer front end with the stories260K SentencePiece model
 * ($FUZZ_TOKENIZER, else $LLM_SHARED/models/stories260K/tokenizer.model, LLM_SHARED defaulting
 * to ../shared).
 *  - encode: the input as text (up to its first NUL) must encode without error, to ids in
 *    [0, vocab), which must decode;
 *  - decode: the input read as little-endian int16 ids (so some are out of range) must decode
 *    exactly when every id is in range, with an error naming the id otherwise;
 *  - streaming: for both id lists the tok_decoder output (push each id, then flush) must equal
 *    tokenizer_decode (tokenizer.h's contract), compared up to the first NUL byte. */
#include "fuzz/fuzz.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

static tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[1024], err[LLM_ERR_LEN];
    const char *p = getenv("FUZZ_TOKENIZER");
    if (!p || !*p) {
        const char *shared = getenv("LLM_SHARED");
        snprintf(path, sizeof path, "%s/models/stories260K/tokenizer.model",
                 shared && *shared ? shared : "../shared");
        p = path;
    }
    tok = tokenizer_load(p, err, sizeof err);
    if (!tok) {
        fprintf(stderr, "fuzz_tokenizer: %s (set FUZZ_TOKENIZER or LLM_SHARED)\n", err);
        exit(1);
    }
    return 0;
}

/* Streams ids through a tok_decoder and compares with tokenizer_decode's text. */
static void check_stream(const int *ids, int n, const char *decoded)
{
    tok_decoder *d = tok_decoder_new(tok);
    if (!d) fuzz_fail("tok_decoder_new", "out of memory");
    size_t cap = 64, len = 0;
    char *acc = malloc(cap), piece[TOK_DECODER_BUF];
    for (int i = 0; i <= n; i++) {
        int m = i < n ? tok_decoder_push(d, ids[i], piece, sizeof piece)
                      : tok_decoder_flush(d, piece, sizeof piece);
        if (m < 0) fuzz_fail("tok_decoder push/flush failed", "");
        if (len + (size_t)m + 1 > cap) acc = realloc(acc, cap = 2 * (len + (size_t)m + 1));
        memcpy(acc + len, piece, (size_t)m);
        len += (size_t)m;
    }
    acc[len] = '\0';
    size_t a = strlen(acc), b = strlen(decoded);
    if (a != b || memcmp(acc, decoded, a) != 0) {
        fprintf(stderr, "streamed: \"%s\"\ndecoded:  \"%s\"\n", acc, decoded);
        fuzz_fail("tok_decoder output differs from tokenizer_decode", "");
    }
    free(acc);
    tok_decoder_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[LLM_ERR_LEN] = "", *text = NULL;
    int vocab = tokenizer_vocab_size(tok);

    /* encode */
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    int *ids = NULL, n = 0;
    if (tokenizer_encode(tok, s, &ids, &n, err, sizeof err) != 0) fuzz_fail("encode failed", err);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab) fuzz_fail("encode gave an id out of range", "");
    if (tokenizer_decode(tok, ids, n, &text, err, sizeof err) != 0) fuzz_fail("decode of encode", err);
    check_stream(ids, n, text);
    free(text);
    free(ids);
    free(s);

    /* decode of arbitrary ids */
    n = (int)(size / 2);
    ids = malloc(((size_t)n + 1) * sizeof *ids);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        ids[i] = (int16_t)(data[2 * i] | data[2 * i + 1] << 8);
        bad |= ids[i] < 0 || ids[i] >= vocab;
    }
    err[0] = '\0';
    text = NULL;
    int rc = tokenizer_decode(tok, ids, n, &text, err, sizeof err);
    if (bad) {
        if (rc == 0 || text) fuzz_fail("decoded an id out of range", "");
        fuzz_check_err(err);
        if (!strstr(err, "token id")) fuzz_fail("error does not name the id", err);
    } else {
        if (rc != 0 || !text) fuzz_fail("decode of valid ids failed", err);
        check_stream(ids, n, text);
    }
    free(text);
    free(ids);
    return 0;
}
