/* tokenizer/bpe.h — internal to tokenizer/: the byte-level BPE tokenizer behind tokenizer.h.
 *
 *   bpe.c         the model: vocabulary and merge tables, end-of-generation ids, building it
 *                 from a bpe_build or a tok_bpe_spec
 *   bpe_codec.c   the merge loop, encode, decode (one-shot and streaming)
 *   bpe_text.c    the GPT-2 byte ↔ character map, UTF-8 decoding (llama.cpp's lax rules or
 *                 strict) and repair, PCRE2 regexes, llama.cpp's pre-tokenizer table,
 *                 normalisers (utf8proc)
 *   bpe_pretok.c  the pipeline before the merges: special-token partition, decoding,
 *                 normalisation, pre-tokenizer steps (PCRE2 Split, Digits, ByteLevel)
 *   bpe_json.c    tokenizer.json (+ tokenizer_config.json) → bpe_build → bpe_model
 *
 * Two rule sets, chosen by where the tokenizer came from (bpe_model.mode):
 *   BPE_MODE_GGUF  llama.cpp's llama-vocab.cpp: pre-tokenizer by tokenizer.ggml.pre name, special
 *                  tokens matched longest-first over the whole text, lax UTF-8 input decoding,
 *                  invalid output bytes → one U+FFFD per byte, first duplicate merge wins;
 *   BPE_MODE_JSON  Hugging Face `tokenizers`: the pipeline the file describes, added tokens
 *                  matched leftmost-longest with lstrip/rstrip/single_word, strict UTF-8 input
 *                  (invalid byte → U+FFFD), invalid output bytes → U+FFFD per maximal invalid
 *                  subpart (Rust's from_utf8_lossy), last duplicate merge wins.
 */
#ifndef LLM_TOKENIZER_BPE_H
#define LLM_TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* The one-line error of tokenizer/'s C files (bpe_text.c): printf format into err (nothing when
 * err is NULL or errlen 0); control characters from the input become '?'. */
void tok_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

enum { BPE_MODE_GGUF = 0, BPE_MODE_JSON = 1 };

/* Split behaviours (tokenizers' SplitDelimiterBehavior). */
enum { SB_REMOVED, SB_ISOLATED, SB_MERGED_PREV, SB_MERGED_NEXT, SB_CONTIGUOUS };
/* Pre-tokenizer step kinds. */
enum { PT_SPLIT, PT_DIGITS, PT_BYTELEVEL };
/* Normalisers (utf8proc). */
enum { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD };
/* Output UTF-8 repair when decoding. */
enum { UTF8_PER_BYTE, UTF8_MAXIMAL_SUBPART };

#define BPE_MAX_STEPS 8
#define BPE_MAX_NORMS 4

typedef struct {
    int kind;               /* PT_* */
    void *re;               /* pcre2_code * (PT_SPLIT; PT_BYTELEVEL with use_regex) */
    int behavior, invert;   /* PT_SPLIT */
    int individual_digits;  /* PT_DIGITS */
    int add_prefix_space;   /* PT_BYTELEVEL */
} bpe_step;

/* A token matched in the text before pre-tokenization (added tokens / specials). */
typedef struct {
    int id;
    char *text;             /* owned; for normalized tokens: the normalised content */
    size_t len;
    unsigned char special;  /* skipped when parse_special is off */
    unsigned char normalized, lstrip, rstrip, single_word;
} bpe_added;

/* One merge before resolution: the two parts as byte ranges (not NUL-terminated). */
typedef struct {
    const char *a, *b;
    size_t la, lb;
} bpe_merge_src;

