/* tokenizer/ — the interface of the tokenizer directory. One tokenizer type, two
 * implementations:
 *   - SentencePiece models (tokenizer.model) behind a small extern "C" wrapper (tokenizer.cc);
 *   - byte-level BPE (GPT-2 style: SmolLM2, Qwen2, LLaMA-3) from a Hugging Face tokenizer.json
 *     (bpe_json.c) or from GGUF metadata handed over as plain data (tok_bpe_spec; model/ reads
 *     the GGUF, tokenizer/ never includes model/), implemented in bpe.c, bpe_codec.c,
 *     bpe_text.c and bpe_pretok.c (PCRE2 for the pre-tokenizer regexes, utf8proc for NFC,
 *     cJSON; see bpe.h);
 * plus a streaming detokenizer for printing tokens as they are generated (tok_decoder.cc), and
 * chat templates (chat.c) with the --messages JSON parser (chat_messages.c).
 *
 * Token ids are int, 0 <= id < tokenizer_vocab_size(). Text is UTF-8, NUL-terminated unless a
 * length is passed.
 * BOS: tokenizer_encode never adds it; tokenizer_add_bos() says whether the model wants one in
 * front of a prompt (tokenizer_encode_ex with TOK_ADD_SPECIAL puts it there).
 *
 * Which reference the BPE implementation follows (they disagree on a few inputs):
 *   - loaded from tokenizer.json: the Hugging Face `tokenizers` library running that file;
 *   - loaded from GGUF metadata (tokenizer_load_bpe): llama.cpp (llama-vocab.cpp), which picks
 *     the pre-tokenizer regexes by the tokenizer.ggml.pre name and does not normalise.
 *   transformers' own GGUF conversion departs from both: for SmolLM2 it uses the plain GPT-2
 *   regex while the original tokenizer.json and llama.cpp split digits one by one, so "a  2" and
 *   "\n\n2015" tokenize differently there; for Qwen2 the original tokenizer.json applies NFC and
 *   llama.cpp does not ("e\u0301" stays two characters in GGUF mode). GGUF mode also follows
 *   llama.cpp in promoting tokens that look like end of generation or FIM ("</s>" id 128247 in
 *   Qwen2.5, type NORMAL in the file) to control: they are matched as specials in text, hidden
 *   in output and listed by tokenizer_eog_ids.
 *   Input that is not valid UTF-8: GGUF mode decodes it as llama.cpp does (each invalid byte →
 *   U+FFFD; overlong forms and surrogates are accepted as the code points they spell; above
 *   U+10FFFF, where llama.cpp throws, → U+FFFD per byte); tokenizer.json mode replaces each
 *   byte that does not start a well-formed character by U+FFFD (the library takes only str).
 *   Output bytes that are not valid UTF-8 (a token sequence cut inside a character): GGUF mode →
 *   U+FFFD per byte (llama.cpp), tokenizer.json mode → U+FFFD per maximal invalid subpart
 *   (tokenizers' String::from_utf8_lossy).
 *   A byte whose byte-level character is not in the vocabulary (SmolLM2 lacks a few control
 *   bytes, e.g. 0x04): tokenizer.json mode → model.unk_token, as tokenizers does; GGUF mode
 *   drops it, as llama.cpp does.
 *   Known limits: Unicode properties come from PCRE2's tables (Unicode 14 in Debian 12) and
 *   utf8proc (15); the references use their own, so characters assigned after Unicode 14 may
 *   split differently. An added token whose text is also a vocabulary entry keeps the id the
 *   tokenizer.json gives it (tokenizers would use the vocabulary id). llama.cpp's detokenizer
 *   option clean_spaces is not applied (decoding is the plain concatenation of token bytes).
 *
 * Errors: functions that can fail take `char *err, size_t errlen` (err may be NULL) and return
 * 0 on success, or -1 (NULL for constructors) with a one-line message in err that names the file
 * or the offending value ("../shared/models/x/tokenizer.model: cannot open (No such file or
 * directory)", "token id 40000 out of range [0, 32000)", "x/tokenizer.json: model.merges[7]
 * \"a b\": \"b\" is not in the vocabulary"). Nothing here calls exit() or abort(), and no C++
 * exception crosses into C.
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

/* ------------------------------------------------------------------------- loading */

