// tokenizer/tokenizer_impl.h — internal to tokenizer/ (C++): the tokenizer and tok_decoder
// structures shared by tokenizer.cc (loading, SentencePiece, dispatch to the BPE in bpe*.c) and
// tok_decoder.cc (the streaming detokenizer).
#ifndef LLM_TOKENIZER_IMPL_H
#define LLM_TOKENIZER_IMPL_H

#include "tokenizer/tokenizer.h"

extern "C" {
#include "tokenizer/bpe.h"
}

#include <sentencepiece_processor.h>

#include <string>
#include <vector>

const char kSpaceSymbol[] = "\xe2\x96\x81";  // "▁" U+2581

enum piece_kind : unsigned char { PK_NORMAL, PK_CONTROL, PK_UNKNOWN, PK_BYTE };

struct tokenizer {
    bpe_model *bpe = nullptr;          // byte-level BPE; everything below is SentencePiece
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
    std::vector<std::string> control_pieces;  // for TOK_PARSE_SPECIAL, longest first
    std::vector<int> control_ids;
    ~tokenizer() { bpe_model_free(bpe); }
};

struct tok_decoder {
    const tokenizer *t;
    bpe_stream bs;             // BPE state
    bool armed;                // the next "▁" piece loses its space
    bool emitted;              // some text was emitted since the reset
    unsigned char pending[4];  // bytes of an incomplete character
    int n_pending;
};

#endif
