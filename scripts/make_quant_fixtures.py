#!/usr/bin/env python3
"""Writes tests/fixtures/quant/: ggml block-format fixtures for tests/test_quant.c, made with
the gguf Python package (the reference: gguf.quants.dequantize / gguf.quants.quantize) and numpy.

  scripts/make_quant_fixtures.py [--smollm PATH] [--qwen PATH] [--out DIR]

Fixtures (little-endian), one file each:
  deq_<TYPE>_random.qfx   random blocks of every block type with edge values: zero, negative,
                          subnormal and largest f16 scales; all-0 and all-1 quant bits; int8
                          scales -128/127 (Q6_K); 6-bit scales/mins 0 and 63 (Q4_K/Q5_K)
  quant_<TYPE>.qfx        Q8_0 and Q4_0: f32 inputs (ties, negative maxima, zero blocks, f16
                          overflow of d) and the package's quantized blocks
  real_blocks.txt         real blocks of the two GGUF files (scripts/fetch_model.sh) by reference,
                          never their bytes: SmolLM2-135M Q4_1 (Q4_1, Q8_0), Qwen2.5-Coder-0.5B
                          (Q5_0, Q8_0, Q4_K, Q6_K); for each block its byte offset in the file and
                          the FNV-1a 64 hash of the package's dequantized f32 values (little-endian
                          bytes). The tests read the blocks from the model cache and hash their own
                          dequantization. Q5_1 and Q5_K have no real file, only random blocks.
.qfx layout (llm-run's quant fixture): 8 bytes magic "LLMQFX1\\0"; 120 bytes ASCII info (the
gguf and numpy versions, the source), NUL-padded; 8 bytes type name ("Q4_1"), NUL-padded; uint32
kind (0: dequantization fixture: blocks then floats; 1: quantization fixture: floats then
blocks), uint32 n_blocks, uint32 block elements, uint32 block bytes; then the two arrays (raw
blocks: n_blocks * block bytes; f32: n_blocks * block elements).
real_blocks.txt layout: '#' comment lines; per set one line
  "set NAME MODEL_FILE MODEL_BYTES TYPE N_BLOCKS TENSOR"
followed by N_BLOCKS lines "OFFSET HASH" (decimal byte offset in the file, 16 hex digits)."""
import argparse
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGUFReader, GGMLQuantizationType as QT
from gguf.quants import dequantize, quantize
from gguf.constants import GGML_QUANT_SIZES

try:
    from importlib.metadata import version as _pkg_version
    GGUF_VERSION = _pkg_version("gguf")
except Exception:  # pragma: no cover
    GGUF_VERSION = getattr(gguf, "__version__", "unknown")

TYPES = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"]
CACHE = os.path.expanduser(os.environ.get("LLM_RUN_MODELS", "~/.cache/llm-run"))


def write(path, kind, tname, info, blocks, floats):
    qt = QT[tname]
    be, bb = GGML_QUANT_SIZES[qt]
    blocks = np.ascontiguousarray(blocks, dtype=np.uint8).reshape(-1, bb)
    floats = np.ascontiguousarray(floats, dtype="<f4").reshape(-1, be)
    assert blocks.shape[0] == floats.shape[0]
    info = f"gguf={GGUF_VERSION} numpy={np.__version__} {info}".encode()[:119]
    with open(path, "wb") as f:
        f.write(b"LLMQFX1\0")
        f.write(info.ljust(120, b"\0"))
        f.write(tname.encode().ljust(8, b"\0"))
        f.write(struct.pack("<4I", kind, blocks.shape[0], be, bb))
        if kind == 0:
            f.write(blocks.tobytes())
            f.write(floats.tobytes())
        else:
            f.write(floats.tobytes())
            f.write(blocks.tobytes())


# f16 scale bit patterns: zero, ±subnormal (smallest, largest), ±small normals, ±largest finite
EDGE_F16 = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF]


