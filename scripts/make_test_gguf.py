#!/usr/bin/env python3
"""Write a Hugging Face LLaMA folder (F32/F16/BF16 safetensors) as a GGUF file, the way
llama.cpp's convert_hf_to_gguf.py lays it out, or a deliberately broken variant of it.

    scripts/make_test_gguf.py MODEL_DIR OUT.gguf [--mutate NAME] [--version 3] [--dtype F32|F16|BF16]
                              [--vocab dummy]
    scripts/make_test_gguf.py --list-mutations

Python standard library only (the bad-input tests run it on a fresh machine). What it writes:
general.architecture llama, the llama.* hyper-parameters from config.json, tokenizer.ggml.bos/
eos ids, every tensor under its GGUF name (token_embd, blk.N.attn_q, ..., output_norm,
output when untied) in the file's dtype (F32/F16; BF16 as type 30), q/k rows permuted as the
converter does for llama (per head: rows (half, j) → (j, half)), tensors aligned to 32 bytes.
No tokenizer metadata (stories260K's tokenizer is the folder's tokenizer.model) unless
--vocab dummy: a placeholder byte-level vocabulary so llama.cpp loads the file (benchmarks feed
token ids). --dtype converts the matrices (norms stay F32, as llama.cpp's converter does).

--mutate NAME breaks one thing (see MUTATIONS below); tests/bad_inputs/gguf.sh runs llm-run on
each and checks the one-line error.
"""
import json
import os
import struct
import sys

ST_DT = {"F32": (0, 4), "F16": (1, 2), "BF16": (30, 2)}
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)

MUTATIONS = {
    "magic": "bad magic", "version1": "GGUF version 1", "version9": "GGUF version 9",
    "trunc_kv": "file cut inside the metadata", "trunc_tinfo": "file cut inside the tensor infos",
    "trunc_data": "file cut before the last tensor's end", "n_kv_huge": "metadata count 2^60",
    "n_tensors_huge": "tensor count 2^60", "key_len_huge": "a key length of 2^40",
    "kv_type_unknown": "value type 99", "array_of_arrays": "an array of arrays",
    "array_count_huge": "an array claiming 2^50 elements", "ndims0": "a tensor with 0 dims",
    "ndims5": "a tensor with 5 dims", "ne_zero": "a dimension of 0",
    "ne_huge": "a dimension of 2^40", "row_not_block": "Q8_0 with a row of 172 elements",
    "type_q2k": "tensor type Q2_K (unsupported)", "type_99": "tensor type 99",
    "offset_misaligned": "an offset not a multiple of 32", "offset_outside": "an offset past the end",
    "overlap": "two tensors sharing bytes", "dup_tensor": "a tensor name twice",
    "dup_key": "a metadata key twice", "align3": "general.alignment 3", "align_str": "general.alignment a string",
    "no_arch": "no general.architecture", "arch_gemma": "architecture gemma",
    "no_block_count": "no llama.block_count", "heads0": "llama.attention.head_count 0",
    "kv_heads3": "head_count_kv 3 does not divide 8", "experts": "llama.expert_count 8 (MoE)",
    "rope_freqs": "a rope_freqs tensor of the wrong length", "no_attn_q": "blk.0.attn_q.weight missing",
    "attn_q_shape": "blk.0.attn_q.weight with the wrong shape", "rope_yarn": "rope.scaling.type yarn",
    "key_nul": "a key with a NUL byte", "key_empty": "an empty key", "rope_dims": "rope.dimension_count 4 (partial rotary)",
    "no_embd": "token_embd.weight missing", "eps_str": "layer_norm_rms_epsilon a string",
    "name_long": "a 300-byte tensor name",
}


