#!/usr/bin/env python3
"""Writes a GGUF file with every quantized tensor dequantized to F32, the metadata copied
(general.file_type set to 0, all F32): the same model "in F32" as a file both llm-run and
llama.cpp read, for issue 14's "not slower than the F32 path per byte read" measured on each
engine (bench/per_byte_vs_llamacpp.py).

    bench/gguf_f32.py IN.gguf OUT.gguf

Needs the `gguf` package (PyPI; its dequantize is the reference tests/test_gguf.sh checks our
blocks against). Tensors keep their order and names; F32/F16 tensors are copied as F32.
"""
import sys

import numpy as np
import gguf
from gguf.quants import dequantize


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = f.types[0]
        if name == "general.file_type":
            w.add_uint32(name, 0)   # LLAMA_FTYPE_ALL_F32
            continue
        sub = f.types[1] if vtype == gguf.GGUFValueType.ARRAY and len(f.types) > 1 else None
        w.add_key_value(name, f.contents(), vtype, sub_type=sub)
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = tuple(int(x) for x in reversed(t.shape))   # numpy order: rows, cols
        w.add_tensor(t.name, a.reshape(shape))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
