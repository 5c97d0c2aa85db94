#!/usr/bin/env bash
# Writes tests/fixtures/sampler/llamacpp.txt: what llama.cpp's samplers (top-k, typical, top-p,
# min-p, XTC, temperature and dynamic temperature, top-n-sigma, Mirostat 1 and 2, DRY) leave of
# fixed logit rows, and the tokens their seeded chains draw (model/sampler_rng.c), the reference
# of tests/test_sampler.c for model/sampler.c; and
# tests/fixtures/sampler/dry_breakers_smollm2.txt: DRY's sequence breakers of a few texts on
# SmolLM2's vocabulary (tests/test_dry_breakers.c, tokenizer/overlap.c). Builds
# scripts/llamacpp_samplers.cpp against the llama.cpp of bench/llamacpp.sh (built once into the
# model cache; 12-15 minutes). Not run in CI: the fixture is committed.
#
#   scripts/make_sampler_fixtures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(bench/llamacpp.sh)
dir=$(dirname "$(dirname "$bin")")   # $CACHE/llamacpp-VERSION
b="$dir/build"
exe=$(mktemp -d)/llamacpp_samplers
g++ -O1 -std=c++17 -I"$dir/src/include" -I"$dir/src/src" -I"$dir/src/ggml/include" scripts/llamacpp_samplers.cpp \
    "$b/src/libllama.a" "$b/ggml/src/libggml.a" "$b/ggml/src/libggml-cpu.a" "$b/ggml/src/libggml-base.a" \
    -lpthread -fopenmp -o "$exe"
mkdir -p tests/fixtures/sampler
{
    echo "# made by scripts/make_sampler_fixtures.sh with $(bench/llamacpp.sh --commit), $(g++ --version | head -1)"
    "$exe"
} > tests/fixtures/sampler/llamacpp.txt
smol=$(scripts/fetch_model.sh smollm2-135m)
{
    echo "# made by scripts/make_sampler_fixtures.sh with $(bench/llamacpp.sh --commit) on $(basename "$smol")"
    "$exe" --breakers "$smol" 2>/dev/null
} > tests/fixtures/sampler/dry_breakers_smollm2.txt
rm -rf "$(dirname "$exe")"
echo "wrote tests/fixtures/sampler/llamacpp.txt ($(grep -c '^case' tests/fixtures/sampler/llamacpp.txt) cases)," \
     "tests/fixtures/sampler/dry_breakers_smollm2.txt ($(grep -c '^text' tests/fixtures/sampler/dry_breakers_smollm2.txt) texts)"
