#!/bin/bash
# Where a decode's threads wait: perf's share of the samples in the thread waits (the decode
# team's cpu_team_run / worker_main / cpu_team_barrier, and libgomp for builds that decode on
# OpenMP) and in the matrix kernels (mm_*), over a long greedy decode (bench/cpu.md session 20).
# Usage: bench/decode_waits.sh [BIN] [THREADS] [MODEL]   (defaults: ./llm-run, 2, SmolLM2 Q4_1)
# Prints tok/s of the run, then "wait W% kernels K%". perf must be installed (scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/llm-run} threads=${2:-2}
model=${3:-$("$here/scripts/fetch_model.sh" smollm2-135m | tail -1)}
data=$(mktemp); trap 'rm -f "$data"' EXIT
LLM_ADAPT_THREADS=0 perf record -q -D 1000 -e cpu-clock -o "$data" -- "$bin" -m "$model" -t "$threads" -n 1200 \
    --ignore-eos --policy streaming --budget 64 -p "Once upon a time" --json 2>/dev/null |
    grep -o '"decode_tok_s":[0-9.]*' | sed 's/"decode_tok_s":/tok\/s /' | tr '\n' ' '
perf report -i "$data" --sort dso,symbol 2>/dev/null | grep '%' | awk '
    { s = $1; sub("%", "", s) }
    $2 ~ /libgomp/ || $4 ~ /^(worker_main|cpu_team_run|cpu_team_barrier)$/ { w += s }
    $4 ~ /^mm_/ { k += s }
    END { printf "wait %.1f%% kernels %.1f%%\n", w, k }'
