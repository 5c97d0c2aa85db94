#!/usr/bin/env bash
# Writes tests/fixtures/perplexity/llamacpp_smollm2.txt: llama-perplexity's running values and
# final estimate on WikiText-2's test text (../shared/data/wikitext/wiki.test.raw.reconstructed)
# with SmolLM2-135M-Instruct Q4_1 (-c 128 --chunks 8) and on its F32 copy (bench/gguf_f32.py),
# the reference of tests/test_perplexity.sh for `llm-run perplexity`. llama.cpp: the build of
# bench/llamacpp.sh (never in CI: the fixture is committed).
#
#   scripts/make_perplexity_fixture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(bench/llamacpp.sh)
text=${LLM_SHARED:-../shared}/data/wikitext/wiki.test.raw.reconstructed
q=$(scripts/fetch_model.sh smollm2-135m)
f32=${q%.gguf}.F32.gguf
[ -f "$f32" ] || { python3 bench/gguf_f32.py "$q" "$f32.part" && mv "$f32.part" "$f32"; }
out=tests/fixtures/perplexity/llamacpp_smollm2.txt
mkdir -p "$(dirname "$out")"
{
    echo "# made by scripts/make_perplexity_fixture.sh with $(bench/llamacpp.sh --commit)"
    echo "# llama-perplexity -f $(basename "$text") -c 128 --chunks 8 -b 128 -t 2 (sha256 $(sha256sum "$text" | cut -c1-16)...)"
    for m in "$q" "$f32"; do
        log=$("$bin/llama-perplexity" -m "$m" -f "$text" -c 128 --chunks 8 -b 128 -t 2 2>&1)
        echo "model $(basename "$m")"
        echo "running $(grep -o '^\[1\].*' <<<"$log" | tr -d '\n')"
        echo "final $(sed -n 's/.*Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 \2/p' <<<"$log")"
    done
} > "$out"
cat "$out"
