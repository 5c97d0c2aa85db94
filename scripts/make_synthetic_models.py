#!/usr/bin/env python3
"""Write the synthetic LLaMA model folders used by the reference tests.

    scripts/make_synthetic_models.py OUT_DIR [--only NAME] [--list]

Without --only it writes the test models; the benchmark model stories110M-syn (0.4 GB) only
with --only stories110M-syn (make bench writes it to models/).

Each model is a Hugging Face style folder: config.json, model.safetensors (or two shards plus
model.safetensors.index.json), and a tokenizer.model copied from the shared models directory
(env LLM_SHARED, default ../shared relative to the repository root).

Needs only numpy and the Python standard library: the safetensors files are written by hand
(8-byte little-endian header length, JSON header padded with spaces to a multiple of 8, raw
little-endian tensor data, tensors contiguous in header order).

Determinism: the output is bit-for-bit identical on every machine and numpy version. Weights
come from numpy.random.default_rng(seed) but only through its bit generator's raw 64-bit
output (PCG64 seeded by SeedSequence, whose stream numpy keeps stable), never through
Generator.normal, whose algorithm may change between numpy releases. Each raw word is split
into four 16-bit uniforms whose sum (Irwin-Hall, n=4) is a bell-shaped variate; all arithmetic
is exact integer/power-of-two work followed by one correctly rounded float64 multiply and one
correctly rounded cast to float32. F16 is numpy's round-to-nearest-even float32->float16 cast;
BF16 is round-to-nearest-even of the float32 bit pattern's upper half.

The tests compare the sha256 of the written weight files with the ones recorded in
tests/fixtures/hf/*.json, so a change here that alters any weight is caught.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shared_dir():
    return os.environ.get("LLM_SHARED") or os.path.join(REPO, "..", "shared")


# --------------------------------------------------------------------------------- models

# Per-element standard deviations are expressed relative to fan-in so that, with RMS-normed
# activations, q/k entries are O(1) (attention is neither uniform nor one-hot), each residual
# branch adds O(1) and the logits have a standard deviation of about 3.
MODELS = {
    "syn-gqa-f32": dict(
        seed=1001, dim=64, ffn=160, layers=2, heads=8, kv_heads=2, vocab=512,
        max_pos=256, eps=1e-5, theta=10000.0, rope_scaling=None, tied=False,
        dtype="F32", tokenizer="stories260K", shards=1, inv_freq=False),
    "syn-mha-f16": dict(
        seed=1002, dim=64, ffn=192, layers=2, heads=4, kv_heads=4, vocab=512,
        max_pos=256, eps=1e-6, theta=10000.0, rope_scaling=None, tied=True,
        dtype="F16", tokenizer="stories260K", shards=1, inv_freq=False),
    "syn-bf16-sharded": dict(
        seed=1003, dim=64, ffn=160, layers=2, heads=8, kv_heads=4, vocab=512,
        max_pos=256, eps=1e-5, theta=500000.0, rope_scaling=None, tied=False,
        dtype="BF16", tokenizer="stories260K", shards=2, inv_freq=True),
    "syn-rope-linear": dict(
        seed=1004, dim=64, ffn=160, layers=2, heads=4, kv_heads=4, vocab=512,
        max_pos=64, eps=1e-6, theta=10000.0,
        rope_scaling={"type": "linear", "factor": 4.0}, tied=False,
        dtype="F32", tokenizer="stories260K", shards=1, inv_freq=False),
    "syn-rope-llama3": dict(
        seed=1007, dim=128, ffn=256, layers=2, heads=4, kv_heads=2, vocab=512,
        max_pos=512, eps=1e-5, theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64}, tied=False,
        dtype="F32", tokenizer="stories260K", shards=1, inv_freq=False),
    "syn-hd64-llama2tok": dict(
        seed=1005, dim=256, ffn=512, layers=1, heads=4, kv_heads=2, vocab=32000,
        max_pos=512, eps=1e-5, theta=10000.0, rope_scaling=None, tied=False,
        dtype="F32", tokenizer="llama2-tokenizer", shards=1, inv_freq=False),
    "syn-hd128-llama2tok": dict(
        seed=1006, dim=256, ffn=512, layers=1, heads=2, kv_heads=1, vocab=32000,
        max_pos=512, eps=1e-6, theta=10000.0, rope_scaling=None, tied=True,
        dtype="F16", tokenizer="llama2-tokenizer", shards=1, inv_freq=False),
    # The benchmark model (make bench): the shape of llama2.c's stories110M (dim 768, ffn 2048,
    # 12 layers, 12 heads, vocab 32000, context 1024, tied), random weights, F32 (~0.4 GB;
    # --dtype bf16 converts it). Written only when asked for by name (--only); never committed.
    "stories110M-syn": dict(
        seed=1101, dim=768, ffn=2048, layers=12, heads=12, kv_heads=12, vocab=32000,
        max_pos=1024, eps=1e-5, theta=10000.0, rope_scaling=None, tied=True,
        dtype="F32", tokenizer="llama2-tokenizer", shards=1, inv_freq=False, default=False),
}

TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


class Draw:
    """Bell-shaped variates with unit variance from PCG64's raw output (see module doc)."""

    def __init__(self, seed):
        self.bitgen = np.random.default_rng(seed).bit_generator

    def __call__(self, shape, std, mean=0.0):
        n = int(np.prod(shape))
        raw = self.bitgen.random_raw(n).astype(np.uint64)
        s = np.zeros(n, dtype=np.int64)
        for k in range(4):
            s += ((raw >> np.uint64(16 * k)) & np.uint64(0xFFFF)).astype(np.int64)
        # u = sum(k_i + 0.5) / 65536 - 2 lies in (-2, 2), mean 0, variance 4/12; exact in f64.
        u = (2 * s + 4 - 4 * 65536).astype(np.float64) / 131072.0
        x = u * (np.sqrt(3.0) * std)  # sqrt and the product are correctly rounded (IEEE)
        if mean != 0.0:
            x = x + mean
        return x.astype(np.float32).reshape(shape)


