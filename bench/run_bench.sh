#!/usr/bin/env bash
# Writes bench/cpu.md: the CPU benchmark of issue 6 (make bench runs this).
#
#   bench/run_bench.sh            all cores; BENCH_THREADS=N for N threads; BENCH_ARGS are
#                                 extra bench_cpu flags (--reps R --steps D --bw-mib M)
#
# Models: ../shared/models/stories260K (or models/stories260K) as stored (F32), and the
# stories110M-shaped synthetic model (scripts/make_synthetic_models.py, written to
# models/stories110M-syn when missing, never committed) in F32 and converted to F16 and BF16.
# Then bench/issue17_rows.py: the issue-17 ratios (4k-prompt budget ÷ full on SmolLM2, F32
# prefill ÷ llama.cpp when its build is cached, 2-thread decode beside a busy core ÷ 1 thread).
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
# the issue-17 rows: ratios of interleaved llm-run runs (and llama.cpp's llama-bench when
# bench/llamacpp.sh has built it); BENCH_ROUNDS rounds each (default 3)
tmp17=$(mktemp)
trap 'rm -f "$tmp" "$tmp17"' EXIT
if ! python3 bench/issue17_rows.py --rounds "${BENCH_ROUNDS:-3}" --threads "$THREADS" >"$tmp17"; then
    echo "(bench/issue17_rows.py failed: see its stderr)" >"$tmp17"
fi
secs=$(( $(date +%s) - start ))

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
} >"$OUT"
echo "run_bench: wrote $OUT" >&2
cat "$OUT"
