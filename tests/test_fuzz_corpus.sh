#!/usr/bin/env bash
# Replays the committed fuzz corpus (fuzz/corpus/NAME: seeds, inputs libFuzzer found
# interesting, and every crash reproducer found so far) through each fuzz target built with the
# normal compiler ($BUILD/fuzz/replay_NAME, made by `make check`; with SANITIZE=1 under
# AddressSanitizer + UBSan). A target passes when every input keeps the parser's contract
# (fuzz/fuzz_NAME.c): no crash, no sanitizer report, no broken invariant. The seeds taken from
# ../shared (fuzz/shared_seeds.sh: its config.json and tokenizer.model files) are replayed too.
# Prints "ok|FAIL NAME: ..." per target, then "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD="${BUILD:-build}"
export LLM_SHARED="${LLM_SHARED:-../shared}"
. fuzz/shared_seeds.sh
pass=0; fail=0
shopt -s nullglob
srcs=(fuzz/fuzz_*.c)
if [ ${#srcs[@]} -eq 0 ]; then echo "FAIL: no fuzz targets in fuzz/"; echo "0 passed, 1 failed"; exit 1; fi
for src in "${srcs[@]}"; do
    n=${src#fuzz/fuzz_}; n=${n%.c}
    bin="$BUILD/fuzz/replay_$n"
    if [ ! -x "$bin" ]; then
        echo "FAIL $n: $bin not built (make check builds it)"; fail=$((fail + 1)); continue
    fi
    files=(fuzz/corpus/"$n"/*)
    if [ ${#files[@]} -eq 0 ]; then
        echo "FAIL $n: fuzz/corpus/$n is empty"; fail=$((fail + 1)); continue
    fi
    mapfile -t seeds < <(shared_seeds "$n")
    if out=$(timeout 600 "$bin" "fuzz/corpus/$n" "${seeds[@]}" 2>&1); then
        echo "ok   $n: $(tail -n 1 <<<"$out")"; pass=$((pass + 1))
    else
        echo "FAIL $n: exit $?"; sed 's/^/     /' <<<"$out" | tail -n 20; fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
