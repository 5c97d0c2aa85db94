#!/usr/bin/env python3
"""Write the tokenizer fixtures checked by tests/test_tokenizer.c.

    scripts/make_tokenizer_fixtures.py [--out tests/fixtures/tokenizer] [--shared ../shared]

For each SentencePiece model (stories260K, babyllama-tok105, llama2-tokenizer under
$LLM_SHARED/models, default ../shared relative to the repository root) it writes
OUT/<model>.jsonl: one JSON object per line (UTF-8, no ASCII escaping except control
characters), easy to read with cJSON:

  line 1   {"meta": {"model": "models/<name>/tokenizer.model", "model_sha256": ...,
            "sentencepiece": "<python package version>", "seed": ..., "count": N,
            "generator": "scripts/make_tokenizer_fixtures.py"}}
  then     {"id": k, "kind": "...", "text": "...", "ids": [...], "decoded": "..."}
  or       {"id": k, "kind": "tinystories"|"xsum", "ref": {"file": "data/...", "line": L,
            "field": "article"|null, "start": B0, "end": B1, "fnv1a64": "<16 hex>"},
            "ids": [...], "decoded_len": n, "decoded_fnv1a64": "<16 hex>"}

`ids` is SentencePieceProcessor.encode(text) (no BOS/EOS) and `decoded` is
SentencePieceProcessor.decode(ids). The same strings (in the same order) are used for every
model; they cover whitespace runs, tabs, newlines, leading/trailing spaces, digits and long
numbers, punctuation, accents (precomposed and combining), CJK, emoji (ZWJ sequences, skin
tones, flags), RTL scripts and marks, control characters, text that looks like pieces
("<0x41>", "▁", "<s>"), mixed case, code, random compositions and random code points from a
seeded generator. U+0000 is never used (C strings).

Text from the shared data sets (TinyStories excerpt, XSum) is NOT copied into the fixtures: the
project refers to ../shared, it does not copy it (shared/README.md; XSum must not be
redistributed). Such entries name the file, the 1-based line, the JSON field (XSum "article"),
and a byte range [start, end) of the UTF-8 text, with FNV-1a 64 hashes of that text and of the
decoded text, so the test reads the snippet from $LLM_SHARED and detects a changed data file.

Determinism: every random choice comes from random.Random(SEED).random(), whose sequence the
Python documentation guarantees across versions; no set/dict iteration order is relied on.

SentencePiece version: the C build links the Debian libsentencepiece 0.1.97; the fixtures were
made with the Python package 0.2.3, and the two agree on every string here (encode and decode;
the decoders also agree on sequences starting with several "▁" pieces, where much older
releases differed). The version used is recorded in each file's meta line. With another Python
version, regenerate and let tests/test_tokenizer.c tell whether the C library still agrees; if
it does not, pin the Python package to the C library's version.
"""
import argparse
import hashlib
import json
import os
import random
import sys

import sentencepiece as spm

SEED = 20240611
MODELS = ["stories260K", "babyllama-tok105", "llama2-tokenizer"]
TINYSTORIES = "data/tinystories/TinyStories-valid.excerpt_unverified.txt"
XSUM = "data/xsum/h2o_xsum_0shot.jsonl"


def fnv1a64(b: bytes) -> str:
    h = 0xCBF29CE484222325
    for c in b:
        h ^= c
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


