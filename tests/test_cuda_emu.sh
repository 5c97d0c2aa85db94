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
for f in elementwise attn_prefill attn_decode select sample gemv dequant; do
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
timeout 900 "$OUTD/test_kernels_emu" | tee "$OUTD/kernels.log"
pass=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$OUTD/kernels.log")
failn=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$OUTD/kernels.log")
[ -n "$pass" ] || { pass=0; failn=1; echo "FAIL the kernel emulation did not finish"; }
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; failn=$((failn + 1)); }
finish() { echo "$pass passed, $failn failed"; [ "$failn" -eq 0 ]; exit $?; }

# ---------------------------------------------------------------- the whole engine, emulated
# build/emu/llm-run-emu: the CUDA=1 objects of the C code + tests/cuda_emu/engine_emu.cc (the
# kernels, model/cuda/engine.cu and engine_mirror.cu, a host CUDA runtime and cublasGemmEx);
# --device cuda then runs the device engine end to end, compared with --device cpu.
LLM_SHARED=${LLM_SHARED:-$ROOT/../shared}
MODEL=$LLM_SHARED/models/stories260K
if [ ! -f "$MODEL/config.json" ]; then
    echo "skipped: emulated engine: no model at $MODEL"; finish
fi
CB=build-cuda
SAN=""
if [ "$BUILD" = build-san ]; then   # make test SANITIZE=1: the emulated engine under ASan/UBSan too
    CB=build-cuda-san
    SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
fi
# the C objects of the CUDA=1 build, up to date (incremental) where nvcc exists
if command -v nvcc >/dev/null || [ -x "$CUDA_HOME/bin/nvcc" ]; then
    PATH=$PATH:$CUDA_HOME/bin timeout 1800 make -j2 CUDA=1 BUILD=$CB SANITIZE=$([ -n "$SAN" ] && echo 1 || echo 0) "$CB/llm-run" >"$OUTD/make.log" 2>&1 ||
        { bad "make CUDA=1 failed (see $OUTD/make.log)"; finish; }
