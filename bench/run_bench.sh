#!/usr/bin/env bash
# Writes bench/cpu.md: the CPU benchmark of issue 6 (make bench runs this).
#
#   bench/run_bench.sh            all cores; BENCH_THREADS=N for N threads; BENCH_ARGS are
#                                 extra bench_cpu flags (--reps R --steps D --bw-mib M)
#
# Models: ../shared/models/stories260K (or models/stories260K) as stored (F32), and the
# stories110M-shaped synthetic model (scripts/make_synthetic_models.py, written to
# models/stories110M-syn when missing, never committed) in F32 and converted to F16 and BF16.
# Then the real GGUF files (issue 14; scripts/fetch_model.sh smollm2-135m qwen2.5-0.5b, skipped
# with a note when not in $LLM_RUN_MODELS / ~/.cache/llm-run) at 1 thread and at THREADS threads,
# then decode only beside their own F32 conversion (the per-byte ratio), with their peak RSS. Then bench/issue17_rows.py: the issue-17 ratios (4k-prompt budget ÷ full on SmolLM2, F32
# prefill ÷ llama.cpp when its build is cached, 2-thread decode beside a busy core ÷ 1 thread).
# The session logs at the end of the old bench/cpu.md (from the line HIST_MARK below) are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LLM_SHARED=${LLM_SHARED:-../shared}
export LLM_SHARED
THREADS=${BENCH_THREADS:-$(nproc)}
OUT=${BENCH_OUT:-bench/cpu.md}
BIN=$BUILD/bench/bench_cpu
[ -x "$BIN" ] || { echo "run_bench: $BIN not built (make $BIN)" >&2; exit 1; }

small=$LLM_SHARED/models/stories260K
[ -f "$small/config.json" ] || small=models/stories260K
[ -f "$small/config.json" ] || scripts/download_stories260k.sh >&2
big=models/stories110M-syn
if [ ! -f "$big/config.json" ]; then
    echo "run_bench: writing $big (about 0.4 GB)" >&2
    python3 scripts/make_synthetic_models.py models --only stories110M-syn >&2
fi

