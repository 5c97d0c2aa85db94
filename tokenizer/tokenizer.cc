// tokenizer.cc — extern "C" wrapper around sentencepiece::SentencePieceProcessor, and the
// dispatch of the tokenizer.h API to the byte-level BPE implementation (bpe*.c) for tokenizers
// loaded from tokenizer.json or GGUF metadata. The streaming detokenizer is in tok_decoder.cc.
// See tokenizer.h for the contract. Every entry point catches all exceptions: nothing thrown
// here reaches C.
#include "tokenizer/tokenizer_impl.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

/* Control characters from the input (a piece, a field value) would split the one-line error. */
void one_line(char *err, size_t errlen) {
    for (char *c = err; err && errlen && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}

void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    one_line(err, errlen);
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

/* bytes: NULL to load the file model_path, else the serialized model (model_path names it). */
tokenizer *load(const char *model_path, char *err, size_t errlen, const std::string *bytes = nullptr) {
    if (!model_path) { set_err(err, errlen, "tokenizer_load: model path is NULL"); return nullptr; }
    if (!bytes) {
        FILE *f = fopen(model_path, "rb");
        if (!f) {
            set_err(err, errlen, "%s: cannot open tokenizer model (%s)", model_path, strerror(errno));
            return nullptr;
        }
        fclose(f);
    }
    std::unique_ptr<tokenizer> t(new tokenizer);
    t->path = model_path;
    auto st = bytes ? t->sp.LoadFromSerializedProto(*bytes) : t->sp.Load(model_path);
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
    std::vector<int> order;
    for (int i = 0; i < t->vocab; i++)
        if (t->kind[i] == PK_CONTROL && !t->pieces[i].empty()) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return t->pieces[a].size() > t->pieces[b].size();
    });
    for (int i : order) {
        t->control_pieces.push_back(t->pieces[i]);
        t->control_ids.push_back(i);
    }
    return t.release();
}

// What tokenizer_load is given: a folder (tokenizer.json, else tokenizer.model), a JSON file
// (its first non-blank byte is '{') or anything else (SentencePiece).
enum class file_kind { json, spm };

std::string resolve(const char *path, file_kind *kind) {
    std::string p = path;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        const std::string base = p.empty() || p.back() == '/' ? p : p + "/";
        if (stat((base + "tokenizer.json").c_str(), &st) == 0) {
            *kind = file_kind::json;
            return base + "tokenizer.json";
        }
        *kind = file_kind::spm;
        return base + "tokenizer.model";
    }
    *kind = file_kind::spm;
    if (FILE *f = fopen(path, "rb")) {
        int c;
        while ((c = fgetc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r') {}
        if (c == '{') *kind = file_kind::json;
        fclose(f);
    }
    return p;
}

// SentencePiece with TOK_PARSE_SPECIAL: control pieces written in the text split it (longest
// first, as llama.cpp's tokenizer_st_partition), the parts are encoded one by one.
void spm_encode_special(const tokenizer *t, const std::string &text, std::vector<int> &out) {
    struct frag { size_t a, b; int id; };
    std::vector<frag> fr{{0, text.size(), -1}};
    if (text.empty()) fr.clear();
    for (size_t k = 0; k < t->control_pieces.size(); k++) {
        const std::string &p = t->control_pieces[k];
        std::vector<frag> next;
        for (const frag &f : fr) {
            if (f.id >= 0) { next.push_back(f); continue; }
            size_t pos = f.a;
            for (;;) {
                const size_t at = text.find(p, pos);
                if (at == std::string::npos || at + p.size() > f.b) break;
                if (at > pos) next.push_back({pos, at, -1});
                next.push_back({at, at + p.size(), t->control_ids[k]});
                pos = at + p.size();
            }
            if (pos < f.b) next.push_back({pos, f.b, -1});
        }
        fr.swap(next);
    }
    for (const frag &f : fr) {
        if (f.id >= 0) { out.push_back(f.id); continue; }
        std::vector<int> v;
        auto st = t->sp.Encode(text.substr(f.a, f.b - f.a), &v);
        if (!st.ok()) throw std::runtime_error(st.ToString());
        out.insert(out.end(), v.begin(), v.end());
    }
}


}  // namespace

