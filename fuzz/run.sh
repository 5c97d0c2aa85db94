#!/usr/bin/env bash
# Runs the libFuzzer targets built by `make fuzz-build` (build-fuzz/fuzz_NAME), each for
# FUZZ_TIME seconds (default 60) or FUZZ_RUNS executions (default: no limit), one after another.
#   fuzz/run.sh [NAME...]        (default: every fuzz/fuzz_*.c)
# Inputs: the committed corpus fuzz/corpus/NAME (read only), the seeds read from ../shared
# (fuzz/shared_seeds.sh, copied to build-fuzz/seeds/NAME) and build-fuzz/corpus/NAME, where
# new inputs go. JSON targets use fuzz/json.dict. A crash, leak or sanitizer report is saved
# as build-fuzz/crash/NAME-crash-<sha1> and the script exits non-zero after the remaining
# targets ran; put a fixed reproducer into fuzz/corpus/NAME so `make check` replays it.
# Each target's last stats line ("Done N runs in S second(s)") goes to build-fuzz/NAME.log.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-fuzz
T="${FUZZ_TIME:-60}"
RUNS="${FUZZ_RUNS:--1}"
export LLM_SHARED="${LLM_SHARED:-../shared}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
. fuzz/shared_seeds.sh

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in fuzz/fuzz_*.c; do n=${f#fuzz/fuzz_}; names+=("${n%.c}"); done
fi
mkdir -p "$B/crash"
failed=()
for n in "${names[@]}"; do
    bin="$B/fuzz_$n"
    [ -x "$bin" ] || { echo "fuzz: $bin not built (make fuzz-build)" >&2; failed+=("$n"); continue; }
    mkdir -p "$B/corpus/$n" "fuzz/corpus/$n"
    # the seeds read from ../shared (fuzz/shared_seeds.sh), in a folder of their own
    rm -rf "$B/seeds/$n" && mkdir -p "$B/seeds/$n"
    shared_seeds "$n" | while read -r f; do cp "$f" "$B/seeds/$n/$(basename "$(dirname "$f")")-$(basename "$f")"; done
    dict=()
    case "$n" in config|index|preset|eval|tokjson) dict=(-dict=fuzz/json.dict) ;; esac
    [ "$n" = safetensors ] && dict=(-dict=fuzz/safetensors.dict)
    echo "=== fuzz_$n: ${T}s"
    "$bin" -max_total_time="$T" -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$B/crash/$n-" "${dict[@]}" \
        "$B/corpus/$n" "fuzz/corpus/$n" "$B/seeds/$n" 2>&1 | tee "$B/$n.log" | grep -E '^(#[0-9]+.*(DONE|pulse)|Done|stat::|==[0-9]+==ERROR|SUMMARY|fuzz: )'
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || failed+=("$n (exit $rc, see $B/$n.log)")
done
if [ ${#failed[@]} -gt 0 ]; then
    printf 'fuzz: FAILED: %s\n' "${failed[@]}"
    exit 1
fi
echo "fuzz: every target ran clean"
