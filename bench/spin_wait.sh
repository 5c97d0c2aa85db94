#!/bin/bash
# How the OpenMP wait policy moves 2-thread decode, on an idle host and with one core kept busy
# (`yes`), against 1-thread decode: the measurement behind cli/runtime.c's choice at start
# (spin when this run's threads fit the CPUs nobody else runs on, else passive). Also shows
# which wait llm-run picks by itself when its output goes to a Python reader (a pipe).
#   bench/spin_wait.sh [MODEL.gguf]     (default: SmolLM2-135M-Instruct Q4_1 from the model cache)
# Prints one line per setting: decode tok/s (64 tokens after a ~790-token prompt).
set -euo pipefail
cd "$(dirname "$0")/.."
M=${1:-$HOME/.cache/llm-run/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -f "$M" ] || { echo "spin_wait.sh: $M: not found (scripts/fetch_model.sh smollm2-135m)" >&2; exit 1; }
P=build/spin_wait_prompt.txt
mkdir -p build
head -c 3000 "${LLM_SHARED:-../shared}/data/wikitext/wiki.test.raw.reconstructed" > "$P"
tokps() { python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['timings']['decode_tok_s'],1), d.get('omp_wait',''))"; }
run() {   # THREADS [ENV=VALUE ...]: the settings as given, no re-exec
  local t=$1; shift
  env LLM_RUN_REEXEC=1 OPENBLAS_CORETYPE=SkylakeX "$@" ./llm-run -m "$M" -n 64 -t "$t" --ignore-eos --json "$P" 2>/dev/null > build/spin_wait.json
  tokps < build/spin_wait.json
}
Y=
trap '[ -n "$Y" ] && kill $Y 2>/dev/null || true' EXIT
for mode in idle busy; do
  if [ $mode = busy ]; then yes > /dev/null & Y=$!; sleep 0.5; fi
  for sc in 300000 3000 300; do echo "$mode  2 threads GOMP_SPINCOUNT=$sc: $(run 2 GOMP_SPINCOUNT=$sc)"; done
  echo "$mode  2 threads OMP_WAIT_POLICY=passive: $(run 2 OMP_WAIT_POLICY=passive)"
  echo "$mode  1 thread: $(run 1 GOMP_SPINCOUNT=300000)"
  echo "$mode  2 threads, llm-run's own choice, output piped to python3: $(./llm-run -m "$M" -n 64 -t 2 --ignore-eos --json "$P" 2>/dev/null | tokps)"
  if [ $mode = busy ]; then kill $Y; Y=; fi
done
