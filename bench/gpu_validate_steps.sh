# bench/gpu_validate_steps.sh — the steps of bench/gpu_validate.sh (documented there), one shell
# function s_NAME each. Sourced by gpu_validate.sh; each step runs in its own process under a time
# limit, ends with a line "RESULT ..." or "N passed, M failed", and returns non-zero on failure.
# Expects: ROOT, W (build-gpu), PACK, NP, PROMPT, POLICIES; build-gpu/env.sh after step 1.

[ -f "$W/env.sh" ] && . "$W/env.sh"
BIN=${GPU_VALIDATE_BIN:-build-cuda/llm-run} # GPU_VALIDATE_BIN: e.g. the emulator, to try the steps without a GPU
G=$W/models

# setup: the pack's prefix and wheel, the environment of the later steps (build-gpu/env.sh)
s_setup() {
    local P=$W/prefix LIB INC pk
    pk=$(cd "$PACK" 2>/dev/null && pwd) || pk=""
    : >"$W/env.sh"
    if [ -n "$pk" ] && [ -f "$pk/prefix.tar.xz" ]; then
        rm -rf "$P" && mkdir -p "$P" && tar -C "$P" -xJf "$pk/prefix.tar.xz" || { echo "RESULT unpacking $pk/prefix.tar.xz failed"; return 1; }
        LIB=$P/usr/lib/x86_64-linux-gnu INC=$P/usr/include:$P/usr/include/x86_64-linux-gnu
        cat >>"$W/env.sh" <<EOF
export CPATH="$INC\${CPATH:+:\$CPATH}"
export LIBRARY_PATH="$LIB\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export LDFLAGS="-L$LIB -Wl,-rpath,$LIB"
EOF
        echo "prefix: $(du -sh "$P" | cut -f1) from $pk/prefix.tar.xz ($(head -1 "$pk/MANIFEST.txt" 2>/dev/null))"
    else
        echo "no $PACK/prefix.tar.xz: building against the system's libraries"
    fi
    if ! python3 -c 'import gguf' 2>/dev/null; then
        local whl
        whl=$(ls "$pk"/wheels/gguf-*.whl 2>/dev/null | head -1)
        [ -n "$whl" ] || { echo "RESULT no gguf module and no gguf wheel in $PACK/wheels"; return 1; }
        rm -rf "$W/py" && python3 -m zipfile -e "$whl" "$W/py" && echo "export PYTHONPATH=\"$W/py\${PYTHONPATH:+:\$PYTHONPATH}\"" >>"$W/env.sh"
    fi
    local sh=${LLM_SHARED:-$ROOT/../shared}
    [ -f "$sh/models/stories260K/config.json" ] || sh=$pk/shared
    [ -f "$sh/models/stories260K/config.json" ] || { echo "RESULT no stories260K under ../shared or $PACK/shared"; return 1; }
    echo "export LLM_SHARED=\"$(cd "$sh" && pwd)\"" >>"$W/env.sh"
    local nv
    nv=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null) && echo "export CUDA_HOME=\"$(dirname "$(dirname "$nv")")\"" >>"$W/env.sh"
    . "$W/env.sh"
    # every library of the build links and loads (from the prefix when there is one)
    cat >"$W/linkcheck.cc" <<'EOF'
#define PCRE2_CODE_UNIT_WIDTH 8
#include <cblas.h>
#include <cjson/cJSON.h>
#include <pcre2.h>
#include <sentencepiece_processor.h>
#include <utf8proc.h>
#include <zlib.h>
#include <cstdio>
int main()
{
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {0};
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    sentencepiece::SentencePieceProcessor sp;
    std::printf("sgemm %g %g %g %g, cJSON %s, utf8proc %s, zlib %s, sentencepiece ok\n", c[0], c[1], c[2], c[3],
                cJSON_Version(), utf8proc_version(), zlibVersion());
    return c[3] == 4.0f ? 0 : 1;
}
EOF
    g++ -std=c++17 -o "$W/linkcheck" "$W/linkcheck.cc" ${LDFLAGS:-} -lsentencepiece -lcjson -lpcre2-8 -lutf8proc -lz -lopenblas ||
        { echo "RESULT the build libraries do not link (see above)"; return 1; }
    "$W/linkcheck" || { echo "RESULT the link check program failed"; return 1; }
    local from
    from=$(ldd "$W/linkcheck" | grep -cE "$W/prefix")
    echo "RESULT libraries link and load ($from resolved from the pack's prefix), gguf $(python3 -c 'import gguf,importlib.metadata as m; print(m.version("gguf"))' 2>/dev/null || echo '(import failed)'), LLM_SHARED=$LLM_SHARED"
}

