#!/usr/bin/env bash
# llama-bench and `llm-run bench` with the same flags on the same GGUF files, one after the other
# (llama.cpp first, then llm-run, per model), both tables kept whole in bench/llamabench_same_flags.md.
# llama.cpp: bench/llamacpp.sh's build (never in CI). A shared, noisy host: one run each, read the
# tables side by side (bench/vs_llamacpp.py is the interleaved, repeated comparison).
#
#   bench/bench_vs_llamabench.sh [FLAGS...]     (default: -p 512 -n 128 -t 2 -r 3)
set -euo pipefail
cd "$(dirname "$0")/.."
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(-p 512 -n 128 -t 2 -r 3)
bin=$(bench/llamacpp.sh)
[ -x ./llm-run ] || { echo "llm-run not built (make llm-run)" >&2; exit 1; }
out=bench/llamabench_same_flags.md
{
    echo "# llama-bench and llm-run bench, the same flags on the same files"
    echo
    echo "Written by \`bench/bench_vs_llamabench.sh ${flags[*]}\` on $(date -u '+%Y-%m-%d %H:%M UTC'); llama.cpp:"
    echo "$(bench/llamacpp.sh --commit). Host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, shared and noisy: one"
    echo "run of each, llama.cpp first."
    for name in smollm2-135m qwen2.5-0.5b; do
        m=$(scripts/fetch_model.sh "$name")
        echo
        echo "## $(basename "$m")"
        echo
        echo "llama-bench:"
        echo
        "$bin/llama-bench" -m "$m" "${flags[@]}" 2>/dev/null | grep '^|'
        echo
        echo "llm-run bench:"
        echo
        ./llm-run bench -m "$m" "${flags[@]}" 2>/dev/null
    done
} | tee "$out"
