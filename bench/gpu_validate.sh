#!/usr/bin/env bash
# The first run of the CUDA backend on a GPU (issue 18): one command, planned for <= 10 minutes
# on an H100/H200 with 16 cores, no network, nvcc (12.x/13.x), PyTorch and transformers there.
#
#   bench/gpu_validate.sh [--dry-run] [--setup-only] [--pack DIR] [--only STEPS] [--skip-bench]
#
#   --dry-run     list the steps and their time limits, run nothing (works without a GPU)
#   --setup-only  only step 1 (unpack the pack, check that every build library links and loads,
#                 import gguf): works without a GPU
#   --pack DIR    what bench/gpu_pack.sh gathered (default gpu_pack/ at the repository root)
#   --only LIST   only these steps (comma-separated names below; setup always runs)
#
# Steps (each logged to build-gpu/logs/STEP.log; one markdown report under bench/results/):
#   1 setup    unpack DIR/prefix.tar.xz (Debian -dev packages + runtime libraries) into
#              build-gpu/prefix and build against it (CPATH, LIBRARY_PATH, -rpath); the gguf wheel
#              into build-gpu/py; LLM_SHARED = ../shared, else DIR/shared (stories260K, tokenizer)
#   2 build    make CUDA=1 (sm_80 + sm_90 + PTX) -> build-cuda/llm-run; warnings counted
#   3 device   nvidia-smi; read bandwidth of device memory (bench/bandwidth.cu): the HBM floor
#   4 tests    tests/test_cuda.sh on the GPU (CUDA_TEST_QUICK=1): HF fixtures, teacher-forced
#              CPU/GPU parity of all 17 policies, identity with full at a budget that evicts nothing
#   5 smollm2  random weights of SmolLM2-135M's shape and quant types (Q4_1 matrices, Q8_0 tied
#              embedding; bench/make_random_gguf.py) and their exact F32 twin: every GPU policy vs
#              the CPU on the twin (teacher-forced, lowp), `full` vs transformers on the twin,
#              identity (h2o 1.0 = full, bit for bit)
#   6 llama7b  LLaMA-2-7B shape: 2 layers in Q4_K + F32 twin (parity vs CPU and transformers),
#              then the 32-layer F16 model (bench/make_random_llama.py, made in the background
#              from step 2 on): every GPU policy at budget 0.4 on a 1000-token prompt (runs,
#              finite logits, evicts), identity (h2o 1.0 = full)
#   7 bench    bench/bench_cuda.sh on the 7B F16 model: decode and prefill tok/s at 512/4k/16k,
#              full vs h2o 0.4 vs streaming 0.4, vs the floor (step 3's bandwidth) and transformers
# Nothing is downloaded; every model is random weights generated here (the report says so).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
DRY=0 SETUP_ONLY=0 BENCH=1 PACK=gpu_pack ONLY=""
while [ $# -gt 0 ]; do
    case $1 in
    --dry-run) DRY=1 ;;
    --setup-only) SETUP_ONLY=1 ;;
    --skip-bench) BENCH=0 ;;
    --only) ONLY=",$2,"; shift ;;
    --pack) PACK=$2; shift ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_validate: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done
case $PACK in /*) ;; *) PACK=$ROOT/$PACK ;; esac
W=$ROOT/build-gpu
NP=$(nproc)
STAMP=$(date -u +%Y%m%d-%H%M)
REPORT=bench/results/gpu-validate-$STAMP.md
PROMPT="Once upon a time, there was a little girl named Lily. She loved to play"
POLICIES="full local streaming h2o buzz scissorhands l2norm hashevict random tova snapkv pyramidkv subgen
          buzz_logn ada_snapkv ada_pyramidkv subgen_stream"
T0=$(date +%s)
mkdir -p "$W/logs" "$W/models"
export ROOT W PACK NP PROMPT POLICIES
. "$ROOT/bench/gpu_validate_steps.sh"

# step NAME LIMIT_S SUMMARY_CMD: runs s_NAME under a time limit, logs it, adds a row to the report
ROWS="" FAILS=0
step() {
    local name=$1 limit=$2 t=$(date +%s) rc
    [ -z "$ONLY" ] || [ "$name" = setup ] || [ "${ONLY#*,$name,}" != "$ONLY" ] || return 0
    LIMITS=$((${LIMITS:-0} + limit))
    if [ "$DRY" = 1 ]; then
        printf '  %-8s <= %4d s  %s\n' "$name" "$limit" "$(grep -m1 "^#   [0-9] $name" "$0" | sed 's/^#   //')"
        return 0
    fi
    echo "== $name (limit ${limit}s, $(($(date +%s) - T0))s elapsed)"
    timeout -k 10 "$limit" bash bench/gpu_validate_steps.sh "$name" >"$W/logs/$name.log" 2>&1
    rc=$?
    local dt=$(($(date +%s) - t)) sum
    sum=$(grep -E '^(RESULT|[0-9]+ passed, [0-9]+ failed)' "$W/logs/$name.log" | tail -1 | sed 's/^RESULT //')
    [ $rc -eq 124 ] && sum="stopped at the ${limit}s limit; $sum"
    echo "   rc $rc, ${dt}s: $sum"
    [ $rc -eq 0 ] || FAILS=$((FAILS + 1))
    ROWS="$ROWS| $name | $([ $rc -eq 0 ] && echo ok || echo "FAILED (rc $rc)") | $dt | ${sum//|/\\|} |"$'\n'
    return $rc
}

if [ "$DRY" = 1 ]; then
    echo "gpu_validate steps (dry run; pack: $PACK $([ -f "$PACK/prefix.tar.xz" ] && echo found || echo 'NOT found: run bench/gpu_pack.sh'); report: $REPORT):"
fi
# stop after a failed setup or build, with the report of what ran
stop() { echo "$1 failed: $W/logs/$1.log"; tail -20 "$W/logs/$1.log"; write_report "$REPORT"; echo "report: $REPORT"; exit 1; }
step setup 60 || { [ "$DRY" = 1 ] || stop setup; }
[ "$DRY" = 0 ] && . "$W/env.sh"
[ "$SETUP_ONLY" = 1 ] && { [ "$DRY" = 1 ] || cat "$W/logs/setup.log"; exit 0; }
step build 240 || { [ "$DRY" = 1 ] || stop build; }
# the 7B F16 folder (13.5 GB of random weights) is written while the tests run
if [ "$DRY" = 0 ] && [ ! -f "$W/models/llama7b-f16/config.json" ] && { [ -z "$ONLY" ] || [ "${ONLY#*,llama7b,}" != "$ONLY" ] || [ "${ONLY#*,bench,}" != "$ONLY" ]; }; then
    nice python3 bench/make_random_llama.py "$W/models/llama7b-f16" --dtype F16 \
        --tokenizer "$LLM_SHARED/models/llama2-tokenizer/tokenizer.model" >"$W/logs/make7b.log" 2>&1 &
    MAKE7B=$!
fi
step device 60
step tests 200
step smollm2 120
[ "$DRY" = 0 ] && [ -n "${MAKE7B:-}" ] && { wait "$MAKE7B" || echo "make_random_llama failed: $(tail -1 "$W/logs/make7b.log")"; }
step llama7b 240
[ "$BENCH" = 1 ] && step bench 240
[ "$DRY" = 1 ] && { echo "  limits sum to $LIMITS s; expected ~10 min on an H100 (not yet measured: no GPU run so far)"; exit 0; }

write_report "$REPORT"
echo "report: $REPORT ($(($(date +%s) - T0)) s in all, $FAILS step(s) failed)"
[ "$FAILS" = 0 ]
