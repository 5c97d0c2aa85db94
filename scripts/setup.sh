#!/usr/bin/env bash
# Installs what llm-run's build and tests need, from Debian's packages and PyPI.
# Idempotent: does nothing (and prints nothing) when everything is present.
# Needs root (or sudo) only when a Debian package is missing.
# `scripts/setup.sh --fuzz` (used by `make fuzz`) also installs clang, its libFuzzer and
# sanitizer runtimes and LLVM's OpenMP; the normal build and `make test` do not need them.
set -euo pipefail

DEB_PKGS=(build-essential libsentencepiece-dev libcjson-dev libpcre2-dev libutf8proc-dev
          libopenblas-dev libcmocka-dev
          zlib1g-dev jq valgrind gdb python3 python3-pip)
if [ "${1:-}" = "--fuzz" ]; then
    DEB_PKGS+=(clang libomp-dev)
    # libFuzzer's runtime (libclang_rt.fuzzer) is its own package from LLVM 14 in Debian 12
    if apt-cache show libclang-rt-dev >/dev/null 2>&1; then DEB_PKGS+=(libclang-rt-dev); fi
fi
# Python packages used by the tests' reference checks (the fixtures themselves are committed).
# matplotlib draws the sweeps' summary.png (scripts/plot_sweep.py).
# gguf: tests/bpe_prepare.sh rebuilds tokenizer.json from the fetched GGUF files with
# scripts/make_tokenizer_json.py (tokenizers, transformers and llama.cpp are only needed to
# regenerate tests/fixtures/bpe).
# Not here: rouge-score, rouge==1.0.1, nltk — only scripts/make_rouge_fixtures.py needs them, to
# regenerate tests/fixtures/eval (the metrics in eval/ are C: cJSON and libm only).
PY_PKGS=(numpy matplotlib gguf)

missing=()
for p in "${DEB_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# python3/pip may come from elsewhere (pyenv, a venv): only require the Debian ones when absent.
if command -v python3 >/dev/null 2>&1; then
    tmp=(); for p in "${missing[@]}"; do [[ "$p" == python3* ]] || tmp+=("$p"); done
    missing=("${tmp[@]+"${tmp[@]}"}")
fi
if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

pymissing=()
for p in "${PY_PKGS[@]}"; do
    python3 -c "import $p" 2>/dev/null || pymissing+=("$p")
done
if ((${#pymissing[@]})); then
    echo "setup: installing Python packages: ${pymissing[*]}" >&2
    python3 -m pip install -q "${pymissing[@]}" 2>/dev/null ||
        python3 -m pip install -q --break-system-packages "${pymissing[@]}"
fi