fi
objs=$(ls $CB/main.o $CB/model/*.o $CB/tokenizer/*.o $CB/kernels/*.o $CB/kernels/cpu/*.o $CB/eviction/*.o $CB/eval/*.o $CB/cli/*.o 2>/dev/null)
if [ -z "$objs" ] || [ ! -f $CB/model/device.o ]; then
    echo "skipped: emulated engine: no $CB objects and no nvcc to build them (make CUDA=1)"; finish
fi
EMU=$OUTD/llm-run-emu
if timeout 900 g++ -std=c++20 -O1 -g $SAN -Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas -I. -I"$OUTD" \
        -I"$CUDA_HOME/include" -pthread -c -o "$OUTD/engine_emu.o" tests/cuda_emu/engine_emu.cc >"$OUTD/engine.log" 2>&1 &&
    ! grep -q warning "$OUTD/engine.log" &&
    g++ $SAN -o "$EMU" $objs "$OUTD/engine_emu.o" -lsentencepiece -lcjson -lpcre2-8 -lutf8proc -lz -lopenblas -lm -fopenmp -lpthread >>"$OUTD/engine.log" 2>&1; then
    ok "emulated engine builds ($EMU)"
else
    bad "emulated engine build:"; head -10 "$OUTD/engine.log"; finish
fi
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
PROMPT="Once upon a time, there was a little girl named Lily. She loved to play"
compare() { # A.npy B.npy TOL: per row max|a-b|/max|b| <= TOL (0: bit-identical)
    python3 - "$@" <<'PY'
import sys
import numpy as np
a, b, tol = np.load(sys.argv[1]), np.load(sys.argv[2]), float(sys.argv[3])
if a.shape != b.shape:
    print("shapes differ: %s vs %s" % (a.shape, b.shape)); sys.exit(1)
if tol == 0:
    same = np.array_equal(a.view(np.uint32), b.view(np.uint32))
    print("bit-identical" if same else "differ: max |a-b| = %g" % np.abs(a - b).max())
    sys.exit(0 if same else 1)
err = np.abs(a - b).max(axis=1) / np.maximum(np.abs(b).max(axis=1), 1e-30)
print("worst row %d of %d: %.3g" % (int(err.argmax()), len(err), err.max()))
sys.exit(0 if err.max() <= tol else 1)
PY
}
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["kv"]["evictions"] if sys.argv[2]=="ev" else d["tokens"])' "$1" "$2"; }
# policy | budget | extra flags: device (full, local, streaming, h2o), rounds (buzz, buzz_logn),
# host-assisted (h2o evict-first, snapkv, scissorhands, buzz --buzz-score current); chunked
# prefill; --rope shifted (keys cached before RoPE, rotated by rank; the 21-token prompt is
# longer than the capacity 14 of h2o 0.3 and 22 of budget 0.5, so chunks evict); buzz_logn's
# logit scale; ada_* (per-head capacities: the layer's regions re-laid out by the host hooks at
# prefill and, capped, at decode re-compressions); subgen_stream (its own decode attention on the
# host); F32 model: 1e-4 relative. --kv-dtype f16/bf16 rows: the device cache in 16 bits like
# the host's; the 4th field is their tolerance, about 4 units of f16's 2^-11 (bf16's 2^-8): the
# device's K/V differ from the CPU's by float rounding (GEMM order) before they are rounded to 16
# bits, so an element near a rounding boundary lands one 16-bit unit apart (measured 5.4e-4 f16);
# h2o chunked: such a unit swaps two near-tied victims at one step (same tokens and eviction
# counts; 1.2e-2 for a few rows, as the CPU's own f16 vs f32 runs differ there)
while IFS='|' read -r pol b extra tol; do
    [ -n "$pol" ] || continue
    tol=${tol:-1e-4}
    args=(-m "$MODEL" -p "$PROMPT" -n 24 --temp 0 --policy "$pol" --budget "$b" $extra --json)
    tag="emulated GPU vs CPU: $pol $b $extra"
    if ! timeout 900 "$EMU" "${args[@]}" --device cpu --logits-out "$TMP/c.npy" >"$TMP/c.json" 2>"$TMP/ce"; then
        bad "$tag: CPU run: $(head -2 "$TMP/ce")"; continue
    fi
    if ! timeout 900 "$EMU" "${args[@]}" --device cuda --logits-out "$TMP/g.npy" >"$TMP/g.json" 2>"$TMP/ge"; then
        bad "$tag: emulated GPU run: $(head -2 "$TMP/ge")"; continue
    fi
    if [ "$(field "$TMP/c.json" tok)" != "$(field "$TMP/g.json" tok)" ]; then bad "$tag: tokens differ"; continue; fi
    evc=$(field "$TMP/c.json" ev) evg=$(field "$TMP/g.json" ev)
    if msg=$(compare "$TMP/g.npy" "$TMP/c.npy" "$tol") && [ "$evc" = "$evg" ]; then
        ok "$tag: logits $msg, $evg evictions"
    else
        bad "$tag: logits $msg, evictions cpu $evc gpu $evg"
    fi
    rope=absolute; case "$extra" in *"--rope shifted"*) rope=shifted ;; esac
    case "$extra" in *"--kv-dtype f16"*) rope=$rope-f16 ;; *"--kv-dtype bf16"*) rope=$rope-bf16 ;; esac
    if [ "$pol" = full ]; then cp "$TMP/g.npy" "$TMP/full-$rope.npy"
    elif [ "$b" = 1.0 ] && [ -f "$TMP/full-$rope.npy" ]; then
        if msg=$(compare "$TMP/g.npy" "$TMP/full-$rope.npy" 0); then ok "$tag: identity with full on the emulated GPU ($msg)"
        else bad "$tag: identity with full on the emulated GPU: $msg"; fi
    fi
done <<'LIST'
full|1.0|
h2o|1.0|
buzz|1.0|
local|0.5|
streaming|0.5|
h2o|0.5|
h2o|0.5|--h2o-score mean --prefill-chunk 7
buzz|0.5|
buzz|0.5|--prefill-chunk 7
h2o|0.5|--h2o-order evict-first
snapkv|0.5|
scissorhands|0.5|--prefill-chunk 7
full|1.0|--rope shifted
h2o|1.0|--rope shifted
streaming|0.5|--rope shifted
h2o|0.3|--rope shifted --prefill-chunk 7
buzz|0.5|--rope shifted --prefill-chunk 7
snapkv|0.5|--rope shifted --prefill-chunk 7
scissorhands|0.5|--rope shifted
buzz_logn|0.5|
buzz_logn|0.5|--prefill-chunk 7 --rope shifted
buzz_logn|0.5|--buzz-score current
ada_snapkv|0.5|--snap-window 4
ada_snapkv|0.5|--snap-window 4 --prefill-chunk 7
ada_pyramidkv|0.5|--snap-window 4 --rope shifted --prefill-chunk 7
ada_snapkv|0.4|--snap-window 4 --prefill-only-decode capped --snap-recompress 4
subgen_stream|0.5|
subgen_stream|0.3|--prefill-chunk 7
full|1.0|--kv-dtype f16|2e-3
h2o|1.0|--kv-dtype f16|2e-3
snapkv|1.0|--kv-dtype f16|2e-3
h2o|0.5|--kv-dtype f16 --prefill-chunk 7|2e-2
buzz|0.5|--kv-dtype bf16|1.5e-2
snapkv|0.5|--kv-dtype f16|2e-3
scissorhands|0.5|--kv-dtype bf16 --prefill-chunk 7|1.5e-2
subgen_stream|0.3|--kv-dtype f16 --prefill-chunk 7|2e-3
full|1.0|--kv-dtype f16 --rope shifted|3e-3
LIST
# the cache does not fit the (emulated) free GPU memory: one line, before allocating it
if EMU_GPU_FREE=200000000 timeout 300 "$EMU" -m "$MODEL" -p "$PROMPT" -n 4 --device cuda >"$TMP/o" 2>"$TMP/e"; then
    bad "emulated GPU with 200 MB free: ran (below the 256 MiB reserve)"
elif grep -q "does not fit" "$TMP/e" && [ "$(wc -l <"$TMP/e")" -eq 1 ]; then ok "emulated GPU too small: $(cat "$TMP/e")"
else bad "emulated GPU too small: $(head -3 "$TMP/e")"; fi
finish
