/* Fuzz target: the byte-level BPE tokenizer with a synthetic tokenizer.json
 * ($FUZZ_BPE, else tests/fixtures/bpe/synthetic/config_bos: byte-level, no normaliser, added
 * tokens with lstrip/rstrip/single_word/normalized).
 *  - encode without special-token parsing: ids in [0, vocab); valid UTF-8 input decodes back to
 *    itself exactly (TOK_DECODE_SPECIAL), any input decodes;
 *  - encode with TOK_PARSE_SPECIAL | TOK_ADD_SPECIAL: ids in range, decodes;
 *  - decode of the input read as little-endian int16 ids: exact success when all are in range,
 *    a one-line error naming the id otherwise;
 *  - streaming: tok_decoder (with and without rendering control tokens) equals
 *    tokenizer_decode_ex byte for byte. */
#include "fuzz/fuzz.h"
#include "tokenizer/tokenizer.h"

static tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[512];
    const char *p = getenv("FUZZ_BPE");
    tok = tokenizer_load(p && *p ? p : "tests/fixtures/bpe/synthetic/config_bos", err, sizeof err);
    if (!tok) {
        fprintf(stderr, "fuzz_bpe: %s (run from the repository root or set FUZZ_BPE)\n", err);
        exit(1);
    }
    return 0;
}

static void check_stream(const int *ids, int n, int render)
{
    char err[512], *text;
    size_t len;
    if (tokenizer_decode_ex(tok, ids, n, render ? TOK_DECODE_SPECIAL : 0, &text, &len, err,
                            sizeof err) != 0)
        fuzz_fail("decode of valid ids failed", err);
    tok_decoder *d = tok_decoder_new(tok);
    if (!d) fuzz_fail("tok_decoder_new", "out of memory");
    tok_decoder_set_special(d, render);
    const size_t cap = tok_decoder_buf_size(tok);
    char *piece = malloc(cap), *acc = malloc(3 * len + 16);
    size_t o = 0;
    for (int i = 0; i <= n; i++) {
        int m = i < n ? tok_decoder_push(d, ids[i], piece, cap) : tok_decoder_flush(d, piece, cap);
        if (m < 0) fuzz_fail("tok_decoder push/flush failed", "");
        if (o + (size_t)m > 3 * len + 16) fuzz_fail("streamed more than tokenizer_decode_ex", "");
        memcpy(acc + o, piece, (size_t)m);
        o += (size_t)m;
    }
    if (o != len || memcmp(acc, text, len) != 0)
        fuzz_fail("tok_decoder output differs from tokenizer_decode_ex", "");
    free(piece);
    free(acc);
    free(text);
    tok_decoder_free(d);
}

static int valid_utf8(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const unsigned c = s[i];
        size_t l = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!l || i + l > n) return 0;
        for (size_t k = 1; k < l; k++) if ((s[i + k] & 0xC0) != 0x80) return 0;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
            (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F)) return 0;
        i += l;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    const int vocab = tokenizer_vocab_size(tok);
    for (int pass = 0; pass < 2; pass++) {
        int *ids = NULL, n = 0;
        const unsigned flags = pass ? TOK_PARSE_SPECIAL | TOK_ADD_SPECIAL : 0;
        if (tokenizer_encode_ex(tok, (const char *)data, size, flags, &ids, &n, err, sizeof err))
            fuzz_fail("encode failed", err);
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= vocab) fuzz_fail("encode gave an id out of range", "");
        if (pass == 0 && valid_utf8(data, size)) {
            char *text;
            size_t len;
            if (tokenizer_decode_ex(tok, ids, n, TOK_DECODE_SPECIAL, &text, &len, err, sizeof err))
                fuzz_fail("decode of encode", err);
            if (len != size || memcmp(text, data, size) != 0)
                fuzz_fail("decode(encode(x)) != x for valid UTF-8", "");
            free(text);
        }
        check_stream(ids, n, 0);
        check_stream(ids, n, 1);
        free(ids);
    }
    const int n = (int)(size / 2);
    int *ids = malloc(((size_t)n + 1) * sizeof *ids), bad = 0;
    for (int i = 0; i < n; i++) {
        ids[i] = (int16_t)(data[2 * i] | data[2 * i + 1] << 8);
        bad |= ids[i] < 0 || ids[i] >= vocab;
    }
    char *text = NULL;
    err[0] = '\0';
    const int rc = tokenizer_decode_ex(tok, ids, n, 0, &text, NULL, err, sizeof err);
    if (bad) {
        if (rc == 0 || text) fuzz_fail("decoded an id out of range", "");
        fuzz_check_err(err);
        if (!strstr(err, "token id")) fuzz_fail("error does not name the id", err);
    } else {
        if (rc != 0) fuzz_fail("decode of valid ids failed", err);
        check_stream(ids, n, 0);
        check_stream(ids, n, 1);
    }
    free(text);
    free(ids);
    return 0;
}
