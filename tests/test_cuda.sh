#!/usr/bin/env bash
# The CUDA backend: build, device selection, and (where a GPU exists) CPU/GPU parity.
#
#   tests/test_cuda.sh
#
# Always (needs only the CUDA toolkit; skipped with the reason when nvcc is missing):
#   * `make CUDA=1 build-cuda/llm-run` compiles and links (sm_80 + sm_90 + PTX) without warnings;
#   * without a GPU: `--device cuda` exits 2 with one line "--device cuda: no usable CUDA
#     device (...)", `--device auto` runs on the CPU ("device": "cpu" in --json);
#   * the CPU-only binary says "built without CUDA" for --device cuda;
#   * --kv-mem-limit (CPU): a cache that does not fit stops with "try --budget X" before it is
#     allocated, and the suggested X then runs.
# Only where a CUDA device answers (else printed as "skipped: no CUDA device (reason)"):
#   * Hugging Face fixtures (tests/test_hf_logits.sh) on the GPU: max|gpu - ref| / max|ref| per
#     row <= 1e-4 for F32 weights, 1e-2 for F16/BF16 (the GPU keeps their dtype);
#   * CPU vs GPU logits at every position (prompt rows and decode steps, --logits-out) for
#     every policy at budgets 1.0 and 0.5 (and a chunked prefill, and --rope shifted),
#     teacher-forced on the CPU's greedy tokens (--force-ids; tests/cuda_emu/lib.sh parity):
#     F32 weights + f32 K/V every row max|d| <= 1e-5 x max|logit|, F16/BF16 top-1 >= 0.99 and
#     KL <= 1e-3 at every row (tests/cuda_emu/parity.py), the same eviction count;
#     CUDA_TEST_QUICK=1: the synthetic models at budget 0.5 only;
#   * identity on the GPU: at a budget that evicts nothing every policy that keeps the exact
#     attention (all but buzz_logn's logit scale and subgen_stream's own attention) gives logits
#     bit-identical to `full` on the GPU.
# Ends with "N passed, M failed". Environment: BUILD (CPU build dir, default build),
# LLM_SHARED (default ../shared).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
LLM_SHARED=${LLM_SHARED:-$ROOT/../shared}
export LLM_SHARED
# the sanitizer pass (BUILD=build-san, SANITIZE=1 inherited by make) links its own CUDA binary,
# so build-cuda/ never holds sanitized objects that a plain build would link
CUDA_BUILD=build-cuda
[ "$BUILD" = build-san ] && CUDA_BUILD=build-cuda-san
MODEL=$LLM_SHARED/models/stories260K
PROMPT="Once upon a time, there was a little girl named Lily. She loved to play"
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
pass=0 failn=0 skipn=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; failn=$((failn + 1)); }
skip() { echo "skipped: $*"; skipn=$((skipn + 1)); }
finish() {
    echo "($skipn skipped)"
    echo "$pass passed, $failn failed"
    [ "$failn" -eq 0 ]
    exit $?
}

[ -f "$MODEL/config.json" ] || { bad "no model at $MODEL (run scripts/setup.sh)"; finish; }

# ---------------------------------------------------------------- the CPU-only binary
CPU_BIN=$BUILD/llm-run
[ -x "$CPU_BIN" ] || CPU_BIN=./llm-run
if [ -x "$CPU_BIN" ] && ! nm "$CPU_BIN" 2>/dev/null | grep -q cublasCreate; then
    "$CPU_BIN" -m "$MODEL" -p "$PROMPT" -n 4 --device cuda >"$TMP/o" 2>"$TMP/e"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/e")" -eq 1 ] && grep -q "built without CUDA" "$TMP/e"; then
        ok "CPU-only build: --device cuda -> $(cat "$TMP/e")"
    else
        bad "CPU-only build: --device cuda gave rc $rc: $(head -3 "$TMP/e")"
    fi
fi

# ---------------------------------------------------------------- --kv-mem-limit (CPU)
if [ -x "$CPU_BIN" ]; then
    "$CPU_BIN" -m "$MODEL" -p "$PROMPT" -n 200 --device cpu --policy h2o --kv-mem-limit 0.0001 \
        >"$TMP/o" 2>"$TMP/e"
    rc=$?
    sugg=$(sed -n 's/.*try --budget \([0-9.]*\).*/\1/p' "$TMP/e")
    if [ $rc -eq 2 ] && [ -n "$sugg" ] && [ "$(wc -l <"$TMP/e")" -eq 1 ]; then
        ok "--kv-mem-limit too small: stops before allocating, suggests --budget $sugg"
        if "$CPU_BIN" -m "$MODEL" -p "$PROMPT" -n 200 --device cpu --policy h2o --budget "$sugg" \
            --kv-mem-limit 0.0001 --json >"$TMP/o" 2>"$TMP/e"; then
            ok "--kv-mem-limit: the suggested --budget $sugg runs"
        else
            bad "--kv-mem-limit: the suggested --budget $sugg fails: $(head -2 "$TMP/e")"
        fi
    else
        bad "--kv-mem-limit 0.0001: rc $rc, stderr: $(head -3 "$TMP/e")"
    fi
    "$CPU_BIN" -m "$MODEL" -p "$PROMPT" -n 8 --device bogus >"$TMP/o" 2>"$TMP/e"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "expected auto, cpu or cuda" "$TMP/e"; then ok "--device bogus rejected"
    else bad "--device bogus: rc $rc $(head -2 "$TMP/e")"; fi
