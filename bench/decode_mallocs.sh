#!/bin/bash
# Heap allocations inside CPU decode steps (per-token allocations are a bug on the hot path):
# runs llm-run under gdb, breaks on malloc / posix_memalign / aligned_alloc / memalign once the
# first engine_decode is reached, and prints the callers counted, then the total per step.
# Usage: bench/decode_mallocs.sh MODEL [THREADS] [STEPS]   (needs gdb; $LLM_RUN, else ./llm-run or
# build/llm-run). The last line, "allocations: N", is what tests/test_decode_allocs.sh compares.
# bench/cpu.md session 19: 151 a SmolLM2 token at -t 1 before 00c47df (libgomp's team of one), 0 after.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 MODEL [THREADS] [STEPS]" >&2; exit 2; }
model=$1 threads=${2:-1} steps=${3:-6}
bin=${LLM_RUN:-./llm-run}; [ -x "$bin" ] || bin=build/llm-run
cmds=$(mktemp)
trap 'rm -f "$cmds"' EXIT
cat >"$cmds" <<'GDB'
set pagination off
set breakpoint pending on
break engine_decode
run
delete
break malloc
break posix_memalign
break aligned_alloc
break memalign
commands 2-5
bt 8
continue
end
continue
GDB
# LLM_RUN_REEXEC=1: no re-exec (gdb would follow the old image); a short spin keeps gdb quick
out=$(LLM_RUN_REEXEC=1 GOMP_SPINCOUNT=1000 gdb -q -batch -x "$cmds" --args "$bin" -m "$model" -t "$threads" \
      -n "$steps" --ignore-eos --policy streaming --budget 64 -p "Once upon a time" 2>&1)
# each hit's first caller outside libc / libgomp (their frames print as "?? () from /lib/...")
callers=$(printf '%s\n' "$out" | awk '/^#0 /{found=0; next}
    /^#[1-9] / && !found && !/ from \/lib/ && !/\?\? \(\)/ {sub(/^#[0-9]+ +(0x[0-9a-f]+ in )?/, ""); sub(/ \(.*/, ""); print; found=1}')
n=$(printf '%s\n' "$callers" | grep -c . || true)
printf '%s\n' "$callers" | sort | uniq -c | sort -rn | head -10
echo "after the first decode step began, over $((steps - 1)) more steps (and the exit path):"
echo "allocations: $n"
