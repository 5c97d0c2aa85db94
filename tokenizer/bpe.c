/* bpe.c — the byte-level BPE model: building it (from a bpe_build or a tok_bpe_spec), its hash
 * tables, end-of-generation ids and accessors. Encoding and decoding are in bpe_codec.c. */
#include "tokenizer/bpe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define set_err tok_set_err

/* ------------------------------------------------------------------------ hash tables */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static uint32_t table_size(int n) {
    uint32_t s = 16;
    while (s < (uint32_t)n * 2u) s <<= 1;
    return s;
}

static const char *tok_text(const bpe_model *m, int id, size_t *n) {
    *n = m->text_off[id + 1] - m->text_off[id] - 1;
    return m->text + m->text_off[id];
}

int bpe_vocab_find(const bpe_model *m, const char *s, size_t n) {
    if (!m->vocab.slot) return -1;
    for (uint32_t i = (uint32_t)hash_bytes(s, n) & m->vocab.mask;; i = (i + 1) & m->vocab.mask) {
        const int id = m->vocab.slot[i];
        if (id < 0) return -1;
        size_t len;
        const char *t = tok_text(m, id, &len);
        if (len == n && memcmp(t, s, n) == 0) return id;
    }
}

/* Inserts id under its text; replace: a later token with the same text takes the slot. */
static void vocab_insert(bpe_model *m, int id, int replace) {
    size_t n;
    const char *s = tok_text(m, id, &n);
    for (uint32_t i = (uint32_t)hash_bytes(s, n) & m->vocab.mask;; i = (i + 1) & m->vocab.mask) {
        const int cur = m->vocab.slot[i];
        if (cur < 0) { m->vocab.slot[i] = id; return; }
        size_t len;
        const char *t = tok_text(m, cur, &len);
        if (len == n && memcmp(t, s, n) == 0) { if (replace) m->vocab.slot[i] = id; return; }
    }
}

int bpe_merge_find(const bpe_model *m, int a, int b, int *merged) {
    if (a < 0 || b < 0 || !m->merges.key) return -1;
    const uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    for (uint32_t i = (uint32_t)hash_pair(k) & m->merges.mask;; i = (i + 1) & m->merges.mask) {
        if (m->merges.rank[i] < 0) return -1;
        if (m->merges.key[i] == k) { *merged = m->merges.merged[i]; return m->merges.rank[i]; }
    }
}

static void merge_insert(bpe_model *m, int a, int b, int rank, int merged, int replace) {
    const uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    for (uint32_t i = (uint32_t)hash_pair(k) & m->merges.mask;; i = (i + 1) & m->merges.mask) {
        if (m->merges.rank[i] < 0 || m->merges.key[i] == k) {
            if (m->merges.rank[i] >= 0 && !replace) return;
            m->merges.key[i] = k;
            m->merges.rank[i] = rank;
            m->merges.merged[i] = merged;
            return;
        }
    }
}

/* ------------------------------------------------------------------------------ build */

static void free_build(bpe_build *b) {
    for (int i = 0; i < b->n_steps; i++) if (b->steps[i].re) bpe_regex_free(b->steps[i].re);
    b->n_steps = 0;
    for (int i = 0; i < b->n_added; i++) free(b->added[i].text);
    free(b->added);
    b->added = NULL;
    b->n_added = 0;
}

void bpe_model_free(bpe_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_steps; i++) if (m->steps[i].re) bpe_regex_free(m->steps[i].re);
    for (int i = 0; i < m->n_added; i++) free(m->added[i].text);
    free(m->added);
    free(m->source);
    free(m->text);
    free(m->text_off);
    free(m->bytes);
    free(m->bytes_off);
    free(m->type);
    free(m->vocab.slot);
    free(m->merges.key);
    free(m->merges.rank);
    free(m->merges.merged);
    free(m->eog);
    free(m->chat_template);
    free(m);
}

/* A token's decoded bytes: byte-level characters → bytes when every character is one, the raw
 * text otherwise (tokenizers' ByteLevel decoder); GGUF control/user-defined/unknown tokens are
 * their raw text and unused ones nothing (llama.cpp's token_to_piece); <0xNN> byte tokens. */
