#!/usr/bin/env bash
# llama-perplexity and `llm-run perplexity` on the same GGUF file and text, one after the other:
# the figure each prints (their final estimates should agree within the engines' logit
# differences), wall time and peak RSS (GNU time), and writes bench/perplexity_llamacpp.md.
# llama.cpp: the build of bench/llamacpp.sh (never in CI). Defaults: SmolLM2-135M Q4_1,
# WikiText-2's test text, -c 512, the first 40 chunks, 2 threads.
#
#   bench/perplexity_vs_llamacpp.sh [MODEL.gguf] [CHUNKS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-$(scripts/fetch_model.sh smollm2-135m)}
chunks=${2:-40} threads=${3:-2}
text=${LLM_SHARED:-../shared}/data/wikitext/wiki.test.raw.reconstructed
bin=$(bench/llamacpp.sh)
[ -x ./llm-run ] || { echo "llm-run not built (make llm-run)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() {   # name, command...: the final estimate, wall seconds, peak RSS MiB
    local name=$1; shift
    /usr/bin/time -v "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    local ppl wall rss
    ppl=$(cat "$tmp/$name.out" "$tmp/$name.err" | sed -n 's/.*Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 ± \2/p')
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/$name.err" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/$name.err")
    printf '| %s | %s | %.1f | %.0f |\n' "$name" "$ppl" "$wall" "$((rss / 1024))"
}
args=(-m "$model" -f "$text" -c 512 --chunks "$chunks" -t "$threads")
{
    echo "# Perplexity, llm-run against llama-perplexity on the same file"
    echo
    echo "Written by \`bench/perplexity_vs_llamacpp.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $(basename "$model"),"
    echo "$(basename "$text"), \`-c 512 --chunks $chunks -t $threads\`, one run each (llama.cpp first). llama.cpp:"
    echo "$(bench/llamacpp.sh --commit). Host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; a shared, noisy host:"
    echo "read the figures, not the timings, as exact."
    echo
    echo "| engine | final estimate | wall s | peak RSS MiB |"
    echo "|---|---|---|---|"
    run llama-perplexity "$bin/llama-perplexity" "${args[@]}"
    run "llm-run perplexity" ./llm-run perplexity "${args[@]}"
} | tee bench/perplexity_llamacpp.md
