// tokenizer.cc — extern "C" wrapper around sentencepiece::SentencePieceProcessor, and the
// streaming detokenizer. See tokenizer.h for the contract. Every entry point catches all
// exceptions: nothing thrown here reaches C.
#include "tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char kSpaceSymbol[] = "\xe2\x96\x81";  // "▁" U+2581
const char kReplacementChar[] = "\xef\xbf\xbd";  // U+FFFD

enum piece_kind : unsigned char { PK_NORMAL, PK_CONTROL, PK_UNKNOWN, PK_BYTE };

void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

bool starts_with_space_symbol(const std::string &s) {
    return s.compare(0, 3, kSpaceSymbol) == 0;
}

std::string replace_space_symbol(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 3, kSpaceSymbol) == 0) { out += ' '; i += 3; }
        else out += s[i++];
    }
    return out;
}

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

}  // namespace

struct tokenizer {
    sentencepiece::SentencePieceProcessor sp;
    std::string path;
    int vocab = 0, bos = -1, eos = -1;
    std::vector<std::string> pieces;   // raw piece of each id
    std::vector<std::string> surface;  // DecodeIds text of each id alone, before stripping
    std::vector<unsigned char> kind;   // piece_kind
    std::vector<unsigned char> byte;   // value of <0xNN> for PK_BYTE
    std::vector<unsigned char> lead_ws;  // normal piece starting with "▁"
    bool strip_first = true;    // add_dummy_prefix / remove_extra_whitespaces: strip at start
    bool strip_repeat = true;   // keep stripping while the output is still empty
                                // (remove_extra_whitespaces; older releases)
};

struct tok_decoder {
    const tokenizer *t;
    bool armed;                // the next "▁" piece loses its space
    bool emitted;              // some text was emitted since the reset
    unsigned char pending[4];  // bytes of an incomplete character
    int n_pending;
};

