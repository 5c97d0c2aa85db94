#!/usr/bin/env python3
"""Write a real GGUF model as a Hugging Face folder (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json), optionally cut to its first N layers, so the safetensors path of
architectures that only exist here as GGUF (qwen2 with its q/k/v biases) is tested on real weights.

    scripts/make_hf_from_gguf.py GGUF OUT_DIR [--layers N] [--dtype F32|BF16] [--fixture FILE.npz]

Weights: every tensor dequantized with the `gguf` package (gguf.quants.dequantize), renamed to
the HF names, llama's q/k rows (and biases) un-permuted back to the rotate_half order (qwen2 is
stored unpermuted), written as F32 or BF16 (round to nearest even) safetensors. config.json from
the GGUF metadata (model_type llama or qwen2, Qwen2's use_sliding_window false). The tokenizer via
scripts/make_tokenizer_json.py. Deterministic: the same GGUF gives the same bytes.

--fixture FILE.npz (needs torch + transformers; never in CI): run transformers'
AutoModelForCausalLM on the folder in float32 over 24 fixed token ids and store the ids, the 32
largest logits of every row (ids and values) and each row's max |logit| (the test feeds the ids
with --prompt-ids and compares --logits-out at those entries).
Needs numpy and gguf only, except for --fixture.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np
import gguf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAP = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
       "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
       "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def field(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    v = f.parts[f.data[0]]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(v).decode()
    return v.tolist()[0]


def unpermute(w, n_head):
    """Inverse of llama.cpp's permute: GGUF row h*hd + 2j + half -> HF row h*hd + half*hd/2 + j."""
    shape = w.shape
    hd = shape[0] // n_head
    w = w.reshape(n_head, hd // 2, 2, *shape[1:])
    return w.swapaxes(1, 2).reshape(shape)


def bf16(x):
    u = x.astype(np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--dtype", default="F32", choices=["F32", "BF16"])
    ap.add_argument("--fixture")
    a = ap.parse_args()
    r = gguf.GGUFReader(a.gguf)
    arch = field(r, "general.architecture")
    if arch not in ("llama", "qwen2"):
        sys.exit("architecture %s" % arch)
    L = field(r, arch + ".block_count")
    n_layers = min(L, a.layers) if a.layers > 0 else L
    H = field(r, arch + ".attention.head_count")
    Hkv = field(r, arch + ".attention.head_count_kv") or H
    dim = field(r, arch + ".embedding_length")
    tensors = {}
    for t in r.tensors:
        name = t.name
        if name.startswith("blk.") and int(name.split(".")[1]) >= n_layers:
            continue
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        w = w.reshape([int(x) for x in reversed(t.shape)]) if w.ndim == 1 and len(t.shape) > 1 else w
        if name == "token_embd.weight":
            hf = "model.embed_tokens.weight"
        elif name == "output_norm.weight":
            hf = "model.norm.weight"
        elif name == "output.weight":
            hf = "lm_head.weight"
        elif name.startswith("blk."):
            _, n, kind, suffix = name.split(".")
            if int(n) >= n_layers:
                continue
            hf = "model.layers.%s.%s.%s" % (n, MAP[kind], suffix)
            if arch == "llama" and kind in ("attn_q", "attn_k"):
                w = unpermute(w, H if kind == "attn_q" else Hkv)
        else:
            continue
        tensors[hf] = np.ascontiguousarray(w)
    os.makedirs(a.out, exist_ok=True)
    hdr, blobs, off = {}, [], 0
    for k in sorted(tensors):
        x = tensors[k]
        b = (bf16(x) if a.dtype == "BF16" else x.astype("<f4")).tobytes()
        hdr[k] = {"dtype": a.dtype, "shape": list(x.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    cfg = {
        "architectures": ["Qwen2ForCausalLM" if arch == "qwen2" else "LlamaForCausalLM"],
        "model_type": arch, "hidden_size": dim, "intermediate_size": field(r, arch + ".feed_forward_length"),
        "num_hidden_layers": n_layers, "num_attention_heads": H, "num_key_value_heads": Hkv,
        "vocab_size": int(tensors["model.embed_tokens.weight"].shape[0]),
        "max_position_embeddings": field(r, arch + ".context_length"),
        "rms_norm_eps": field(r, arch + ".attention.layer_norm_rms_epsilon"),
        "rope_theta": field(r, arch + ".rope.freq_base") or 10000.0, "hidden_act": "silu",
        "tie_word_embeddings": "lm_head.weight" not in tensors,
        "bos_token_id": field(r, "tokenizer.ggml.bos_token_id"), "eos_token_id": field(r, "tokenizer.ggml.eos_token_id"),
        "torch_dtype": "float32" if a.dtype == "F32" else "bfloat16",
    }
    if arch == "qwen2":
        cfg.update({"use_sliding_window": False, "sliding_window": cfg["max_position_embeddings"]})
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    subprocess.check_call([sys.executable, os.path.join(REPO, "scripts/make_tokenizer_json.py"), a.gguf,
                           os.path.join(a.out, "tokenizer.json")])
    if a.fixture:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM
        m = AutoModelForCausalLM.from_pretrained(a.out, dtype=torch.float32, attn_implementation="eager").eval()
        rng = np.random.default_rng(0)
        ids = rng.integers(0, 5000, size=24).tolist()
        with torch.no_grad():
            lg = m(torch.tensor([ids])).logits[0].float().numpy()
        top = np.argsort(-lg, axis=1)[:, :32]           # the 32 largest logits of every row
        np.savez_compressed(a.fixture, ids=np.array(ids, dtype=np.int32), top_ids=top.astype(np.int32),
                            top_logits=np.take_along_axis(lg, top, axis=1).astype(np.float32),
                            row_absmax=np.abs(lg).max(axis=1).astype(np.float32),
                            versions=np.array([transformers.__version__, torch.__version__, a.dtype]))
        print("wrote", a.fixture)


if __name__ == "__main__":
    main()
