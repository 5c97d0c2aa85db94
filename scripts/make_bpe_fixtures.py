#!/usr/bin/env python3
"""Write the byte-level BPE fixtures checked by tests/test_bpe.c.

    scripts/make_bpe_fixtures.py [--out tests/fixtures/bpe] [--shared ../shared]
                                 [--llama-tokenize PATH]

For each model (SmolLM2-135M-Instruct and Qwen2.5-Coder-0.5B-Instruct, fetched with
scripts/fetch_model.sh) it rebuilds the original tokenizer.json from the GGUF
(scripts/make_tokenizer_json.py) and writes OUT/<model>.jsonl.gz (gzip, mtime 0), one JSON object
per line:

  line 1  {"meta": {"model", "gguf", "gguf_sha256", "tokenizers", "transformers", "gguf_py",
           "llama_cpp", "seed", "count", "eog_llamacpp": [ids llama.cpp lists as end of
           generation], "generator"}}
  then    {"id": k, "kind": "...", "text": "..." | "hex": "<bytes>" | "ref": {...},
           "special": 0 (only when special tokens are NOT parsed); "hex" for bytes that are
           not valid UTF-8 or contain NUL,
           "json": [ids],   tokenizers.Tokenizer(tokenizer.json).encode(text,
                            add_special_tokens=False) (encode_special_tokens=True for
                            "special": 0); absent when the bytes are not valid UTF-8
           "gguf": [ids],   llama.cpp's llama-tokenize -m GGUF -f FILE --ids --no-bos
                            --no-escape [--no-parse-special]; absent when equal to "json"
           "json_decoded": "...": tokenizers' decode(json ids, skip_special_tokens=False) when
                            it differs from the text (NFC)}
  or      {"id": k, "kind": "decode", "ids": [...], "json_text": "...", "json_text_skip": "...",
           "gguf_text": "..."}: tokenizers' decode of arbitrary ids (with and without
           skip_special_tokens; invalid UTF-8 → U+FFFD per maximal subpart) and the llama.cpp
           rule (token bytes, control tokens rendered, U+FFFD per invalid byte).

The strings are the same for both models: ~1,000 generated edge cases (whitespace runs, tabs,
newlines, digit runs, CJK, emoji and ZWJ sequences, combining marks, contractions, every special
token of both models inside text, partial specials, invalid UTF-8, the empty string, "a  2",
"\\n\\n2015", seeded random compositions), snippets of the shared data sets (XSum and
CNN/DailyMail articles, Lost-in-the-Middle questions and passages, WikiText-2 lines) and the
chat prompts of chat.jsonl. Data-set text is not copied: such rows carry a "ref" (file under
$LLM_SHARED, 1-based line, JSON field path or null, byte range [start, end), FNV-1a 64 of the
snippet), as tests/fixtures/tokenizer does.

Also writes OUT/chat.jsonl: transformers' apply_chat_template(tokenize=False) renderings of
1-, 2- and 3-turn conversations, with and without a system message, with and without
add_generation_prompt, for the two models' templates (from the GGUF), Meta-Llama-3-8B-Instruct's
and Llama-2-7b-chat-hf's templates (their text is in the meta line), including the conversations
the Llama-2 template rejects ("error": true).

Needs: gguf, tokenizers, transformers, the GGUF files, and llama.cpp's llama-tokenize (built by
bench/llamacpp.sh under ~/.cache/llm-run/llamacpp-*/build/bin). Deterministic: the strings come
from random.Random(SEED).random() only.
Kept whole (over ~500 lines): one script per fixture set; the reference runs (tokenizers,
llama.cpp) and the string generators share the model list and the writers.
"""
import argparse
import glob
import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

SEED = 20241125
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = [  # name, fetch_model.sh argument, separator special token for batched llama-tokenize
    ("smollm2-135m", "smollm2-135m", "<empty_output>"),
    ("qwen2.5-0.5b", "qwen2.5-0.5b", "<|video_pad|>"),
]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>",
            "<file_sep>", "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>",
            "<issue_closed>", "<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
            "<jupyter_output>", "<jupyter_script>", "<empty_output>", "<|object_ref_start|>",
            "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
            "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
            "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
            "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
            "</s>", "<s>", "<unk>", "[PAD151665]", "<|eot_id|>", "<|begin_of_text|>"]
