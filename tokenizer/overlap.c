/* tokenizer/overlap.c — the token sequences a text can end up in, for DRY's sequence breakers
 * (tokenizer.h tokenizer_overlaps; llama.cpp's get_overlapping_token_sequences in
 * src/llama-sampler.cpp, ported there from koboldcpp). */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int *seq, *len;
    size_t n_seq, cap_seq;
    int n, cap;
} seqs;

static int push(seqs *s, int head, const int *tail, int n_tail)
{
    if (s->n_seq + 1 + (size_t)n_tail > s->cap_seq) {
        size_t c = s->cap_seq ? 2 * s->cap_seq : 1024;
        while (c < s->n_seq + 1 + (size_t)n_tail) c *= 2;
        int *p = realloc(s->seq, c * sizeof *p);
        if (!p) return -1;
        s->seq = p, s->cap_seq = c;
    }
    if (s->n == s->cap) {
        int c = s->cap ? 2 * s->cap : 256;
        int *p = realloc(s->len, (size_t)c * sizeof *p);
        if (!p) return -1;
        s->len = p, s->cap = c;
    }
    s->seq[s->n_seq++] = head;
    if (n_tail) memcpy(s->seq + s->n_seq, tail, (size_t)n_tail * sizeof *tail);
    s->n_seq += (size_t)n_tail;
    s->len[s->n++] = 1 + n_tail;
    return 0;
}

/* 1 when the sequences from index `from` hold head + tail already */
static int has(const seqs *s, int from, size_t from_off, int head, const int *tail, int n_tail)
{
    size_t o = from_off;
    for (int i = from; i < s->n; o += (size_t)s->len[i++])
        if (s->len[i] == 1 + n_tail && s->seq[o] == head && !memcmp(s->seq + o + 1, tail, (size_t)n_tail * sizeof *tail))
            return 1;
    return 0;
}

int tokenizer_overlaps(const tokenizer *t, const char *str, size_t str_len, int max_tail, int **seq, int **len,
                       int *n, char *err, size_t errlen)
{
    seqs s = {0};
    const int vocab = tokenizer_vocab_size(t);
    *seq = *len = NULL;
    *n = 0;
    if (!str_len) return 0;
    for (int id = 0; id < vocab; id++) {
        char *w = NULL;
        size_t wl = 0;
        if (tokenizer_decode_ex(t, &id, 1, TOK_DECODE_SPECIAL, &w, &wl, err, errlen) != 0) goto fail;
        const int first = s.n;
        const size_t first_off = s.n_seq;
        int contained = 0;
        for (size_t p = 0; p + str_len <= wl && !contained; p++) contained = !memcmp(w + p, str, str_len);
        if (contained) {
            if (push(&s, id, NULL, 0) != 0) goto oom;
        } else {
            /* every place the text ends with a prefix str[0..i) of str: id, then str[i..]'s ids */
            for (size_t p = 0; p < wl; p++) {
                if (w[p] != str[0]) continue;
                size_t i = 1;
                while (i < str_len && p + i < wl && w[p + i] == str[i]) i++;
                if (i < str_len && p + i < wl) continue;   /* a mismatch inside the text */
                int *ids = NULL, m = 0;
                if (tokenizer_encode_ex(t, str + i, str_len - i, 0, &ids, &m, err, errlen) != 0) goto fail_w;
                if (max_tail >= 0 && m > max_tail) m = max_tail;
                const int dup = has(&s, first, first_off, id, ids, m);
                const int rc = dup ? 0 : push(&s, id, ids, m);
                free(ids);
                if (rc != 0) goto oom;
            }
        }
        free(w);
        continue;
    oom:
        snprintf(err, errlen, "out of memory");
    fail_w:
        free(w);
        goto fail;
    }
    *seq = s.seq;
    *len = s.len;
    *n = s.n;
    return 0;
fail:
    free(s.seq);
    free(s.len);
    return -1;
}
