#!/usr/bin/env bash
# Runs every unit test binary (build/tests/test_*) and every end-to-end script (tests/test_*.sh),
# then prints one summary line "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
export LLM_SHARED="${LLM_SHARED:-../shared}"
pass=0; fail=0; failed=()
for t in "$BUILD"/tests/test_* tests/test_*.sh; do
    [ -x "$t" ] || continue
    [[ "$t" == *.d ]] && continue
    echo "=== $t"
    if BUILD="$BUILD" "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("$t"); fi
done
echo
for f in "${failed[@]+"${failed[@]}"}"; do echo "FAILED: $f"; done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