LLAMA3 = ("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
          "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content']"
          " | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + "
          "content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
          "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")
LLAMA2 = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set "
          "system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages "
          "%}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if "
          "(message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('"
          "Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
          "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + "
          "system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content "
          "= message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + "
          "'[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
          "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")


def fnv1a64(b):
    h = 0xCBF29CE484222325
    for c in b:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


class Rng:
    """Only random.Random.random() is used: its sequence is stable across Python versions."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def below(self, n):
        return min(int(self.r.random() * n), n - 1)

    def between(self, a, b):
        return a + self.below(b - a + 1)

    def choice(self, seq):
        return seq[self.below(len(seq))]


# ------------------------------------------------------------------------------ strings

WORDS = ["the", "The", "THE", "hello", "Hello", "world", "don't", "it's", "we're", "O'Neil",
         "I'M", "YOU'LL", "they'VE", "'s", "'S", "'ſ", "co-operate", "U.S.A.", "iPhone",
         "camelCase", "snake_case", "naïve", "café", "Zürich", "straße", "Łódź", "Ελλάδα",
         "Москва", "日本語", "中文", "한국어", "ひらがな", "カタカナ", "हिन्दी", "ภาษาไทย",
         "עברית", "العربية", "Ω", "µ", "ﬁ", "①", "Ⅻ", "𝔸𝔹", "𝄞", "☃", "★", "→", "∑", "½",
         "²", "°C", "€5", "$3.50", "₹", "©", "™", "supercalifragilistic"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \t ", "\u00a0",
          "\u3000", "\u2009", "\u200b", "\u2028", "\u000b", "\u000c", "\u0085", "\u180e",
          "\u1680", "\ufeff"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["...", "…", "—", "“", "”", "’", "«",
                                                    "¿", "、", "。", "!!", "?!"]
EMOJI = ["😀", "👍", "👍🏽", "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "🇫🇷", "🇯🇵", "1️⃣", "❤️",
         "🤖", "🧑🏿\u200d🚀", "🐍", "🎉", "☕", "✅", "🔥"]
COMBINING = ["e\u0301", "a\u0300", "n\u0303", "o\u0308", "c\u0327", "i\u0302\u0301",
             "Z\u0335\u0347\u0359", "\u0301", "\u0915\u094d\u0937", "\u0e01\u0e34\u0e48",
             "\u1100\u1161\u11a8", "\u212b", "\u2126", "A\u030a", "\u0041\u0301\u0327"]
NUMBERS = ["0", "1", "42", "007", "123", "1234", "12345", "1234567890", "3.14159", "-273.15",
           "1e10", "1,000,000", "12:30", "2024-06-11", "0xDEADBEEF", "99999999999999999999",
           "١٢٣", "Ⅳ", "3/4", "50%", "v1.2.3", "192.168.0.1", "1st", "２０２４", "²³"]
FIXED = [
    "", " ", "  ", "\n", "\t", "\r\n", "a", " a", "a ", "  a  ", "a  2", "\n\n2015",
    "a 2", "a   2", " 2", "  2015", "\n2015", "\n\n\n2015\n", "x\n\n2015 and 2016",
    "Hello world", "Hello  world", "Hello   world", "Hello\tworld", "Hello\n\nworld",
    " leading space", "  two leading", "trailing space ", "trailing two  ", "   ",
    "line1\nline2\nline3\n", "a\tb\tc", "\t\tindented", "    four spaces", "\n\n\n",
    "The quick brown fox jumps over the lazy dog.", "I'm sure you'll see they've done it.",
    "I'M SURE YOU'LL SEE THEY'VE DONE IT.", "It's 'quoted' and 'sss' 'tt' 're' 've",
    "def f(x):\n    return x**2  # square\n", "if (a && b) { c++; } else { d--; }",
    "<html><body class=\"x\">Hi</body></html>", "SELECT * FROM t WHERE id = 1;",
    "In 2023, 1,234 people paid $56.78 each.", "Ça va? Très bien. Où est la gare?",
    "我爱自然语言处理。", "東京は日本の首都です。", "안녕하세요, 세계!", "Привет, мир!",
    "नमस्ते दुनिया", "สวัสดีชาวโลก", "مرحبا بالعالم", "שלום עולם", "Mixed 中文 and English",
    "e\u0301 cafe\u0301 cafe\u0301s", "\u212b\u2126\u0041\u030a", "ﬁnance ﬂow",
    "👨\u200d👩\u200d👧\u200d👦 family", "🇫🇷🇩🇪🇯🇵", "👍🏻👍🏼👍🏽👍🏾👍🏿", "a\u200db", "x\u00a0y\u0085z",
    "<|im_start", "<|im_start|", "im_start|>", "<<|im_start|>>", "<|im_start|><|im_end|>",
    "< |im_start| >", "<|IM_START|>", "<s>hi</s>", "</s></s>", "<unk>",
    "a" * 1000, " " * 300, "1" * 200, "ab" * 200, "\n" * 100, "\t" * 50, "😀" * 100,
    "x" + " " * 100 + "y", "." * 100, "!?" * 50,
]
INVALID = [b"\xff", b"\xfe\xff", b"\x80", b"\x80\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf",
           b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xef\xbf\xbe",
           b"\xf8\x88\x80\x80\x80", b"\xfc\x84\x80\x80\x80\x80", b"abc\xe2\x82", b"\xe2\x82abc",
           b"\xe2\x82 x", b"caf\xc3", b"caf\xc3 ", b"\xc3\x28", b"\xa0\xa1", b"\xe2\x28\xa1",
           b"\xe2\x82\x28", b"\xf0\x28\x8c\xbc", b"\xf0\x90\x28\xbc", b"\xf0\x28\x8c\x28",
           b"\xf0\x9f\x98", b"\xf0\x9f\x98 x", b"Hello \xff world", b"\xc2", b"12\xff34",
           b"\xff<|im_start|>\xfe", b"<|im_end|\xff>", b"\x00", b"a\x00b", b"\x00\x00 \x00"]


def gen_edge(rng):
    rows = [s.encode() for s in FIXED]
    for s in SPECIALS:  # every special token alone and inside text
        for t in (s, f"Hello {s} world", f"x{s}{s}y", f" {s} ", f"{s}\n", f"\n\n{s}2015",
                  f"'s{s}'s", f"{s}<|im_start|>user\nhi"):
            rows.append(t.encode())
    pools = [WORDS, SPACES, PUNCT, EMOJI, COMBINING, NUMBERS]
    while len(rows) < 950:
        n = rng.between(1, 12)
        rows.append("".join(rng.choice(pools[rng.below(len(pools))]) for _ in range(n)).encode())
    rows += INVALID
    while len(rows) < 1050:  # random bytes and random mutations of valid text
        if rng.below(2):
            rows.append(bytes(rng.below(256) for _ in range(rng.between(1, 12))))
        else:
            b = bytearray(rng.choice(rows[:900]) or b"abc")
            b[rng.below(len(b))] = rng.between(0x80, 0xFF)
            rows.append(bytes(b))
    # llama.cpp throws on code points above U+10FFFF (4-byte leads F4 90+, F5..F7): no
    # reference; tests/test_bpe.c checks our U+FFFD-per-byte rule on them separately.
    return [r for r in rows if not overflow_cp(r)]


def overflow_cp(b):
    for i in range(len(b) - 3):
        c = b[i]
        if 0xF0 <= c <= 0xF7 and all(0x80 <= x <= 0xBF for x in b[i + 1:i + 4]):
            cp = ((c & 7) << 18) | ((b[i + 1] & 0x3F) << 12) | ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F)
            if cp > 0x10FFFF:
                return True
    return False


def load_lines(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            data = f.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    return data.split(b"\n")


def field_of(obj, path):
    for p in path.split("."):
        obj = obj[int(p)] if isinstance(obj, list) else obj[p]
    return obj


def gen_refs(rng, shared):
    """(ref, text bytes) snippets of the shared data sets."""
    out = []

    def snippet(rel, lineno, fieldpath, text, whole=False):
        if whole or len(text) < 12:
            a, b = 0, len(text)
        else:
            r = rng.below(100)
            n = rng.between(10, 300) if r < 70 else rng.between(300, 1500) if r < 95 else len(text)
            n = min(n, len(text))
            a = rng.below(len(text) - n + 1)
            b = a + n
        ba = len(text[:a].encode())
        bb = ba + len(text[a:b].encode())
        raw = text.encode()[ba:bb]
        out.append(({"file": rel, "line": lineno, "field": fieldpath, "start": ba, "end": bb,
                     "fnv1a64": fnv1a64(raw)}, raw))

    for rel, fld, count in (("data/xsum/h2o_xsum_0shot.jsonl", "article", 1000),
                            ("data/cnn_dailymail/cnn_dailymail_test_first1000.jsonl", "article",
                             1000)):
        lines = load_lines(os.path.join(shared, rel))
        for i in range(count):
            k = rng.below(len(lines) - 1)
            snippet(rel, k + 1, fld, json.loads(lines[k])[fld])
    rel = "data/lost_in_the_middle/nq-open-10_total_documents_gold_at_0.first441.jsonl.gz"
    lines = [l for l in load_lines(os.path.join(shared, rel))]
    for k in range(441):
        snippet(rel, k + 1, "question", json.loads(lines[k])["question"], whole=True)
    for i in range(500):
        k = rng.below(441)
        j = rng.below(10)
        snippet(rel, k + 1, f"ctxs.{j}.text", json.loads(lines[k])["ctxs"][j]["text"])
    rel = "data/wikitext/wiki.test.raw.reconstructed"
    lines = load_lines(os.path.join(shared, rel))
    nonempty = [i for i, l in enumerate(lines) if l.strip()]
    for i in range(1150):
        k = nonempty[rng.below(len(nonempty))]
        text = lines[k].decode()
        ba, bb = 0, len(lines[k])
        out.append(({"file": rel, "line": k + 1, "field": None, "start": ba, "end": bb,
                     "fnv1a64": fnv1a64(lines[k])}, lines[k]))
    return out


# ------------------------------------------------------------------------ references

def llama_tokenize(lt, gguf_path, strs, sep, sep_id, parse_special=True):
    """ids of each string: one llama-tokenize run over the strings joined by a special token
    (specials split the text before anything else, so the parts are tokenized independently);
    strings that contain the separator, and all of them without parse_special, run alone."""
    res = [None] * len(strs)
    tmp = tempfile.mkdtemp()
    try:
        def run(data, special):
            p = os.path.join(tmp, "in.txt")
            with open(p, "wb") as f:
                f.write(data)
            cmd = [lt, "-m", gguf_path, "-f", p, "--ids", "--no-bos", "--no-escape",
                   "--log-disable"] + ([] if special else ["--no-parse-special"])
            o = subprocess.run(cmd, capture_output=True, check=True)
            return json.loads(o.stdout.decode().strip().splitlines()[-1])

        batch = [i for i, s in enumerate(strs) if parse_special and sep.encode() not in s]
        if batch:
            ids = run(sep.encode().join(strs[i] for i in batch), True)
            parts = [[]]
            for t in ids:
                if t == sep_id:
                    parts.append([])
                else:
                    parts[-1].append(t)
            assert len(parts) == len(batch), (len(parts), len(batch))
            for i, p in zip(batch, parts):
                res[i] = p
        for i, s in enumerate(strs):
            if res[i] is None:
                res[i] = run(s, parse_special)
    finally:
        shutil.rmtree(tmp)
    return res


def llamacpp_eog(lt, gguf_path):
    o = subprocess.run([lt, "-m", gguf_path, "-p", "x", "--ids", "-v"], capture_output=True)
    lines = o.stderr.decode(errors="replace").splitlines()
    out, on = [], False
    for l in lines:
        if "printing all EOG tokens" in l:
            on = True
            continue
        if on:
            if " - " not in l:
                break
            out.append(int(l.split(" - ", 1)[1].split()[0]))
    return sorted(out)


def token_bytes(tok):
    """llama.cpp token_to_piece bytes of a GGUF token text (normal: byte-level decode)."""
    from_cp = {}
    n = 0
    for b in range(256):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF:
            from_cp[b] = b
    for b in range(256):
        if b not in from_cp:
            from_cp[b] = 256 + n
            n += 1
    inv = {v: k for k, v in from_cp.items()}
    try:
        return bytes(inv[ord(c)] for c in tok)
    except KeyError:
        return tok.encode()


def repair_per_byte(b):
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else \
            4 if 0xF0 <= c <= 0xF4 else 0
        if n and i + n <= len(b):
            try:
                out.append(b[i:i + n].decode("utf-8"))
                i += n
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)


# ------------------------------------------------------------------------------ chat

def conversations():
    s = "You are a terse assistant.  "
    u = [" What is 2+2? ", "And\tthen?\n", "Thanks — 谢谢!"]
    a = ["  4.  ", "Then 5.\n\n"]
    convs = []
    for turns in (1, 2, 3):
        msgs = []
        for t in range(turns):
            msgs.append({"role": "user", "content": u[t]})
            if t + 1 < turns:
                msgs.append({"role": "assistant", "content": a[t]})
        convs.append(msgs)
        convs.append([{"role": "system", "content": s}] + msgs)
    convs.append([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
    convs.append([{"role": "system", "content": ""}, {"role": "user", "content": "x"}])
    convs.append([{"role": "assistant", "content": "first"}])           # llama2 rejects
    convs.append([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    convs.append([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                  {"role": "system", "content": "late system"}, {"role": "user", "content": "c"}])
    return convs


def render_chat(folder_by_name):
    from transformers import AutoTokenizer
    rows = []
    for name, folder in folder_by_name:
        tok = AutoTokenizer.from_pretrained(folder)
        for msgs in conversations():
            for agp in (False, True):
                row = {"template": name, "messages": msgs, "add_generation_prompt": agp}
                try:
                    row["rendered"] = tok.apply_chat_template(msgs, tokenize=False,
                                                              add_generation_prompt=agp)
                except Exception:  # jinja2 TemplateError from raise_exception
                    row["error"] = True
                rows.append(row)
    return rows


# ------------------------------------------------------------------------------- main

def write_gz_jsonl(path, rows):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/fixtures/bpe"))
    ap.add_argument("--shared", default=os.environ.get("LLM_SHARED", os.path.join(ROOT, "../shared")))
    ap.add_argument("--llama-tokenize", default=None)
    a = ap.parse_args()
    lt = a.llama_tokenize or next(iter(sorted(glob.glob(os.path.expanduser(
        "~/.cache/llm-run/llamacpp-*/build/bin/llama-tokenize")))), None)
    if not lt or not os.access(lt, os.X_OK):
        sys.exit("make_bpe_fixtures: llama-tokenize not found (build it with bench/llamacpp.sh)")
    import gguf
    import tokenizers
    import transformers
    from tokenizers import Tokenizer
    lt_dir = os.path.dirname(os.path.dirname(os.path.dirname(lt)))
    commit = open(os.path.join(lt_dir, "COMMIT")).read().strip() if os.path.exists(
        os.path.join(lt_dir, "COMMIT")) else os.path.basename(lt_dir)

    rng = Rng(SEED)
    edge = gen_edge(rng)
    refs = gen_refs(rng, a.shared)
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp()
    chat_folders = []
    try:
        model_dirs = {}
        for name, fetch, _sep in MODELS:
            gg = subprocess.run([os.path.join(ROOT, "scripts/fetch_model.sh"), fetch],
                                capture_output=True, check=True).stdout.decode().strip()
            d = os.path.join(work, name)
            os.makedirs(d)
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts/make_tokenizer_json.py"),
                            gg, os.path.join(d, "tokenizer.json"), "--spec",
                            os.path.join(d, "gguf_spec.json")], check=True)
            model_dirs[name] = (gg, d)
            chat_folders.append((name, d))
        for tname, tmpl, bos, eos in (("llama3", LLAMA3, "<|begin_of_text|>", "<|eot_id|>"),
                                      ("llama2", LLAMA2, "<s>", "</s>")):
            d = os.path.join(work, tname)
            os.makedirs(d)
            shutil.copy(os.path.join(model_dirs["smollm2-135m"][1], "tokenizer.json"), d)
            with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": bos,
                           "eos_token": eos, "chat_template": tmpl}, f)
            chat_folders.append((tname, d))
        chat_rows = render_chat(chat_folders)
        chat_meta = {"transformers": transformers.__version__,
                     "templates": {"llama3": {"template": LLAMA3, "bos": "<|begin_of_text|>",
                                              "eos": "<|eot_id|>"},
                                   "llama2": {"template": LLAMA2, "bos": "<s>", "eos": "</s>"}},
                     "generator": "scripts/make_bpe_fixtures.py"}
        with open(os.path.join(a.out, "chat.jsonl"), "w", encoding="utf-8") as f:
            f.write(json.dumps({"meta": chat_meta}, ensure_ascii=False) + "\n")
            for r in chat_rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        chat_strs = [r["rendered"].encode() for r in chat_rows
                     if "rendered" in r and r["template"] in model_dirs]

        for name, _fetch, sep in MODELS:
            gg, d = model_dirs[name]
            tk = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
            spec = json.load(open(os.path.join(d, "gguf_spec.json"), encoding="utf-8"))
            sep_id = spec["tokens"].index(sep)
            items = [("edge", s, None, 1) for s in edge]
            items += [("chat", s, None, 1) for s in chat_strs]
            items += [("nosplit", s.encode() if isinstance(s, str) else s, None, 0)
                      for s in FIXED[60:70] + [f"Hello {x} world" for x in SPECIALS[:20]] +
                      ["<|im_start|>user\nhi<|im_end|>\n", "\xff".encode("latin-1")]]
            items += [(ref["file"].split("/")[1], raw, ref, 1) for ref, raw in refs]
            ids_special = llama_tokenize(lt, gg, [it[1] for it in items if it[3]], sep, sep_id)
            ids_plain = llama_tokenize(lt, gg, [it[1] for it in items if not it[3]], sep, sep_id,
                                       parse_special=False)
            rows = []
            si = pi = 0
            for k, (kind, raw, ref, special) in enumerate(items):
                row = {"id": k, "kind": kind}
                if ref:
                    row["ref"] = ref
                else:
                    try:
                        row["text"] = raw.decode("utf-8")
                        if "\x00" in row["text"]:  # C strings: give NUL-containing text as bytes
                            del row["text"]
                            row["hex"] = raw.hex()
                    except UnicodeDecodeError:
                        row["hex"] = raw.hex()
                if not special:
                    row["special"] = 0
                g = ids_special[si] if special else ids_plain[pi]
                si += special
                pi += not special
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
                if text is not None:
                    tk.encode_special_tokens = not special
                    j = tk.encode(text, add_special_tokens=False).ids
                    row["json"] = j
                    if g != j:
                        row["gguf"] = g
                    dec = tk.decode(j, skip_special_tokens=False)
                    if dec != text:
                        row["json_decoded"] = dec
                else:
                    row["gguf"] = g
                rows.append(row)
            # decode rows: arbitrary ids, partial characters, control tokens
            toks = spec["tokens"]
            types = spec["token_type"]
            normal = [i for i, t in enumerate(types) if t == 1]
            control = [i for i, t in enumerate(types) if t == 3]
            partial = [i for i in normal if token_bytes(toks[i]) and
                       token_bytes(toks[i])[0] >= 0x80 and len(token_bytes(toks[i])) <= 2]
            for k in range(200):
                n = rng.between(1, 12)
                ids = []
                for _ in range(n):
                    r = rng.below(10)
                    pool = partial if r < 5 else control if r < 6 else normal
                    ids.append(rng.choice(pool))
                tk.encode_special_tokens = False
                raw = b"".join(toks[i].encode() if types[i] != 1 else token_bytes(toks[i])
                               for i in ids)
                rows.append({"id": len(rows), "kind": "decode", "ids": ids,
                             "json_text": tk.decode(ids, skip_special_tokens=False),
                             "json_text_skip": tk.decode(ids, skip_special_tokens=True),
                             "gguf_text": repair_per_byte(raw)})
            meta = {"model": name, "gguf": os.path.basename(gg),
                    "gguf_sha256": hashlib.sha256(open(gg, "rb").read()).hexdigest(),
                    "tokenizers": tokenizers.__version__,
                    "transformers": transformers.__version__,
                    "gguf_py": getattr(gguf, "__version__", None) or
                    subprocess.run([sys.executable, "-m", "pip", "show", "gguf"],
                                   capture_output=True).stdout.decode().split("Version: ")[1]
                    .split()[0],
                    "llama_cpp": f"{commit}; llama-tokenize",
                    "seed": SEED, "count": len(rows), "eog_llamacpp": llamacpp_eog(lt, gg),
                    "generator": "scripts/make_bpe_fixtures.py"}
            write_gz_jsonl(os.path.join(a.out, f"{name}.jsonl.gz"), [{"meta": meta}] + rows)
            n_diff = sum(1 for r in rows if "gguf" in r and "json" in r)
            print(f"{name}: {len(rows)} rows, {n_diff} where llama.cpp and tokenizers differ",
                  file=sys.stderr)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