fi

# ---------------------------------------------------------------- make CUDA=1
NVCC_BIN=$(command -v nvcc || true)
[ -z "$NVCC_BIN" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC_BIN=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC_BIN" ]; then
    skip "make CUDA=1: nvcc not found (install the CUDA toolkit; CUDA_HOME=/usr/local/cuda)"
    finish
fi
# The C objects that do not read LLM_CUDA (all but model/device.o) come from $BUILD, the tree
# `make check` has just built with the same flags, and the .cu objects from build-cuda in both
# passes (nvcc's flags do not change with SANITIZE): Makefile HOST_BUILD / CU_BUILD. The sanitizer
# pass then compiles two files, not the library and every .cu file again (minutes of every CI run).
# tests/test_cuda_emu.sh builds the same way.
if timeout 1800 make CUDA=1 BUILD="$CUDA_BUILD" HOST_BUILD="$BUILD" CU_BUILD=build-cuda \
    CUDA_HOME="$(dirname "$(dirname "$NVCC_BIN")")" "$CUDA_BUILD/llm-run" >"$TMP/build" 2>&1; then
    # compiler warnings only: under `make -jN check` the sub-make itself warns about the jobserver
    if grep -iE "warning" "$TMP/build" | grep -vE '^make(\[[0-9]+\])?: ' >/dev/null; then
        bad "make CUDA=1: warnings:"; grep -iE "warning" "$TMP/build" | grep -vE '^make(\[[0-9]+\])?: ' | head -10 | sed 's/^/    /'
    else
        ok "make CUDA=1 builds $CUDA_BUILD/llm-run without warnings"
    fi
else
    bad "make CUDA=1 failed:"; tail -20 "$TMP/build" | sed 's/^/    /'
    finish
fi
GPU_BIN=$CUDA_BUILD/llm-run
# CUDA_TEST_BIN: the binary of the GPU runs (e.g. build/emu/llm-run-emu: this script's GPU part
# on the emulator, tests/test_cuda_emu.sh)
[ -n "${CUDA_TEST_BIN:-}" ] && GPU_BIN=$CUDA_TEST_BIN

# does a device answer?
"$GPU_BIN" -m "$MODEL" -p "$PROMPT" -n 2 --device cuda >"$TMP/o" 2>"$TMP/e"
rc=$?
if grep -q "no usable CUDA device" "$TMP/e"; then
    reason=$(sed -n 's/.*no usable CUDA device (\(.*\)).*/\1/p' "$TMP/e")
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/e")" -eq 1 ]; then
        ok "no GPU: --device cuda exits 2 with one line: $(cat "$TMP/e")"
    else
        bad "no GPU: --device cuda gave rc $rc / $(wc -l <"$TMP/e") lines"
    fi
    if "$GPU_BIN" -m "$MODEL" -p "$PROMPT" -n 8 --device auto --json >"$TMP/o" 2>"$TMP/e" &&
        grep -q '"device":"cpu"' "$TMP/o"; then
        ok "no GPU: --device auto runs on the CPU"
    else
        bad "no GPU: --device auto: $(head -2 "$TMP/e") $(head -c 200 "$TMP/o")"
    fi
    # the CUDA build without a GPU gives the CPU's tokens
    "$GPU_BIN" -m "$MODEL" -p "$PROMPT" -n 16 --json >"$TMP/a" 2>/dev/null
    "$CPU_BIN" -m "$MODEL" -p "$PROMPT" -n 16 --json >"$TMP/b" 2>/dev/null
    if [ -s "$TMP/a" ] && python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(a["tokens"]!=b["tokens"])' "$TMP/a" "$TMP/b"; then
        ok "no GPU: the CUDA build runs the CPU backend with the same tokens"
    else
        bad "no GPU: the CUDA build's CPU run differs from the CPU build's"
    fi
    skip "GPU parity (HF fixtures, CPU vs GPU logits per policy, identity on the GPU): no CUDA device ($reason)"
    finish
fi
if [ $rc -ne 0 ]; then
    bad "--device cuda on a machine with a GPU: rc $rc: $(head -3 "$TMP/e")"
    finish
fi
ok "--device cuda runs"