def make_tensors(m):
    """Name -> float32 array, in a fixed order."""
    d = Draw(m["seed"])
    dim, ffn, hd = m["dim"], m["ffn"], m["dim"] // m["heads"]
    nq, nkv = m["heads"] * hd, m["kv_heads"] * hd
    t = {}
    t["model.embed_tokens.weight"] = d((m["vocab"], dim), 3.0 / np.sqrt(dim) if m["tied"] else 1.0)
    for l in range(m["layers"]):
        p = "model.layers.%d." % l
        t[p + "input_layernorm.weight"] = d((dim,), 0.1, mean=1.0)
        t[p + "self_attn.q_proj.weight"] = d((nq, dim), 1.3 / np.sqrt(dim))
        t[p + "self_attn.k_proj.weight"] = d((nkv, dim), 1.3 / np.sqrt(dim))
        t[p + "self_attn.v_proj.weight"] = d((nkv, dim), 1.0 / np.sqrt(dim))
        t[p + "self_attn.o_proj.weight"] = d((dim, nq), 1.0 / np.sqrt(nq))
        t[p + "post_attention_layernorm.weight"] = d((dim,), 0.1, mean=1.0)
        t[p + "mlp.gate_proj.weight"] = d((ffn, dim), 1.3 / np.sqrt(dim))
        t[p + "mlp.up_proj.weight"] = d((ffn, dim), 1.3 / np.sqrt(dim))
        t[p + "mlp.down_proj.weight"] = d((dim, ffn), 1.0 / np.sqrt(ffn))
    t["model.norm.weight"] = d((dim,), 0.1, mean=1.0)
    if not m["tied"]:
        t["lm_head.weight"] = d((m["vocab"], dim), 3.0 / np.sqrt(dim))
    return t


def inv_freq(m):
    """What old LLaMA-2 exports stored per layer (always F32); engines must ignore it."""
    hd = m["dim"] // m["heads"]
    i = np.arange(0, hd, 2, dtype=np.float64) / hd
    return (1.0 / (m["theta"] ** i)).astype(np.float32)


# ---------------------------------------------------------------------------- safetensors

def to_bf16_bits(a):
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    return b.astype(np.uint16)


