/* bpe_codec.c — byte-level BPE encoding (the merge loop) and decoding (one-shot and streaming).
 *
 * The merge loop is the one of tokenizers' Word::merge_all and llama.cpp's llm_tokenizer_bpe:
 * the word's bytes start as one symbol each (their byte-level characters); a min-heap holds every
 * adjacent pair that has a merge, keyed by (rank, position); the lowest is applied if both of its
 * symbols are still what they were when it was pushed, and the new symbol's two neighbour pairs
 * are pushed. Symbols form a doubly linked list over an array. O(n log n) per word. */
#include "tokenizer/bpe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define set_err tok_set_err

typedef struct { int rank, pos, left, right; } heap_item;

typedef struct {
    const bpe_model *m;
    int *ids;           /* output */
    int n, cap;
    int *sym, *prev, *next;  /* per-word symbol list */
    int scap;
    heap_item *heap;
    int hn, hcap;
    char *bl;           /* byte-level form of the word (ignore_merges lookups) */
    size_t blcap;
} enc_ctx;

static int push_id(enc_ctx *c, int id) {
    if (c->n == c->cap) {
        const int cap = c->cap ? c->cap * 2 : 64;
        int *v = realloc(c->ids, (size_t)cap * sizeof *v);
        if (!v) return -1;
        c->ids = v;
        c->cap = cap;
    }
    c->ids[c->n++] = id;
    return 0;
}

static int heap_less(const heap_item *a, const heap_item *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static int heap_push(enc_ctx *c, int pos) {
    const int r = c->next[pos];
    if (r < 0) return 0;
    int merged;
    const int rank = bpe_merge_find(c->m, c->sym[pos], c->sym[r], &merged);
    if (rank < 0) return 0;
    if (c->hn == c->hcap) {
        const int cap = c->hcap ? c->hcap * 2 : 64;
        heap_item *h = realloc(c->heap, (size_t)cap * sizeof *h);
        if (!h) return -1;
        c->heap = h;
        c->hcap = cap;
    }
    heap_item it = {rank, pos, c->sym[pos], c->sym[r]};
    int i = c->hn++;
    while (i > 0) {
        const int p = (i - 1) / 2;
        if (!heap_less(&it, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = it;
    return 0;
}

static heap_item heap_pop(enc_ctx *c) {
    const heap_item top = c->heap[0];
    const heap_item last = c->heap[--c->hn];
    int i = 0;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= c->hn) break;
        if (k + 1 < c->hn && heap_less(&c->heap[k + 1], &c->heap[k])) k++;
        if (!heap_less(&c->heap[k], &last)) break;
        c->heap[i] = c->heap[k];
        i = k;
    }
    if (c->hn > 0) c->heap[i] = last;
    return top;
}

/* BPE of one pre-tokenized word (raw bytes). */
static int encode_word(void *ctx, const char *w, size_t n) {
    enc_ctx *c = ctx;
    const bpe_model *m = c->m;
    if (n == 0) return 0;
    if (m->ignore_merges) {  /* the whole word is a token: take it without merging */
        if (n * 2 > c->blcap) {
            char *nb = realloc(c->bl, n * 2);
            if (!nb) return -1;
            c->bl = nb;
            c->blcap = n * 2;
        }
        size_t o = 0;
        for (size_t i = 0; i < n; i++) o += (size_t)bpe_utf8_put(bpe_byte_to_cp((unsigned char)w[i]), c->bl + o);
        const int id = bpe_vocab_find(m, c->bl, o);
        if (id >= 0) return push_id(c, id);
    }
    if (n > (size_t)0x3fffffff) return -1;
    if ((int)n > c->scap) {
        const int cap = (int)n;
        int *s = realloc(c->sym, (size_t)cap * sizeof *s);
        if (!s) return -1;
        c->sym = s;
        int *p = realloc(c->prev, (size_t)cap * sizeof *p);
        if (!p) return -1;
        c->prev = p;
        int *x = realloc(c->next, (size_t)cap * sizeof *x);
        if (!x) return -1;
        c->next = x;
        c->scap = cap;
    }
    const int len = (int)n;
    /* a byte whose character is not in the vocabulary: the unknown token (tokenizers, when
     * model.unk_token is set) or nothing (llama.cpp drops it) */
    const int unknown = m->mode == BPE_MODE_JSON && m->unk >= 0 ? m->unk : -2;
    for (int i = 0; i < len; i++) {
        c->sym[i] = m->byte_id[(unsigned char)w[i]];
        if (c->sym[i] < 0) c->sym[i] = unknown;
        c->prev[i] = i - 1;
        c->next[i] = i + 1 < len ? i + 1 : -1;
    }
    c->hn = 0;
    for (int i = 0; i + 1 < len; i++) if (heap_push(c, i)) return -1;
    while (c->hn > 0) {
        const heap_item it = heap_pop(c);
        const int l = it.pos, r = c->next[l];
        if (c->sym[l] < 0 || r < 0 || c->sym[l] != it.left || c->sym[r] != it.right) continue;
        int merged;
        bpe_merge_find(m, it.left, it.right, &merged);
        c->sym[l] = merged;
        c->sym[r] = -1;  /* dead (unlinked) */
        c->next[l] = c->next[r];
        if (c->next[r] >= 0) c->prev[c->next[r]] = l;
        if (c->prev[l] >= 0 && heap_push(c, c->prev[l])) return -1;
        if (heap_push(c, l)) return -1;
    }
    for (int i = 0; i >= 0; i = c->next[i])
        if (c->sym[i] >= 0 && push_id(c, c->sym[i])) return -1;
    return 0;
}

static int emit_token(void *ctx, int id) { return push_id(ctx, id); }

int bpe_encode(const bpe_model *m, const char *text, size_t len, unsigned flags, int **ids,
               int *n, char *err, size_t errlen) {
    enc_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    int rc = 0;
    if ((flags & TOK_ADD_SPECIAL) && m->add_bos && m->bos >= 0) rc = push_id(&c, m->bos);
    if (rc == 0)
        rc = bpe_pretokenize(m, text, len, (flags & TOK_PARSE_SPECIAL) != 0, encode_word,
                             emit_token, &c);
    if (rc == 0 && (flags & TOK_ADD_SPECIAL) && m->add_eos && m->eos >= 0) rc = push_id(&c, m->eos);
    if (rc == 0 && !c.ids) {
        c.ids = malloc(sizeof *c.ids);
        if (!c.ids) rc = -1;
    }
    free(c.sym);
    free(c.prev);
    free(c.next);
    free(c.heap);
    free(c.bl);
    if (rc) {
        free(c.ids);
        set_err(err, errlen, "%s: encode failed (out of memory or regex error) on %zu bytes",
                m->source, len);
        return -1;
    }
    *ids = c.ids;
    *n = c.n;
    return 0;
}

/* ------------------------------------------------------------------------- decoding */

/* Whether id's text is hidden from the output without TOK_DECODE_SPECIAL (llama.cpp:
 * control and unknown tokens). */
static int hidden(const bpe_model *m, int id, int special) {
    const int ty = m->type[id];
    return !special && (ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_UNKNOWN);
}

int bpe_decode(const bpe_model *m, const int *ids, int n, unsigned flags, char **text,
               size_t *len, char *err, size_t errlen) {
    const int special = (flags & TOK_DECODE_SPECIAL) != 0;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= m->n_vocab) {
            set_err(err, errlen, "token id %d (position %d) out of range [0, %d)", ids[i], i,
                    m->n_vocab);
            return -1;
        }
        if (!hidden(m, ids[i], special)) total += m->bytes_off[ids[i] + 1] - m->bytes_off[ids[i]];
    }
    char *raw = malloc(total + 1), *out = malloc(3 * total + 1);
    if (!raw || !out) {
        free(raw);
        free(out);
        set_err(err, errlen, "tokenizer_decode: out of memory for %zu bytes", total);
        return -1;
    }
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (hidden(m, ids[i], special)) continue;
        const size_t l = m->bytes_off[ids[i] + 1] - m->bytes_off[ids[i]];
        memcpy(raw + o, m->bytes + m->bytes_off[ids[i]], l);
        o += l;
    }
    size_t outn;
    bpe_utf8_repair((const unsigned char *)raw, o, m->utf8_policy, 1, out, &outn);
    free(raw);
    out[outn] = '\0';
    *text = out;
    if (len) *len = outn;
    return 0;
}

