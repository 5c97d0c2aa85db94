#!/usr/bin/env bash
# No heap allocation per decode step (session 19: libgomp allocated and freed a team of one at
# every one-thread OpenMP region, 151 times a SmolLM2 token): bench/decode_mallocs.sh counts the
# allocator calls under gdb once decode has begun, for STEPS and for STEPS + 6 steps; the count
# must not grow with the steps. SmolLM2 Q4_1 (the quantized path) at 1 and 2 threads, stories260K
# F32 (matmul.c's path) at 1 thread. Skipped for an AddressSanitizer build (its allocator is
# the sanitizer's). Prints "ok|FAIL NAME", then "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export LLM_RUN="${LLM_RUN:-./llm-run}"
pass=0; fail=0
command -v gdb >/dev/null || { echo "FAIL: gdb not installed (scripts/setup.sh installs it)"; echo "0 passed, 1 failed"; exit 1; }
[ -x "$LLM_RUN" ] || { echo "FAIL: $LLM_RUN not built"; echo "0 passed, 1 failed"; exit 1; }
if [[ "$(ldd "$LLM_RUN" 2>/dev/null)" == *libasan* ]]; then
    echo "skip: $LLM_RUN is an AddressSanitizer build (the plain build is checked)"
    echo "0 passed, 0 failed"; exit 0
fi
smol=$(scripts/fetch_model.sh smollm2-135m 2>/dev/null | tail -1)
tiny="${LLM_SHARED:-../shared}/models/stories260K"

count() {   # MODEL THREADS STEPS → the allocation count
    timeout 300 bench/decode_mallocs.sh "$1" "$2" "$3" 2>&1 | sed -n 's/^allocations: //p' | tail -1
}
check() {   # NAME MODEL THREADS
    local a b
    a=$(count "$2" "$3" 4); b=$(count "$2" "$3" 10)
    if [ -z "$a" ] || [ -z "$b" ]; then
        echo "FAIL $1: no count from bench/decode_mallocs.sh"; fail=$((fail + 1))
    elif [ "$b" -gt "$a" ]; then
        echo "FAIL $1: $a allocations over 3 decode steps, $b over 9: $(((b - a) / 6)) a step"; fail=$((fail + 1))
    else
        echo "ok   $1: $a allocations over 3 decode steps, $b over 9"; pass=$((pass + 1))
    fi
}
if [ -f "$smol" ]; then
    check "SmolLM2 Q4_1 -t 1" "$smol" 1
    check "SmolLM2 Q4_1 -t 2" "$smol" 2
else
    echo "FAIL SmolLM2: not in the model cache (scripts/fetch_model.sh smollm2-135m)"; fail=$((fail + 1))
fi
if [ -f "$tiny/config.json" ]; then
    check "stories260K F32 -t 1" "$tiny" 1
else
    echo "FAIL stories260K: $tiny not found (set LLM_SHARED)"; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