class Rng:
    """Only random.Random.random() is used: its sequence is stable across Python versions."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def below(self, n):
        return min(int(self.r.random() * n), n - 1)

    def between(self, a, b):  # inclusive
        return a + self.below(b - a + 1)

    def choice(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, p):
        return self.r.random() < p


# ------------------------------------------------------------------------ hand-written cases

WORDS = ["the", "The", "THE", "hello", "Hello", "HELLO", "hElLo", "world", "World", "cat",
         "Lily", "Timmy", "ball", "park", "happy", "sad", "big", "little", "running", "ran",
         "don't", "it's", "we're", "O'Neil", "co-operate", "e-mail", "U.S.A.", "Mr.", "Dr",
         "iPhone", "McDonald", "camelCase", "snake_case", "kebab-case", "ALLCAPS", "x", "I",
         "a", "an", "supercalifragilisticexpialidocious", "antidisestablishmentarianism",
         "naïve", "café", "résumé", "Zürich", "São", "Paulo", "façade", "jalapeño", "Øre",
         "straße", "Łódź", "Ålesund", "Ελλάδα", "Москва", "привет", "日本語", "中文", "한국어",
         "ひらがな", "カタカナ", "हिन्दी", "ภาษาไทย", "עברית", "العربية", "தமிழ்", "ქართული",
         "Ἀθῆναι", "Ω", "µ", "ﬁ", "①", "Ⅻ", "𝔸𝔹", "𝄞", "𐍈", "☃", "★", "→", "∑", "∞",
         "½", "²", "ⁿ", "°C", "€5", "£10", "$3.50", "¥", "₹", "©", "®", "™"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \t ", "\u00a0",
          "\u3000", "\u2009", "\u200b", "\u2028", "\u2029", "\u000b", "\u000c", "\u0085"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + [
    "...", "…", "—", "–", "“", "”", "‘", "’", "«", "»", "¿", "¡", "、", "。", "・", "!!", "?!"]
EMOJI = ["😀", "😂", "👍", "👍🏽", "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "🇫🇷", "🇯🇵", "1️⃣", "❤️",
         "❤", "🤖", "🧑🏿\u200d🚀", "🐍", "🎉", "🫠", "☕", "✔", "✅", "🔥"]
COMBINING = ["e\u0301", "a\u0300", "n\u0303", "o\u0308", "u\u030a", "c\u0327", "i\u0302\u0301",
             "Z\u0335\u0347\u0359", "\u0301", "\u0915\u094d\u0937", "\u0e01\u0e34\u0e48",
             "\u05e9\u05c1\u05b8", "\u1100\u1161\u11a8", "g\u0308\u0308\u0308\u0308"]
RTL = ["مرحبا بالعالم", "שלום עולם", "\u200fRTL mark", "\u200eLTR mark", "abc\u202edef\u202c",
       "عدد 123 رقم", "ע\u05b4ב\u05b0ר\u05b4י\u05ea", "\u061c", "فارسی ۱۲۳", "اردو"]
CONTROL = ["\x01", "\x02", "\x07", "\x08", "\x1b[31mred\x1b[0m", "\x1f", "\x7f", "\x80", "\x9f",
           "\ufeff", "\ufffd", "\ufffe", "\uffff", "\U0010ffff", "\ue000", "\U000f0000",
           "\u00ad", "\u2060", "\u180e", "\u034f"]
LOOKALIKES = ["<0x41>", "<0x0A>", "<0xFF>", "<0x00>", "<0xE2><0x96><0x81>", "<0x>", "<0x4>",
              "<s>", "</s>", "<unk>", "<pad>", "<s><s>", "<s> hi </s>", "▁", "▁▁", "▁hello",
              "hello▁world", "\u2581 \u2581", " ⁇ ", "⁇", "[INST]", "[/INST]", "<<SYS>>",
              "<|endoftext|>", "<mask>", "\\u0041", "\\x41", "&amp;", "%20", "\\n"]
NUMBERS = ["0", "1", "42", "007", "1234567890", "3.14159265358979323846", "-273.15", "1e10",
           "6.022e23", "1,000,000", "1.000.000,50", "12:30", "2024-06-11", "+1 (555) 010-9999",
           "0xDEADBEEF", "0b1010", "99999999999999999999999999999999", "١٢٣", "١٢٣٤٥", "Ⅳ",
           "3/4", "50%", "#1", "v1.2.3", "192.168.0.1", "4K", "1st", "2nd", "100km/h"]

FIXED = [
    "", " ", "  ", "    ", "\n", "\t", "\r\n", " \n ", "a", " a", "a ", " a ", "  a  ",
    "I believe the meaning of life is",
    "Once upon a time, there was a little girl named Lily.",
    "Hello world", "Hello  world", "Hello   world", "Hello\tworld", "Hello\nworld",
    "Hello\n\nworld", " Hello world", "Hello world ", "  Hello world  ", "\tHello",
    "Hello\t", "\nHello", "Hello\n", "line1\nline2\nline3\n", "a\tb\tc", "a \t b",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG!",
    "the quick brown fox jumps over the lazy dog",
    "Pack my box with five dozen liquor jugs?",
    "1 2 3 4 5 6 7 8 9 10", "12345678901234567890123456789012345678901234567890",
    "3.141592653589793238462643383279502884197169399375105820974944592307816406286",
    "In 2023, 1,234 people paid $56.78 each (total: $70,067.52).",
    "Ça va? Très bien, merci. Où est la bibliothèque?",
    "Der Größenwahn schläft nie. Äpfel, Öl, Übermut, ß.",
    "¿Dónde está el baño? ¡Aquí!",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "我爱自然语言处理。", "東京は日本の首都です。", "안녕하세요, 세계!", "こんにちは世界",
    "Привет, мир! Как дела?", "Γειά σου Κόσμε", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "مرحبا بالعالم", "שלום עולם", "Mixed English 中文 and 日本語 text",
    "Emoji: 😀😃😄😁😆😅😂🤣", "Family: 👨\u200d👩\u200d👧\u200d👦", "Flags: 🇺🇸🇬🇧🇩🇪",
    "Thumbs: 👍🏻👍🏼👍🏽👍🏾👍🏿", "e\u0301 vs é", "Z\u0351\u0352\u0353alg\u0354o\u0355",
    "def f(x):\n    return x ** 2\n", "int main(void) { return 0; }\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}",
    '{"key": "value", "n": [1, 2, 3]}', "https://example.com/path?q=1&r=two#frag",
    "user.name+tag@example.co.uk", "C:\\Windows\\System32\\drivers\\etc\\hosts",
    "<0x41><0x42><0x43>", "<s>Hello</s>", "<s> Hello </s>", "▁Hello▁world", "▁ ▁ ▁",
    "<unk>", " ⁇ ", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi! [/INST]",
    "\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f",
    "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f",
    "tab\there", "nbsp\u00a0here", "ideographic\u3000space", "zero\u200bwidth",
    "soft\u00adhyphen", "BOM\ufefffirst", "\ufeffBOM at start", "replacement \ufffd char",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "                                                                 x",
    "\n\n\n\n\n\n\n\n\n\n\n\n", "\t\t\t\t\t\t\t\t", "!!!!!!!!!!??????????", "......",
    "— – - ‐ ‑ ‒ ―", "“quoted” ‘single’ «guillemets» „low“", "…and so on…",
    "ALL CAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS #@!",
    "MiXeD cAsE sEnTeNcE", "camelCaseIdentifierWithNumbers123",
    "𝕳𝖊𝖑𝖑𝖔 𝖂𝖔𝖗𝖑𝖉", "𝐁𝐨𝐥𝐝", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３", "ﾊﾝｶｸ ｶﾀｶﾅ",
    "\U0001f600", "\U0010fffd", "\U00020000\U0002a6d6",
]


def composed(rng: Rng) -> str:
    """A random mix of words, numbers, whitespace, punctuation and other scripts."""
    parts = []
    n = rng.between(1, 14)
    pools = [WORDS, WORDS, WORDS, SPACES, PUNCT, NUMBERS, EMOJI, COMBINING, RTL, CONTROL,
             LOOKALIKES]
    for _ in range(n):
        pool = rng.choice(pools)
        parts.append(rng.choice(pool))
        if rng.chance(0.6):
            parts.append(" " * rng.between(1, 3) if rng.chance(0.8) else rng.choice(SPACES))
    s = "".join(parts)
    if rng.chance(0.2):
        s = " " * rng.between(1, 4) + s
    if rng.chance(0.2):
        s = s + rng.choice([" ", "  ", "\n", "\t", " \n"])
    return s


# Blocks to draw random code points from (ranges inclusive); surrogates and U+0000 excluded.
BLOCKS = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
          (0x590, 0x5FF), (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF),
          (0x2000, 0x206F), (0x2190, 0x22FF), (0x2500, 0x25FF), (0x3040, 0x30FF),
          (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xF8FF), (0xFB00, 0xFFFD),
          (0x10000, 0x1007F), (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF),
          (0xE0000, 0xE007F), (0xF0000, 0x10FFFF)]


def random_codepoint(rng: Rng) -> str:
    if rng.chance(0.15):  # anything in Unicode
        while True:
            cp = rng.between(1, 0x10FFFF)
            if not 0xD800 <= cp <= 0xDFFF:
                return chr(cp)
    lo, hi = rng.choice(BLOCKS)
    return chr(rng.between(lo, hi))


def random_unicode(rng: Rng) -> str:
    n = rng.between(1, 24)
    out = []
    for _ in range(n):
        out.append(random_codepoint(rng) if rng.chance(0.8) else rng.choice(SPACES + [" "]))
    return "".join(out)


def random_ascii(rng: Rng) -> str:
    n = rng.between(1, 60)
    return "".join(chr(rng.between(1, 127)) for _ in range(n))


def generated_texts(rng: Rng):
    """(kind, text) pairs: the hand-written cases and the seeded random ones."""
    out = [("fixed", s) for s in FIXED]
    for pool, kind in [(WORDS, "word"), (NUMBERS, "number"), (PUNCT, "punct"), (EMOJI, "emoji"),
                       (COMBINING, "combining"), (RTL, "rtl"), (CONTROL, "control"),
                       (LOOKALIKES, "lookalike"), (SPACES, "space")]:
        for s in pool:
            out.append((kind, s))
            out.append((kind, " " + s + " "))
    for _ in range(420):
        out.append(("composed", composed(rng)))
    for _ in range(160):
        out.append(("random_unicode", random_unicode(rng)))
    for _ in range(60):
        out.append(("random_ascii", random_ascii(rng)))
    for _ in range(40):  # long numbers and digit runs
        digits = "".join(chr(0x30 + rng.below(10)) for _ in range(rng.between(5, 60)))
        sep = rng.choice(["", " ", ",", ".", "\n"])
        out.append(("long_number", digits if not sep else sep.join(
            digits[i:i + 3] for i in range(0, len(digits), 3))))
    for _ in range(30):  # whitespace runs inside text
        ws = "".join(rng.choice(SPACES) for _ in range(rng.between(1, 8)))
        out.append(("whitespace_run", rng.choice(WORDS) + ws + rng.choice(WORDS) + ws))
    return out


# ------------------------------------------------------------------------- shared data refs

def utf8_boundaries(b: bytes):
    return [i for i in range(len(b) + 1) if i == len(b) or (b[i] & 0xC0) != 0x80]


def snippet_refs(rng: Rng, shared: str):
    """(kind, ref, text) for snippets of the shared data files: sentences, spans cut at random
    character boundaries (possibly mid-word, with leading/trailing spaces) and a few whole
    TinyStories lines."""
    refs = []
    ts_path = os.path.join(shared, TINYSTORIES)
    with open(ts_path, "rb") as f:
        ts_lines = f.read().split(b"\n")
    xs_path = os.path.join(shared, XSUM)
    with open(xs_path, "rb") as f:
        xs_lines = [json.loads(l)["article"].encode("utf-8") for l in f.read().split(b"\n") if l]

    def add(kind, file, line_no, field, text: bytes, start, end):
        piece = text[start:end]
        refs.append((kind, {"file": file, "line": line_no, "field": field, "start": start,
                            "end": end, "fnv1a64": fnv1a64(piece)}, piece.decode("utf-8")))

    def spans(kind, file, lines, field, count, whole=0):
        usable = [i for i, l in enumerate(lines) if l]
        for k in range(whole):
            i = usable[k]
            add(kind, file, i + 1, field, lines[i], 0, len(lines[i]))
        for _ in range(count):
            i = rng.choice(usable)
            text = lines[i]
            if rng.chance(0.5):  # a sentence
                ends = [j + 1 for j in range(len(text)) if text[j:j + 1] in (b".", b"!", b"?")]
                ends = [0] + ends + [len(text)]
                k = rng.below(len(ends) - 1)
                start, end = ends[k], ends[min(k + rng.between(1, 2), len(ends) - 1)]
            else:  # any span on character boundaries
                bounds = utf8_boundaries(text)
                a = rng.below(len(bounds) - 1)
                b = min(len(bounds) - 1, a + rng.between(1, 300))
                start, end = bounds[a], bounds[b]
            if end > start:
                add(kind, file, i + 1, field, text, start, end)

    spans("tinystories", TINYSTORIES, ts_lines, None, 150, whole=4)
    spans("xsum", XSUM, xs_lines, "article", 160)
    # Every non-ASCII XSum character in context (mojibake like "Â£" included).
    for i, text in enumerate(xs_lines):
        for m in range(len(text)):
            if text[m] >= 0xC0 and rng.chance(0.08):
                bounds = utf8_boundaries(text)
                a = max(0, m - 20)
                while a not in bounds:
                    a -= 1
                b = min(len(text), m + 24)
                while b not in bounds:
                    b += 1
                add("xsum", XSUM, i + 1, "article", text, a, b)
    return refs


# --------------------------------------------------------------------------------- output

def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(root, "tests", "fixtures", "tokenizer"))
    ap.add_argument("--shared", default=os.environ.get("LLM_SHARED",
                                                      os.path.join(root, "..", "shared")))
    args = ap.parse_args()

    rng = Rng(SEED)
    texts = generated_texts(rng)
    refs = snippet_refs(rng, args.shared)
    for kind, s in texts:
        assert "\0" not in s, kind
    os.makedirs(args.out, exist_ok=True)
    for name in MODELS:
        rel = f"models/{name}/tokenizer.model"
        path = os.path.join(args.shared, rel)
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        sp = spm.SentencePieceProcessor(model_file=path)
        rows = []
        for kind, s in texts:
            ids = sp.encode(s)
            rows.append({"kind": kind, "text": s, "ids": ids, "decoded": sp.decode(ids)})
        for kind, ref, s in refs:
            ids = sp.encode(s)
            dec = sp.decode(ids).encode("utf-8")
            rows.append({"kind": kind, "ref": ref, "ids": ids, "decoded_len": len(dec),
                         "decoded_fnv1a64": fnv1a64(dec)})
        meta = {"model": rel, "model_sha256": sha, "sentencepiece": spm.__version__,
                "seed": SEED, "count": len(rows), "generator": "scripts/make_tokenizer_fixtures.py"}
        out = os.path.join(args.out, f"{name}.jsonl")
        dump = lambda obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
        with open(out, "w", encoding="utf-8", newline="\n") as f:
            f.write(dump({"meta": meta}))
            for k, r in enumerate(rows):
                f.write(dump({"id": k, **r}))
        print(f"{out}: {len(rows)} strings ({len(texts)} generated, {len(refs)} data snippets), "
              f"{os.path.getsize(out)} bytes, sentencepiece {spm.__version__}")


if __name__ == "__main__":
    main()
