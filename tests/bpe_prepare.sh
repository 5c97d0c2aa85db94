#!/usr/bin/env bash
# Test helper for tests/test_bpe.c: makes the tokenizer files of a real model and prints their
# folder. Fetches the GGUF with scripts/fetch_model.sh (cached, hash-checked), then writes
# OUT/tokenizer.json, OUT/tokenizer_config.json and OUT/gguf_spec.json with
# scripts/make_tokenizer_json.py, unless they are newer than the GGUF and the script.
#   tests/bpe_prepare.sh smollm2-135m|qwen2.5-0.5b OUT [--merges-format string|array]
# Exits non-zero with a one-line reason on stderr when the model cannot be fetched.
set -euo pipefail
cd "$(dirname "$0")/.."
model="$1"; out="$2"; shift 2
gguf=$(scripts/fetch_model.sh "$model") || { echo "bpe_prepare: cannot fetch $model" >&2; exit 1; }
mkdir -p "$out"
if [ ! -f "$out/gguf_spec.json" ] || [ "$gguf" -nt "$out/gguf_spec.json" ] ||
   [ scripts/make_tokenizer_json.py -nt "$out/gguf_spec.json" ]; then
    python3 scripts/make_tokenizer_json.py "$gguf" "$out/tokenizer.json" \
        --spec "$out/gguf_spec.json.part" "$@"
    mv "$out/gguf_spec.json.part" "$out/gguf_spec.json"
fi
echo "$out"
