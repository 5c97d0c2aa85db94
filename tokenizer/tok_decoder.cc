// tok_decoder.cc — the streaming detokenizer (tok_decoder_*, see tokenizer.h): SentencePiece
// pieces with byte-fallback assembly and dummy-prefix stripping here, BPE in bpe_codec.c.
#include "tokenizer/tokenizer_impl.h"

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>

namespace {

const char kReplacementChar[] = "\xef\xbf\xbd";  // U+FFFD

// sentencepiece's DecodeUTF8 validity rule (util.h): returns the length of the valid character
// at s[0..len), or 0 when s[0] is invalid there (SentencePiece then emits U+FFFD for that one
// byte). A valid encoding of U+FFFD itself counts as valid.
int utf8_valid_len(const unsigned char *s, size_t len) {
    auto trail = [](unsigned char c) { return (c & 0xC0) == 0x80; };
    auto ok_cp = [](unsigned cp) { return cp < 0xD800 || (cp >= 0xE000 && cp <= 0x10FFFF); };
    if (s[0] < 0x80) return 1;
    if (len >= 2 && (s[0] & 0xE0) == 0xC0) {
        unsigned cp = ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu);
        if (trail(s[1]) && cp >= 0x80 && ok_cp(cp)) return 2;
    } else if (len >= 3 && (s[0] & 0xF0) == 0xE0) {
        unsigned cp = ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        if (trail(s[1]) && trail(s[2]) && cp >= 0x800 && ok_cp(cp)) return 3;
    } else if (len >= 4 && (s[0] & 0xF8) == 0xF0) {
        unsigned cp = ((s[0] & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) |
                      (s[3] & 0x3Fu);
        if (trail(s[1]) && trail(s[2]) && trail(s[3]) && cp >= 0x10000 && ok_cp(cp)) return 4;
    }
    return 0;
}

// Length a character starting with lead byte c claims (2..4), or 0 when c cannot start a
// multi-byte character (ASCII is handled before).
int utf8_claimed_len(unsigned char c) {
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 0;
}

// Appends the characters complete in pending[0..n) to out; with final, incomplete ones become
// U+FFFD per byte. Leaves the bytes still waiting for more at the front of pending.
void drain_bytes(unsigned char *pending, int *n, bool final, std::string &out) {
    int off = 0;
    while (off < *n) {
        const unsigned char *s = pending + off;
        const int avail = *n - off;
        if (s[0] < 0x80) { out += (char)s[0]; off++; continue; }
        const int want = utf8_claimed_len(s[0]);
        if (want > 0 && avail < want && !final) {
            bool all_trail = true;
            for (int j = 1; j < avail; j++) all_trail &= (s[j] & 0xC0) == 0x80;
            if (all_trail) break;  // may still become valid: wait for more bytes
        }
        const int len = utf8_valid_len(s, (size_t)avail);
        if (len > 0) { out.append((const char *)s, (size_t)len); off += len; }
        else { out += kReplacementChar; off++; }
    }
    memmove(pending, pending + off, (size_t)(*n - off));
    *n -= off;
}

// Copies s to out (NUL-terminated) when it fits; returns its length or -1.
int emit(const std::string &s, char *out, size_t outlen) {
    if (s.size() + 1 > outlen || s.size() > (size_t)0x7fffffff) {
        if (out && outlen > 0) out[0] = '\0';
        return -1;
    }
    memcpy(out, s.data(), s.size());
    out[s.size()] = '\0';
    return (int)s.size();
}

}  // namespace

extern "C" {

tok_decoder *tok_decoder_new(const tokenizer *t) {
    if (!t) return nullptr;
    tok_decoder *d = (tok_decoder *)calloc(1, sizeof *d);
    if (!d) return nullptr;
    d->t = t;
    tok_decoder_reset(d, -1);
    return d;
}

void tok_decoder_free(tok_decoder *d) { free(d); }

size_t tok_decoder_buf_size(const tokenizer *t) {
    size_t n = TOK_DECODER_BUF;
    // BPE: every byte of a token and of the (at most 3) held bytes may become U+FFFD (3 bytes)
    if (t && t->bpe) n = std::max(n, 3 * (bpe_max_piece_bytes(t->bpe) + 3) + 1);
    return n;
}

void tok_decoder_set_special(tok_decoder *d, int render) {
    if (d) d->bs.special = render != 0;
}

void tok_decoder_reset(tok_decoder *d, int prev_token) {
    if (!d) return;
    const tokenizer *t = d->t;
    d->bs.n_pending = 0;
    if (t->bpe) return;
    const bool start = prev_token < 0 ||
                       (prev_token < t->vocab && t->kind[prev_token] == PK_CONTROL);
    d->armed = start && t->strip_first;
    d->emitted = !start;
    d->n_pending = 0;
}

int tok_decoder_push(tok_decoder *d, int id, char *out, size_t outlen) {
    if (!d || !out || id < 0 || id >= d->t->vocab) {
        if (out && outlen > 0) out[0] = '\0';
        return -1;
    }
    if (d->t->bpe) return bpe_stream_push(d->t->bpe, &d->bs, id, out, outlen);
    try {
        const tokenizer *t = d->t;
        // Work on copies: nothing changes unless the output fits.
        tok_decoder next = *d;
        std::string s;
        if (t->kind[id] == PK_BYTE) {
            next.pending[next.n_pending++] = t->byte[id];
            drain_bytes(next.pending, &next.n_pending, false, s);
        } else {
            drain_bytes(next.pending, &next.n_pending, true, s);
            if (!s.empty()) next.emitted = true;
            if (next.emitted) next.armed = false;
            if (t->kind[id] == PK_NORMAL && next.armed && t->lead_ws[id]) {
                s += t->surface[id].substr(1);
                if (!t->strip_repeat) next.armed = false;
            } else {
                s += t->surface[id];  // "" for control tokens
            }
        }
        if (!s.empty()) next.emitted = true;
        const int r = emit(s, out, outlen);
        if (r >= 0) *d = next;
        return r;
    } catch (...) {
        if (outlen > 0) out[0] = '\0';
        return -1;
    }
}

int tok_decoder_flush(tok_decoder *d, char *out, size_t outlen) {
    if (!d || !out) return -1;
    if (d->t->bpe) return bpe_stream_flush(d->t->bpe, &d->bs, out, outlen);
    try {
        tok_decoder next = *d;
        std::string s;
        drain_bytes(next.pending, &next.n_pending, true, s);
        if (!s.empty()) next.emitted = true;
        const int r = emit(s, out, outlen);
        if (r >= 0) *d = next;
        return r;
    } catch (...) {
        if (outlen > 0) out[0] = '\0';
        return -1;
    }
}

}  // extern "C"