# ---------------------------------------------------------------- GPU: HF fixtures
cat >"$TMP/llm-run-cuda" <<EOF
#!/usr/bin/env bash
exec "$(cd "$(dirname "$GPU_BIN")" && pwd)/$(basename "$GPU_BIN")" --device cuda "\$@"
EOF
chmod +x "$TMP/llm-run-cuda"
for j in tests/fixtures/hf/*.json; do
    name=$(basename "$j" .json)
    tol=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])).get("weights_dtype",["F32"]); print("1e-4" if set(d)=={"F32"} else "1e-2")' "$j")
    if LLM_RUN="$TMP/llm-run-cuda" HF_TOL=$tol BUILD=$BUILD tests/test_hf_logits.sh "$name" >"$TMP/hf" 2>&1; then
        ok "GPU HF fixture $name (tol $tol): $(grep -m1 -E '^ok|^PASS|worst' "$TMP/hf" || true)"
    else
        bad "GPU HF fixture $name (tol $tol):"; grep -vE '^[0-9]+ passed' "$TMP/hf" | head -8 | sed 's/^/    /'
    fi
done

# ---------------------------------------------------------------- GPU: CPU vs GPU, identity
# compare A.npy B.npy TOL -> per row max|a-b|/max|b| <= TOL (TOL 0: bit-identical)
compare() {
    python3 - "$@" <<'EOF'
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
r = int(err.argmax())
print("worst row %d of %d: %.3g" % (r, len(err), err[r]))
sys.exit(0 if err.max() <= tol else 1)
EOF
}
tokens_equal() {
    python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(a["tokens"]!=b["tokens"])' "$1" "$2"
}
# teacher-forced (tests/cuda_emu/lib.sh parity: the CPU's greedy tokens forced on both backends,
# parity.py f32 for F32 weights + f32 K/V, lowp otherwise; the same eviction count)
EMU=$GPU_BIN CPU=$CPU_BIN
. tests/cuda_emu/lib.sh
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; failn=$((failn + 1)); }
finish() {
    echo "($skipn skipped)"
    echo "$pass passed, $failn failed"
    [ "$failn" -eq 0 ]
    exit $?
}
[ -f "$BUILD/synthetic/syn-mha-f16/config.json" ] || python3 scripts/make_synthetic_models.py "$BUILD/synthetic" >/dev/null 2>&1
models=("$MODEL")
for n in syn-gqa-f32 syn-mha-f16 syn-bf16-sharded; do
    [ -f "$BUILD/synthetic/$n/config.json" ] && models+=("$BUILD/synthetic/$n")
done
for m in "${models[@]}"; do
    mname=$(basename "$m")
    rm -f "$TMP/full.npy"
    dt=$(python3 -c 'import json,struct,sys,os,glob
f=sorted(glob.glob(os.path.join(sys.argv[1],"*.safetensors")))[0]
h=open(f,"rb"); n=struct.unpack("<Q",h.read(8))[0]; hd=json.loads(h.read(n))
print(sorted({v["dtype"] for k,v in hd.items() if k!="__metadata__"})[0])' "$m")
    mode=f32; [ "$dt" = F32 ] || mode=lowp
    cfgs=("1.0" "0.5" "0.5 --prefill-chunk 7" "0.5 --rope shifted --prefill-chunk 7")
    # CUDA_TEST_QUICK=1 (bench/gpu_validate.sh): every configuration on stories260K only
    [ "${CUDA_TEST_QUICK:-0}" = 1 ] && [ "$m" != "$MODEL" ] && cfgs=("0.5")
    for pol in full local streaming h2o buzz scissorhands l2norm hashevict random tova snapkv pyramidkv subgen \
               buzz_logn ada_snapkv ada_pyramidkv subgen_stream; do
        for cfg in "${cfgs[@]}"; do
            # subgen_stream refuses --rope shifted on both backends (its sketch has no ranks)
            [ "$pol" = subgen_stream ] && [ "${cfg#*shifted}" != "$cfg" ] && continue
            set -- $cfg
            b=$1; shift
            crit=$mode; [ "$pol" = subgen_stream ] && crit=lowp # its sampled sketch: 1e-5 differences
            parity "$mname $pol budget $cfg" "$m" "$m" "$crit" 40 -- -p "$PROMPT" --policy "$pol" --budget "$b" "$@"
            if [ "$b" = 1.0 ] && [ $# -eq 0 ] && [ "$pol" != buzz_logn ] && [ "$pol" != subgen_stream ] && [ -f "$TMP/g.npy" ]; then
                if [ "$pol" = full ]; then cp "$TMP/g.npy" "$TMP/full.npy"
                elif [ ! -f "$TMP/full.npy" ]; then bad "$mname $pol 1.0: identity: no logits of full"
                elif msg=$(compare "$TMP/g.npy" "$TMP/full.npy" 0); then ok "$mname $pol 1.0: identity with full on the GPU ($msg)"
                else bad "$mname $pol 1.0: identity with full on the GPU: $msg"; fi
            fi
            rm -f "$TMP/g.npy"
        done
    done
done
finish
