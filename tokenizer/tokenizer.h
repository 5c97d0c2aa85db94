/* tokenizer/ — the interface of the tokenizer directory: SentencePiece models (tokenizer.model)
 * behind a small extern "C" wrapper (tokenizer.cc), a streaming detokenizer for printing tokens
 * as they are generated (tokenizer.cc), and prompt templates (chat.c).
 *
 * Token ids are int, 0 <= id < tokenizer_vocab_size(). Text is UTF-8, NUL-terminated.
 * Nothing here adds BOS: the caller puts tokenizer_bos_id() in front of the prompt.
 *
 * Errors: functions that can fail take `char *err, size_t errlen` (err may be NULL) and return
 * 0 on success, or -1 (NULL for constructors) with a one-line message in err that names the file
 * or the offending value ("../shared/models/x/tokenizer.model: cannot open (No such file or
 * directory)", "token id 40000 out of range [0, 32000)"). Nothing here calls exit() or abort(),
 * and no C++ exception crosses into C.
 *
 * Thread safety: a loaded tokenizer is read-only and may be shared by threads; a tok_decoder
 * belongs to one thread.
 */
#ifndef LLM_TOKENIZER_H
#define LLM_TOKENIZER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ SentencePiece (tokenizer.cc) */

typedef struct tokenizer tokenizer;

/* Loads a SentencePiece model file (tokenizer.model). Returns NULL with a one-line error naming
 * model_path when the file is missing or unreadable or is not a SentencePiece model. Free with
 * tokenizer_free. */
tokenizer *tokenizer_load(const char *model_path, char *err, size_t errlen);

/* Frees t and everything it owns (piece strings included). NULL is a no-op. */
void tokenizer_free(tokenizer *t);

/* SentencePiece Encode of text (normalisation, add_dummy_prefix, byte fallback: exactly what the
 * library does; each invalid UTF-8 byte is encoded as U+FFFD), without BOS/EOS. On success *ids
 * is a malloc'd array of *n ids that the caller frees (never NULL, even when *n == 0). Returns 0,
 * or -1 with err set (out of memory, library error); *ids is NULL and *n is 0 on failure. */
int tokenizer_encode(const tokenizer *t, const char *text, int **ids, int *n,
                     char *err, size_t errlen);

/* SentencePiece DecodeIds of ids[0..n) (control tokens invisible, "▁" → space, byte pieces
 * joined into UTF-8 with U+FFFD per invalid byte, <unk> → the model's unk surface, one leading
 * space of the text dropped). On success *text is a malloc'd NUL-terminated string the caller
 * frees (a <0x00> piece puts a NUL inside it; use tok_decoder for exact byte counts). Returns 0,
 * or -1 with err set (an id out of range names the id; *text is NULL). */
int tokenizer_decode(const tokenizer *t, const int *ids, int n, char **text,
                     char *err, size_t errlen);

int tokenizer_vocab_size(const tokenizer *t); /* number of pieces (32000 for LLaMA-2) */
int tokenizer_bos_id(const tokenizer *t);     /* <s>; -1 when the model has none */
int tokenizer_eos_id(const tokenizer *t);     /* </s>; -1 when the model has none */

/* The raw piece of id ("▁the", "<0x0A>", "<s>"), or NULL when id is out of range. The pointer
 * belongs to t and stays valid until tokenizer_free. */
const char *tokenizer_piece(const tokenizer *t, int id);

/* The id of a raw piece string, or -1 when the piece is not in the vocabulary (SentencePiece maps
 * unknown pieces to <unk>; that case, and "<unk>" itself, return -1). */
int tokenizer_piece_to_id(const tokenizer *t, const char *piece);

/* ------------------------------------------------ streaming detokenizer (tokenizer.cc) */

/* Turns ids into text one token at a time, for printing during generation. The concatenation of
 * everything tok_decoder_push and tok_decoder_flush return after a reset equals
 * tokenizer_decode (SentencePiece DecodeIds) of the ids pushed since that reset:
 *  - "▁" becomes a space; control tokens (<s>, </s>) emit nothing; <unk> emits the model's unk
 *    surface (" ⁇ " for LLaMA);
 *  - byte-fallback pieces <0xNN> are held until they form a complete UTF-8 character; a byte that
 *    cannot start or continue a valid character becomes U+FFFD (EF BF BD), one per byte, exactly
 *    as SentencePiece does (so a split multi-byte character emits nothing until complete);
 *  - add_dummy_prefix: while nothing has been emitted since the reset (and the reset's
 *    prev_token was BOS/control or -1), a piece starting with "▁" loses that one leading space.
 *    Which pieces count follows the linked libsentencepiece, probed at load: 0.1.97 and 0.2.x
 *    strip only the first "▁" ("▁", "▁a" decodes to " a"); older releases kept stripping while
 *    the output was still empty ("a"); models with remove_extra_whitespaces (babyllama-tok105)
 *    strip every leading "▁" while nothing has been emitted.
 *    A BOS pushed in the middle of a stream emits nothing and does not re-arm the stripping
 *    (DecodeIds does not either).
 * Limitation: a model with a non-empty denormalizer_spec (none of the LLaMA family) would have
 * its output denormalised by DecodeIds but not here. */
typedef struct tok_decoder tok_decoder;

/* An output buffer size that push and flush never find too small for a model whose decoded
 * pieces (and unk surface) are at most 200 bytes (LLaMA-2: 27): one call writes at most one
 * piece plus three U+FFFD for held bytes (9 bytes), or 10 bytes for a byte piece. */
#define TOK_DECODER_BUF 256

/* A decoder reading pieces from t (t must outlive it), reset with prev_token = -1. NULL when out
 * of memory. */
tok_decoder *tok_decoder_new(const tokenizer *t);
void tok_decoder_free(tok_decoder *d); /* NULL is a no-op */

/* Starts a new stream. Pending bytes are dropped. prev_token is the token that precedes the
 * stream: -1 or a control token (BOS) → the stream is the start of a text and its first piece
 * loses its leading space; any other token (the last prompt token when printing a continuation)
 * → no space is stripped. */
void tok_decoder_reset(tok_decoder *d, int prev_token);

/* Feeds one id. Writes the bytes that are now ready (possibly none) to out, NUL-terminated, and
 * returns their count (excluding the terminating NUL; <0x00> emits a NUL byte, which counts).
 * Returns -1 and consumes nothing when id is out of range or the output does not fit in
 * outlen - 1 bytes (out[0] = '\0' then when outlen > 0); outlen >= TOK_DECODER_BUF always fits. */
int tok_decoder_push(tok_decoder *d, int id, char *out, size_t outlen);

/* Ends the stream: pending bytes of an incomplete character become U+FFFD (one per byte). Writes
 * them NUL-terminated and returns their count, or -1 when they do not fit (nothing consumed).
 * Does not reset: pushing more continues the same text. */
int tok_decoder_flush(tok_decoder *d, char *out, size_t outlen);

/* ------------------------------------------------------------- prompt templates (chat.c) */

/* The Llama-2 chat template for a single user turn, without BOS (the caller adds it):
 *   with a system prompt:  "[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]"
 *   without (system NULL or ""): "[INST] {user} [/INST]"
 * system and user are inserted verbatim (not trimmed). Returns a malloc'd string the caller
 * frees, or NULL when user is NULL or out of memory. */
char *chat_format_llama2(const char *system, const char *user);

#ifdef __cplusplus
}
#endif

#endif
