#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, llama-tokenize and llama-perplexity once, from the source that ships in
# the PyPI sdist of llama-cpp-python (its vendor/llama.cpp), into a cache outside the repo, and
# prints the bin directory. The reference for speed (bench/, issue 17) and for GGUF tokenization
# (scripts/make_bpe_fixtures.py, issue 15) and perplexity
# (scripts/make_perplexity_fixture.sh). Never run in CI: 12-15 minutes on 2 cores.
#
#   bench/llamacpp.sh            # build if missing, print the bin dir
#   bench/llamacpp.sh --commit   # print the llama.cpp commit the build came from
#
# Version pinned below; the llama.cpp commit is read from the sdist (vendor/llama.cpp's
# build-info or git metadata) and recorded in $DIR/COMMIT. ISA: GGML_NATIVE=OFF with the AVX2 /
# AVX-512 (+VNNI, BF16) options this host's /proc/cpuinfo shows; never AMX (a native build
# crashed with SIGILL in its AMX path on these machines: Linux grants AMX tiles only after
# arch_prctl(ARCH_REQ_XCOMP_PERM)).
set -euo pipefail
VERSION=0.3.36
CACHE="${LLM_RUN_MODELS:-$HOME/.cache/llm-run}"
DIR="$CACHE/llamacpp-$VERSION"
BIN="$DIR/build/bin"

if [ "${1:-}" = "--commit" ]; then cat "$DIR/COMMIT" 2>/dev/null || echo unknown; exit 0; fi
if [ -x "$BIN/llama-bench" ] && [ -x "$BIN/llama-tokenize" ] && [ -x "$BIN/llama-perplexity" ]; then echo "$BIN"; exit 0; fi

mkdir -p "$DIR"
if [ ! -d "$DIR/src" ]; then
    echo "llamacpp: downloading llama-cpp-python==$VERSION sdist from PyPI" >&2
    python3 -m pip download -q --no-deps --no-binary :all: -d "$DIR/sdist" "llama-cpp-python==$VERSION" >&2
    tar -xzf "$DIR"/sdist/llama_cpp_python-$VERSION.tar.gz -C "$DIR"
    mv "$DIR/llama_cpp_python-$VERSION/vendor/llama.cpp" "$DIR/src"
    rm -rf "$DIR/llama_cpp_python-$VERSION" "$DIR/sdist"
fi
# the commit: the sdist carries no git metadata (llama-bench prints "commit unknown"); record the
# sdist's hash and the llama.cpp commit its vendor/ submodule pins (0c1e570 for 0.3.36, as the
# project's issue 17 recorded from the upstream repository)
if [ ! -f "$DIR/COMMIT" ]; then
    echo "llama-cpp-python $VERSION sdist, vendor/llama.cpp = llama.cpp 0c1e570 (submodule pin of that release)" > "$DIR/COMMIT"
fi

flags=(-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
       -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release
       -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF)
cpu=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { grep -qw "$1" <<<"$cpu"; }
has avx && flags+=(-DGGML_AVX=ON)
has avx2 && flags+=(-DGGML_AVX2=ON)
has fma && flags+=(-DGGML_FMA=ON)
has f16c && flags+=(-DGGML_F16C=ON)
has avx_vnni && flags+=(-DGGML_AVX_VNNI=ON)
if has avx512f; then
    flags+=(-DGGML_AVX512=ON)
    has avx512_vnni && flags+=(-DGGML_AVX512_VNNI=ON)
    has avx512_bf16 && flags+=(-DGGML_AVX512_BF16=ON)
    has avx512vbmi && flags+=(-DGGML_AVX512_VBMI=ON)
fi
echo "llamacpp: building (${flags[*]})" >&2
cmake -S "$DIR/src" -B "$DIR/build" "${flags[@]}" >"$DIR/cmake.log" 2>&1 ||
    { tail -20 "$DIR/cmake.log" >&2; exit 1; }
cmake --build "$DIR/build" -j"$(nproc)" --target llama-bench llama-tokenize llama-perplexity >"$DIR/build.log" 2>&1 ||
    { tail -30 "$DIR/build.log" >&2; exit 1; }
printf '%s\n' "${flags[*]}" > "$DIR/FLAGS"
echo "$BIN"