def f16_offsets(tname):
    """byte offsets of the f16 scales in a block"""
    return {"Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2],
            "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}[tname]


def random_blocks(tname, n, rng):
    be, bb = GGML_QUANT_SIZES[QT[tname]]
    b = rng.integers(0, 256, size=(n, bb), dtype=np.uint8)
    offs = f16_offsets(tname)
    for i in range(n):
        for k, o in enumerate(offs):
            if i < len(EDGE_F16) * 2:
                h = EDGE_F16[(i + k * 3) % len(EDGE_F16)]
            else:   # a random finite f16 of moderate size, either sign
                h = int(np.float16(rng.uniform(-2.0, 2.0) * 10.0 ** rng.integers(-6, 2)).view(np.uint16))
            b[i, o:o + 2] = np.frombuffer(struct.pack("<H", h), np.uint8)
    # whole-block patterns: every quant bit 0 / every quant bit 1 (scales kept)
    keep = np.zeros(bb, bool)
    for o in offs:
        keep[o:o + 2] = True
    for i, fill in ((len(EDGE_F16) * 2, 0x00), (len(EDGE_F16) * 2 + 1, 0xFF),
                    (len(EDGE_F16) * 2 + 2, 0x00), (len(EDGE_F16) * 2 + 3, 0xFF)):
        if i < n:
            b[i, ~keep] = fill
    if tname == "Q6_K":   # int8 sub-block scales at 192..207: the extremes
        b[0, 192:208] = np.array([0x80, 0x7F] * 8, np.uint8)
    return b


_readers = {}


def reader(path):
    if path not in _readers:
        _readers[path] = GGUFReader(path)
    return _readers[path]


def real_blocks(path, tname, tensor, rows, max_blocks):
    """the first max_blocks blocks of the given rows: (blocks [n, bb] uint8, file offsets [n])"""
    t = next(t for t in reader(path).tensors if t.name == tensor)
    assert t.tensor_type.name == tname, (tensor, t.tensor_type.name)
    data = np.asarray(t.data)            # (rows, row_bytes) uint8
    _, bb = GGML_QUANT_SIZES[QT[tname]]
    row_bytes = data.shape[1]
    out = np.concatenate([data[i].reshape(-1, bb) for i in rows], axis=0)[:max_blocks]
    offs = [int(t.data_offset) + i * row_bytes + j * bb for i in rows for j in range(row_bytes // bb)][:max_blocks]
    with open(path, "rb") as f:          # the offsets are the file's: the blocks read back from them
        for k in (0, len(offs) - 1):
            f.seek(offs[k])
            assert f.read(bb) == out[k].tobytes(), (tensor, k)
    return out, offs


def fnv1a64(b):
    h = 0xCBF29CE484222325
    for c in b:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def deq(tname, blocks):
    return dequantize(blocks.reshape(1, -1), QT[tname]).reshape(blocks.shape[0], -1)


def quant_inputs(rng, n):
    x = rng.standard_normal((n, 32)).astype(np.float32) * np.float32(0.05)
    x[0] = 0                                              # zero block: d = 0
    x[1] = 0; x[1, 7] = -3.0                              # one value, a negative max
    x[2] = (np.arange(32) - 16).astype(np.float32) + 0.5  # halves
    x[3] = np.arange(-127, 129, 8)[:32].astype(np.float32)  # max 121 → ties under 1/d
    x[3, 0] = -127.0                                      # amax 127: d = 1, x·id = x (ties)
    x[3, 1:6] = [0.5, -0.5, 1.5, -2.5, 126.5]
    x[4] = rng.uniform(-1, 1, 32).astype(np.float32); x[4, 3] = 2.0; x[4, 9] = -2.0  # ±max tie
    x[5] = rng.uniform(-1, 1, 32).astype(np.float32); x[5, 3] = -2.0; x[5, 9] = 2.0
    x[6] = rng.uniform(-1, 1, 32).astype(np.float32) * np.float32(2e7)  # d overflows f16 → inf
    x[7] = rng.uniform(-1, 1, 32).astype(np.float32) * np.float32(1e-30)
    x[8] = 1.0                                            # constant block
    x[9] = -1.0
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smollm", default=os.path.join(CACHE, "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--qwen", default=os.path.join(CACHE, "Qwen2.5-Coder-0.5B-Instruct.gguf"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "quant"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(20240607)

    for tname in TYPES:
        n = 96 if tname.endswith("_K") else 160
        b = random_blocks(tname, n, rng)
        write(os.path.join(a.out, f"deq_{tname}_random.qfx"), 0, tname, "src=random blocks with edge values",
              b, deq(tname, b))

    real = [
        (a.smollm, "smollm2", "Q4_1", "blk.0.attn_q.weight", [0, 1, 287, 575], 72),
        (a.smollm, "smollm2", "Q8_0", "token_embd.weight", [0, 1, 2, 49151], 72),
        (a.qwen, "qwen25", "Q5_0", "blk.0.attn_q.weight", [0, 1, 447, 895], 112),
        (a.qwen, "qwen25", "Q8_0", "blk.0.attn_v.weight", [0, 1, 64, 127], 112),
    ]
    if not os.path.exists(a.qwen):
        sys.exit(f"make_quant_fixtures: {a.qwen} missing (scripts/fetch_model.sh qwen2.5-0.5b)")
    k_names = {t.tensor_type.name: t.name for t in reader(a.qwen).tensors if t.tensor_type.name in ("Q4_K", "Q6_K")}
    real += [(a.qwen, "qwen25", "Q4_K", k_names["Q4_K"], [0, 1, 895], 57),
             (a.qwen, "qwen25", "Q6_K", k_names["Q6_K"], [0, 1, 895], 57)]
    lines = ["# real ggml blocks of the GGUF models by reference (tests/test_quant.c, tests/cuda_emu/kt_quant.h)",
             f"# made by scripts/make_quant_fixtures.py: gguf={GGUF_VERSION} numpy={np.__version__}",
             "# set NAME MODEL_FILE MODEL_BYTES TYPE N_BLOCKS TENSOR, then per block: OFFSET FNV1A64(f32 LE bytes of gguf's dequantize)"]
    for path, tag, tname, tensor, rows, maxb in real:
        if not os.path.exists(path):
            sys.exit(f"make_quant_fixtures: {path} missing (scripts/fetch_model.sh smollm2-135m / qwen2.5-0.5b)")
        b, offs = real_blocks(path, tname, tensor, rows, maxb)
        fl = np.ascontiguousarray(deq(tname, b), dtype="<f4")
        lines.append(f"set deq_{tname}_{tag} {os.path.basename(path)} {os.path.getsize(path)} {tname} {len(offs)} {tensor}")
        lines += [f"{o} {fnv1a64(fl[k].tobytes()):016x}" for k, o in enumerate(offs)]
    with open(os.path.join(a.out, "real_blocks.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    for tname in ("Q8_0", "Q4_0"):
        x = quant_inputs(rng, 64)
        with np.errstate(over="ignore"):   # the block whose d overflows f16 (on purpose)
            q = quantize(x.reshape(1, -1), QT[tname]).reshape(64, -1)
        write(os.path.join(a.out, f"quant_{tname}.qfx"), 1, tname, "src=random + edge inputs", q, x)
    total = sum(os.path.getsize(os.path.join(a.out, f)) for f in os.listdir(a.out))
    print(f"make_quant_fixtures: {len(os.listdir(a.out))} files, {total} bytes in {a.out} (gguf {GGUF_VERSION})")


if __name__ == "__main__":
    main()
