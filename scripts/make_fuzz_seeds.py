#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz corpus (fuzz/corpus/NAME/seed-*), standard library only.

Seeds are small valid (and a few nearly valid) inputs for each parser, so libFuzzer starts from
the formats' structure. Inputs the fuzzer found interesting are added next to them (minimized,
named by libFuzzer's sha1) and replayed by `make check`.
    python3 scripts/make_fuzz_seeds.py [--shared ../shared]
"""
import argparse, json, os, struct

ap = argparse.ArgumentParser()
ap.add_argument("--shared", default=os.environ.get("LLM_SHARED", "../shared"))
args = ap.parse_args()
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# ---------------------------------------------------------------- safetensors
def st(tensors, meta=None, pad=True):
    """tensors: [(name, dtype, shape)] -> a .safetensors image with zero-filled data."""
    h, pos = {}, 0
    if meta is not None:
        h["__metadata__"] = meta
    size = {"F32": 4, "F16": 2, "BF16": 2}
    for name, dt, shape in tensors:
        n = size.get(dt, 1)
        for d in shape:
            n *= d
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [pos, pos + n]}
        pos += n
    t = json.dumps(h, separators=(",", ":")).encode()
    if pad:
        t += b" " * ((-len(t)) % 8)
    return struct.pack("<Q", len(t)) + t + bytes(range(256)) * (pos // 256) + bytes(pos % 256)


put("safetensors", "tiny-f32", st([("model.norm.weight", "F32", [4]), ("w", "F32", [2, 3])]))
put("safetensors", "mixed-dtypes", st([("a", "F16", [3, 2]), ("b", "BF16", [1, 1, 2, 2]),
                                       ("c", "F32", [])], meta={"format": "pt"}))
put("safetensors", "empty-tensor", st([("e", "F32", [0, 4]), ("x", "F16", [2])], pad=False))
put("safetensors", "no-tensors", st([], meta={"format": "pt"}))
put("safetensors", "unknown-dtype", st([("q", "I8", [4])]))
put("safetensors", "truncated", st([("a", "F32", [8])])[:-5])
sp = os.path.join(args.shared, "models", "stories260K", "model.safetensors")
if os.path.exists(sp):   # the real header, with the data cut to 256 bytes (offsets now outside)
    b = open(sp, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    put("safetensors", "stories260K-header", b[:8 + n + 256])

# ---------------------------------------------------------------- config.json
stories = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 172, "num_hidden_layers": 5, "num_attention_heads": 8,
           "num_key_value_heads": 4, "vocab_size": 512, "max_position_embeddings": 512,
           "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2,
           "torch_dtype": "float32"}
put("config", "stories260K", json.dumps(stories, indent=2))
llama2 = dict(stories, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
              num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
              max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False,
              rope_scaling=None, eos_token_id=[2, 32000 - 1], head_dim=128)
put("config", "llama2-7b", json.dumps(llama2))
put("config", "rope-linear", json.dumps(dict(stories, rope_scaling={"type": "linear", "factor": 4.0})))
put("config", "rope-type", json.dumps(dict(stories, rope_scaling={"rope_type": "dynamic", "factor": 2})))
put("config", "minimal", '{"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,'
                         '"num_attention_heads":2,"vocab_size":4}')
put("config", "bad-kv", json.dumps(dict(stories, num_key_value_heads=3)))

# ---------------------------------------------------------------- index.json
wm = {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
      "model.norm.weight": "model-00002-of-00002.safetensors",
      "lm_head.weight": "model-00002-of-00002.safetensors"}
for l in range(2):
    for s in ("self_attn.q_proj", "mlp.up_proj"):
        wm["model.layers.%d.%s.weight" % (l, s)] = "model-0000%d-of-00002.safetensors" % (l + 1)
put("index", "two-shards", json.dumps({"metadata": {"total_size": 1234}, "weight_map": wm}, indent=2))
put("index", "one-entry", '{"weight_map": {"a": "x.safetensors"}}')
put("index", "empty-map", '{"metadata": {}, "weight_map": {}}')
put("index", "subdir", '{"weight_map": {"a": "shards/x.safetensors", "b": "../x.safetensors"}}')
put("index", "not-a-name", '{"weight_map": {"a": 3}}')

# ---------------------------------------------------------------- tokenizer (text / ids)
put("tokenizer", "once", "Once upon a time, there was a little girl named Lily.")
put("tokenizer", "unicode", "Caf\u00e9 \u2581 \u65e5\u672c\u8a9e \U0001F600 \t\n  x")
put("tokenizer", "bytes", bytes([0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82, 0x41, 0xf0, 0x9f, 0x98]))
put("tokenizer", "ids", struct.pack("<16h", 1, 403, 407, 261, 378, 0, 2, 3, 4, 300, 511, 10, 13,
                                    259, 1, 2))
put("tokenizer", "ids-out-of-range", struct.pack("<4h", 1, 512, -1, 32000))

# ---------------------------------------------------------------- policy presets
put("preset", "buzz-paper", '{"policy": "buzz", "buzz-k": 4, "buzz-w": 160, "buzz-T": 400, '
                            '"buzz-s": 5, "comment": "as the BUZZ authors ran it"}')
put("preset", "streaming", '{"policy": "streaming", "budget": 0.5, "sink": 4, "rope": "shifted"}')
put("preset", "h2o", '{"policy": "h2o", "budget": 0.3, "budget-ref": "prompt", "h2o-score": "mean", '
                     '"window": 4}')
put("preset", "snapkv", '{"policy": "snapkv", "budget": 16, "snap-window": 4, "snap-kernel": 3, '
                        '"prefill-only-decode": "capped", "snap-recompress": 2}')
put("preset", "pyramidkv", '{"policy": "pyramidkv", "budget": 0.5, "pyramid-beta": 2, "obs-window": 4}')
put("preset", "hashevict", '{"policy": "hashevict", "budget": 12, "lsh-bits": 8, "seed": 7}')
put("preset", "subgen", '{"policy": "subgen", "budget": 0.6}')
put("preset", "random", '{"policy": "random", "budget": 10, "seed": 3, "source": "x"}')
put("preset", "scissorhands", '{"policy": "scissorhands", "budget": 0.5}')
put("preset", "tova", '{"policy": "tova", "budget": 9}')
put("preset", "ada", '{"policy": "ada_snapkv", "budget": 0.4}')
put("preset", "bad", '{"policy": "full", "budget": -1}')

# ---------------------------------------------------------------- data-set lines (eval)
# first byte: the task (eval_task: 0 xsum, 1 cnndm, 2 litm, 3 wikitext, 4 tinystories), then
# one line in that task's format (synthetic records: the data sets are not redistributed)
def ev(task, line):
    return bytes([task]) + line.encode("utf-8")


put("eval", "xsum-helm", ev(0, json.dumps({
    "article": "###\nArticle: The cat sat on the mat. It was a sunny day.\n\nSummarize the above "
               "article in 1 sentence.\n", "summary_gt": "A cat sat.", "id": "x1"})))
put("eval", "xsum-plain", ev(0, json.dumps({"document": "A dog ran.", "summary": "Dog.", "idx": 7})))
put("eval", "cnndm", ev(1, json.dumps({"article": "(CNN) Rain fell.", "highlights": "Rain.\nWet.",
                                       "id": "abc"})))
put("eval", "litm", ev(2, json.dumps({
    "question": "who wrote x", "answers": ["Ann", "Ann B."],
    "ctxs": [{"title": "T%d" % i, "text": "text %d" % i, "isgold": i == 1} for i in range(3)]})))
put("eval", "litm-nogold", ev(2, json.dumps({"question": "q", "answers": [],
                                             "ctxs": [{"title": "", "text": "t"}]})))
put("eval", "wikitext-json", ev(3, json.dumps({"text": " = Robert Boulter = \n"})))
put("eval", "wikitext-raw", ev(3, " @-@ raw line with unicode \u00e9"))
put("eval", "tinystories", ev(4, "Once upon a time, there was a little girl named Lily."))
put("eval", "bad-answers", ev(2, '{"question": "q", "answers": "Ann", "ctxs": []}'))
