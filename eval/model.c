/* model.c — a model as the commands use it: weights (model/), the tokenizer that goes with
 * them (tokenizer/: a folder's tokenizer.json or tokenizer.model, or the vocabulary inside a
 * GGUF file), the chat template, the end-of-generation ids, and prompt encoding (plain text,
 * one chat turn, or a --messages conversation). The one place that joins model/ and
 * tokenizer/, which sit side by side and never include each other. */
#include "eval/runner.h"
#include "kernels/kernels.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The GGUF's tokenizer metadata → a BPE tokenizer (tokenizer.ggml.model "gpt2"). */
static tokenizer *gguf_tokenizer(const gguf_file *g, char *err, size_t errlen)
{
    char *kind = NULL, *pre = NULL, *tmpl = NULL, **tokens = NULL, **merges = NULL;
    double *types = NULL;
    int *itypes = NULL, n_tok = 0, n_merge = 0, n_types = 0;
    tokenizer *t = NULL;
    if (gguf_get_str(g, "tokenizer.ggml.model", &kind, err, errlen) <= 0) {
        if (!kind && (!err || !err[0])) fail(err, errlen, "%s: no tokenizer (tokenizer.ggml.model missing)", g->path);
        goto done;
    }
    if (strcmp(kind, "gpt2")) {
        fail(err, errlen, "%s: tokenizer.ggml.model \"%.32s\" is not supported (gpt2 byte-level BPE is; for a "
             "SentencePiece model use the Hugging Face folder)", g->path, kind);
        goto done;
    }
    if (gguf_get_str_array(g, "tokenizer.ggml.tokens", &tokens, &n_tok, err, errlen) <= 0 ||
        gguf_get_str_array(g, "tokenizer.ggml.merges", &merges, &n_merge, err, errlen) < 0 ||
        gguf_get_num_array(g, "tokenizer.ggml.token_type", &types, &n_types, err, errlen) < 0 ||
        gguf_get_str(g, "tokenizer.ggml.pre", &pre, err, errlen) < 0 ||
        gguf_get_str(g, "tokenizer.chat_template", &tmpl, err, errlen) < 0) {
        if (!tokens && (!err || !err[0])) fail(err, errlen, "%s: tokenizer.ggml.tokens missing", g->path);
        goto done;
    }
    if (types && n_types != n_tok) {
        fail(err, errlen, "%s: tokenizer.ggml.token_type has %d entries for %d tokens", g->path, n_types, n_tok);
        goto done;
    }
    if (types && !(itypes = malloc(sizeof *itypes * (size_t)(n_tok ? n_tok : 1)))) {
        fail(err, errlen, "out of memory");
        goto done;
    }
    for (int i = 0; types && i < n_tok; i++) itypes[i] = (int)types[i];
    tok_bpe_spec spec;
    tok_bpe_spec_init(&spec);
    spec.source = g->path;
    spec.tokens = (const char *const *)tokens;
    spec.n_tokens = n_tok;
    spec.merges = (const char *const *)merges;
    spec.n_merges = n_merge;
    spec.token_type = itypes;
    spec.pre = pre;
    spec.chat_template = tmpl;
    const struct { const char *key; int *dst; } ids[] = {
        {"tokenizer.ggml.bos_token_id", &spec.bos_id}, {"tokenizer.ggml.eos_token_id", &spec.eos_id},
        {"tokenizer.ggml.eot_token_id", &spec.eot_id}, {"tokenizer.ggml.eom_token_id", &spec.eom_id},
        {"tokenizer.ggml.padding_token_id", &spec.pad_id}, {"tokenizer.ggml.unknown_token_id", &spec.unk_id},
        {"tokenizer.ggml.add_bos_token", &spec.add_bos}, {"tokenizer.ggml.add_eos_token", &spec.add_eos},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        int64_t v;
        int rc = gguf_get_int(g, ids[i].key, &v, err, errlen);
        if (rc < 0) goto done;
        if (rc) *ids[i].dst = v >= 0 && v < n_tok ? (int)v : -1;
    }
    t = tokenizer_load_bpe(&spec, err, errlen);
done:
    free(kind);
    free(pre);
    free(tmpl);
    free(types);
    free(itypes);
    gguf_free_str_array(tokens, n_tok);
    gguf_free_str_array(merges, n_merge);
    return t;
}

