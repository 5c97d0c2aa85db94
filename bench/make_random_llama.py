#!/usr/bin/env python3
"""Writes a LLaMA-2-7B-shaped Hugging Face folder with random weights, for GPU benchmarks on a
machine that cannot download anything (bench/bench_cuda.sh).

    python3 bench/make_random_llama.py OUT_DIR [--dtype F16|BF16|F32] [--layers 32]
        [--max-pos 16384] [--tokenizer PATH/tokenizer.model] [--seed 0]

Shape: hidden 4096, intermediate 11008, 32 layers, 32 heads (MHA), vocab 32000, rms eps 1e-5,
rope_theta 10000, rope_scaling linear x4 (max_position_embeddings 16384 = 4096 x 4), untied
LM head; shards of about 2 GB (model-0000i-of-0000n.safetensors + index). Weights are normal
with std 0.02 (norms 1), written shard by shard so memory stays small. Needs numpy only (the
safetensors header is written by hand: 8-byte little-endian length, JSON, raw data).
tokenizer.model is copied from --tokenizer (default $LLM_SHARED/models/llama2-tokenizer)."""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np


def tensors(cfg):
    d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    yield "model.embed_tokens.weight", (v, d)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        yield p + "input_layernorm.weight", (d,)
        for n in "qkvo":
            yield p + "self_attn.%s_proj.weight" % n, (d, d)
        yield p + "post_attention_layernorm.weight", (d,)
        yield p + "mlp.gate_proj.weight", (f, d)
        yield p + "mlp.up_proj.weight", (f, d)
        yield p + "mlp.down_proj.weight", (d, f)
    yield "model.norm.weight", (d,)
    yield "lm_head.weight", (v, d)


def to_dtype(x, dt):
    if dt == "F32":
        return x.astype("<f4")
    if dt == "F16":
        return x.astype("<f2")
    u = x.astype("<f4").view("<u4")  # BF16: round to nearest even
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="F16", choices=["F16", "BF16", "F32"])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--max-pos", type=int, default=16384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", default=os.path.join(os.environ.get("LLM_SHARED", "../shared"),
                                                        "models/llama2-tokenizer/tokenizer.model"))
    a = ap.parse_args()
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
           "intermediate_size": 11008, "num_hidden_layers": a.layers, "num_attention_heads": 32,
           "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": a.max_pos,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "rope_scaling": {"type": "linear", "factor": a.max_pos / 4096.0},
           "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
           "torch_dtype": {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}[a.dtype]}
    os.makedirs(a.out, exist_ok=True)
    if not os.path.isfile(a.tokenizer):
        sys.exit("make_random_llama: %s: no tokenizer.model (give --tokenizer)" % a.tokenizer)
    shutil.copy(a.tokenizer, os.path.join(a.out, "tokenizer.model"))
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    es = 4 if a.dtype == "F32" else 2
    # group tensors into ~2 GB shards
    shards, cur, size = [], [], 0
    for name, shape in tensors(cfg):
        nb = int(np.prod(shape)) * es
        if cur and size + nb > 2e9:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape))
        size += nb
    shards.append(cur)
    rng = np.random.default_rng(a.seed)
    weight_map, total = {}, 0
    for si, shard in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (si + 1, len(shards))
        header, off = {}, 0
        for name, shape in shard:
            nb = int(np.prod(shape)) * es
            header[name] = {"dtype": a.dtype, "shape": list(shape), "data_offsets": [off, off + nb]}
            off += nb
            weight_map[name] = fname
        hb = json.dumps(header).encode()
        hb += b" " * (-len(hb) % 8)
        with open(os.path.join(a.out, fname), "wb") as f:
            f.write(struct.pack("<Q", len(hb)))
            f.write(hb)
            for name, shape in shard:
                if len(shape) == 1:
                    x = np.ones(shape, dtype=np.float32)
                else:
                    x = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
                f.write(to_dtype(x, a.dtype).tobytes())
        total += off
        print("wrote %s (%.2f GB)" % (fname, off / 1e9), flush=True)
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
              open(os.path.join(a.out, "model.safetensors.index.json"), "w"), indent=1)
    print("done: %s, %.2f GB of %s weights" % (a.out, total / 1e9, a.dtype))


if __name__ == "__main__":
    main()
