#!/usr/bin/env bash
# Downloads karpathy's stories260K (TinyStories, MIT) and converts it to a Hugging Face folder:
#
#   scripts/download_stories260k.sh OUT_DIR        (e.g. models/stories260K)
#
# NEEDS THE INTERNET: it fetches, with curl or wget,
#   https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin
#   https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/tok512.model
# then runs scripts/convert_llama2c.py (python3; numpy is used when installed, not required),
# which writes OUT_DIR/config.json, OUT_DIR/model.safetensors and OUT_DIR/tokenizer.model.
# For users without ../shared/models/stories260K (the same model, already converted).
# Does nothing when OUT_DIR already holds the three files. LLM_STORIES260K_URL overrides the
# base URL (a mirror, or a file:// folder holding the two files).
set -euo pipefail

PROG=download_stories260k
if [ $# -eq 1 ] && { [ "$1" = "-h" ] || [ "$1" = "--help" ]; }; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
if [ $# -ne 1 ]; then
    echo "usage: scripts/download_stories260k.sh OUT_DIR (needs the internet; see --help)" >&2
    exit 2
fi
OUT="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
BASE="${LLM_STORIES260K_URL:-https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K}"

if [ -f "$OUT/config.json" ] && [ -f "$OUT/model.safetensors" ] && [ -f "$OUT/tokenizer.model" ]; then
    echo "$PROG: $OUT already holds config.json, model.safetensors and tokenizer.model; nothing to do" >&2
    exit 0
fi
if ! command -v python3 >/dev/null; then
    echo "$PROG: python3 is needed to convert the checkpoint (scripts/setup.sh installs it)" >&2
    exit 1
fi

fetch() { # URL FILE
    if command -v curl >/dev/null; then
        curl -fL --retry 3 --connect-timeout 20 -sS -o "$2" "$1"
    elif command -v wget >/dev/null; then
        wget -q --tries=3 --timeout=20 -O "$2" "$1"
    else
        echo "$PROG: neither curl nor wget is installed" >&2
        return 1
    fi
}

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stories260k.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

echo "$PROG: downloading stories260K from $BASE (needs the internet)" >&2
for f in stories260K.bin tok512.model; do
    if ! fetch "$BASE/$f" "$TMP/$f" || [ ! -s "$TMP/$f" ]; then
        echo "$PROG: could not download $BASE/$f (this step needs the internet; or copy a converted" \
             "stories260K folder to $OUT, or set LLM_STORIES260K_URL to a mirror)" >&2
        exit 1
    fi
    echo "$PROG: $f: $(wc -c <"$TMP/$f") bytes" >&2
done

# convert into a temporary folder first, so an interrupted run leaves no half-written OUT_DIR
mkdir -p "$(dirname "$OUT")"
STAGE="$(mktemp -d "$(dirname "$OUT")/.stories260k.XXXXXX")"
trap 'rm -rf "$TMP" "$STAGE"' EXIT
python3 "$HERE/convert_llama2c.py" "$TMP/stories260K.bin" "$TMP/tok512.model" "$STAGE"
mkdir -p "$OUT"
for f in config.json model.safetensors tokenizer.model; do
    mv -f "$STAGE/$f" "$OUT/$f"
done
echo "$PROG: wrote $OUT (config.json, model.safetensors, tokenizer.model)" >&2
