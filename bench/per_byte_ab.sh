#!/bin/bash
# Per byte against the same model in F32, two builds alternating (issue 14's target on a noisy
# host): for each round, thread count and build, one
#   BENCH --threads T --decode-only --reps 3 smol=<SmolLM2>:auto smol=<SmolLM2>:f32 qwen=<Qwen2.5>:auto qwen=<Qwen2.5>:f32
# and the lines of its table: model, weights, tok/s, bandwidth GB/s, ÷ bandwidth, context, then
# the target rows ("decode bytes/s ÷ the same model's in F32").
# Usage: bench/per_byte_ab.sh OLD_BENCH_CPU NEW_BENCH_CPU [ROUNDS]   (THREADS="1 2" by default;
# models from scripts/fetch_model.sh). Build the old one in a worktree: git worktree add --detach
# /tmp/old REV && make -C /tmp/old build/bench/bench_cpu.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BENCH_CPU NEW_BENCH_CPU [ROUNDS]" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
S=$("$here/scripts/fetch_model.sh" smollm2-135m | tail -1)
Q=$("$here/scripts/fetch_model.sh" qwen2.5-0.5b | tail -1)
for r in $(seq 1 "$rounds"); do
  for T in ${THREADS:-1 2}; do
    for b in old new; do
      bin=$old; [ $b = new ] && bin=$new
      echo "== round $r threads $T $b ($bin)"
      "$bin" --threads "$T" --decode-only --reps 3 smol="$S":auto smol="$S":f32 qwen="$Q":auto qwen="$Q":f32 2>&1 |
        grep '^| \(smol\|qwen\|decode bytes/s ÷ the same\)' | grep -v '≥ 85%' |
        awk -F'|' '{print $2,$3,$8,$10,$11,$4}'
    done
  done
done
