#!/usr/bin/env bash
# GPU benchmark of the CUDA backend (issue 4), to run on a machine with a GPU; batch 1,
# LLaMA-2-7B-shaped random F16 weights generated there (nothing is downloaded).
#
#   bench/bench_cuda.sh [MODEL_DIR]      (default: build-cuda/bench/llama7b-random-f16)
#
# Steps: make CUDA=1; bench/make_random_llama.py (once; needs numpy and a LLaMA-2
# tokenizer.model at $LLM_SHARED/models/llama2-tokenizer or TOKENIZER=...); the read bandwidth of
# the GPU (bench/bandwidth.cu) measured in the same run; then llm-run --device cuda at context
# 512, 4096 and 16384 (prompt ctx − 64 tokens of "the", 64 generated; rope scaling linear x4 in
# the generated config) for full, buzz 0.4, h2o 0.4, streaming 0.4, plus h2o 1.0 (eviction
# overhead at a budget that evicts nothing); prefill tok/s of a 4096-token prompt; the engine's
# device bytes. Each decode figure is printed next to its bandwidth floor:
#   floor tok/s = read bandwidth / bytes read per token,
#   bytes per token = weight bytes (all matrices but the embedding, + one embedding row)
#                   + average live KV slots x layers x KV heads x head_dim x 2 (K, V) x 2 bytes
# and next to Hugging Face transformers (bench/hf_bench.py, full cache) when torch and
# transformers are installed there. Results: a markdown table on stdout and in
# bench/results/cuda-YYYYmmdd-HHMM.md with the exact commands.
# Environment (bench/gpu_validate.sh): BENCH_OUT=FILE appends to FILE instead; BENCH_GEN (64);
# BENCH_POLICIES ("full 1|buzz 0.4|h2o 0.4|streaming 0.4|h2o 1"; "h2o 1" at 4096 only);
# BENCH_CTX ("512 4096 16384"); BW (GB/s: skip the bandwidth measurement).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
LLM_SHARED=${LLM_SHARED:-$ROOT/../shared}
MODEL=${1:-build-cuda/bench/llama7b-random-f16}
TOKENIZER=${TOKENIZER:-$LLM_SHARED/models/llama2-tokenizer/tokenizer.model}
GEN=${BENCH_GEN:-64}
OUT=${BENCH_OUT:-bench/results/cuda-$(date -u +%Y%m%d-%H%M).md}
CTXS=${BENCH_CTX:-512 4096 16384}
POLS=${BENCH_POLICIES:-full 1|buzz 0.4|h2o 0.4|streaming 0.4|h2o 1}
mkdir -p bench/results build-cuda/bench
log() { echo "$*" | tee -a "$OUT"; }
: >>"$OUT"
[ -n "${BENCH_OUT:-}" ] || : >"$OUT"

log "${BENCH_H:-#} CUDA backend benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
log ""
log "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo unknown)"
log "commit: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
log ""
log '```'
log "make -j CUDA=1"
make -j"$(nproc)" CUDA=1 >build-cuda/bench/build.log 2>&1 || { log "build failed: see build-cuda/bench/build.log"; exit 1; }
if [ ! -f "$MODEL/config.json" ]; then
    log "python3 bench/make_random_llama.py $MODEL --dtype F16 --tokenizer $TOKENIZER"
    python3 bench/make_random_llama.py "$MODEL" --dtype F16 --tokenizer "$TOKENIZER" || exit 1
fi
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
log "$NVCC -O3 -arch=native -o build-cuda/bench/bandwidth bench/bandwidth.cu && build-cuda/bench/bandwidth 4"
if [ -z "${BW:-}" ]; then
    "$NVCC" -O3 -arch=native -o build-cuda/bench/bandwidth bench/bandwidth.cu || exit 1
    BW=$(build-cuda/bench/bandwidth 4 | awk '/read_GBps/ {print $2}')