eval_model *eval_model_open(const char *path, const eval_model_opts *o, char *err, size_t errlen)
{
    eval_model_opts def = {.threads = 0, .dtype = -1, .resident = 1};
    if (!o) o = &def;
    eval_model *m = calloc(1, sizeof *m);
    if (!m) {
        fail(err, errlen, "out of memory");
        return NULL;
    }
    m->threads = o->threads > 0 ? o->threads : cpu_num_cores();
    if (model_load(path, &m->w, err, errlen) != 0 ||
        (!o->no_check && model_check_finite(&m->w, err, errlen) != 0) ||
        (o->dtype >= 0 && model_convert(&m->w, (dtype_t)o->dtype, err, errlen) != 0) ||
        (o->resident && model_make_resident(&m->w, err, errlen) != 0))
        goto fail;
    if (o->mlock && model_mlock(&m->w, err, errlen) != 0) {   /* llama.cpp warns and goes on, too */
        fprintf(stderr, "llm-run: warning: --mlock: %s\n", err);
        err[0] = '\0';
    }
    /* llama.cpp's overrides: the config the engines build their RoPE tables from */
    if (o->chat_jinja && !(m->chat_jinja = strdup(o->chat_jinja))) {
        fail(err, errlen, "out of memory");
        goto fail;
    }
    if (o->rope_freq_base > 0) m->w.cfg.rope_theta = o->rope_freq_base;
    if (o->rope_scaling_none) m->w.cfg.rope_scaling_factor = 1.0f;
    else if (o->rope_freq_scale > 0) m->w.cfg.rope_scaling_factor = 1.0f / o->rope_freq_scale;
    if (m->w.gguf) {
        m->tok = gguf_tokenizer(m->w.gguf, err, errlen);
        snprintf(m->tok_path, sizeof m->tok_path, "%s", path);
    } else {
        /* the folder: tokenizer.json, else tokenizer.model (named, so errors name the file) */
        struct stat st;
        snprintf(m->tok_path, sizeof m->tok_path, "%s/tokenizer.json", path);
        if (stat(m->tok_path, &st) != 0) snprintf(m->tok_path, sizeof m->tok_path, "%s/tokenizer.model", path);
        m->tok = tokenizer_load(m->tok_path, err, errlen);
    }
    if (!m->tok) {
        if (o->allow_no_tokenizer) {
            err[0] = '\0';
        } else {
            goto fail;
        }
    } else if (tokenizer_vocab_size(m->tok) > m->w.cfg.vocab_size) {
        fail(err, errlen, "%s: %d tokens, but the model's vocab_size is %d", m->tok_path,
             tokenizer_vocab_size(m->tok), m->w.cfg.vocab_size);
        goto fail;
    }
    if (m->tok && tok_decoder_buf_size(m->tok) > TOK_PIECE_MAX) {
        fail(err, errlen, "%s: a token of %zu bytes (at most %d supported)", m->tok_path,
             tok_decoder_buf_size(m->tok) - 12, TOK_PIECE_MAX - 12);
        goto fail;
    }
    /* end of generation: the tokenizer's list; a SentencePiece model also stops at BOS
     * (TinyStories models emit it between stories, and llama2.c stops there too) */
    const int *eog = NULL;
    int n_eog = m->tok ? tokenizer_eog_ids(m->tok, &eog) : 0;
    if (!(m->stop_ids = malloc(sizeof *m->stop_ids * (size_t)(n_eog + 2)))) goto oom;
    for (int i = 0; i < n_eog; i++) m->stop_ids[m->n_stop++] = eog[i];
    if (!m->tok || tokenizer_kind(m->tok) == TOK_KIND_SPM) {
        m->stop_ids[m->n_stop++] = m->w.cfg.eos_token_id;
        m->stop_ids[m->n_stop++] = m->w.cfg.bos_token_id;
    }
    if (m->tok && !(m->dec = tok_decoder_new(m->tok))) goto oom;
    cpu_set_threads(m->threads);
    return m;
oom:
    fail(err, errlen, "out of memory");
fail:
    eval_model_free(m);
    return NULL;
}

