#!/usr/bin/env python3
"""Seeds for the GGUF fuzz target (fuzz/corpus/gguf/seed-*), standard library only.

Seeded from the real headers: for each real GGUF file (scripts/fetch_model.sh) every metadata
pair is kept as it is, except that arrays (the 49k-152k token vocabularies and merges) are cut
to their first 12 elements, and the first 8 tensor infos are kept with their types but shrunk
to [2 rows x one block] so the seed stays a few KB; plus a minimal valid file and a v2 one.
    python3 scripts/make_gguf_seeds.py [GGUF...]
"""
import os, struct, subprocess, sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "fuzz", "corpus", "gguf")
SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
BLOCK = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 2: (32, 18), 3: (32, 20), 6: (32, 22),
         7: (32, 24), 12: (256, 144), 13: (256, 176), 14: (256, 210)}


def rd(b, o, fmt):
    v = struct.unpack_from("<" + fmt, b, o)
    return v[0], o + struct.calcsize("<" + fmt)


def rstr(b, o):
    n, o = rd(b, o, "Q")
    return b[o:o + n], o + n


def value(b, o, t, keep):
    """Returns (bytes of the value re-encoded with arrays cut to keep, new offset)."""
    if t == 8:
        s, o2 = rstr(b, o)
        return struct.pack("<Q", len(s)) + s, o2
    if t == 9:
        et, o = rd(b, o, "I")
        n, o = rd(b, o, "Q")
        items = b""
        for i in range(n):
            v, o = value(b, o, et, keep)
            if i < keep:
                items += v
        return struct.pack("<IQ", et, min(n, keep)) + items, o
    return b[o:o + SIZE[t]], o + SIZE[t]


def seed_from(path, keep=12, n_tensors=8):
    b = open(path, "rb").read(64 << 20)
    ver, o = rd(b, 4, "I")
    nt, o = rd(b, o, "Q")
    nkv, o = rd(b, o, "Q")
    kvs = b""
    for _ in range(nkv):
        k, o = rstr(b, o)
        t, o = rd(b, o, "I")
        v, o = value(b, o, t, keep)
        kvs += struct.pack("<Q", len(k)) + k + struct.pack("<I", t) + v
    infos, off = b"", 0
    for _ in range(min(nt, n_tensors)):
        name, o = rstr(b, o)
        nd, o = rd(b, o, "I")
        o += 8 * nd
        typ, o = rd(b, o, "I")
        o += 8
        blk, bb = BLOCK.get(typ, (1, 4))
        ne = [blk, 2][:max(1, min(nd, 2))]
        infos += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(ne))
        infos += b"".join(struct.pack("<Q", x) for x in ne) + struct.pack("<IQ", typ, off)
        size = bb * (2 if len(ne) > 1 else 1)
        off += size + (-size) % 32
    head = b"GGUF" + struct.pack("<IQQ", ver, min(nt, n_tensors), nkv) + kvs + infos
    head += b"\0" * ((-len(head)) % 32)
    return head + b"\0" * off


def minimal(version):
    kv = lambda k, t, v: struct.pack("<Q", len(k)) + k + struct.pack("<I", t) + v
    kvs = kv(b"general.architecture", 8, struct.pack("<Q", 5) + b"llama")
    for k, v in [(b"llama.block_count", 1), (b"llama.embedding_length", 32), (b"llama.feed_forward_length", 32),
                 (b"llama.attention.head_count", 2)]:
        kvs += kv(k, 4, struct.pack("<I", v))
    info = struct.pack("<Q", 17) + b"token_embd.weight" + struct.pack("<IQQIQ", 2, 32, 4, 8, 0)
    head = b"GGUF" + struct.pack("<IQQ", version, 1, 5) + kvs + info
    head += b"\0" * ((-len(head)) % 32)
    return head + b"\0" * (34 * 4)


def main():
    os.makedirs(OUT, exist_ok=True)
    paths = sys.argv[1:]
    if not paths:
        for n in ("smollm2-135m", "qwen2.5-0.5b"):
            paths.append(subprocess.check_output([os.path.join(REPO, "scripts/fetch_model.sh"), n], text=True).strip())
    for p in paths:
        name = os.path.basename(p).split(".")[0].lower()
        open(os.path.join(OUT, "seed-" + name), "wb").write(seed_from(p))
    open(os.path.join(OUT, "seed-minimal-v3"), "wb").write(minimal(3))
    open(os.path.join(OUT, "seed-minimal-v2"), "wb").write(minimal(2))


if __name__ == "__main__":
    main()