fi
log '```'
log ""
log "measured read bandwidth: $BW GB/s"

# weight bytes read per decode token: every matrix except the embedding table, + one row
WBYTES=$(python3 - "$MODEL" <<'PY'
import json, os, sys, struct, glob
tot = 0; emb_row = 0
for f in glob.glob(os.path.join(sys.argv[1], "*.safetensors")):
    h = open(f, "rb"); n = struct.unpack("<Q", h.read(8))[0]; hd = json.loads(h.read(n))
    for k, v in hd.items():
        if k == "__metadata__": continue
        nb = v["data_offsets"][1] - v["data_offsets"][0]
        if k == "model.embed_tokens.weight": emb_row = nb // v["shape"][0]
        else: tot += nb
print(tot + emb_row)
PY
)
KVTOK=$((32 * 32 * 128 * 2 * 2))   # KV bytes per cached token (F16 K and V, all layers/heads)

run() {  # run CTX POLICY BUDGET -> one table row
    local ctx=$1 pol=$2 b=$3 n=$(($1 - GEN - 1))
    local prompt; prompt=$(python3 -c "print(' '.join(['the'] * $n))")
    local cmd="./llm-run -m $MODEL --device cuda -n $GEN --temp 0 --policy $pol --budget $b --json -p \"the x $n\""
    echo "$cmd" >>"$OUT.cmds"
    local j; j=$(./llm-run -m "$MODEL" --device cuda -n $GEN --temp 0 --policy "$pol" --budget "$b" --json -p "$prompt" 2>"$OUT.err") ||
        { log "| $ctx | $pol $b | failed: $(head -1 "$OUT.err") |"; return; }
    python3 - "$j" "$ctx" "$pol" "$b" "$BW" "$WBYTES" "$KVTOK" "${HF[$ctx]:-}" <<'PY' | tee -a "$OUT"
import json, sys
j = json.loads(sys.argv[1]); ctx, pol, b = sys.argv[2:5]
bw, wb, kvt = float(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
hf = json.loads(sys.argv[8]) if sys.argv[8] else None
t = j["timings"]; kv = j["kv"]
per_tok = wb + kv["live_avg_tokens"] * kvt
floor = bw * 1e9 / per_tok
hf_s = "%.1f" % hf["decode_tok_s"] if hf else "n/a"
print("| %s | %s %s | %.1f | %.1f | %.0f%% | %s | %.0f | %.2f | %d |" % (
    ctx, pol, b, t["decode_tok_s"], floor, 100 * t["decode_tok_s"] / floor, hf_s,
    t["prefill_tok_s"], kv.get("device_bytes", 0) / 1e9, kv["evictions"]))
PY
}

declare -A HF
for ctx in $CTXS; do
    log ""
    if h=$(python3 bench/hf_bench.py "$MODEL" --ctx "$ctx" --gen $GEN 2>"$OUT.hferr"); then
        HF[$ctx]=$h
        log "transformers ctx $ctx: $h"
    else
        log "transformers ctx $ctx: not run ($(tail -1 "$OUT.hferr"))"
    fi
done
log ""
log "| context | policy budget | decode tok/s | floor tok/s | % of floor | HF decode tok/s (full) | prefill tok/s | device GB | evictions |"
log "|---|---|---|---|---|---|---|---|---|"
IFS='|' read -r -a PBS <<<"$POLS"
for ctx in $CTXS; do
    for pb in "${PBS[@]}"; do
        set -- $pb
        [ "$2" = 1 ] && [ "$1" = h2o ] && [ "$ctx" != 4096 ] && continue
        run "$ctx" "$1" "$2"
    done
done
log ""
log "Commands (prompt = BOS + 'the' x N):"
log '```'
cat "$OUT.cmds" >>"$OUT"
log '```'
rm -f "$OUT.cmds" "$OUT.err" "$OUT.hferr"
echo "results: $OUT"
