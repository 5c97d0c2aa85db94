#!/usr/bin/env python3
"""Writes a GGUF model with random weights in chosen storage types (F32/F16/BF16 and the ggml block
formats Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K), for the CUDA tests on the emulator
(tests/test_cuda_emu.sh: tiny shapes) and on a GPU (bench/gpu_validate.sh: SmolLM2- and
LLaMA-2-7B-shaped), where nothing can be downloaded.

    make_random_gguf.py OUT.gguf [--shape tiny|smollm2|llama7b] [--arch llama|qwen2]
        [--type Q4_K] [--mix q=Q5_0,k=Q4_K,v=Q6_K,o=Q8_0,gate=Q4_1,up=Q5_1,down=Q6_K,embd=Q8_0,output=Q5_K]
        [--tied] [--rope-linear F] [--seed 0] [--hf DIR] [--attention-bias]

Shapes: tiny (dim 256, ffn 512, 2 layers, 4 heads / 2 KV heads of 64, vocab 320), smollm2 (576, 1536,
30 layers, 9/3 heads of 64, vocab 49152), llama7b (4096, 11008, 32 layers, 32 heads of 128, vocab
32000; --layers N to cut it). --type: every matrix (default Q4_K); --mix: per kind (q k v o gate
up down embd output). --arch qwen2 adds q/k/v biases (f32). --tied: no output.weight (the LM head
is the embedding). Norm weights are f32 around 1.

Block formats are filled by simple quantizers of normal(0, 0.02) weights written here (not
llama.cpp's optimising ones: the tests need valid blocks with realistic magnitudes, not the best
approximation); the layouts are ggml-common.h's and are checked against the gguf package's
dequantizer when it is installed (--check).

--hf DIR also writes the same model as a Hugging Face folder (config.json + model.safetensors, F32:
every weight the exact float the GGUF block decodes to, q/k rows of llama in Hugging Face order),
so transformers can run the weights llm-run runs from the GGUF. --attention-bias (HF folder only,
llama): q/k/v/o biases in the HF folder (the GGUF has none): a model for llm-run's o-bias path.
Needs numpy; the GGUF is written by hand (v3, 32-byte alignment), tensor by tensor."""
import argparse
import json
import os
import struct
import sys

import numpy as np

TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "BF16": (30, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
         "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
         "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210)}
SHAPES = {"tiny": dict(dim=256, ffn=512, layers=2, heads=4, kv_heads=2, head_dim=64, vocab=320),
          "smollm2": dict(dim=576, ffn=1536, layers=30, heads=9, kv_heads=3, head_dim=64, vocab=49152),
          "llama7b": dict(dim=4096, ffn=11008, layers=32, heads=32, kv_heads=32, head_dim=128, vocab=32000)}


def f16(x):
    return np.asarray(x, dtype=np.float32).astype("<f2").view("<u2")


def q32(x, t):
    """rows of 32-element blocks → bytes [n_blocks][block bytes]"""
    b = x.reshape(-1, 32).astype(np.float32)
    n = b.shape[0]
    if t == "Q8_0":
        d = np.abs(b).max(1) / 127
        q = np.round(b / np.where(d > 0, d, 1)[:, None]).clip(-127, 127).astype(np.int8)
        return np.concatenate([f16(d)[:, None].view(np.uint8), q.view(np.uint8)], 1)
    if t in ("Q4_0", "Q5_0"):
        lim = 8 if t == "Q4_0" else 16
        i = np.abs(b).argmax(1)
        mx = b[np.arange(n), i]
        d = mx / -lim
        u = (np.round(b / np.where(d != 0, d, 1)[:, None]) + lim).clip(0, 2 * lim - 1).astype(np.uint32)
        m = None
    else:  # Q4_1, Q5_1
        lim = 8 if t == "Q4_1" else 16
        m = b.min(1)
        d = (b.max(1) - m) / (2 * lim - 1)
        u = np.round((b - m[:, None]) / np.where(d > 0, d, 1)[:, None]).clip(0, 2 * lim - 1).astype(np.uint32)
    qs = ((u[:, :16] & 15) | ((u[:, 16:] & 15) << 4)).astype(np.uint8)
    parts = [f16(d)[:, None].view(np.uint8)]
    if m is not None:
        parts.append(f16(m)[:, None].view(np.uint8))
    if t in ("Q5_0", "Q5_1"):
        qh = ((u >> 4) & 1).astype(np.uint64) << np.arange(32, dtype=np.uint64)
        parts.append(qh.sum(1).astype("<u4")[:, None].view(np.uint8))
    parts.append(qs)
    return np.concatenate(parts, 1)


def pack_scales_k(sc, mn):
    """8 six-bit scales and mins per super-block → ggml's 12 bytes (inverse of get_scale_min_k4)"""
    out = np.zeros((sc.shape[0], 12), np.uint8)
    for j in range(4):
        out[:, j] = (sc[:, j] & 63) | ((sc[:, j + 4] >> 4) << 6)
        out[:, j + 4] = (mn[:, j] & 63) | ((mn[:, j + 4] >> 4) << 6)
        out[:, j + 8] = (sc[:, j + 4] & 15) | ((mn[:, j + 4] & 15) << 4)
    return out


def qk(x, t):
    b = x.reshape(-1, 256).astype(np.float32)
    n = b.shape[0]
    if t == "Q6_K":
        s = b.reshape(n, 16, 16)
        amax = np.abs(s).max(2) / 31  # per 16-element sub-block
        d = np.abs(amax).max(1) / 127
        sc = np.round(amax / np.where(d > 0, d, 1)[:, None]).clip(-128, 127).astype(np.int8)
        eff = (f16(d).view("<f2").astype(np.float32)[:, None] * sc)[:, :, None]
        u = (np.round(s / np.where(eff != 0, eff, 1)).clip(-32, 31) + 32).astype(np.uint32).reshape(n, 2, 4, 32)
        ql = np.zeros((n, 2, 64), np.uint32)
        qh = np.zeros((n, 2, 32), np.uint32)
        for i in range(4):  # element 128h + 32i + l
            lo = u[:, :, i, :] & 15
            ql[:, :, 32 * (i & 1):32 * (i & 1) + 32] |= lo << (0 if i < 2 else 4)
            qh |= (u[:, :, i, :] >> 4) << (2 * i)
        return np.concatenate([ql.reshape(n, 128).astype(np.uint8), qh.reshape(n, 64).astype(np.uint8),
                               sc.view(np.uint8), f16(d)[:, None].view(np.uint8)], 1)
    lim = 15 if t == "Q4_K" else 31
    s = b.reshape(n, 8, 32)
    lo = np.minimum(s.min(2), 0)
    scale = (s.max(2) - lo) / lim
    d = scale.max(1) / 63
    dmin = (-lo).max(1) / 63
    sc = np.round(scale / np.where(d > 0, d, 1)[:, None]).clip(0, 63).astype(np.uint8)
    mn = np.round(-lo / np.where(dmin > 0, dmin, 1)[:, None]).clip(0, 63).astype(np.uint8)
    dd = f16(d).view("<f2").astype(np.float32)[:, None] * sc
    mm = f16(dmin).view("<f2").astype(np.float32)[:, None] * mn
    u = np.round((s + mm[:, :, None]) / np.where(dd != 0, dd, 1)[:, :, None]).clip(0, lim).astype(np.uint32)
    u = u.reshape(n, 4, 2, 32)  # sub-block 2c (low nibbles), 2c+1 (high) of chunk c
    qs = ((u[:, :, 0, :] & 15) | ((u[:, :, 1, :] & 15) << 4)).astype(np.uint8).reshape(n, 128)
    parts = [f16(d)[:, None].view(np.uint8), f16(dmin)[:, None].view(np.uint8), pack_scales_k(sc, mn)]
    if t == "Q5_K":
        qh = np.zeros((n, 32), np.uint32)
        for c in range(4):
            qh |= ((u[:, c, 0, :] >> 4) & 1) << (2 * c)
            qh |= ((u[:, c, 1, :] >> 4) & 1) << (2 * c + 1)
        parts.append(qh.astype(np.uint8))
    parts.append(qs)
    return np.concatenate(parts, 1)


def encode(x, t):
    """float32 [rows][cols] → (bytes, GGML type id)"""
    if t == "F32":
        return x.astype("<f4").tobytes(), 0
    if t == "F16":
        return x.astype("<f2").tobytes(), 1
    if t == "BF16":
        u = x.astype("<f4").view("<u4")
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes(), 30
    blk = TYPES[t][1]
    if x.shape[-1] % blk:
        sys.exit("make_random_gguf: rows of %d elements are not whole %s blocks" % (x.shape[-1], t))
    return (q32(x, t) if blk == 32 else qk(x, t)).tobytes(), TYPES[t][0]


def permute(w, n_head):
    """HF q/k rows → llama.cpp's interleaved order (the converter's permute)"""
    r, c = w.shape
    return w.reshape(n_head, 2, r // n_head // 2, c).swapaxes(1, 2).reshape(r, c)


def unpermute(w, n_head):
    r, c = w.shape
    return w.reshape(n_head, r // n_head // 2, 2, c).swapaxes(1, 2).reshape(r, c)


class Writer:
    def __init__(self, path):
        self.f = open(path, "wb")
        self.kv, self.ti = [], []

    def add(self, key, typ, val):
        self.kv.append((key, typ, val))

    def s(self, x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    def header(self, tensors):  # tensors: [(name, shape outer-first, ggml type, nbytes)]
        f = self.f
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(self.kv)))
        for k, t, v in self.kv:
            f.write(self.s(k) + struct.pack("<I", t))
            if t == 4:
                f.write(struct.pack("<I", v))
            elif t == 6:
                f.write(struct.pack("<f", v))
            elif t == 8:
                f.write(self.s(v))
        off = 0
        self.offsets = []
        for name, shape, typ, nb in tensors:
            f.write(self.s(name) + struct.pack("<I", len(shape)))
            f.write(b"".join(struct.pack("<Q", d) for d in reversed(shape)))
            f.write(struct.pack("<IQ", typ, off))
            self.offsets.append(off)
            off += (nb + 31) // 32 * 32
        f.write(b"\0" * (-f.tell() % 32))

    def data(self, b):
        self.f.write(b)
        self.f.write(b"\0" * (-len(b) % 32))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--shape", default="tiny", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--arch", default="llama", choices=["llama", "qwen2"])
    ap.add_argument("--type", default="Q4_K", choices=sorted(TYPES))
    ap.add_argument("--mix", default="")
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--rope-linear", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hf", default="")
    ap.add_argument("--attention-bias", action="store_true")
    ap.add_argument("--check", action="store_true", help="decode every block with gguf.quants.dequantize")
    a = ap.parse_args()
    sh = dict(SHAPES[a.shape])
    if a.layers:
        sh["layers"] = a.layers
    kinds = {k: a.type for k in ("q", "k", "v", "o", "gate", "up", "down", "embd", "output")}
    for item in filter(None, a.mix.split(",")):
        k, t = item.split("=")
        if k not in kinds or t not in TYPES:
            sys.exit("make_random_gguf: --mix %s: kind or type unknown" % item)
        kinds[k] = t
    dim, ffn, L, H, Hkv, hd, V = (sh[k] for k in ("dim", "ffn", "layers", "heads", "kv_heads", "head_dim", "vocab"))
    rng = np.random.default_rng(a.seed)
    arch = a.arch
    plan = [("token_embd.weight", (V, dim), "embd")]
    for i in range(L):
        p = "blk.%d." % i
        plan += [(p + "attn_norm.weight", (dim,), None), (p + "attn_q.weight", (H * hd, dim), "q"),
                 (p + "attn_k.weight", (Hkv * hd, dim), "k"), (p + "attn_v.weight", (Hkv * hd, dim), "v"),
                 (p + "attn_output.weight", (dim, H * hd), "o"), (p + "ffn_norm.weight", (dim,), None),
                 (p + "ffn_gate.weight", (ffn, dim), "gate"), (p + "ffn_up.weight", (ffn, dim), "up"),
                 (p + "ffn_down.weight", (dim, ffn), "down")]
        if arch == "qwen2":
            plan += [(p + "attn_q.bias", (H * hd,), "bias"), (p + "attn_k.bias", (Hkv * hd,), "bias"),
                     (p + "attn_v.bias", (Hkv * hd,), "bias")]
    plan.append(("output_norm.weight", (dim,), None))
    if not a.tied:
        plan.append(("output.weight", (V, dim), "output"))

    def nbytes(shape, kind):
        if kind in (None, "bias"):
            return 4 * int(np.prod(shape))
        _, be, bb = TYPES[kinds[kind]]
        return shape[0] * (shape[1] // be) * bb

    w = Writer(a.out)
    w.add("general.architecture", 8, arch)
    w.add("general.name", 8, "random-%s-%s" % (a.shape, a.type))
    for k, t, v in [("block_count", 4, L), ("context_length", 4, 4096 if a.shape != "llama7b" else 16384),
                    ("embedding_length", 4, dim), ("feed_forward_length", 4, ffn), ("attention.head_count", 4, H),
                    ("attention.head_count_kv", 4, Hkv), ("attention.key_length", 4, hd),
                    ("attention.value_length", 4, hd), ("attention.layer_norm_rms_epsilon", 6, 1e-5),
                    ("rope.freq_base", 6, 10000.0), ("rope.dimension_count", 4, hd)]:
        w.add("%s.%s" % (arch, k), t, v)
    if a.rope_linear:
        w.add("%s.rope.scaling.type" % arch, 8, "linear")
        w.add("%s.rope.scaling.factor" % arch, 6, a.rope_linear)
    w.add("tokenizer.ggml.bos_token_id", 4, 1)
    w.add("tokenizer.ggml.eos_token_id", 4, 2)
    w.header([(n, s, 0 if k in (None, "bias") else TYPES[kinds[k]][0], nbytes(s, k)) for n, s, k in plan])
    hf = {}
    for name, shape, kind in plan:
        if kind is None:
            x = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
            b = x.astype("<f4").tobytes()
        elif kind == "bias":
            x = (0.05 * rng.standard_normal(shape)).astype(np.float32)
            b = x.astype("<f4").tobytes()
        else:
            x = (0.02 * rng.standard_normal(shape)).astype(np.float32)
            if kind in ("embd", "output"):
                x *= 10.0  # logits of a realistic spread (std about 3, mean top probability about 0.4)
            t = kinds[kind]
            if arch == "llama" and kind in ("q", "k"):
                x = permute(x, H if kind == "q" else Hkv)  # stored as llama.cpp's converter does
            b, _ = encode(x, t)
            if a.hf or a.check:
                x = decode(b, t, shape, a.check)
            if arch == "llama" and kind in ("q", "k"):
                x = unpermute(x, H if kind == "q" else Hkv)
        w.data(b)
        if a.hf:
            hf[name] = x
    w.f.close()
    print("wrote %s (%s, %s, %.1f MB)" % (a.out, a.shape, ",".join(sorted(set(kinds.values()))),
                                          os.path.getsize(a.out) / 1e6))
    if a.hf:
        write_hf(a, hf, sh, arch)


def decode(b, t, shape, check):
    if t in ("F32", "F16", "BF16"):
        if t == "F32":
            return np.frombuffer(b, "<f4").reshape(shape).copy()
        if t == "F16":
            return np.frombuffer(b, "<f2").astype(np.float32).reshape(shape)
        return (np.frombuffer(b, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    from gguf.quants import dequantize
    from gguf import GGMLQuantizationType as QT
    x = dequantize(np.frombuffer(b, np.uint8).reshape(shape[0], -1), QT[t]).astype(np.float32).reshape(shape)
    if check and not np.isfinite(x).all():
        sys.exit("make_random_gguf: %s blocks decode to non-finite values" % t)
    return x


def write_hf(a, hf, sh, arch):
    os.makedirs(a.hf, exist_ok=True)
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    sub = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
           "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
           "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    out = {}
    for k, v in hf.items():
        if k in names:
            out[names[k]] = v
            continue
        _, i, kind, wb = k.split(".")
        out["model.layers.%s.%s.%s" % (i, sub[kind], wb)] = v
    rng = np.random.default_rng(a.seed + 1)
    if a.attention_bias and arch == "llama":
        for i in range(sh["layers"]):
            for p, n in (("q", sh["heads"] * sh["head_dim"]), ("k", sh["kv_heads"] * sh["head_dim"]),
                         ("v", sh["kv_heads"] * sh["head_dim"]), ("o", sh["dim"])):
                out["model.layers.%d.self_attn.%s_proj.bias" % (i, p)] = (0.05 * rng.standard_normal(n)).astype(np.float32)
    header, off = {}, 0
    for k in sorted(out):
        nb = out[k].size * 4
        header[k] = {"dtype": "F32", "shape": list(out[k].shape), "data_offsets": [off, off + nb]}
        off += nb
    hb = json.dumps(header).encode()
    hb += b" " * (-len(hb) % 8)
    with open(os.path.join(a.hf, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for k in sorted(out):
            f.write(out[k].astype("<f4").tobytes())
    cfg = {"architectures": ["Qwen2ForCausalLM" if arch == "qwen2" else "LlamaForCausalLM"], "model_type": arch,
           "hidden_size": sh["dim"], "intermediate_size": sh["ffn"], "num_hidden_layers": sh["layers"],
           "num_attention_heads": sh["heads"], "num_key_value_heads": sh["kv_heads"], "head_dim": sh["head_dim"],
           "vocab_size": sh["vocab"], "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "rope_scaling": {"type": "linear", "factor": a.rope_linear} if a.rope_linear else None,
           "tie_word_embeddings": bool(a.tied), "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
           "torch_dtype": "float32"}
    if arch == "llama":
        cfg["attention_bias"] = bool(a.attention_bias)
    json.dump(cfg, open(os.path.join(a.hf, "config.json"), "w"), indent=1)
    print("wrote %s (Hugging Face folder, F32)" % a.hf)


if __name__ == "__main__":
    main()