extern "C" {

tokenizer *tokenizer_load(const char *model_path, char *err, size_t errlen) {
    try {
        if (!model_path) return load(model_path, err, errlen);
        file_kind kind;
        const std::string path = resolve(model_path, &kind);
        if (kind == file_kind::spm) return load(path.c_str(), err, errlen);
        bpe_model *m = bpe_model_from_json(path.c_str(), err, errlen);
        if (!m) { one_line(err, errlen); return nullptr; }
        tokenizer *t = new tokenizer;
        t->bpe = m;
        t->path = path;
        t->vocab = bpe_vocab_size(m);
        return t;
    } catch (const std::exception &e) {
        set_err(err, errlen, "%s: %s", model_path ? model_path : "(null)", e.what());
    } catch (...) {
        set_err(err, errlen, "%s: unknown error loading tokenizer",
                model_path ? model_path : "(null)");
    }
    return nullptr;
}

tokenizer *tokenizer_load_mem(const void *buf, size_t len, const char *name, char *err, size_t errlen) {
    const char *nm = name ? name : "(memory)";
    try {
        const char *p = (const char *)buf;
        size_t i = 0;
        while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
        if (i < len && p[i] == '{') {   /* tokenizer.json */
            bpe_model *m = bpe_model_from_json_text(p, len, nm, err, errlen);
            if (!m) { one_line(err, errlen); return nullptr; }
            tokenizer *t = new tokenizer;
            t->bpe = m;
            t->path = nm;
            t->vocab = bpe_vocab_size(m);
            return t;
        }
        const std::string bytes(p, len);
        return load(nm, err, errlen, &bytes);
    } catch (const std::exception &e) {
        set_err(err, errlen, "%s: %s", nm, e.what());
    } catch (...) {
        set_err(err, errlen, "%s: unknown error loading tokenizer", nm);
    }
    return nullptr;
}

void tok_bpe_spec_init(tok_bpe_spec *spec) {
    if (!spec) return;
    memset(spec, 0, sizeof *spec);
    spec->bos_id = spec->eos_id = spec->eot_id = spec->eom_id = spec->pad_id = spec->unk_id = -1;
    spec->add_bos = spec->add_eos = -1;
}

tokenizer *tokenizer_load_bpe(const tok_bpe_spec *spec, char *err, size_t errlen) {
    try {
        bpe_model *m = bpe_model_from_spec(spec, err, errlen);
        if (!m) { one_line(err, errlen); return nullptr; }
        tokenizer *t = new tokenizer;
        t->bpe = m;
        t->path = spec->source ? spec->source : "GGUF";
        t->vocab = bpe_vocab_size(m);
        return t;
    } catch (...) {
        set_err(err, errlen, "%s: out of memory loading the tokenizer",
                spec && spec->source ? spec->source : "GGUF");
    }
    return nullptr;
}

void tokenizer_free(tokenizer *t) { delete t; }

int tokenizer_kind(const tokenizer *t) { return !t ? 0 : t->bpe ? TOK_KIND_BPE : TOK_KIND_SPM; }

int tokenizer_encode_ex(const tokenizer *t, const char *text, size_t len, unsigned flags,
                        int **ids, int *n, char *err, size_t errlen) {
    if (ids) *ids = nullptr;
    if (n) *n = 0;
    if (!t || (!text && len > 0) || !ids || !n) {
        set_err(err, errlen, "tokenizer_encode: NULL argument");
        return -1;
    }
    if (t->bpe) {
        int rc = bpe_encode(t->bpe, text ? text : "", len, flags, ids, n, err, errlen);
        if (rc) one_line(err, errlen);
        return rc;
    }
    try {
        std::vector<int> v;
        if ((flags & TOK_ADD_SPECIAL) && t->bos >= 0) v.push_back(t->bos);
        const std::string s(text ? text : "", len);
        if (flags & TOK_PARSE_SPECIAL) {
            spm_encode_special(t, s, v);
        } else {
            std::vector<int> w;
            auto st = t->sp.Encode(s, &w);
            if (!st.ok()) {
                set_err(err, errlen, "%s: encode failed (%s)", t->path.c_str(),
                        st.ToString().c_str());
                return -1;
            }
            v.insert(v.end(), w.begin(), w.end());
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

int tokenizer_encode(const tokenizer *t, const char *text, int **ids, int *n,
                     char *err, size_t errlen) {
    if (t && t->bpe && text)
        return tokenizer_encode_ex(t, text, strlen(text), TOK_PARSE_SPECIAL, ids, n, err, errlen);
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

int tokenizer_decode_ex(const tokenizer *t, const int *ids, int n, unsigned flags, char **text,
                        size_t *len, char *err, size_t errlen) {
    if (text) *text = nullptr;
    if (len) *len = 0;
    if (t && t->bpe) {
        if (!text || n < 0 || (n > 0 && !ids)) {
            set_err(err, errlen, "tokenizer_decode: bad argument");
            return -1;
        }
        return bpe_decode(t->bpe, ids, n, flags, text, len, err, errlen);
    }
    const int rc = tokenizer_decode(t, ids, n, text, err, errlen);
    if (rc == 0 && len) *len = strlen(*text);  // SentencePiece: up to a decoded NUL
    return rc;
}

int tokenizer_decode(const tokenizer *t, const int *ids, int n, char **text,
                     char *err, size_t errlen) {
    if (t && t->bpe) return tokenizer_decode_ex(t, ids, n, 0, text, nullptr, err, errlen);
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
int tokenizer_bos_id(const tokenizer *t) { return !t ? -1 : t->bpe ? bpe_bos_id(t->bpe) : t->bos; }
int tokenizer_eos_id(const tokenizer *t) { return !t ? -1 : t->bpe ? bpe_eos_id(t->bpe) : t->eos; }
int tokenizer_add_bos(const tokenizer *t) {
    return !t ? 0 : t->bpe ? bpe_add_bos(t->bpe) : t->bos >= 0;
}
int tokenizer_add_eos(const tokenizer *t) { return t && t->bpe ? bpe_add_eos(t->bpe) : 0; }

int tokenizer_eog_ids(const tokenizer *t, const int **ids) {
    if (!t || !ids) return 0;
    if (t->bpe) return bpe_eog_ids(t->bpe, ids);
    *ids = &t->eos;
    return t->eos >= 0 ? 1 : 0;
}

int tokenizer_is_eog(const tokenizer *t, int id) {
    const int *v;
    const int n = tokenizer_eog_ids(t, &v);
    for (int i = 0; i < n; i++) if (v[i] == id) return 1;
    return 0;
}

int tokenizer_token_type(const tokenizer *t, int id) {
    if (!t || id < 0 || id >= t->vocab) return 0;
    if (t->bpe) return bpe_token_type(t->bpe, id);
    static const int map[] = {TOK_TYPE_NORMAL, TOK_TYPE_CONTROL, TOK_TYPE_UNKNOWN, TOK_TYPE_BYTE};
    return map[t->kind[id]];
}

const char *tokenizer_chat_template(const tokenizer *t) {
    return t && t->bpe ? bpe_chat_template(t->bpe) : nullptr;
}

const char *tokenizer_piece(const tokenizer *t, int id) {
    if (!t || id < 0 || id >= t->vocab) return nullptr;
    if (t->bpe) return bpe_piece(t->bpe, id);
    return t->pieces[id].c_str();
}

int tokenizer_piece_to_id(const tokenizer *t, const char *piece) {
    if (!t || !piece) return -1;
    if (t->bpe) return bpe_piece_to_id(t->bpe, piece);
    try {
        int id = t->sp.PieceToId(piece);
        if (id < 0 || id >= t->vocab || t->kind[id] == PK_UNKNOWN) return -1;
        return id;
    } catch (...) {
        return -1;
    }
}

}  // extern "C"
