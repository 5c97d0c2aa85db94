#!/usr/bin/env python3
"""Convert a llama2.c checkpoint into a Hugging Face LLaMA folder that llm-run reads.

    scripts/convert_llama2c.py IN.bin TOKENIZER.model OUT_DIR

IN.bin is llama2.c's legacy (version 0) checkpoint, as written by its export.py
`legacy_export` and as karpathy/tinyllamas publishes them:

    int32  dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
           (vocab_size < 0: the classifier is not shared with the token embedding)
    float32 token_embedding [vocab][dim]
            rms_att [L][dim]
            wq [L][dim][dim]   wk [L][kv_dim][dim]   wv [L][kv_dim][dim]   wo [L][dim][dim]
            rms_ffn [L][dim]
            w1 [L][hidden][dim]   w2 [L][dim][hidden]   w3 [L][hidden][dim]
            rms_final [dim]
            freq_cis_real [seq_len][head_size/2]   freq_cis_imag [seq_len][head_size/2]
            wcls [vocab][dim]  (only when vocab_size < 0)

OUT_DIR gets:
  config.json        LlamaForCausalLM config (rms_norm_eps 1e-5, rope_theta 10000: llama2.c's)
  model.safetensors  F32 tensors under Hugging Face names. llama2.c (like Meta's checkpoints)
                     rotates interleaved pairs (x[2i], x[2i+1]); Hugging Face's rotate_half
                     rotates halves (x[i], x[i + head_dim/2]). The rows of wq and wk are permuted
                     exactly as transformers' convert_llama_weights_to_hf.py does:
                       permute(w, n_heads, dim1, dim2) =
                         w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)
                     (wk with n_kv_heads). w1 -> gate_proj, w3 -> up_proj, w2 -> down_proj.
  tokenizer.model    a copy of TOKENIZER.model (a SentencePiece model, e.g. tok512.model)

The freq_cis tables are not needed (llm-run computes RoPE from rope_theta) and are skipped.
Standard library only; numpy is used when importable (set LLM_CONVERT_NO_NUMPY=1 to force the
pure-Python path). Exits 1 with one "convert_llama2c: ..." line on stderr on a bad input.
"""
import json
import os
import shutil
import struct
import sys
from array import array

try:
    if os.environ.get("LLM_CONVERT_NO_NUMPY"):
        raise ImportError
    import numpy as np
except ImportError:  # pragma: no cover - exercised by tests/test_convert.sh
    np = None

PROG = "convert_llama2c"
HEADER = struct.Struct("<7i")
LLAMA2C_V1_MAGIC = 0x616B3432  # "ak42": llama2.c's versioned export, not the legacy format


class ConvertError(Exception):
    pass


