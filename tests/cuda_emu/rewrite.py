"""Rewrites a kernels/cuda .cu file for tests/cuda_emu/emu.h (the CPU run of the kernels):
`k<<<grid, block, smem, stream>>>(args);` -> `emu_launch(grid, block, smem, stream, [=] { k(args); });` (arguments captured by value:
a graph capture records the launch and replays it later)
and `extern __shared__ float sm[];` -> `float *sm = emu_dyn_smem;`.
Usage: python3 rewrite.py IN.cu OUT.inc"""
import re
import sys

src = open(sys.argv[1]).read()
src, n = re.subn(r"(\w+(?:<[^<>;]*>)?)<<<(.*?)>>>\((.*?)\);",
                 lambda m: "emu_launch(%s, [=] { %s(%s); });" % (m.group(2), m.group(1), m.group(3)),
                 src, flags=re.S)
src = re.sub(r"extern __shared__ float (\w+)\[\];", r"float *\1 = emu_dyn_smem;", src)
if "<<<" in src:
    sys.exit("rewrite.py: a launch was not rewritten in " + sys.argv[1])
open(sys.argv[2], "w").write("// generated from %s by tests/cuda_emu/rewrite.py (%d launches)\n" % (sys.argv[1], n) + src)