def read_safetensors(d):
    tensors = {}
    files = [os.path.join(d, "model.safetensors")]
    idx = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(files[0]) and os.path.exists(idx):
        files = sorted({os.path.join(d, v) for v in json.load(open(idx))["weight_map"].values()})
    for p in files:
        b = open(p, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        h = json.loads(b[8:8 + n])
        base = 8 + n
        for k, v in h.items():
            if k == "__metadata__" or k.endswith("rotary_emb.inv_freq"):
                continue
            s, e = v["data_offsets"]
            tensors[k] = (v["dtype"], v["shape"], b[base + s:base + e])
    return tensors


def permute_rows(data, shape, n_head, esize):
    """llama.cpp's LlamaModel.permute on raw row bytes: HF row h*hd + half*hd/2 + j goes to h*hd + 2j + half."""
    rows = shape[0]
    cols = shape[1] if len(shape) > 1 else 1
    rb = cols * esize
    hd = rows // n_head
    out = bytearray(len(data))
    for h in range(n_head):
        for half in range(2):
            for j in range(hd // 2):
                src = h * hd + half * (hd // 2) + j
                dst = h * hd + 2 * j + half
                out[dst * rb:(dst + 1) * rb] = data[src * rb:(src + 1) * rb]
    return bytes(out)


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv_bytes(key, typ, val):
    out = gstr(key) + struct.pack("<I", typ)
    fmt = {T_U8: "B", T_I8: "b", T_U16: "H", T_I16: "h", T_U32: "I", T_I32: "i", T_F32: "f",
           T_BOOL: "?", T_U64: "Q", T_I64: "q", T_F64: "d"}
    if typ == T_STR:
        return out + gstr(val)
    if typ == T_ARR:
        et, items = val
        out += struct.pack("<IQ", et, len(items))
        for it in items:
            out += gstr(it) if et == T_STR else struct.pack("<" + fmt[et], it)
        return out
    return out + struct.pack("<" + fmt[typ], val)


def gpt2_byte_chars():
    """GPT-2's byte -> printable character map (the 256 single-byte tokens of a byte-level BPE)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def convert(raw, dt_from, dt_to):
    """Raw little-endian tensor bytes from one of F32/F16/BF16 to another (round to nearest even)."""
    if dt_from == dt_to:
        return raw
    import array
    if dt_from == "F32":
        f = array.array("f"); f.frombytes(raw)
    else:
        h = array.array("H"); h.frombytes(raw)
        if dt_from == "BF16":
            f = array.array("f", struct.unpack("<%df" % len(h), b"".join(struct.pack("<I", x << 16) for x in h)))
        else:
            f = array.array("f", struct.unpack("<%de" % len(h), raw))
    if dt_to == "F32":
        return f.tobytes()
    if dt_to == "F16":
        return struct.pack("<%de" % len(f), *f)
    u = struct.unpack("<%dI" % len(f), f.tobytes())
    return struct.pack("<%dH" % len(u), *(((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF for x in u))


def build(model_dir, mutate=None, version=3, dtype=None, vocab=None, rope_freqs=None):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    st = read_safetensors(model_dir)
    H, L = cfg["num_attention_heads"], cfg["num_hidden_layers"]
    Hkv = cfg.get("num_key_value_heads", H)
    dim = cfg["hidden_size"]
    hd = cfg.get("head_dim") or dim // H
    kvs = [
        ("general.architecture", T_STR, "llama"),
        ("general.name", T_STR, os.path.basename(os.path.normpath(model_dir))),
        ("llama.block_count", T_U32, L),
        ("llama.context_length", T_U32, cfg.get("max_position_embeddings", 2048)),
        ("llama.embedding_length", T_U32, dim),
        ("llama.feed_forward_length", T_U32, cfg["intermediate_size"]),
        ("llama.attention.head_count", T_U32, H),
        ("llama.attention.head_count_kv", T_U32, Hkv),
        ("llama.attention.layer_norm_rms_epsilon", T_F32, cfg.get("rms_norm_eps", 1e-6)),
        ("llama.rope.freq_base", T_F32, cfg.get("rope_theta", 10000.0)),
        ("llama.rope.dimension_count", T_U32, hd),
        ("tokenizer.ggml.bos_token_id", T_U32, cfg.get("bos_token_id", 1)),
        ("tokenizer.ggml.eos_token_id", T_U32, cfg.get("eos_token_id", 2)),
        ("general.file_type", T_U32, 0),
    ]
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    sub = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
           "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
           "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
           "mlp.down_proj": "ffn_down"}
    tensors = []   # [name, ggml_type, ne (innermost first), bytes]
    for k in sorted(st):
        dt, shape, data = st[k]
        if dtype and len(shape) == 2:   # matrices converted, norms stay F32 (as llama.cpp's converter)
            data, dt = convert(data, dt, dtype), dtype
        typ, es = ST_DT[dt]
        if k in names:
            g = names[k]
        else:
            parts = k.split(".")   # model.layers.N.<a>.<b>.weight
            n, rest = parts[2], ".".join(parts[3:-1])
            g = "blk.%s.%s.%s" % (n, sub[rest], parts[-1])
        if g.endswith("attn_q.weight"):
            data = permute_rows(data, shape, H, es)
        elif g.endswith("attn_k.weight"):
            data = permute_rows(data, shape, Hkv, es)
        tensors.append([g, typ, list(reversed(shape)), data])
    if cfg.get("tie_word_embeddings") and any(t[0] == "output.weight" for t in tensors):
        tensors = [t for t in tensors if t[0] != "output.weight"]
    align = 32
    if vocab == "dummy":
        # a placeholder byte-level BPE vocabulary (the 256 byte characters, then "tok<i>"), no
        # merges: enough for llama.cpp to load the file; benchmarks feed token ids
        nv = next(t for t in tensors if t[0] == "token_embd.weight")[2][1]
        toks = gpt2_byte_chars() + ["tok%d" % i for i in range(256, nv)]
        kvs += [("tokenizer.ggml.model", T_STR, "gpt2"), ("tokenizer.ggml.pre", T_STR, "default"),
                ("tokenizer.ggml.tokens", T_ARR, (T_STR, toks)),
                ("tokenizer.ggml.token_type", T_ARR, (T_I32, [1] * nv)),
                ("tokenizer.ggml.merges", T_ARR, (T_STR, []))]

    def kv_set(key, typ, val):
        for i, (k, _, _) in enumerate(kvs):
            if k == key:
                kvs[i] = (key, typ, val)
                return
        kvs.append((key, typ, val))

    def tensor(name):
        return next(t for t in tensors if t[0] == name)

    m = mutate
    extra_kv = b""
    if m == "dup_key": kvs.append(("llama.block_count", T_U32, L))
    if m == "align3": kv_set("general.alignment", T_U32, 3)
    if m == "align_str": kv_set("general.alignment", T_STR, "32")
    if m == "no_arch": kvs = [k for k in kvs if k[0] != "general.architecture"]
    if m == "arch_gemma": kv_set("general.architecture", T_STR, "gemma")
    if m == "no_block_count": kvs = [k for k in kvs if k[0] != "llama.block_count"]
    if m == "heads0": kv_set("llama.attention.head_count", T_U32, 0)
    if m == "kv_heads3": kv_set("llama.attention.head_count_kv", T_U32, 3)
    if m == "experts": kv_set("llama.expert_count", T_U32, 8)
    if m == "rope_yarn": kv_set("llama.rope.scaling.type", T_STR, "yarn")
    if m == "rope_dims": kv_set("llama.rope.dimension_count", T_U32, 4)
    if m == "eps_str": kv_set("llama.attention.layer_norm_rms_epsilon", T_STR, "1e-5")
    if m == "rope_freqs": tensors.append(["rope_freqs.weight", 0, [hd], b"\0\0\x80\x3f" * hd])   # must be [hd / 2]
    if rope_freqs is not None: tensors.append(["rope_freqs.weight", 0, [hd // 2], struct.pack("<%df" % (hd // 2), *([rope_freqs] * (hd // 2)))])
    if m == "no_attn_q": tensors = [t for t in tensors if t[0] != "blk.0.attn_q.weight"]
    if m == "no_embd": tensors = [t for t in tensors if t[0] != "token_embd.weight"]
    if m == "attn_q_shape": tensor("blk.0.attn_q.weight")[2] = [dim // 2, dim * 2]
    if m == "dup_tensor": tensors.append(list(tensor("blk.0.attn_norm.weight")))
    if m == "ndims0": tensor("blk.0.attn_norm.weight")[2] = []
    if m == "ndims5": tensor("blk.0.attn_norm.weight")[2] = [dim, 1, 1, 1, 1]
    if m == "ne_zero": tensor("blk.0.attn_norm.weight")[2] = [0]
    if m == "ne_huge": tensor("blk.0.attn_norm.weight")[2] = [1 << 40]
    if m == "row_not_block": tensor("blk.0.ffn_down.weight")[1] = 8     # Q8_0, ne0 = ffn (172)
    if m == "type_q2k": tensor("blk.0.attn_norm.weight")[1] = 10
    if m == "type_99": tensor("blk.0.attn_norm.weight")[1] = 99
    if m == "name_long": tensor("blk.0.attn_norm.weight")[0] = "x" * 300
    if m == "key_nul": extra_kv = kv_bytes("llama.bad\0key", T_U32, 1)
    if m == "key_empty": extra_kv = kv_bytes("", T_U32, 1)
    if m == "kv_type_unknown": extra_kv = gstr("general.weird") + struct.pack("<I", 99) + b"\0" * 8
    if m == "array_of_arrays": extra_kv = gstr("general.nested") + struct.pack("<IIQ", T_ARR, T_ARR, 1) + struct.pack("<IQ", T_U8, 0)
    if m == "array_count_huge": extra_kv = gstr("general.big") + struct.pack("<IIQ", T_ARR, T_U32, 1 << 50)
    if m == "key_len_huge": extra_kv = struct.pack("<Q", 1 << 40) + b"general.x"

    kvb = b"".join(kv_bytes(*k) for k in kvs) + extra_kv
    n_kv = len(kvs) + (1 if extra_kv else 0)
    # tensor infos with aligned offsets
    infos, data, off = b"", b"", 0
    offsets = []
    for name, typ, ne, raw in tensors:
        pad = (-off) % align
        data += b"\0" * pad
        off += pad
        offsets.append(off)
        data += raw
        off += len(raw)
    if m == "offset_misaligned": offsets[1] += 4
    if m == "offset_outside": offsets[-1] = off + 4096
    if m == "overlap": offsets[2] = offsets[1]
    for (name, typ, ne, raw), o in zip(tensors, offsets):
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        infos += struct.pack("<IQ", typ, o)
    n_t = len(tensors)
    if m == "n_kv_huge": n_kv = 1 << 60
    if m == "n_tensors_huge": n_t = 1 << 60
    magic = b"GGUX" if m == "magic" else b"GGUF"
    ver = 1 if m == "version1" else 9 if m == "version9" else version
    head = magic + struct.pack("<IQQ", ver, n_t, n_kv) + kvb
    if m == "trunc_kv":
        return head[:len(head) - 7]
    head += infos
    if m == "trunc_tinfo":
        return head[:len(head) - 5]
    head += b"\0" * ((-len(head)) % align)
    out = head + data
    if m == "trunc_data":
        out = out[:len(out) - 16]
    return out


def main():
    a = sys.argv[1:]
    if a[:1] == ["--list-mutations"]:
        for k, v in MUTATIONS.items():
            print("%-18s %s" % (k, v))
        return
    if len(a) < 2:
        sys.exit("usage: make_test_gguf.py MODEL_DIR OUT.gguf [--mutate NAME] [--version 2|3]")
    mut, ver, dt, voc, rf = None, 3, None, None, None
    if "--rope-freqs" in a:
        rf = float(a[a.index("--rope-freqs") + 1])
    if "--dtype" in a:
        dt = a[a.index("--dtype") + 1]
    if "--vocab" in a:
        voc = a[a.index("--vocab") + 1]
    if "--mutate" in a:
        mut = a[a.index("--mutate") + 1]
        if mut not in MUTATIONS:
            sys.exit("unknown mutation " + mut)
    if "--version" in a:
        ver = int(a[a.index("--version") + 1])
    with open(a[1], "wb") as f:
        f.write(build(a[0], mut, ver, dt, voc, rf))


if __name__ == "__main__":
    main()