static size_t decode_token(const bpe_model *m, int id, char *out) {
    size_t n;
    const char *s = tok_text(m, id, &n);
    const int ty = m->type[id];
    if (m->mode == BPE_MODE_GGUF) {
        if (ty == TOK_TYPE_UNUSED) return 0;
        if (ty == TOK_TYPE_BYTE) {
            unsigned v;
            if (n == 6 && sscanf(s, "<0x%2X>", &v) == 1) { out[0] = (char)v; return 1; }
        }
        if (ty != TOK_TYPE_NORMAL && ty != TOK_TYPE_BYTE) { memcpy(out, s, n); return n; }
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char c = (unsigned char)s[i];
        uint32_t cp = c;
        int l = 1;
        if (c >= 0xC0 && c < 0xE0 && i + 1 < n) { cp = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu); l = 2; }
        const int b = (c < 0x80 || l == 2) ? bpe_cp_to_byte(cp) : -1;
        if (b < 0) { memcpy(out, s, n); return n; }
        out[o++] = (char)b;
        i += (size_t)l;
    }
    return o;
}

static int cmp_int(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_added_len(const void *a, const void *b) {  /* longest first, then by id */
    const bpe_added *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Names llama.cpp treats as end of generation (llama-vocab.cpp, special_eog_ids). */
static const char *const EOG_NAMES[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[", NULL};
/* FIM pad/repo/separator tokens, also end of generation in llama.cpp. */
static const char *const FIM_EOG_NAMES[] = {
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|fim_repo|>", "<|repo_name|>",
    "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>", NULL};
/* FIM prefix/suffix/middle tokens: promoted to control in llama.cpp, not end of generation. */
static const char *const FIM_NAMES[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "\xe2\x96\x81<PRE>",
    "<|code_prefix|>", "<|prefix|>", "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>",
    "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", "<|fim_middle|>", "<fim-middle>",
    "<fim_middle>", "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", NULL};

/* The first bytes compared inline: called for every vocabulary entry (151,936 in Qwen2.5) with
 * ~50 names, strcmp calls alone were ~1% of a SmolLM2 run's samples. */
static int in_list(const char *const *list, const char *s) {
    for (int i = 0; list[i]; i++) if (list[i][0] == s[0] && strcmp(list[i], s) == 0) return 1;
    return 0;
}

/* The end-of-generation list: eos/eot/eom plus tokens named like one (llama.cpp's rule, with its
 * two exceptions: <|end|> is dropped when <|return|> and <|call|> exist, </s> when
 * <|tool_response> exists). */
static int make_eog(bpe_model *m) {
    m->eog = malloc((size_t)(m->n_vocab + 3) * sizeof *m->eog);
    if (!m->eog) return -1;
    int n = 0, has_return = 0, has_call = 0, has_tool_resp = 0;
    for (int id = 0; id < m->n_vocab; id++) {
        const char *s = m->text + m->text_off[id];
        const int eog = in_list(EOG_NAMES, s) || in_list(FIM_EOG_NAMES, s);
        if (eog) m->eog[n++] = id;
        if (s[0] != '<') continue;   /* the three below start with '<' */
        has_return |= strcmp(s, "<|return|>") == 0;
        has_call |= strcmp(s, "<|call|>") == 0 || strcmp(s, "<|calls|>") == 0;
        has_tool_resp |= strcmp(s, "<|tool_response>") == 0;
    }
    const int ids[3] = {m->eos, m->eot, m->eom};
    for (int i = 0; i < 3; i++) if (ids[i] >= 0) m->eog[n++] = ids[i];
    qsort(m->eog, (size_t)n, sizeof *m->eog, cmp_int);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const int id = m->eog[i];
        if (k > 0 && m->eog[k - 1] == id) continue;
        const char *s = m->text + m->text_off[id];
        if (has_return && has_call && strcmp(s, "<|end|>") == 0 && id != m->eos) continue;
        if (has_tool_resp && strcmp(s, "</s>") == 0 && id != m->eos) continue;
        m->eog[k++] = id;
    }
    m->n_eog = k;
    return 0;
}

bpe_model *bpe_model_build(bpe_build *b, char *err, size_t errlen) {
    const char *src = b->source ? b->source : "tokenizer";
    bpe_model *m = calloc(1, sizeof *m);
    if (!m) goto oom;
    m->mode = b->mode;
    m->n_vocab = b->n_vocab;
    m->source = strdup(src);
    m->ignore_merges = b->ignore_merges;
    m->n_norms = b->n_norms;
    memcpy(m->norms, b->norms, sizeof m->norms);
    m->n_steps = b->n_steps;
    memcpy(m->steps, b->steps, sizeof m->steps);
    b->n_steps = 0;
    m->added = b->added;
    m->n_added = b->n_added;
    b->added = NULL;
    b->n_added = 0;
    m->bos = b->bos; m->eos = b->eos; m->eot = b->eot; m->eom = b->eom;
    m->pad = b->pad; m->unk = b->unk;
    m->add_bos = b->add_bos; m->add_eos = b->add_eos;
    m->utf8_policy = b->mode == BPE_MODE_JSON ? UTF8_MAXIMAL_SUBPART : UTF8_PER_BYTE;
    if (b->chat_template && !(m->chat_template = strdup(b->chat_template))) goto oom;
    if (!m->source || b->n_vocab <= 0) {
        if (m->source) set_err(err, errlen, "%s: the vocabulary is empty", src);
        else goto oom;
        bpe_model_free(m);
        return NULL;
    }
    const int nv = b->n_vocab;
    size_t total = 0;
    for (int i = 0; i < nv; i++) total += (b->tok[i] ? strlen(b->tok[i]) : 0) + 1;
    m->text = malloc(total);
    m->text_off = malloc((size_t)(nv + 1) * sizeof *m->text_off);
    m->type = malloc((size_t)nv);
    m->bytes = malloc(total);
    m->bytes_off = malloc((size_t)(nv + 1) * sizeof *m->bytes_off);
    if (!m->text || !m->text_off || !m->type || !m->bytes || !m->bytes_off) goto oom;
    if (total > UINT32_MAX) { set_err(err, errlen, "%s: vocabulary too large", src); goto fail; }
    size_t o = 0;
    for (int i = 0; i < nv; i++) {
        const size_t n = b->tok[i] ? strlen(b->tok[i]) : 0;
        m->text_off[i] = (uint32_t)o;
        if (n) memcpy(m->text + o, b->tok[i], n);
        m->text[o + n] = '\0';
        o += n + 1;
        m->type[i] = b->type[i];
    }
    m->text_off[nv] = (uint32_t)o;
    o = 0;
    for (int i = 0; i < nv; i++) {
        m->bytes_off[i] = (uint32_t)o;
        const size_t n = decode_token(m, i, m->bytes + o);
        if (n > m->max_piece) m->max_piece = n;
        o += n;
    }
    m->bytes_off[nv] = (uint32_t)o;

    m->vocab.mask = table_size(nv) - 1;
    m->vocab.slot = malloc(((size_t)m->vocab.mask + 1) * sizeof *m->vocab.slot);
    if (!m->vocab.slot) goto oom;
    memset(m->vocab.slot, 0xFF, ((size_t)m->vocab.mask + 1) * sizeof *m->vocab.slot);
    for (int i = 0; i < nv; i++)
        if (b->in_model[i] && b->tok[i]) vocab_insert(m, i, m->mode == BPE_MODE_GGUF);

    for (int c = 0; c < 256; c++) {  /* -1: absent (SmolLM2 lacks some control bytes) */
        char u[4];
        const int n = bpe_utf8_put(bpe_byte_to_cp((unsigned)c), u);
        m->byte_id[c] = bpe_vocab_find(m, u, (size_t)n);
    }

    const int nm = b->n_merges;
    m->merges.mask = table_size(nm) - 1;
    const size_t ms = (size_t)m->merges.mask + 1;
    m->merges.key = malloc(ms * sizeof *m->merges.key);
    m->merges.rank = malloc(ms * sizeof *m->merges.rank);
    m->merges.merged = malloc(ms * sizeof *m->merges.merged);
    if (!m->merges.key || !m->merges.rank || !m->merges.merged) goto oom;
    memset(m->merges.rank, 0xFF, ms * sizeof *m->merges.rank);
    char *cat = NULL;
    size_t catcap = 0;
    for (int i = 0; i < nm; i++) {
        const bpe_merge_src *g = &b->merges[i];
        const int ia = bpe_vocab_find(m, g->a, g->la), ib = bpe_vocab_find(m, g->b, g->lb);
        if (ia < 0 || ib < 0) {
            const int bad_a = ia < 0;
            set_err(err, errlen, "%s: %s[%d] \"%.*s %.*s\": \"%.*s\" is not in the vocabulary",
                    src, b->merges_field, i, (int)g->la, g->a, (int)g->lb, g->b,
                    (int)(bad_a ? g->la : g->lb), bad_a ? g->a : g->b);
            free(cat);
            goto fail;
        }
        if (g->la + g->lb > catcap) {
            catcap = (g->la + g->lb) * 2;
            char *nc = realloc(cat, catcap);
            if (!nc) { free(cat); goto oom; }
            cat = nc;
        }
        memcpy(cat, g->a, g->la);
        memcpy(cat + g->la, g->b, g->lb);
        const int im = bpe_vocab_find(m, cat, g->la + g->lb);
        if (im < 0) {
            set_err(err, errlen, "%s: %s[%d] \"%.*s %.*s\": the merged token \"%.*s\" is not in "
                    "the vocabulary", src, b->merges_field, i, (int)g->la, g->a, (int)g->lb,
                    g->b, (int)(g->la + g->lb), cat);
            free(cat);
            goto fail;
        }
        merge_insert(m, ia, ib, i, im, m->mode == BPE_MODE_JSON);
    }
    free(cat);

    for (int i = 0; i < m->n_added; i++) {
        const int id = m->added[i].id;
        if (m->added[i].len) m->added_first[(unsigned char)m->added[i].text[0]] = 1;
        if (id < 0 || id >= nv) {
            set_err(err, errlen, "%s: added token id %d out of range [0, %d)", src, id, nv);
            goto fail;
        }
    }
    if (m->mode == BPE_MODE_GGUF)
        qsort(m->added, (size_t)m->n_added, sizeof *m->added, cmp_added_len);
    int *ids[] = {&m->bos, &m->eos, &m->eot, &m->eom, &m->pad, &m->unk};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        if (*ids[i] >= nv) *ids[i] = -1;  /* llama.cpp: out of range → absent */
    if (make_eog(m)) goto oom;
    free_build(b);
    return m;
oom:
    set_err(err, errlen, "%s: out of memory loading the tokenizer", src);
fail:
    free_build(b);
    bpe_model_free(m);
    return NULL;
}

/* ------------------------------------------------------------------- from a GGUF spec */

bpe_model *bpe_model_from_spec(const tok_bpe_spec *spec, char *err, size_t errlen) {
    if (!spec) { set_err(err, errlen, "tokenizer_load_bpe: spec is NULL"); return NULL; }
    const char *src = spec->source ? spec->source : "GGUF";
    bpe_build b;
    memset(&b, 0, sizeof b);
    b.source = src;
    b.mode = BPE_MODE_GGUF;
    b.merges_field = "tokenizer.ggml.merges";
    const int nv = spec->n_tokens;
    if (nv <= 0 || !spec->tokens) {
        set_err(err, errlen, "%s: tokenizer.ggml.tokens is missing or empty", src);
        return NULL;
    }
    if (spec->n_merges < 0 || (spec->n_merges > 0 && !spec->merges)) {
        set_err(err, errlen, "%s: tokenizer.ggml.merges is missing", src);
        return NULL;
    }
    int add_bos_default = 0;
    if (bpe_pretok_from_name(&b, spec->pre, &add_bos_default, err, errlen)) {
        free_build(&b);
        return NULL;
    }
    b.tok = (const char **)spec->tokens;
    b.type = malloc((size_t)nv);
    b.in_model = malloc((size_t)nv);
    bpe_merge_src *mg = malloc((size_t)(spec->n_merges ? spec->n_merges : 1) * sizeof *mg);
    b.added = calloc((size_t)nv, sizeof *b.added);
    bpe_model *m = NULL;
    if (!b.type || !b.in_model || !mg || !b.added) {
        set_err(err, errlen, "%s: out of memory loading the tokenizer", src);
        goto done;
    }
    for (int i = 0; i < nv; i++) {
        if (!spec->tokens[i]) {
            set_err(err, errlen, "%s: tokenizer.ggml.tokens[%d] is NULL", src, i);
            goto done;
        }
        int ty = spec->token_type ? spec->token_type[i] : TOK_TYPE_NORMAL;
        if (ty < TOK_TYPE_NORMAL || ty > TOK_TYPE_BYTE) {
            set_err(err, errlen, "%s: tokenizer.ggml.token_type[%d] = %d (expected 1..6)", src, i,
                    ty);
            goto done;
        }
        /* llama.cpp promotes tokens that look like end of generation or FIM to control */
        const char *s = spec->tokens[i];
        if (in_list(EOG_NAMES, s) || in_list(FIM_EOG_NAMES, s) || in_list(FIM_NAMES, s))
            ty = TOK_TYPE_CONTROL;
        b.type[i] = (unsigned char)ty;
        b.in_model[i] = 1;
    }
    for (int i = 0; i < spec->n_merges; i++) {
        const char *s = spec->merges[i];
        const char *sp = s && s[0] ? strchr(s + 1, ' ') : NULL;
        if (!sp) {
            set_err(err, errlen, "%s: tokenizer.ggml.merges[%d] \"%s\" is not \"a b\"", src, i,
                    s ? s : "(null)");
            goto done;
        }
        mg[i] = (bpe_merge_src){s, sp + 1, (size_t)(sp - s), strlen(sp + 1)};
    }
    b.merges = mg;
    b.n_merges = spec->n_merges;
    b.n_vocab = nv;
    for (int i = 0; i < nv; i++) {  /* the special-token cache: control, user-defined, unknown */
        const int ty = b.type[i];
        if (ty != TOK_TYPE_CONTROL && ty != TOK_TYPE_USER_DEFINED && ty != TOK_TYPE_UNKNOWN)
            continue;
        if (!spec->tokens[i][0]) continue;
        bpe_added *a = &b.added[b.n_added];
        if (!(a->text = strdup(spec->tokens[i]))) {
            set_err(err, errlen, "%s: out of memory loading the tokenizer", src);
            goto done;
        }
        b.n_added++;
        a->id = i;
        a->len = strlen(a->text);
        a->special = ty != TOK_TYPE_USER_DEFINED;
    }
    b.bos = spec->bos_id; b.eos = spec->eos_id; b.eot = spec->eot_id; b.eom = spec->eom_id;
    b.pad = spec->pad_id; b.unk = spec->unk_id;
    b.add_bos = spec->add_bos >= 0 ? spec->add_bos != 0 : add_bos_default;
    b.add_eos = spec->add_eos > 0;
    b.chat_template = spec->chat_template;
    m = bpe_model_build(&b, err, errlen);
    if (m && m->add_bos && m->bos < 0) {
        set_err(err, errlen, "%s: tokenizer.ggml.add_bos_token is set but there is no BOS id", src);
        bpe_model_free(m);
        m = NULL;
    }
done:
    free_build(&b);
    free(b.type);
    free(b.in_model);
    free(mg);
    return m;
}

/* ------------------------------------------------------------------------ accessors */

int bpe_model_mode(const bpe_model *m) { return m->mode; }
const bpe_step *bpe_model_steps(const bpe_model *m, int *n) { *n = m->n_steps; return m->steps; }
const int *bpe_model_norms(const bpe_model *m, int *n) { *n = m->n_norms; return m->norms; }
const bpe_added *bpe_model_added(const bpe_model *m, int *n) { *n = m->n_added; return m->added; }
int bpe_vocab_size(const bpe_model *m) { return m->n_vocab; }
int bpe_bos_id(const bpe_model *m) { return m->bos; }
int bpe_eos_id(const bpe_model *m) { return m->eos; }
int bpe_add_bos(const bpe_model *m) { return m->add_bos; }
int bpe_add_eos(const bpe_model *m) { return m->add_eos; }
const char *bpe_chat_template(const bpe_model *m) { return m->chat_template; }
size_t bpe_max_piece_bytes(const bpe_model *m) { return m->max_piece; }
int bpe_eog_ids(const bpe_model *m, const int **ids) { *ids = m->eog; return m->n_eog; }

const char *bpe_piece(const bpe_model *m, int id) {
    if (id < 0 || id >= m->n_vocab) return NULL;
    return m->text + m->text_off[id];
}

int bpe_token_type(const bpe_model *m, int id) {
    return id < 0 || id >= m->n_vocab ? 0 : m->type[id];
}

int bpe_piece_to_id(const bpe_model *m, const char *piece) {
    if (!piece) return -1;
    const int id = bpe_vocab_find(m, piece, strlen(piece));
    if (id >= 0) return id;
    for (int i = 0; i < m->n_added; i++)
        if (strcmp(m->added[i].text, piece) == 0) return m->added[i].id;
    for (int i = 0; i < m->n_vocab; i++)  /* tokens outside the model vocabulary */
        if (strcmp(m->text + m->text_off[i], piece) == 0) return i;
    return -1;
}