/* Everything a loader gathers; bpe_model_build() turns it into a model. Pointers are borrowed. */
typedef struct {
    const char *source;     /* file name for messages */
    int mode;               /* BPE_MODE_* */
    int n_vocab;            /* ids are 0..n_vocab-1 */
    const char **tok;       /* [n_vocab] token texts; NULL for an id without a token */
    unsigned char *type;    /* [n_vocab] TOK_TYPE_* */
    unsigned char *in_model;/* [n_vocab] 1: part of the BPE model vocabulary (merge targets) */
    int n_merges;
    const bpe_merge_src *merges;
    const char *merges_field;   /* "tokenizer.ggml.merges" / "model.merges" for messages */
    int ignore_merges;
    int n_norms, norms[BPE_MAX_NORMS];
    int n_steps;
    bpe_step steps[BPE_MAX_STEPS];  /* ownership of the compiled regexes moves to the model */
    bpe_added *added;       /* ownership of the array and its texts moves to the model */
    int n_added;
    int bos, eos, eot, eom, pad, unk;
    int add_bos, add_eos;
    const char *chat_template;
} bpe_build;

typedef struct bpe_model bpe_model;

/* Open-addressing hash tables (bpe.c). */
typedef struct { int32_t *slot; uint32_t mask; } bpe_strmap;        /* token text → id */
typedef struct { uint64_t *key; int32_t *rank, *merged; uint32_t mask; } bpe_pairmap;

struct bpe_model {
    int mode;                   /* BPE_MODE_* */
    char *source;
    int n_vocab;
    char *text;                 /* all token texts, NUL-separated */
    uint32_t *text_off;         /* [n_vocab + 1] */
    char *bytes;                /* decoded bytes of each token */
    uint32_t *bytes_off;        /* [n_vocab + 1] */
    unsigned char *type;        /* [n_vocab] TOK_TYPE_* */
    bpe_strmap vocab;           /* model vocabulary (merge parts and targets) */
    bpe_pairmap merges;
    int byte_id[256];           /* token of each byte's byte-level character */
    int ignore_merges;
    int n_norms, norms[BPE_MAX_NORMS];
    int n_steps;
    bpe_step steps[BPE_MAX_STEPS];
    bpe_added *added;           /* GGUF: longest first */
    int n_added;
    unsigned char added_first[256];  /* 1: some added token starts with this byte */
    int bos, eos, eot, eom, pad, unk;
    int add_bos, add_eos;
    int *eog;                   /* sorted */
    int n_eog;
    char *chat_template;
    int utf8_policy;            /* UTF8_* */
    size_t max_piece;           /* longest decoded token, bytes */
};

/* Lookups (bpe.c): the id of the model-vocabulary token s[0..n), or -1; the merge of (a, b). */
int bpe_vocab_find(const bpe_model *m, const char *s, size_t n);
int bpe_merge_find(const bpe_model *m, int a, int b, int *merged);

/* Builds the model; on failure frees what build owns and returns NULL with err set. */
bpe_model *bpe_model_build(bpe_build *build, char *err, size_t errlen);
void bpe_model_free(bpe_model *m);

/* tok_bpe_spec (GGUF metadata) → model. */
bpe_model *bpe_model_from_spec(const tok_bpe_spec *spec, char *err, size_t errlen);
/* tokenizer.json (and tokenizer_config.json beside it) → model. */
bpe_model *bpe_model_from_json(const char *path, char *err, size_t errlen);
/* The same from tokenizer.json's text in memory (name in messages; no tokenizer_config.json). */
bpe_model *bpe_model_from_json_text(const char *text, size_t len, const char *name, char *err, size_t errlen);

int bpe_encode(const bpe_model *m, const char *text, size_t len, unsigned flags, int **ids,
               int *n, char *err, size_t errlen);
int bpe_decode(const bpe_model *m, const int *ids, int n, unsigned flags, char **text,
               size_t *len, char *err, size_t errlen);

int bpe_vocab_size(const bpe_model *m);
int bpe_bos_id(const bpe_model *m);
int bpe_eos_id(const bpe_model *m);
int bpe_add_bos(const bpe_model *m);
int bpe_add_eos(const bpe_model *m);
const char *bpe_piece(const bpe_model *m, int id);
int bpe_piece_to_id(const bpe_model *m, const char *piece);
int bpe_token_type(const bpe_model *m, int id);
int bpe_eog_ids(const bpe_model *m, const int **ids);
const char *bpe_chat_template(const bpe_model *m);
size_t bpe_max_piece_bytes(const bpe_model *m);