typedef struct tokenizer tokenizer;

/* Loads a tokenizer file, telling the format by its content: a JSON object (tokenizer.json,
 * byte-level BPE; tokenizer_config.json in the same folder is read too when present: bos_token,
 * eos_token, pad_token, add_bos_token, add_eos_token, chat_template) or a SentencePiece model
 * (tokenizer.model). A folder is searched for tokenizer.json, then tokenizer.model. Returns NULL
 * with a one-line error naming the file (and the JSON field: "x/tokenizer.json: model.vocab:
 * missing ...", "...pre_tokenizer.pretokenizers[0].pattern.Regex: bad regex ...") when it is
 * missing, unreadable or not a supported tokenizer. Free with tokenizer_free. */
tokenizer *tokenizer_load(const char *model_path, char *err, size_t errlen);

/* GGUF token types (tokenizer.ggml.token_type). */
enum {
    TOK_TYPE_NORMAL = 1, TOK_TYPE_UNKNOWN = 2, TOK_TYPE_CONTROL = 3, TOK_TYPE_USER_DEFINED = 4,
    TOK_TYPE_UNUSED = 5, TOK_TYPE_BYTE = 6
};

/* A byte-level BPE tokenizer as GGUF metadata describes it (tokenizer.ggml.model "gpt2"), in
 * plain data so tokenizer/ needs nothing from model/. Every pointer is borrowed for the duration
 * of tokenizer_load_bpe only (everything is copied). Set it up with tok_bpe_spec_init, which
 * zeroes it and sets every id and flag to -1 (absent). */
typedef struct tok_bpe_spec {
    const char *source;             /* name used in messages (the GGUF path); NULL → "GGUF" */
    const char *const *tokens;      /* [n_tokens] token texts, UTF-8 (tokenizer.ggml.tokens) */
    int n_tokens;
    const char *const *merges;      /* [n_merges] "a b" (tokenizer.ggml.merges); rank = index */
    int n_merges;
    const int *token_type;          /* [n_tokens] TOK_TYPE_* (tokenizer.ggml.token_type) or NULL
                                       (all normal) */
    const char *pre;                /* tokenizer.ggml.pre: "llama-bpe"/"llama3", "qwen2",
                                       "smollm", "gpt-2", "default" (NULL or "" → "default"),
                                       and their llama.cpp aliases */
    int bos_id, eos_id, eot_id, eom_id, pad_id, unk_id;  /* tokenizer.ggml.*_token_id; -1 */
    int add_bos, add_eos;           /* tokenizer.ggml.add_bos_token / add_eos_token: 0/1, or -1
                                       absent (→ llama.cpp's default: 1 for llama3, else 0) */
    const char *chat_template;      /* tokenizer.chat_template (Jinja text) or NULL */
} tok_bpe_spec;

void tok_bpe_spec_init(tok_bpe_spec *spec);

/* A tokenizer file already in memory, buf[0..len): tokenizer.json (a JSON object; no
 * tokenizer_config.json is read) or a serialized SentencePiece model. name is used in messages.
 * The fuzz targets' entry point (fuzz/fuzz_tokjson.c, fuzz/fuzz_spmodel.c). NULL with a one-line
 * error as tokenizer_load. */
tokenizer *tokenizer_load_mem(const void *buf, size_t len, const char *name, char *err, size_t errlen);

/* Builds a byte-level BPE tokenizer from GGUF metadata with llama.cpp's rules (see the top of
 * this file). Returns NULL with a one-line error naming spec->source and the GGUF key: an unknown
 * tokenizer.ggml.pre ("...: tokenizer.ggml.pre \"foo\" is not supported (known: ...)"), a merge
 * naming a token that is not in the vocabulary, a vocabulary without the 256 byte-level
 * characters, add_bos without a BOS id. Free with tokenizer_free. */
