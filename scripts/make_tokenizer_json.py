#!/usr/bin/env python3
"""Rebuild a model's original Hugging Face tokenizer.json from the vocabulary in its GGUF file.

    scripts/make_tokenizer_json.py GGUF OUT/tokenizer.json [--spec OUT/gguf_spec.json]
                                   [--merges-format array|string]

Writes OUT/tokenizer.json and OUT/tokenizer_config.json (BOS/EOS/PAD/UNK token texts,
add_bos_token, the chat template) from the GGUF metadata (tokenizer.ggml.*,
tokenizer.chat_template), with the pre-tokenization pipeline of the model's original
tokenizer.json chosen by tokenizer.ggml.pre:

  smollm     no normaliser; Sequence[Digits(individual_digits), ByteLevel(use_regex)]
             (HuggingFaceTB/SmolLM2-*-Instruct)
  qwen2      NFC; Sequence[Split(Qwen2 regex, Isolated), ByteLevel(use_regex=false)]
             (Qwen/Qwen2.5-*)
  llama-bpe  no normaliser; Sequence[Split(Llama-3 regex, Isolated), ByteLevel(use_regex=false)],
  llama3     ignore_merges, TemplateProcessing with <|begin_of_text|> (meta-llama/Meta-Llama-3-*)
  gpt-2      ByteLevel(use_regex)

Model BPE with every GGUF token in model.vocab (id = index) and the merges in GGUF order;
control (3), unknown (2) and user-defined (4) tokens are also listed in added_tokens (special
for 3 and 2), normalized=false. --merges-format string writes merges as "a b" strings (the
older tokenizers format) instead of [a, b] pairs.

--spec also writes the GGUF metadata itself as JSON (tokens, token_type, merges, pre, the
special ids, add_bos/add_eos, chat_template): what model/gguf.c hands tokenizer_load_bpe, for
tests that cannot read GGUF themselves.

Needs only the `gguf` package and the standard library (no `tokenizers`); the output is a
deterministic function of the GGUF file. Never commit the outputs: they are model data.
"""
import argparse
import json
import os
import sys

import gguf

QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
            r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
             r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def byte_level(add_prefix_space, trim_offsets, use_regex):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space,
            "trim_offsets": trim_offsets, "use_regex": use_regex}


def pipeline(pre):
    """normalizer, pre_tokenizer, ignore_merges for a tokenizer.ggml.pre name."""
    if pre == "smollm":
        return None, {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level(False, True, True)]}, False
    if pre == "qwen2":
        return {"type": "NFC"}, {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_RE}, "behavior": "Isolated",
             "invert": False}, byte_level(False, False, False)]}, False
    if pre in ("llama-bpe", "llama3"):
        return None, {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_RE}, "behavior": "Isolated",
             "invert": False}, byte_level(False, True, False)]}, True
    if pre == "gpt-2":
        return None, byte_level(False, True, True), False
    sys.exit(f"make_tokenizer_json: tokenizer.ggml.pre {pre!r} is not supported "
             "(smollm, qwen2, llama-bpe, llama3, gpt-2)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("out", help="path of the tokenizer.json to write (its folder gets "
                                "tokenizer_config.json too)")
    ap.add_argument("--spec", help="also write the GGUF tokenizer metadata as JSON here")
    ap.add_argument("--merges-format", choices=["array", "string"], default="array")
    a = ap.parse_args()

    r = gguf.GGUFReader(a.gguf)
    model = field(r, "tokenizer.ggml.model")
    if model != "gpt2":
        sys.exit(f"make_tokenizer_json: {a.gguf}: tokenizer.ggml.model is {model!r}, not 'gpt2'")
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type") or [1] * len(tokens)
    merges = field(r, "tokenizer.ggml.merges") or []
    pre = field(r, "tokenizer.ggml.pre", "default")
    ids = {k: field(r, f"tokenizer.ggml.{k}_token_id", -1)
           for k in ("bos", "eos", "eot", "eom", "padding", "unknown")}
    add_bos = field(r, "tokenizer.ggml.add_bos_token")
    add_eos = field(r, "tokenizer.ggml.add_eos_token")
    template = field(r, "tokenizer.chat_template")

    normalizer, pre_tokenizer, ignore_merges = pipeline(pre)
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": ty != 4}
             for i, (t, ty) in enumerate(zip(tokens, types)) if ty in (2, 3, 4)]
    if a.merges_format == "array":
        merge_list = [m.split(" ", 1) for m in merges]
    else:
        merge_list = list(merges)
    if add_bos is None:
        add_bos = pre in ("llama-bpe", "llama3")
    bos = tokens[ids["bos"]] if 0 <= ids["bos"] < len(tokens) else None
    if pre in ("llama-bpe", "llama3") and bos is not None:
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                         {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": bos, "type_id": 1}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {bos: {"id": bos, "ids": [ids["bos"]], "tokens": [bos]}}}
    else:
        post = byte_level(True, False, True)
    tj = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": post,
        "decoder": byte_level(True, True, True),
        "model": {"type": "BPE", "dropout": None,
                  "unk_token": tokens[ids["unknown"]] if ids["unknown"] >= 0 else None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": vocab, "merges": merge_list},
    }
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": bool(add_bos),
           "add_eos_token": bool(add_eos), "clean_up_tokenization_spaces": False,
           "model_max_length": 1 << 20}
    for key, k in (("bos_token", "bos"), ("eos_token", "eos"), ("pad_token", "padding"),
                   ("unk_token", "unknown")):
        if 0 <= ids[k] < len(tokens):
            cfg[key] = tokens[ids[k]]
    if template is not None:
        cfg["chat_template"] = template

    out_dir = os.path.dirname(os.path.abspath(a.out))
    os.makedirs(out_dir, exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=1)
    if a.spec:
        spec = {"source": os.path.basename(a.gguf), "pre": pre, "tokens": tokens,
                "token_type": types, "merges": merges, "bos_id": ids["bos"],
                "eos_id": ids["eos"], "eot_id": ids["eot"], "eom_id": ids["eom"],
                "pad_id": ids["padding"], "unk_id": ids["unknown"],
                "add_bos": -1 if field(r, "tokenizer.ggml.add_bos_token") is None else int(add_bos),
                "add_eos": -1 if add_eos is None else int(add_eos), "chat_template": template}
        with open(a.spec, "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()