def read_checkpoint(path):
    """Returns (config dict, {llama2.c name: (rows, cols, bytes)}) for a legacy .bin."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise ConvertError(f"{path}: cannot read: {e.strerror}")
    if len(blob) < HEADER.size:
        raise ConvertError(f"{path}: {len(blob)} bytes, too short for a llama2.c header")
    if struct.unpack_from("<I", blob, 0)[0] == LLAMA2C_V1_MAGIC:
        raise ConvertError(f"{path}: a versioned llama2.c export (magic ak42); only the legacy "
                           "version-0 format is supported (export.py --version 0)")
    dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len = HEADER.unpack_from(blob, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    for name, v in (("dim", dim), ("hidden_dim", hidden), ("n_layers", n_layers),
                    ("n_heads", n_heads), ("n_kv_heads", n_kv_heads), ("vocab_size", vocab),
                    ("seq_len", seq_len)):
        if v <= 0:
            raise ConvertError(f"{path}: header {name}={v} must be positive (not a llama2.c checkpoint?)")
    if dim % n_heads:
        raise ConvertError(f"{path}: n_heads={n_heads} does not divide dim={dim}")
    if n_heads % n_kv_heads:
        raise ConvertError(f"{path}: n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}")
    head_size = dim // n_heads
    if head_size % 2:
        raise ConvertError(f"{path}: head size {head_size} is odd (RoPE rotates pairs)")
    kv_dim = head_size * n_kv_heads
    L = n_layers

    # (name, count, rows, cols): count matrices of [rows][cols] float32
    layout = [
        ("token_embedding", 1, vocab, dim),
        ("rms_att", L, 1, dim),
        ("wq", L, dim, dim),
        ("wk", L, kv_dim, dim),
        ("wv", L, kv_dim, dim),
        ("wo", L, dim, dim),
        ("rms_ffn", L, 1, dim),
        ("w1", L, hidden, dim),
        ("w2", L, dim, hidden),
        ("w3", L, hidden, dim),
        ("rms_final", 1, 1, dim),
        ("freq_cis_real", 1, seq_len, head_size // 2),
        ("freq_cis_imag", 1, seq_len, head_size // 2),
    ]
    if not shared:
        layout.append(("wcls", 1, vocab, dim))
    need = HEADER.size + 4 * sum(c * r * k for _, c, r, k in layout)
    if len(blob) != need:
        raise ConvertError(
            f"{path}: {len(blob)} bytes, but the header (dim {dim}, hidden_dim {hidden}, "
            f"n_layers {L}, n_heads {n_heads}, n_kv_heads {n_kv_heads}, vocab_size "
            f"{vocab if shared else -vocab}, seq_len {seq_len}) needs {need}"
            + (" (truncated?)" if len(blob) < need else ""))

    tensors = {}
    off = HEADER.size
    for name, count, rows, cols in layout:
        n = rows * cols * 4
        for i in range(count):
            key = name if count == 1 else f"{name}.{i}"
            tensors[key] = (rows, cols, blob[off:off + n])
            off += n
    cfg = {
        "dim": dim, "hidden_dim": hidden, "n_layers": L, "n_heads": n_heads,
        "n_kv_heads": n_kv_heads, "vocab_size": vocab, "seq_len": seq_len, "shared": shared,
        "head_size": head_size, "kv_dim": kv_dim,
    }
    return cfg, tensors


def check_finite(path, name, data):
    """Rejects NaN/Inf weights (a sign of a wrong format or a corrupt file)."""
    if np is not None:
        a = np.frombuffer(data, dtype="<f4")
        if not np.isfinite(a).all():
            raise ConvertError(f"{path}: {name} has NaN or Inf values")
        return
    a = array("f")
    a.frombytes(data)
    for x in a:
        if x != x or x in (float("inf"), float("-inf")):
            raise ConvertError(f"{path}: {name} has NaN or Inf values")


def permute_rows(data, n_heads, dim1, dim2):
    """HF's permute on a row-major float32 [dim1][dim2] matrix given as bytes: out row
    h*hd + p*half + i = in row h*hd + 2*i + p (hd = dim1 / n_heads, half = hd / 2)."""
    if np is not None:
        w = np.frombuffer(data, dtype="<f4").reshape(dim1, dim2)
        w = w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)
        return np.ascontiguousarray(w).tobytes()
    hd = dim1 // n_heads
    half = hd // 2
    row = dim2 * 4
    out = bytearray(len(data))
    for h in range(n_heads):
        for i in range(half):
            for p in range(2):
                src = (h * hd + 2 * i + p) * row
                dst = (h * hd + p * half + i) * row
                out[dst:dst + row] = data[src:src + row]
    return bytes(out)


def hf_tensors(cfg, t):
    """{HF name: (shape, bytes)} from the llama2.c tensors."""
    dim, hidden, kv_dim = cfg["dim"], cfg["hidden_dim"], cfg["kv_dim"]
    out = {"model.embed_tokens.weight": ([cfg["vocab_size"], dim], t["token_embedding"][2]),
           "model.norm.weight": ([dim], t["rms_final"][2])}
    for l in range(cfg["n_layers"]):
        p = f"model.layers.{l}."
        out[p + "input_layernorm.weight"] = ([dim], t[f"rms_att.{l}"][2])
        out[p + "post_attention_layernorm.weight"] = ([dim], t[f"rms_ffn.{l}"][2])
        out[p + "self_attn.q_proj.weight"] = (
            [dim, dim], permute_rows(t[f"wq.{l}"][2], cfg["n_heads"], dim, dim))
        out[p + "self_attn.k_proj.weight"] = (
            [kv_dim, dim], permute_rows(t[f"wk.{l}"][2], cfg["n_kv_heads"], kv_dim, dim))
        out[p + "self_attn.v_proj.weight"] = ([kv_dim, dim], t[f"wv.{l}"][2])
        out[p + "self_attn.o_proj.weight"] = ([dim, dim], t[f"wo.{l}"][2])
        out[p + "mlp.gate_proj.weight"] = ([hidden, dim], t[f"w1.{l}"][2])
        out[p + "mlp.down_proj.weight"] = ([dim, hidden], t[f"w2.{l}"][2])
        out[p + "mlp.up_proj.weight"] = ([hidden, dim], t[f"w3.{l}"][2])
    if not cfg["shared"]:
        out["lm_head.weight"] = ([cfg["vocab_size"], dim], t["wcls"][2])
    return out


def write_safetensors(path, tensors, metadata):
    """F32 safetensors: u64 LE header length, compact JSON header (tensors by name, then
    __metadata__) padded with spaces to a multiple of 8, then the data in header order."""
    header, pos = {}, 0
    for name in sorted(tensors):
        shape, data = tensors[name]
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [pos, pos + len(data)]}
        pos += len(data)
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-len(text)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in sorted(tensors):
            f.write(tensors[name][1])
    os.replace(tmp, path)


def hf_config(cfg):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": cfg["dim"],
        "intermediate_size": cfg["hidden_dim"],
        "num_hidden_layers": cfg["n_layers"],
        "num_attention_heads": cfg["n_heads"],
        "num_key_value_heads": cfg["n_kv_heads"],
        "vocab_size": cfg["vocab_size"],
        "max_position_embeddings": cfg["seq_len"],
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": cfg["shared"],
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "float32",
    }


def check_tokenizer(path):
    """A SentencePiece model is a protobuf whose first field is `pieces` (tag 0x0a)."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError as e:
        raise ConvertError(f"{path}: cannot read: {e.strerror}")
    if len(head) < 2 or head[0] != 0x0A:
        if path.endswith(".bin"):
            raise ConvertError(f"{path}: looks like llama2.c's tokenizer .bin; give the SentencePiece "
                               "tokenizer.model (e.g. tok512.model)")
        raise ConvertError(f"{path}: not a SentencePiece model")


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) != 4:
        print(f"usage: {PROG}.py IN.bin TOKENIZER.model OUT_DIR (see --help)", file=sys.stderr)
        return 2
    src, tok, out_dir = argv[1:]
    try:
        check_tokenizer(tok)
        cfg, t = read_checkpoint(src)
        for name, (_, _, data) in t.items():
            if not name.startswith("freq_cis"):
                check_finite(src, name, data)
        tensors = hf_tensors(cfg, t)
        try:
            os.makedirs(out_dir, exist_ok=True)
            write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors,
                              {"format": "pt", "source": os.path.basename(src)})
            with open(os.path.join(out_dir, "config.json"), "w") as f:
                json.dump(hf_config(cfg), f, indent=2)
            shutil.copyfile(tok, os.path.join(out_dir, "tokenizer.model"))
        except OSError as e:
            raise ConvertError(f"{e.filename or out_dir}: cannot write: {e.strerror}")
    except ConvertError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    print(f"{PROG}: {src} -> {out_dir}: dim {cfg['dim']}, hidden {cfg['hidden_dim']}, "
          f"{cfg['n_layers']} layers, {cfg['n_heads']} heads ({cfg['n_kv_heads']} KV), vocab "
          f"{cfg['vocab_size']} ({'tied' if cfg['shared'] else 'separate lm_head'}), context "
          f"{cfg['seq_len']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
