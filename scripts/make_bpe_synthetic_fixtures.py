#!/usr/bin/env python3
"""Write small synthetic tokenizer.json files and their `tokenizers` ids for tests/test_bpe_unit.c.

    scripts/make_bpe_synthetic_fixtures.py [--out tests/fixtures/bpe/synthetic]

The two real models exercise only part of what tokenizer.json can say; these cover the rest:
added tokens with lstrip / rstrip / single_word / normalized, ByteLevel with add_prefix_space,
Split with every behaviour (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous),
invert and String patterns, Digits runs, NFKC and NFD normalisers, ignore_merges, merges in
both forms, TemplateProcessing (BOS/EOS) and tokenizer_config.json's add_bos_token.

A byte-level BPE of 700 tokens is trained (tokenizers' BpeTrainer, our own strings) once and
reused by every configuration: OUT/<config>/tokenizer.json (+ tokenizer_config.json for one),
and OUT/cases.jsonl with one line per (config, text):
  {"config": ..., "text": ..., "special": 0|1, "ids": [...] (encode, add_special_tokens as
   "add_special"), "add_special": 0|1, "decoded": decode(ids, skip_special_tokens=False)}.
The vocabulary is trained on text written here: no model data. Needs only `tokenizers`.
"""
import argparse
import copy
import json
import os

import tokenizers
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders

CORPUS = [
    "The quick brown fox jumps over the lazy dog. Hello world, hello World!",
    "I'm sure you'll see they've done it; it's 12:30 on 2024-06-11, 1,234 people.",
    "Ça va? Très bien. Où est la gare? 東京は日本の首都です。 Привет, мир!",
    "def f(x):\n    return x**2  # square\n\tindented with a tab\n\n",
    "numbers 0 1 2 3 4 5 6 7 8 9 10 100 1000 12345 3.14159 and more numbers",
    "special words: hello world, hello, world, words, wordy, sword, word.",
] * 20

TEXTS = [
    "", "a", " a", "Hello world", "hello world", " hello world ", "Hello  world",
    "<|sp|>", "x<|sp|>y", "x <|sp|> y", "  <|sp|>  ", "<|sp|><|sp|>",
    "a [L] b", "a   [L]   b", "[L]", "a\t[L]\nb", "a [R] b", "a [R]\n\n b", "[R]",
    "a [LR] b", "  [LR]  ", "[L][R][LR]", "a[LR]b",
    "qword", "a qword b", "aqword b", "a qwordb", "qword_", "_qword", "qword,qword.", "éqword",
    "qwords qword sqword",
    "hello world", "say hello world now", "HELLO WORLD", "hello  world",
    "12345", "a 123 b 45", "1,234.56", "٣٤٥ ١٢", "①②③ ½", "ﬁve ﬂowers", "Å Ω e\u0301",
    "The quick brown fox jumps over the lazy dog.", "it's 12:30, isn't it?",
    "a,b.c,,d..e", ",leading", "trailing.", "...", "a b  c   d",
    "def f(x):\n    return x**2\n", "Привет, мир!", "東京は日本の首都です。", "👍🏽 🇫🇷",
    "hello<|sp|>world", "hello world<|sp|>hello world", "<bos>x<eos>",
]

BYTE_LEVEL_RE = None  # set from the trained tokenizer


def trained():
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=700, min_frequency=2, show_progress=False,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                             special_tokens=["<|endoftext|>"])
    tk.train_from_iterator(CORPUS, trainer=tr)
    return json.loads(tk.to_str())


def added(content, id_, special=True, lstrip=False, rstrip=False, single_word=False,
          normalized=None):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": (not special) if normalized is None else normalized,
            "special": special}


def bl(add_prefix_space, use_regex):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True,
            "use_regex": use_regex}


def split(pattern, behavior, invert=False, kind="Regex"):
    return {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}


def configs(base):
    # tokenizers gives an added token whose text is in the vocabulary that vocabulary id and
    # renumbers the others: keep the added texts out of the vocabulary, ids consecutive
    n = len(base["model"]["vocab"])
    toks = [added("<|sp|>", n), added("[L]", n + 1, lstrip=True), added("[R]", n + 2, rstrip=True),
            added("[LR]", n + 3, lstrip=True, rstrip=True),
            added("qword", n + 4, special=False, single_word=True),
            added("hello world", n + 5, special=False, normalized=True),
            added("<bos>", n + 6), added("<eos>", n + 7)]
    for t in toks:
        assert t["content"] not in base["model"]["vocab"], t["content"]
    post = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [n + 6], "tokens": ["<bos>"]},
                               "<eos>": {"id": "<eos>", "ids": [n + 7], "tokens": ["<eos>"]}}}
    out = {}

    def make(name, normalizer, pre, post_proc=None, ignore_merges=False, string_merges=False,
             config=None):
        tj = copy.deepcopy(base)
        tj["added_tokens"] = [a for a in base["added_tokens"]] + toks
        tj["normalizer"] = normalizer
        tj["pre_tokenizer"] = pre
        tj["post_processor"] = post_proc
        tj["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                         "use_regex": True}
        tj["model"]["ignore_merges"] = ignore_merges
        if string_merges:
            tj["model"]["merges"] = [" ".join(m) for m in tj["model"]["merges"]]
        out[name] = (tj, config)

    make("prefix_space", None, bl(True, True))
    make("split_behaviors", {"type": "NFKC"}, {"type": "Sequence", "pretokenizers": [
        split("[,.]", "MergedWithPrevious"), split(" ", "MergedWithNext", kind="String"),
        {"type": "Digits", "individual_digits": False}, bl(False, False)]}, post_proc=post,
        ignore_merges=True, string_merges=True)
    make("split_removed", {"type": "Sequence", "normalizers": [{"type": "NFD"}]},
         {"type": "Sequence", "pretokenizers": [split("\\s+", "Removed"),
                                                split("[aeiou]", "Contiguous"),
                                                split("\\p{N}", "Isolated", invert=True),
                                                bl(False, False)]})
    make("config_bos", None, bl(False, True), post_proc=post,
         config={"add_bos_token": False, "add_eos_token": True, "bos_token": "<bos>",
                 "eos_token": {"content": "<eos>", "special": True}})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "tests/fixtures/bpe/synthetic"))
    a = ap.parse_args()
    base = trained()
    rows = []
    for name, (tj, config) in configs(base).items():
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
        cfg_path = os.path.join(d, "tokenizer_config.json")
        if config:
            with open(cfg_path, "w", encoding="utf-8") as f:
                json.dump(config, f, ensure_ascii=False, indent=1)
        elif os.path.exists(cfg_path):
            os.remove(cfg_path)
        tk = Tokenizer.from_file(path)
        for text in TEXTS:
            for special in (1, 0):
                tk.encode_special_tokens = not special
                add = 1 if name == "split_behaviors" and special else 0
                ids = tk.encode(text, add_special_tokens=bool(add)).ids
                rows.append({"config": name, "text": text, "special": special,
                             "add_special": add, "ids": ids,
                             "decoded": tk.decode(ids, skip_special_tokens=False)})
    with open(os.path.join(a.out, "cases.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"meta": {"tokenizers": tokenizers.__version__,
                                     "generator": "scripts/make_bpe_synthetic_fixtures.py"}}) + "\n")
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