static int stream_emit(const bpe_model *m, bpe_stream *s, const char *add, size_t addn,
                       int final, char *out, size_t cap) {
    unsigned char buf[4 + 512];
    unsigned char *b = buf;
    const size_t n = (size_t)s->n_pending + addn;
    if (n > sizeof buf && !(b = malloc(n))) return -1;
    memcpy(b, s->pending, (size_t)s->n_pending);
    if (addn) memcpy(b + s->n_pending, add, addn);
    /* worst case 3 bytes per input byte; check the real size before committing */
    char tmp[3 * sizeof buf];
    char *o = 3 * n <= sizeof tmp ? tmp : malloc(3 * n + 1);
    if (!o) { if (b != buf) free(b); return -1; }
    size_t outn;
    const size_t used = bpe_utf8_repair(b, n, m->utf8_policy, final, o, &outn);
    int rc = -1;
    if (outn + 1 <= cap && n - used <= sizeof s->pending) {
        memcpy(out, o, outn);
        out[outn] = '\0';
        memcpy(s->pending, b + used, n - used);
        s->n_pending = (int)(n - used);
        rc = (int)outn;
    } else if (cap > 0) {
        out[0] = '\0';
    }
    if (o != tmp) free(o);
    if (b != buf) free(b);
    return rc;
}

int bpe_stream_push(const bpe_model *m, bpe_stream *s, int id, char *out, size_t cap) {
    if (id < 0 || id >= m->n_vocab) { if (cap > 0) out[0] = '\0'; return -1; }
    if (hidden(m, id, s->special)) {
        if (cap == 0) return -1;
        out[0] = '\0';
        return 0;
    }
    return stream_emit(m, s, m->bytes + m->bytes_off[id],
                       m->bytes_off[id + 1] - m->bytes_off[id], 0, out, cap);
}

int bpe_stream_flush(const bpe_model *m, bpe_stream *s, char *out, size_t cap) {
    return stream_emit(m, s, NULL, 0, 1, out, cap);
}