eval_model *eval_model_load(const char *dir, int threads, char *err, size_t errlen)
{
    eval_model_opts o = {.threads = threads, .dtype = -1, .resident = 1};
    return eval_model_open(dir, &o, err, errlen);
}

void eval_model_free(eval_model *m)
{
    if (!m) return;
    chat_template_free(m->chat);
    free(m->chat_jinja);
    tok_decoder_free(m->dec);
    tokenizer_free(m->tok);
    free(m->stop_ids);
    model_free(&m->w);
    free(m);
}

model_weights *eval_model_weights(eval_model *m) { return &m->w; }
tokenizer *eval_model_tokenizer(eval_model *m) { return m->tok; }
const char *eval_model_tokenizer_path(const eval_model *m) { return m->tok_path; }
int eval_model_stop_ids(const eval_model *m, const int **ids) { *ids = m->stop_ids; return m->n_stop; }
int eval_model_threads(const eval_model *m) { return m->threads; }

int eval_model_context(const eval_model *m) { return m->w.cfg.max_position_embeddings; }
int eval_model_vocab(const eval_model *m) { return m->w.cfg.vocab_size; }
int eval_model_bos(const eval_model *m) { return m->w.cfg.bos_token_id; }
int eval_model_add_bos(const eval_model *m) { return m->tok ? tokenizer_add_bos(m->tok) : 1; }

int eval_model_chat(eval_model *m, const char *name, char *err, size_t errlen)
{
    if (m->chat && (!name || !strcmp(name, chat_template_name(m->chat)))) return 0;
    if (!m->tok) return fail(err, errlen, "--chat needs a tokenizer");
    chat_template_free(m->chat);
    m->chat = m->chat_jinja ? chat_template_for_text(m->tok, m->chat_jinja, name, err, errlen)
                            : chat_template_for(m->tok, name, err, errlen);
    return m->chat ? 0 : -1;
}

/* Appends ids of text[0..len) to the growing array (special tokens parsed when special). */
static int push(const eval_model *m, const char *text, size_t len, int special, int **ids, int *n,
                int *cap, char *err, size_t errlen)
{
    int *p = NULL, k = 0;
    unsigned fl = special && tokenizer_kind(m->tok) == TOK_KIND_BPE ? TOK_PARSE_SPECIAL : 0;
    if (tokenizer_encode_ex(m->tok, text, len, fl, &p, &k, err, errlen) != 0) return -1;
    if (*n + k > *cap) {
        int nc = 2 * *cap + k + 16;
        int *q = realloc(*ids, sizeof *q * (size_t)nc);
        if (!q) {
            free(p);
            return fail(err, errlen, "out of memory");
        }
        *ids = q;
        *cap = nc;
    }
    memcpy(*ids + *n, p, sizeof *p * (size_t)k);
    *n += k;
    free(p);
    return 0;
}

/* A byte that marks where untrusted content sits inside a rendered template (never in UTF-8
 * text a user can type into a chat: U+FFFF is a noncharacter, and the marker is checked). */
#define MARK "\xef\xbf\xbf"

int eval_encode(eval_model *m, const eval_prompt_in *in, int **ids, int *n, char *err, size_t errlen)
{
    return eval_encode_ex(m, in, ids, n, NULL, err, errlen);
}

int eval_model_has_chat_template(const eval_model *m)
{
    const char *t = m->chat_jinja ? m->chat_jinja : m->tok ? tokenizer_chat_template(m->tok) : NULL;
    return t && *t;
}

const char *eval_model_chat_name(const eval_model *m) { return m->chat ? chat_template_name(m->chat) : NULL; }

int eval_token_offsets(const eval_model *m, const int *ids, int c0, int c1, int *starts)
{
    if (!m->tok) return -1;
    tok_decoder *d = tok_decoder_new(m->tok);
    if (!d) return -1;
    tok_decoder_reset(d, c0 > 0 ? ids[c0 - 1] : -1);
    char piece[TOK_PIECE_MAX];
    int at = 0;
    for (int i = c0; i < c1; i++) {
        starts[i - c0] = at;
        int k = tok_decoder_push(d, ids[i], piece, sizeof piece);
        at += k > 0 ? k : 0;
    }
    int k = tok_decoder_flush(d, piece, sizeof piece);
    starts[c1 - c0] = at + (k > 0 ? k : 0);
    tok_decoder_free(d);
    return 0;
}