def encode(a, dtype):
    """(safetensors dtype, little-endian bytes) of a float32 array stored as dtype."""
    if dtype == "F32":
        return np.ascontiguousarray(a, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(a.astype(np.float16), dtype="<f2").tobytes()
    if dtype == "BF16":
        return np.ascontiguousarray(to_bf16_bits(a), dtype="<u2").tobytes()
    raise ValueError(dtype)


DT_SIZE = {"F32": 4, "F16": 2, "BF16": 2}


def write_safetensors(path, entries):
    """entries: list of (name, dtype, shape, bytes). Ordered like the safetensors library:
    larger dtype first, then by name, so every tensor is aligned to its element size."""
    entries = sorted(entries, key=lambda e: (-DT_SIZE[e[1]], e[0]))
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, dt, shape, data in entries:
        assert len(data) == DT_SIZE[dt] * int(np.prod(shape))
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, data in entries:
            f.write(data)
    return off


# --------------------------------------------------------------------------------- config

def config_json(m):
    hd = m["dim"] // m["heads"]
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": hd,
        "hidden_act": "silu",
        "hidden_size": m["dim"],
        "initializer_range": 0.02,
        "intermediate_size": m["ffn"],
        "max_position_embeddings": m["max_pos"],
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": m["heads"],
        "num_hidden_layers": m["layers"],
        "num_key_value_heads": m["kv_heads"],
        "pretraining_tp": 1,
        "rms_norm_eps": m["eps"],
        "rope_scaling": m["rope_scaling"],
        "rope_theta": m["theta"],
        "tie_word_embeddings": m["tied"],
        "torch_dtype": TORCH_DTYPE[m["dtype"]],
        "use_cache": True,
        "vocab_size": m["vocab"],
    }


def write_model(name, out_dir):
    m = MODELS[name]
    final = os.path.join(out_dir, name)
    tmp = "%s.partial.%d" % (final, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)

    tok = os.path.join(shared_dir(), "models", m["tokenizer"], "tokenizer.model")
    if not os.path.isfile(tok):
        sys.exit("make_synthetic_models: %s not found (set LLM_SHARED to the shared directory)" % tok)
    shutil.copyfile(tok, os.path.join(tmp, "tokenizer.model"))

    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(config_json(m), f, indent=2)
        f.write("\n")

    tensors = make_tensors(m)
    entries = [(k, m["dtype"], v.shape, encode(v, m["dtype"])) for k, v in tensors.items()]
    if m["inv_freq"]:
        f = inv_freq(m)
        entries.append(("model.layers.0.self_attn.rotary_emb.inv_freq", "F32", f.shape,
                        encode(f, "F32")))

    if m["shards"] == 1:
        write_safetensors(os.path.join(tmp, "model.safetensors"), entries)
    else:
        # Shard 1: embeddings and the first half of the layers; shard 2: the rest.
        half = m["layers"] // 2

        def shard_of(n):
            if n.startswith("model.embed_tokens"):
                return 0
            if n.startswith("model.layers."):
                return 0 if int(n.split(".")[2]) < half else 1
            return 1

        files = ["model-%05d-of-%05d.safetensors" % (i + 1, m["shards"]) for i in range(2)]
        weight_map, total = {}, 0
        for i in range(2):
            part = [e for e in entries if shard_of(e[0]) == i]
            total += write_safetensors(os.path.join(tmp, files[i]), part)
            for e in part:
                weight_map[e[0]] = files[i]
        index = {"metadata": {"total_size": total},
                 "weight_map": dict(sorted(weight_map.items()))}
        with open(os.path.join(tmp, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2)
            f.write("\n")

    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    return final


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="write only this model (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    a = ap.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return
    if not a.out_dir:
        ap.error("OUT_DIR is required")
    names = a.only or [n for n in MODELS if MODELS[n].get("default", True)]
    for n in names:
        if n not in MODELS:
            sys.exit("make_synthetic_models: unknown model %r (known: %s)" % (n, ", ".join(MODELS)))
    os.makedirs(a.out_dir, exist_ok=True)
    for n in names:
        print(write_model(n, a.out_dir))


if __name__ == "__main__":
    main()