s_build() {
    nvcc --version | tail -2
    make -j"$NP" CUDA=1 CUDA_HOME="$CUDA_HOME" 2>&1 | tee "$W/build.out" | tail -3
    [ -x "$BIN" ] || { echo "RESULT make CUDA=1 failed"; return 1; }
    local nw
    nw=$(grep -i warning "$W/build.out" | grep -cvE '^make(\[[0-9]+\])?: ')
    grep -i warning "$W/build.out" | grep -vE '^make(\[[0-9]+\])?: ' | head -20
    echo "RESULT $BIN built by $(nvcc --version | grep -o 'release [0-9.]*'), $nw warning line(s)"
}

s_device() {
    nvidia-smi || true
    local gpu
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
    nvcc -O3 -arch=native -o "$W/bandwidth" bench/bandwidth.cu || { echo "RESULT bandwidth.cu does not build"; return 1; }
    "$W/bandwidth" 4 | tee "$W/bandwidth.out"
    local bw
    bw=$(awk '/read_GBps/ {print $2}' "$W/bandwidth.out")
    [ -n "$bw" ] || { echo "RESULT no bandwidth measured"; return 1; }
    echo "export BW=$bw" >>"$W/env.sh"
    echo "RESULT $gpu; read bandwidth $bw GB/s, $(awk '/copy_GBps/ {print "device copy " $2 " GB/s"}' "$W/bandwidth.out")"
}

s_tests() {
    CUDA_TEST_QUICK=1 BUILD=build-cuda bash tests/test_cuda.sh
}

# ids N VOCAB: N deterministic token ids in [2, VOCAB), comma-separated
ids() { python3 -c 'import sys; n, v = map(int, sys.argv[1:]); print(",".join(str(1 + (i * 7919 + 13) % (v - 2)) for i in range(n)))' "$@"; }

# hf_vs_gpu TAG HF_DIR IDS: transformers on HF_DIR teacher-forced on the tokens of $TMP/t.json,
# against the GPU's rows in $TMP/g.npy (lowp)
hf_vs_gpu() {
    local toks msg
    toks=$(json_tokens "$TMP/t.json")
    if ! python3 bench/hf_logits.py "$2" --prompt-ids "$3" --force-ids "$toks" "$TMP/h.npy" >"$TMP/he" 2>&1; then
        bad "$1: transformers: $(tail -1 "$TMP/he")"; return
    fi
    if msg=$(python3 tests/cuda_emu/parity.py "$TMP/g.npy" "$TMP/h.npy" lowp); then ok "$1: GPU vs transformers: $msg"
    else bad "$1: GPU vs transformers: $msg"; fi
}

# every policy on MODEL (vs the CPU on REF), full vs transformers on REF, h2o 1.0 = full bit for bit
policies_parity() {
    local tag=$1 model=$2 ref=$3 n=$4 ids=$5 pols=$6
    shift 6
    for pol in $pols; do
        parity "$tag $pol 0.5" "$model" "$ref" lowp "$n" -- --prompt-ids "$ids" --policy "$pol" --budget 0.5 "$@"
    done
    parity "$tag full 1.0" "$model" "$ref" lowp "$n" -- --prompt-ids "$ids" --policy full "$@"
    [ -f "$TMP/g.npy" ] || return
    cp "$TMP/g.npy" "$TMP/full.npy"
    hf_vs_gpu "$tag full" "$ref" "$ids"
    "$BIN" -m "$model" --prompt-ids "$ids" -n "$n" --temp 0 --device cuda --policy h2o --budget 1.0 "$@" \
        --force-ids "$(json_tokens "$TMP/t.json")" --logits-out "$TMP/i.npy" >/dev/null 2>"$TMP/ie"
    if cmp -s "$TMP/i.npy" "$TMP/full.npy"; then ok "$tag: h2o 1.0 logits bit-identical to full on the GPU"
    else bad "$tag: h2o 1.0 differs from full on the GPU $(head -1 "$TMP/ie")"; fi
}

s_smollm2() {
    EMU=$BIN CPU=$BIN TMP=$W/tmp pass=0 failn=0
    mkdir -p "$TMP"
    . tests/cuda_emu/lib.sh
    python3 bench/make_random_gguf.py "$G/smollm2-q4_1.gguf" --shape smollm2 --type Q4_1 --mix embd=Q8_0 --tied \
        --hf "$G/smollm2-f32" --check || { bad "make_random_gguf smollm2"; finish; }
    policies_parity "SmolLM2-shape Q4_1" "$G/smollm2-q4_1.gguf" "$G/smollm2-f32" 16 "$(ids 48 49152)" "$POLICIES" --kv-dtype f16
    finish
}