int eval_encode_ex(eval_model *m, const eval_prompt_in *in, int **ids, int *n, int content[2],
                   char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    int c_lo = 0, c_hi = -1;
    if (!m->tok) return fail(err, errlen, "the model has no tokenizer: give the prompt as token ids");
    int cap = 0, bos_in_text = 0, rc = -1;
    char *rendered = NULL;
    chat_message *msgs = NULL;
    int n_msgs = 0;
    const char *text = in->text ? in->text : "";
    size_t len = in->text ? in->text_len : 0;
    int parse_special = in->parse_special;
    if (in->chat || in->messages) {
        if (eval_model_chat(m, in->chat_template, err, errlen) != 0) return -1;
        if (in->messages) {
            msgs = (chat_message *)in->messages;
            n_msgs = in->n_messages;
        } else {
            if (memmem(text, len, MARK, 3)) return fail(err, errlen, "the prompt contains U+FFFF");
            if (!(msgs = calloc(2, sizeof *msgs))) return fail(err, errlen, "out of memory");
            if (in->system) msgs[n_msgs++] = (chat_message){"system", in->system};
            /* the content is untrusted (a document): render a marker, encode it apart */
            msgs[n_msgs++] = (chat_message){"user", in->content_is_data ? MARK : text};
        }
        rendered = chat_template_render(m->chat, msgs, n_msgs, 1, err, errlen);
        if (!rendered) goto done;
        bos_in_text = chat_template_bos_in_text(m->chat);
    }
    if (eval_model_add_bos(m) && !bos_in_text) {
        int b = tokenizer_bos_id(m->tok);
        if (b < 0) b = m->w.cfg.bos_token_id;
        if (!(*ids = malloc(sizeof **ids * 16))) goto oom;
        cap = 16;
        (*ids)[(*n)++] = b;
    }
    if (!rendered) {
        c_lo = *n;
        rc = push(m, text, len, parse_special, ids, n, &cap, err, errlen);
        c_hi = *n;
        goto done;
    }
    /* template text: special tokens parsed; the content marker replaced by the content, encoded
     * with special-token parsing off when it is data */
    const char *at = in->content_is_data ? strstr(rendered, MARK) : NULL;
    if (!at) {
        rc = push(m, rendered, strlen(rendered), 1, ids, n, &cap, err, errlen);
        goto done;
    }
    if (push(m, rendered, (size_t)(at - rendered), 1, ids, n, &cap, err, errlen)) goto done;
    c_lo = *n;
    if (push(m, text, len, 0, ids, n, &cap, err, errlen)) goto done;
    c_hi = *n;
    if (push(m, at + 3, strlen(at + 3), 1, ids, n, &cap, err, errlen)) goto done;
    rc = 0;
    goto done;
oom:
    fail(err, errlen, "out of memory");
done:
    if (msgs != (chat_message *)in->messages) free(msgs);
    free(rendered);
    if (content) {
        content[0] = c_hi >= 0 ? c_lo : 0;   /* a template without the marker: the whole prompt */
        content[1] = c_hi >= 0 ? c_hi : *n;
    }
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

int eval_tokenize(const eval_model *m, const char *text, int bos, int **ids, int *n, char *err,
                  size_t errlen)
{
    eval_prompt_in in = {.text = text, .text_len = strlen(text)};
    *ids = NULL;
    *n = 0;
    int cap = 0;
    if (!m->tok) return fail(err, errlen, "the model has no tokenizer");
    if (bos) {
        int b = tokenizer_bos_id(m->tok);
        if (b < 0) b = m->w.cfg.bos_token_id;
        if (!(*ids = malloc(sizeof **ids * 16))) return fail(err, errlen, "out of memory");
        cap = 16;
        (*ids)[(*n)++] = b;
    }
    /* data: special tokens are never parsed in documents */
    if (push(m, in.text, in.text_len, 0, ids, n, &cap, err, errlen) != 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}