/* Streaming decoder state (embedded in tok_decoder). */
typedef struct {
    unsigned char pending[4];
    int n_pending;
    int special;            /* render control tokens */
} bpe_stream;

/* Appends the bytes ready after id to out (cap bytes), returns the count or -1 when they do not
 * fit (state unchanged then). */
int bpe_stream_push(const bpe_model *m, bpe_stream *s, int id, char *out, size_t cap);
int bpe_stream_flush(const bpe_model *m, bpe_stream *s, char *out, size_t cap);

/* ------------------------------------------------------- bpe_text.c, bpe_pretok.c */

/* GPT-2's bytes_to_unicode: the code point standing for byte b, and back (-1: none). */
uint32_t bpe_byte_to_cp(unsigned b);
int bpe_cp_to_byte(uint32_t cp);

/* Decodes the character at s[0..n) (n >= 1) into *cp and returns its length, or 0 when s[0]
 * cannot start one there (the caller then takes U+FFFD for one byte). Lax: llama.cpp's
 * unicode_cpt_from_utf8 (overlong forms and surrogates accepted; above U+10FFFF rejected).
 * Strict: well-formed UTF-8 only. */
int bpe_decode_lax(const unsigned char *s, size_t n, uint32_t *cp);
int bpe_decode_strict(const unsigned char *s, size_t n, uint32_t *cp);

/* Appends the UTF-8 encoding of cp (llama.cpp's unicode_cpt_to_utf8: surrogates encoded as
 * three bytes) to out; returns the byte count (1..4). cp must be <= 0x10FFFF. */
int bpe_utf8_put(uint32_t cp, char *out);

/* Repairs bytes for output: appends to out the valid characters of s[0..n) and U+FFFD for the
 * invalid bytes under policy; with final == 0 stops before a trailing incomplete character and
 * returns how many bytes were consumed. out needs room for 3 * n bytes. *outn receives the count
 * written. */
size_t bpe_utf8_repair(const unsigned char *s, size_t n, int policy, int final, char *out,
                       size_t *outn);

/* Compiles a tokenizers/llama.cpp regex with PCRE2 (UTF, UCP; \s and \S rewritten to Unicode
 * White_Space as Oniguruma and llama.cpp define it). NULL with err ("<field>: <pcre2 message> at
 * offset N") on failure. */
void *bpe_regex_compile(const char *pattern, const char *field, char *err, size_t errlen);
void bpe_regex_free(void *re);

/* Sets build->steps for a llama.cpp pre-tokenizer name (tokenizer.ggml.pre); also ignore_merges
 * and the add_bos default. Returns 0, or -1 with err for an unknown name. */
int bpe_pretok_from_name(bpe_build *b, const char *name, int *add_bos_default, char *err,
                         size_t errlen);

/* Callback receiving each word (UTF-8 bytes, before the byte-level mapping). */
typedef int (*bpe_word_fn)(void *ctx, const char *bytes, size_t n);
/* Callback receiving a special token matched in the text. */
typedef int (*bpe_tok_fn)(void *ctx, int id);

/* Runs the text pipeline of m over text[0..len): special-token partition (parse_special), UTF-8
 * decoding, normalisers, pre-tokenizer steps; calls word() per word and tok() per matched token,
 * in order. Returns 0, or -1 (out of memory, or a callback's -1). */
int bpe_pretokenize(const bpe_model *m, const char *text, size_t len, int parse_special,
                    bpe_word_fn word, bpe_tok_fn tok, void *ctx);

/* Accessors bpe_pretok.c needs from the model (bpe.c). */
int bpe_model_mode(const bpe_model *m);
const bpe_step *bpe_model_steps(const bpe_model *m, int *n);
const int *bpe_model_norms(const bpe_model *m, int *n);
const bpe_added *bpe_model_added(const bpe_model *m, int *n);

/* Normalises UTF-8 s[0..n) with the normaliser list; returns a malloc'd string (*outn bytes) or
 * NULL when out of memory. s must be valid UTF-8. */
char *bpe_normalize(const int *norms, int n_norms, const char *s, size_t n, size_t *outn);

#endif
