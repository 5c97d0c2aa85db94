#!/usr/bin/env bash
# End-to-end runs of llm-run on stories260K under valgrind memcheck (issue 7): every run must
# end with no memcheck error (invalid reads/writes, uninitialised values driving a branch,
# invalid frees) and no definite leak (--error-exitcode, --errors-for-leak-kinds=definite),
# and a generation must print the same text as outside valgrind. One of the runs is an error
# path (a missing tensor), whose cleanup must free everything too.
# LLM_RUN overrides the binary (default ./llm-run); LLM_SHARED the shared folder (../shared).
# An AddressSanitizer build cannot run under valgrind: then every case is skipped.
# Prints "ok|FAIL|skip NAME", then "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BIN="${LLM_RUN:-./llm-run}"
M="${LLM_SHARED:-../shared}/models/stories260K"
pass=0; fail=0
if ! command -v valgrind >/dev/null; then
    echo "FAIL: valgrind not installed (scripts/setup.sh installs it)"; echo "0 passed, 1 failed"; exit 1
fi
[ -x "$BIN" ] || { echo "FAIL: $BIN not built"; echo "0 passed, 1 failed"; exit 1; }
[ -f "$M/model.safetensors" ] || { echo "FAIL: $M not found (set LLM_SHARED)"; echo "0 passed, 1 failed"; exit 1; }
if [[ "$(ldd "$BIN" 2>/dev/null)" == *libasan* ]]; then   # (no grep -q: pipefail + SIGPIPE)
    echo "skip: $BIN is an AddressSanitizer build (valgrind runs on the plain build)"
    echo "0 passed, 0 failed"; exit 0
fi
TMP="$(mktemp -d "${TMPDIR:-/tmp}/llm-vg.XXXXXX")" || exit 1
trap 'rm -rf "$TMP"' EXIT
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-origins=yes --num-callers=30)

# run NAME WANT_RC COMPARE(0|1) ARGS...: valgrind run; with COMPARE its stdout must equal a
# plain run's
run() {
    local name="$1" want="$2" cmp="$3"; shift 3
    timeout 900 "${VG[@]}" --log-file="$TMP/vg.log" "$BIN" "$@" >"$TMP/vg.out" 2>"$TMP/vg.err"
    local rc=$? why=""
    if [ "$rc" -eq 99 ]; then why="memcheck errors or definite leaks"
    elif [ "$rc" -eq 124 ]; then why="timed out"
    elif [ "$rc" -ne "$want" ]; then why="exit code $rc, expected $want"
    elif [ -s "$TMP/vg.log" ]; then why="valgrind reported something"
    elif [ "$cmp" = 1 ]; then
        timeout 300 "$BIN" "$@" >"$TMP/plain.out" 2>/dev/null
        cmp -s "$TMP/vg.out" "$TMP/plain.out" || why="stdout differs from the plain run"
    fi
    if [ -z "$why" ]; then pass=$((pass + 1)); echo "ok   $name"
    else
        fail=$((fail + 1)); echo "FAIL $name: $why"
        head -n 40 "$TMP/vg.log" | sed 's/^/     /'
        head -n 5 "$TMP/vg.err" | sed 's/^/     stderr: /'
    fi
}

export OPENBLAS_NUM_THREADS=1
run "greedy generation, full cache" 0 1 -m "$M" -t 1 -p "Once upon a time" -n 48
run "two threads, h2o at budget 0.5, --json" 0 0 -m "$M" -t 2 -p "Once upon a time" -n 32 \
    --policy h2o --budget 0.5 --json
run "buzz, sampling, --logits-out" 0 1 -m "$M" -t 1 -p "Lily had a dog" -n 32 --policy buzz \
    --budget 0.5 --temp 0.8 --top-p 0.9 --seed 7 --logits-out "$TMP/l.npy"
run "streaming, --rope shifted, chunked prefill" 0 1 -m "$M" -t 1 -n 16 --policy streaming \
    --budget 24 --rope shifted --prefill-chunk 8 -p "One day, a little girl named Lily found a needle in her room. She knew it was difficult to play with it because it was sharp."
mkdir -p "$TMP/broken"; cp "$M"/config.json "$M"/tokenizer.model "$TMP/broken/"
python3 -c 'import json,struct,sys
b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; h=json.loads(b[8:8+n])
del h["model.norm.weight"]; t=json.dumps(h).encode(); open(sys.argv[2],"wb").write(struct.pack("<Q",len(t))+t+b[8+n:])' \
    "$M/model.safetensors" "$TMP/broken/model.safetensors"
run "error path: missing tensor" 1 0 -m "$TMP/broken" -t 1 -p "Once" -n 4

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