tokenizer *tokenizer_load_bpe(const tok_bpe_spec *spec, char *err, size_t errlen);

/* Frees t and everything it owns (piece strings included). NULL is a no-op. */
void tokenizer_free(tokenizer *t);

enum { TOK_KIND_SPM = 1, TOK_KIND_BPE = 2 };
int tokenizer_kind(const tokenizer *t);  /* TOK_KIND_*, 0 for NULL */

/* ------------------------------------------------------------------------ encoding */

/* Flags of tokenizer_encode_ex. */
enum {
    /* Special tokens written in the text ("<|im_start|>", "<|endoftext|>", "<s>") become their
     * single id. BPE: control, unknown and added special tokens (user-defined / non-special
     * added tokens are matched even without the flag, as llama.cpp and tokenizers do); without
     * the flag such text is tokenized as text (transformers' split_special_tokens=True,
     * llama.cpp's parse_special=false). SentencePiece: the control pieces (<s>, </s>) split the
     * text, each part is encoded separately (as llama.cpp does). */
    TOK_PARSE_SPECIAL = 1u,
    /* Put BOS in front when tokenizer_add_bos(), EOS at the end when tokenizer_add_eos(). */
    TOK_ADD_SPECIAL = 2u
};

/* Encodes text[0..len) (may contain NUL bytes and invalid UTF-8, see the top of this file).
 * On success *ids is a malloc'd array of *n ids that the caller frees (never NULL, even when
 * *n == 0). Returns 0, or -1 with err set (out of memory, library error); *ids is NULL and *n is
 * 0 on failure. BPE runs in O(n log n) per pre-tokenized word: a 100 kB prompt takes
 * milliseconds. */
int tokenizer_encode_ex(const tokenizer *t, const char *text, size_t len, unsigned flags,
                        int **ids, int *n, char *err, size_t errlen);

/* tokenizer_encode_ex(t, text, strlen(text), flags, ...) without BOS/EOS, where flags is
 * TOK_PARSE_SPECIAL for BPE (special tokens in the text become ids, as transformers' encode and
 * llama.cpp do) and 0 for SentencePiece (its historical behaviour: exactly SentencePiece Encode,
 * normalisation, add_dummy_prefix, byte fallback, each invalid UTF-8 byte encoded as U+FFFD). */
int tokenizer_encode(const tokenizer *t, const char *text, int **ids, int *n,
                     char *err, size_t errlen);

/* ------------------------------------------------------------------------ decoding */

enum {
    /* Render control and unknown tokens as their text (BPE; e.g. "<|im_end|>"). Without it they
     * decode to nothing. SentencePiece ignores the flag (DecodeIds hides control tokens). */
    TOK_DECODE_SPECIAL = 1u
};

/* Decodes ids[0..n). On success *text is a malloc'd NUL-terminated string the caller frees and
 * *len (when len is not NULL) its byte count (a decoded NUL byte may sit inside). BPE: the bytes
 * of the tokens concatenated, invalid UTF-8 repaired as described at the top of this file;
 * decode(encode(x)) == x for valid UTF-8 x (with TOK_DECODE_SPECIAL when x contains special
 * tokens; NFC-normalising tokenizer.json models give NFC(x)). SentencePiece: DecodeIds (see
 * tokenizer_decode). Returns 0, or -1 with err set (an id out of range names the id; *text is
 * NULL). */
int tokenizer_decode_ex(const tokenizer *t, const int *ids, int n, unsigned flags, char **text,
                        size_t *len, char *err, size_t errlen);

/* tokenizer_decode_ex(t, ids, n, 0, text, NULL, ...). SentencePiece: DecodeIds of ids[0..n)
 * (control tokens invisible, "▁" → space, byte pieces joined into UTF-8 with U+FFFD per invalid
 * byte, <unk> → the model's unk surface, one leading space of the text dropped; a <0x00> piece
 * puts a NUL inside the string; use tok_decoder for exact byte counts). */
