#!/usr/bin/env bash
# The CUDA kernels (kernels/cuda/{elementwise,attn_prefill,attn_decode,select,sample}.cu) run on
# the CPU, for machines without a GPU: tests/cuda_emu/rewrite.py turns each launch into a call of
# tests/cuda_emu/emu.h (one OS thread per CUDA thread, real __syncthreads and warp-shuffle
# barriers, NaN-filled dynamic shared memory), and tests/cuda_emu/test_kernels_emu.cc compares
# every kernel with a double-precision reference of the CPU backend's definitions (prefill
# attention + row LSE + column sums, flash-decoding with several splits + probabilities + score
# accumulation, KV write + local/streaming/h2o eviction with ties, gather, argmax, RMSNorm, RoPE,
# embedding, SwiGLU, cast). Needs python3, g++ with C++20 and the CUDA toolkit's headers (no GPU,
# no nvcc run); skipped with the reason otherwise. Ends with "N passed, M failed".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-$(n=$(command -v nvcc) && dirname "$(dirname "$n")" || echo /usr/local/cuda)}
if [ ! -f "$CUDA_HOME/include/cuda_runtime.h" ] || [ ! -f "$CUDA_HOME/include/cublas_v2.h" ]; then
    echo "skipped: CUDA kernel emulation: no CUDA headers under $CUDA_HOME/include"
    echo "0 passed, 0 failed"
    exit 0
fi
OUTD=$BUILD/emu
mkdir -p "$OUTD" || exit 1
for f in elementwise attn_prefill attn_decode select sample; do
    python3 tests/cuda_emu/rewrite.py "kernels/cuda/$f.cu" "$OUTD/$f.inc" || { echo "1 passed, 1 failed"; exit 1; }
done
if ! timeout 900 g++ -std=c++20 -O1 -g -Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas -I. \
    -I"$OUTD" -I"$CUDA_HOME/include" -pthread -o "$OUTD/test_kernels_emu" tests/cuda_emu/test_kernels_emu.cc \
    >"$OUTD/build.log" 2>&1; then
    if grep -q "barrier" "$OUTD/build.log" && ! echo '#include <barrier>' | g++ -std=c++20 -x c++ -fsyntax-only - 2>/dev/null; then
        echo "skipped: CUDA kernel emulation: g++ without C++20 <barrier>"
        echo "0 passed, 0 failed"
        exit 0
    fi
    echo "FAIL building the kernel emulation:"; head -20 "$OUTD/build.log"
    echo "0 passed, 1 failed"
    exit 1
fi
if grep -q "warning" "$OUTD/build.log"; then
    echo "FAIL the kernel emulation builds with warnings:"; grep warning "$OUTD/build.log" | head -10
    echo "0 passed, 1 failed"
    exit 1
fi
timeout 900 "$OUTD/test_kernels_emu"