namespace {

std::string decode_ids(const tokenizer *t, const std::vector<int> &ids) {
    std::string out;
    auto st = t->sp.Decode(ids, &out);
    if (!st.ok()) throw std::runtime_error(st.ToString());
    return out;
}

// Probes how the linked libsentencepiece strips the dummy-prefix space (differs by version and by
// normalizer spec), so the streaming decoder reproduces DecodeIds exactly.
void probe_stripping(tokenizer *t) {
    int bare = -1, word = -1;
    for (int i = 0; i < t->vocab; i++) {
        if (t->kind[i] != PK_NORMAL || !t->lead_ws[i]) continue;
        if (t->pieces[i] == kSpaceSymbol) { if (bare < 0) bare = i; }
        else if (word < 0) word = i;
    }
    const int x = word >= 0 ? word : bare;
    if (x < 0) return;  // no piece starts with "▁": nothing is ever stripped
    const std::string stripped = t->surface[x].substr(1);
    t->strip_first = decode_ids(t, {x}) == stripped;
    if (bare >= 0 && t->strip_first) t->strip_repeat = decode_ids(t, {bare, x}) == stripped;
}

tokenizer *load(const char *model_path, char *err, size_t errlen) {
    if (!model_path) { set_err(err, errlen, "tokenizer_load: model path is NULL"); return nullptr; }
    FILE *f = fopen(model_path, "rb");
    if (!f) {
        set_err(err, errlen, "%s: cannot open tokenizer model (%s)", model_path, strerror(errno));
        return nullptr;
    }
    fclose(f);
    std::unique_ptr<tokenizer> t(new tokenizer);
    t->path = model_path;
    auto st = t->sp.Load(model_path);
    if (!st.ok()) {
        set_err(err, errlen, "%s: not a valid SentencePiece model (%s)", model_path,
                st.ToString().c_str());
        return nullptr;
    }
    t->vocab = t->sp.GetPieceSize();
    if (t->vocab <= 0) {
        set_err(err, errlen, "%s: SentencePiece model has no pieces", model_path);
        return nullptr;
    }
    t->bos = t->sp.bos_id();
    t->eos = t->sp.eos_id();
    t->pieces.resize(t->vocab);
    t->surface.resize(t->vocab);
    t->kind.assign(t->vocab, PK_NORMAL);
    t->byte.assign(t->vocab, 0);
    t->lead_ws.assign(t->vocab, 0);
    std::string unk_surface;
    for (int i = 0; i < t->vocab; i++) {
        const std::string &p = t->sp.IdToPiece(i);
        t->pieces[i] = p;
        if (t->sp.IsControl(i)) {
            t->kind[i] = PK_CONTROL;
        } else if (t->sp.IsUnknown(i)) {
            t->kind[i] = PK_UNKNOWN;
            t->surface[i] = decode_ids(t.get(), {i});  // the model's unk_surface
        } else if (t->sp.IsByte(i)) {
            unsigned v;
            if (p.size() != 6 || sscanf(p.c_str(), "<0x%2X>", &v) != 1) {
                set_err(err, errlen, "%s: byte piece %d is \"%s\", expected <0xNN>", model_path,
                        i, p.c_str());
                return nullptr;
            }
            t->kind[i] = PK_BYTE;
            t->byte[i] = (unsigned char)v;
        } else {
            t->lead_ws[i] = starts_with_space_symbol(p);
            t->surface[i] = replace_space_symbol(p);
        }
    }
    probe_stripping(t.get());
    return t.release();
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

tokenizer *tokenizer_load(const char *model_path, char *err, size_t errlen) {
    try {
        return load(model_path, err, errlen);
    } catch (const std::exception &e) {
        set_err(err, errlen, "%s: %s", model_path ? model_path : "(null)", e.what());
    } catch (...) {
        set_err(err, errlen, "%s: unknown error loading tokenizer",
                model_path ? model_path : "(null)");
    }
    return nullptr;
}

void tokenizer_free(tokenizer *t) { delete t; }

int tokenizer_encode(const tokenizer *t, const char *text, int **ids, int *n,
                     char *err, size_t errlen) {
    if (ids) *ids = nullptr;
    if (n) *n = 0;
    if (!t || !text || !ids || !n) {
        set_err(err, errlen, "tokenizer_encode: NULL argument");
        return -1;
    }
    try {
        std::vector<int> v;
        auto st = t->sp.Encode(text, &v);
        if (!st.ok()) {
            set_err(err, errlen, "%s: encode failed (%s)", t->path.c_str(), st.ToString().c_str());
            return -1;
        }
        int *out = (int *)malloc((v.empty() ? 1 : v.size()) * sizeof(int));
        if (!out) {
            set_err(err, errlen, "tokenizer_encode: out of memory for %zu ids", v.size());
            return -1;
        }
        if (!v.empty()) memcpy(out, v.data(), v.size() * sizeof(int));
        *ids = out;
        *n = (int)v.size();
        return 0;
    } catch (const std::exception &e) {
        set_err(err, errlen, "%s: encode failed (%s)", t->path.c_str(), e.what());
    } catch (...) {
        set_err(err, errlen, "%s: encode failed", t->path.c_str());
    }
    return -1;
}

int tokenizer_decode(const tokenizer *t, const int *ids, int n, char **text,
                     char *err, size_t errlen) {
    if (text) *text = nullptr;
    if (!t || !text || n < 0 || (n > 0 && !ids)) {
        set_err(err, errlen, "tokenizer_decode: bad argument");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab) {
            set_err(err, errlen, "token id %d (position %d) out of range [0, %d)", ids[i], i,
                    t->vocab);
            return -1;
        }
    }
    try {
        std::string s = decode_ids(t, std::vector<int>(ids, ids + n));
        char *out = (char *)malloc(s.size() + 1);
        if (!out) {
            set_err(err, errlen, "tokenizer_decode: out of memory for %zu bytes", s.size());
            return -1;
        }
        memcpy(out, s.data(), s.size());
        out[s.size()] = '\0';
        *text = out;
        return 0;
    } catch (const std::exception &e) {
        set_err(err, errlen, "%s: decode failed (%s)", t->path.c_str(), e.what());
    } catch (...) {
        set_err(err, errlen, "%s: decode failed", t->path.c_str());
    }
    return -1;
}

int tokenizer_vocab_size(const tokenizer *t) { return t ? t->vocab : 0; }
int tokenizer_bos_id(const tokenizer *t) { return t ? t->bos : -1; }
int tokenizer_eos_id(const tokenizer *t) { return t ? t->eos : -1; }

const char *tokenizer_piece(const tokenizer *t, int id) {
    if (!t || id < 0 || id >= t->vocab) return nullptr;
    return t->pieces[id].c_str();
}

int tokenizer_piece_to_id(const tokenizer *t, const char *piece) {
    if (!t || !piece) return -1;
    try {
        int id = t->sp.PieceToId(piece);
        if (id < 0 || id >= t->vocab || t->kind[id] == PK_UNKNOWN) return -1;
        return id;
    } catch (...) {
        return -1;
    }
}

tok_decoder *tok_decoder_new(const tokenizer *t) {
    if (!t) return nullptr;
    tok_decoder *d = (tok_decoder *)calloc(1, sizeof *d);
    if (!d) return nullptr;
    d->t = t;
    tok_decoder_reset(d, -1);
    return d;
}

void tok_decoder_free(tok_decoder *d) { free(d); }

void tok_decoder_reset(tok_decoder *d, int prev_token) {
    if (!d) return;
    const tokenizer *t = d->t;
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