int tokenizer_decode(const tokenizer *t, const int *ids, int n, char **text,
                     char *err, size_t errlen);

/* DRY's sequence breakers from a text (tokenizer/overlap.c; llama.cpp's
 * get_overlapping_token_sequences, src/llama-sampler.cpp): for every id whose text
 * (tokenizer_decode_ex with TOK_DECODE_SPECIAL) contains str[0..str_len), the sequence {id}; for
 * every id whose text ends with a proper prefix str[0..i) of it (each place), {id, the ids of
 * str[i..] (tokenizer_encode_ex, flags 0), at most max_tail of them (< 0: all)}, once each.
 * Returns 0 with the sequences concatenated in *seq and their lengths in *len (malloc'd; NULL
 * when *n is 0), or -1 with err set. One decode per id: about 0.1 s for 150k ids. A BPE token
 * ending inside a UTF-8 character decodes to U+FFFD here where llama.cpp keeps the raw bytes: the
 * tables differ only for a str whose bytes are not ASCII. */
int tokenizer_overlaps(const tokenizer *t, const char *str, size_t str_len, int max_tail, int **seq, int **len,
                       int *n, char *err, size_t errlen);

/* ------------------------------------------------------------------------- queries */

int tokenizer_vocab_size(const tokenizer *t); /* number of ids (32000 for LLaMA-2) */
int tokenizer_bos_id(const tokenizer *t);     /* BOS (<s>, <|begin_of_text|>); -1 when none */
int tokenizer_eos_id(const tokenizer *t);     /* EOS (</s>, <|im_end|>); -1 when none */

/* Whether the model wants BOS in front of a prompt: SentencePiece: 1 when it has a BOS; BPE from
 * GGUF: tokenizer.ggml.add_bos_token (else llama.cpp's default for the pre-tokenizer); BPE from
 * tokenizer.json: add_bos_token of tokenizer_config.json, else whether the post-processor
 * (TemplateProcessing) puts a special token first. SmolLM2 and Qwen2: 0; LLaMA-2/3: 1. */
int tokenizer_add_bos(const tokenizer *t);
int tokenizer_add_eos(const tokenizer *t);  /* the same for EOS at the end (usually 0) */

/* The ids that end generation, sorted, in *ids (owned by t; valid until tokenizer_free); returns
 * their count. BPE: eos, eot, eom and every token named like an end of generation as llama.cpp
 * lists them ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "</s>", "<|end|>",
 * "<EOT>", "<|end_of_text|>", "<end_of_turn>", ... and the FIM pad/repo/file-separator tokens),
 * whatever their type. SentencePiece: eos. */
int tokenizer_eog_ids(const tokenizer *t, const int **ids);
int tokenizer_is_eog(const tokenizer *t, int id);  /* 1 when id is in that list */

/* TOK_TYPE_* of id (SentencePiece: normal/unknown/control/byte), 0 when out of range. */
int tokenizer_token_type(const tokenizer *t, int id);

/* The chat template (Jinja text) that came with the tokenizer (GGUF tokenizer.chat_template or
 * tokenizer_config.json chat_template), or NULL. Owned by t. */
const char *tokenizer_chat_template(const tokenizer *t);

/* The raw piece of id ("▁the", "<0x0A>", "<s>"; BPE: "Ġthe", "<|im_start|>"), or NULL when id is
 * out of range. The pointer belongs to t and stays valid until tokenizer_free. */
const char *tokenizer_piece(const tokenizer *t, int id);

/* The id of a raw piece string, or -1 when the piece is not in the vocabulary (SentencePiece maps
 * unknown pieces to <unk>; that case, and "<unk>" itself, return -1). */
int tokenizer_piece_to_id(const tokenizer *t, const char *piece);