cmd=("$BIN" --threads "$THREADS" ${BENCH_ARGS:-} "stories260K=$small" "stories110M-syn=$big:f32" "stories110M-syn=$big:f16" "stories110M-syn=$big:bf16")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "run_bench: ${cmd[*]}" >&2
start=$(date +%s)
"${cmd[@]}" >"$tmp"
# the GGUF rows: the same bench_cpu tables (prefill 128/512/1000, decode ÷ bandwidth) at 1 and
# THREADS threads, and each file's peak RSS for one llm-run generation (GNU time)
tmpg=$(mktemp)
MODELS_DIR=${LLM_RUN_MODELS:-$HOME/.cache/llm-run}
gguf=()
[ -f "$MODELS_DIR/SmolLM2-135M-Instruct.Q4_1.gguf" ] && gguf+=("smollm2-135m=$MODELS_DIR/SmolLM2-135M-Instruct.Q4_1.gguf:auto")
[ -f "$MODELS_DIR/Qwen2.5-Coder-0.5B-Instruct.gguf" ] && gguf+=("qwen2.5-0.5b=$MODELS_DIR/Qwen2.5-Coder-0.5B-Instruct.gguf:auto")
{
    echo "## The real GGUF files (issue 14)"
    echo
    if [ ${#gguf[@]} -eq 0 ]; then
        echo "Not in $MODELS_DIR: run scripts/fetch_model.sh smollm2-135m and qwen2.5-0.5b first."
    else
        for t in $(printf '%s\n' 1 "$THREADS" | sort -un); do
            echo "### $t thread(s)"
            echo
            "$BIN" --threads "$t" ${BENCH_ARGS:-} "${gguf[@]}" | sed 's/^## /#### /; s/^### /#### /'
            echo
        done
        # per byte against the same file converted to F32 at load (issue 14's "not slower than
        # the F32 path per byte read", on the same shapes): decode only, in the Targets table
        # twice: each model's bytes/s ÷ the bandwidth measured beside it, and the two models
        # decoding in lockstep (one step of each in turn, bench_cpu paired_ratio)
        pairs=()
        for g in "${gguf[@]}"; do pairs+=("$g" "${g%:auto}:f32"); done
        for t in $(printf '%s\n' 1 "$THREADS" | sort -un); do
            echo "### Per byte against the same model in F32, $t thread(s) (decode only)"
            echo
            "$BIN" --threads "$t" --decode-only ${BENCH_ARGS:-} "${pairs[@]}" | sed 's/^## /#### /; s/^### /#### /'
            echo
        done
        echo "Peak RSS of one \`llm-run -n 32\` generation (256-token prompt, 1 thread; ru_maxrss of the child):"
        echo
        for g in "${gguf[@]}"; do
            f=${g#*=}; f=${f%:auto}
            rss=$(python3 - "$f" <<'PY'
import resource, subprocess, sys
subprocess.run(["./llm-run", "-m", sys.argv[1], "-t", "1", "-n", "32", "--ignore-eos",
                "-p", "the quick brown fox " * 64], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
)
            echo "- ${g%%=*}: ${rss:-?} MiB"
        done
    fi
} >"$tmpg"
# the issue-17 rows: ratios of interleaved llm-run runs (and llama.cpp's llama-bench when
# bench/llamacpp.sh has built it); BENCH_ROUNDS rounds each (default 3)
tmp17=$(mktemp)
trap 'rm -f "$tmp" "$tmp17" "$tmpg"' EXIT
if ! python3 bench/issue17_rows.py --rounds "${BENCH_ROUNDS:-3}" --threads "$THREADS" >"$tmp17"; then
    echo "(bench/issue17_rows.py failed: see its stderr)" >"$tmp17"
fi
secs=$(( $(date +%s) - start ))
# the session logs below HIST_MARK in the old file (hand-run A/B measurements, with their
# commands) are kept under the new tables
HIST_MARK='<!-- session logs: kept by bench/run_bench.sh -->'
tmph=$(mktemp)
trap 'rm -f "$tmp" "$tmp17" "$tmpg" "$tmph"' EXIT
[ -f "$OUT" ] && awk -v m="$HIST_MARK" 'f || $0 == m { f = 1; print }' "$OUT" >"$tmph"

cpu_model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
cores=$(nproc)
simd=$(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' | grep -xE 'avx2|fma|f16c|avx_vnni|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|avx512_fp16|amx_int8' | tr '\n' ' ')
l3=$(lscpu | sed -n 's/^L3 cache: *//p' | head -1)
{
    echo "# CPU benchmark"
    echo
    echo "Written by \`make bench\` (bench/run_bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC') in ${secs} s."
    echo
    echo "- Machine: ${cpu_model:-unknown CPU}, $cores cores online, L3 ${l3:-?}; $(uname -sm)."
    echo "- CPU SIMD flags seen: ${simd:-none}; the binary is built for baseline x86-64 and picks its kernels at run time (family used: in the line under this list)."
    echo "- Compiler: $(${CC:-cc} --version | head -1); BLAS: OpenBLAS ($(dpkg-query -W -f='${Version}' libopenblas0 2>/dev/null || echo '?'))."
    echo "- Load average when it started: $(cut -d' ' -f1-3 /proc/loadavg) (figures from a busy machine are noisy)."
    echo "- Command: \`${cmd[*]}\`"
    echo
    cat "$tmp"
    echo
    cat "$tmpg"
    echo
    cat "$tmp17"
    echo
    echo "Notes: decode bytes per token count every projection, the norms, the LM head (tied:"
    echo "once) and one embedding row in the weights' dtype, plus the live K and V (f32) the"
    echo "attention reads. stories260K (2 MB) fits in the cache, so its ratio to DRAM bandwidth can"
    echo "exceed 100%; its context is 512, so 1000-token prompts and context 900 do not apply."
    echo "The five policies of a context decode in lockstep (alternating order) with a bandwidth"
    echo "pass before each round, and the BF16 ÷ F32 ratio comes from the two decoding in lockstep,"
    echo "so the ratios hold on a busy machine better than the absolute figures (rerun on a quiet"
    echo "machine for those)."
    if [ -s "$tmph" ]; then
        echo
        cat "$tmph"
    fi
} >"$OUT"
echo "run_bench: wrote $OUT" >&2
cat "$OUT"