s_llama7b() {
    EMU=$BIN CPU=$BIN TMP=$W/tmp pass=0 failn=0
    mkdir -p "$TMP"
    . tests/cuda_emu/lib.sh
    local i7 M=$G/llama7b-f16
    i7=$(ids 64 32000)
    python3 bench/make_random_gguf.py "$G/llama7b-2L-q4_k.gguf" --shape llama7b --layers 2 --type Q4_K \
        --mix embd=F16,output=Q6_K --hf "$G/llama7b-2L-f32" --check || { bad "make_random_gguf llama7b 2 layers"; finish; }
    policies_parity "LLaMA-2-7B-shape (2 layers) Q4_K" "$G/llama7b-2L-q4_k.gguf" "$G/llama7b-2L-f32" 16 "$i7" "h2o snapkv" --kv-dtype f16
    [ -f "$M/config.json" ] || { bad "no $M (make_random_llama.py: $(tail -1 "$W/logs/make7b.log" 2>/dev/null))"; finish; }
    # every policy on the 32-layer F16 model: runs, finite logits, evicts; decode tok/s logged
    local long
    long=$(ids 1000 32000)
    for pol in $POLICIES; do
        if ! "$BIN" -m "$M" --prompt-ids "$long" -n 16 --ignore-eos --temp 0 --device cuda --policy "$pol" --budget 0.4 \
            --json --logits-out "$TMP/p.npy" >"$TMP/p.json" 2>"$TMP/pe"; then
            bad "7B F16 $pol 0.4: $(grep -v '^llm-run: note' "$TMP/pe" | head -1)"; continue
        fi
        if r=$(python3 - "$TMP/p.json" "$TMP/p.npy" "$pol" <<'PY'
import json, sys
import numpy as np
j, l = json.load(open(sys.argv[1])), np.load(sys.argv[2])
ev, t = j["kv"]["evictions"], j["timings"]
msg = "%d evictions, finite logits %s, prefill %.0f tok/s, decode %.1f tok/s" % (
    ev, bool(np.isfinite(l).all()), t["prefill_tok_s"], t["decode_tok_s"])
print(msg)
sys.exit(0 if np.isfinite(l).all() and (ev > 0 or sys.argv[3] == "full") else 1)
PY
        ); then ok "7B F16 $pol 0.4 (1000-token prompt, 16 new): $r"
        else bad "7B F16 $pol 0.4: $r"; fi
    done
    "$BIN" -m "$M" --prompt-ids "$(ids 500 32000)" -n 8 --temp 0 --device cuda --policy full --json --logits-out "$TMP/f.npy" >"$TMP/t.json" 2>/dev/null
    "$BIN" -m "$M" --prompt-ids "$(ids 500 32000)" -n 8 --temp 0 --device cuda --policy h2o --budget 1.0 \
        --force-ids "$(json_tokens "$TMP/t.json")" --logits-out "$TMP/i.npy" >/dev/null 2>&1
    if [ -s "$TMP/f.npy" ] && cmp -s "$TMP/f.npy" "$TMP/i.npy"; then ok "7B F16: h2o 1.0 logits bit-identical to full"
    else bad "7B F16: h2o 1.0 differs from full"; fi
    finish
}

s_bench() {
    BENCH_OUT=$W/bench.md BENCH_H="###" BENCH_GEN=32 BENCH_POLICIES="full 1|h2o 0.4|streaming 0.4" \
        bash bench/bench_cuda.sh "$G/llama7b-f16" || { echo "RESULT bench_cuda.sh failed"; return 1; }
    echo "RESULT $(grep -c '^| [0-9]' "$W/bench.md") rows (bandwidth ${BW:-?} GB/s)"
}

# write_report FILE: what ran, what was generated, every step's summary and failures
write_report() {
    local f=$1
    mkdir -p "$(dirname "$f")"
    {
        echo "# First GPU run of the CUDA backend: bench/gpu_validate.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo ""
        echo "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)," \
            "$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*'), $(nproc) cores;" \
            "commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
        echo ""
        echo "**Every model here is random weights generated on this machine** (no network; the real"
        echo "SmolLM2 GGUF, 98 MB, does not fit the 64 MiB tree): SmolLM2-135M's shape and quant types"
        echo "(Q4_1 matrices, Q8_0 tied embedding, 30 layers) and its exact F32 twin; LLaMA-2-7B's shape cut"
        echo "to 2 layers in Q4_K (+ F32 twin); LLaMA-2-7B F16, 32 layers (bench/make_random_llama.py)."
        echo "Build libraries from $PACK (bench/gpu_pack.sh): $(head -1 "$PACK/MANIFEST.txt" 2>/dev/null || echo 'none: the system')."
        echo ""
        echo "| step | status | seconds | summary |"
        echo "|---|---|---|---|"
        printf '%s' "$ROWS"
        echo ""
        for s in setup build device tests smollm2 llama7b; do
            [ -f "$W/logs/$s.log" ] || continue
            echo "## $s"
            echo '```'
            grep -E '^(ok|FAIL|RESULT|skipped|note|[0-9]+ passed)' "$W/logs/$s.log" | head -150
            echo '```'
        done
        [ -f "$W/bench.md" ] && cat "$W/bench.md"
    } >"$f"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cd "$ROOT" || exit 1
    "s_$1"
fi