/* ------------------------------------------------ streaming detokenizer (tok_decoder.cc) */

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
 * its output denormalised by DecodeIds but not here.
 * BPE: the concatenation equals tokenizer_decode_ex with the same TOK_DECODE_SPECIAL setting
 * (tok_decoder_set_special; off by default: control tokens emit nothing). A token's bytes that
 * end inside a UTF-8 character are held until it completes; invalid bytes become U+FFFD as
 * tokenizer_decode_ex does. prev_token of tok_decoder_reset has no effect (no space stripping). */
typedef struct tok_decoder tok_decoder;

/* An output buffer size that push and flush never find too small for a model whose decoded
 * pieces (and unk surface) are at most 200 bytes (LLaMA-2: 27): one call writes at most one
 * piece plus three U+FFFD for held bytes (9 bytes), or 10 bytes for a byte piece. */
#define TOK_DECODER_BUF 256

/* The output buffer size that push and flush never find too small for t (at least
 * TOK_DECODER_BUF; BPE: 3 bytes (a U+FFFD) for each byte of the longest decoded token and of the
 * held bytes, 397 for Qwen2.5). */
/* A buffer size that covers tok_decoder_buf_size() of every tokenizer llm-run loads (the
 * longest BPE token in the supported vocabularies is under 400 bytes; a tokenizer whose tokens
 * are longer is refused at load by the callers that use it: tok_decoder_buf_size() > this). */
#define TOK_PIECE_MAX 4096
size_t tok_decoder_buf_size(const tokenizer *t);

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

/* BPE: render control tokens as their text (1) or not (0, the default). Kept across resets.
 * No effect for SentencePiece. */
void tok_decoder_set_special(tok_decoder *d, int render);

/* Ends the stream: pending bytes of an incomplete character become U+FFFD (one per byte). Writes
 * them NUL-terminated and returns their count, or -1 when they do not fit (nothing consumed).
 * Does not reset: pushing more continues the same text. */
int tok_decoder_flush(tok_decoder *d, char *out, size_t outlen);

/* --------------------------------------------------------- chat templates (chat.c) */

/* The Llama-2 chat template for a single user turn, without BOS (the caller adds it):
 *   with a system prompt:  "[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]"
 *   without (system NULL or ""): "[INST] {user} [/INST]"
 * system and user are inserted verbatim (not trimmed). Returns a malloc'd string the caller
 * frees, or NULL when user is NULL or out of memory. */
char *chat_format_llama2(const char *system, const char *user);

/* A conversation turn. role is "system", "user" or "assistant"; content is UTF-8. */
typedef struct {
    const char *role;
    const char *content;
} chat_message;

/* Template families rendered natively (no Jinja engine): each reproduces, byte for byte, what
 * transformers' apply_chat_template renders with the reference template of the family:
 *   CHATML  "<|im_start|>{role}\n{content}<|im_end|>\n" per message, "<|im_start|>assistant\n"
 *           for the generation prompt; when the model's template has a default system prompt
 *           (SmolLM2: "You are a helpful AI assistant named SmolLM, trained by Hugging Face";
 *           Qwen2.5: "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.") it
 *           is inserted as a first system message when the conversation does not start with
 *           one (SmolLM2's and Qwen2.5's templates, tools aside);
 *   LLAMA3  Meta-Llama-3-Instruct: BOS text, then "<|start_header_id|>{role}<|end_header_id|>
 *           \n\n{content, trimmed}<|eot_id|>" per message, "<|start_header_id|>assistant
 *           <|end_header_id|>\n\n" for the generation prompt (Llama-3.1+ templates with the
 *           "Cutting Knowledge Date" header are not reproduced and are rejected);
 *   LLAMA2  Llama-2-chat: an optional first system message goes into the first user turn as
 *           "<<SYS>>\n{system}\n<</SYS>>\n\n"; each user turn is "{BOS}[INST] {content,
 *           stripped} [/INST]", each assistant turn " {content, stripped} {EOS}"; roles after
 *           the system message must alternate user/assistant (an error otherwise); the
 *           generation prompt adds nothing. ("Stripped"/"trimmed": Python's str.strip().) */
typedef enum {
    CHAT_FAMILY_NONE = 0, CHAT_FAMILY_CHATML, CHAT_FAMILY_LLAMA3, CHAT_FAMILY_LLAMA2
} chat_family;

typedef struct chat_template chat_template;

/* Chooses the family: by name when name is not NULL ("chatml", "llama3", "llama2", the values of
 * --chat-template), else from the Jinja text by its markers ("<|im_start|>" → chatml,
 * "<|start_header_id|>" and "<|end_header_id|>" → llama3, "[INST]" → llama2), and takes the
 * default system prompt from the Jinja text (a string literal holding "<|im_start|>system\n
 * ...<|im_end|>") when the family is the detected one. jinja NULL or "" (no template, e.g. the
 * TinyStories SentencePiece folders) → llama2. bos_text/eos_text are the BOS/EOS token texts the
 * template writes (Llama-2/3; NULL → ""). Errors (NULL, one line): an unknown name ("unknown chat
 * template \"x\" (--chat-template chatml|llama3|llama2)"), a template of no known family
 * ("chat template not recognised (...); choose one with --chat-template chatml|llama3|llama2"). */
chat_template *chat_template_new(const char *jinja, const char *name, const char *bos_text,
                                 const char *eos_text, char *err, size_t errlen);

/* chat_template_new with t's template (tokenizer_chat_template) and its BOS/EOS texts. */
chat_template *chat_template_for(const tokenizer *t, const char *name, char *err,
                                 size_t errlen);
/* The same with another Jinja text in place of t's (llama.cpp's --chat-template-file). */
chat_template *chat_template_for_text(const tokenizer *t, const char *jinja, const char *name, char *err,
                                      size_t errlen);

void chat_template_free(chat_template *ct);  /* NULL is a no-op */
chat_family chat_template_family(const chat_template *ct);
const char *chat_template_name(const chat_template *ct);  /* "chatml", "llama3", "llama2" */
/* The default system prompt found in the Jinja text, or NULL. Owned by ct. */
const char *chat_template_default_system(const chat_template *ct);
/* 1 when the rendered text starts with the BOS text (llama2, llama3 with a BOS): encode it with
 * TOK_PARSE_SPECIAL and without adding another BOS. */
int chat_template_bos_in_text(const chat_template *ct);

/* Renders msgs[0..n) (n >= 1); add_generation_prompt appends the assistant header. Returns a
 * malloc'd string the caller frees, or NULL with a one-line error naming the message
 * ("message 2: role \"tool\" is not system, user or assistant", "llama2: message 3: roles must
 * alternate user/assistant after the system message"). */
char *chat_template_render(const chat_template *ct, const chat_message *msgs, int n,
                           int add_generation_prompt, char *err, size_t errlen);

/* ----------------------------------------------------- --messages files (chat_messages.c) */

/* Parses a JSON array of {"role": ..., "content": ...} objects (the OpenAI messages shape; other
 * keys are ignored) from json[0..len). name is used in messages (the file name). On success
 * *msgs is a malloc'd array of *n messages whose strings it owns; free with chat_messages_free.
 * Errors (one line): "name: invalid JSON at byte N", "name: expected a JSON array of messages",
 * "name: message 2: missing \"content\" (a string)", "name: message 3: unknown role \"tool\"
 * (expected system, user or assistant)", "name: no messages". */
int chat_messages_parse(const char *json, size_t len, const char *name, chat_message **msgs,
                        int *n, char *err, size_t errlen);
/* The same, reading the file at path (the error names the path). */
int chat_messages_load(const char *path, chat_message **msgs, int *n, char *err, size_t errlen);
void chat_messages_free(chat_message *msgs, int n);  /* NULL is a no-op */

#ifdef __cplusplus
}
#endif

#endif
