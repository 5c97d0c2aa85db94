# Sourced by tests/test_bad_inputs.sh: output that cannot be written, interrupted runs, and
# out-of-memory (issue 7). Each case runs a small shell snippet (S: the llm-run binary, M: the
# model) and checks its exit code and stderr: one line starting with "llm-run: " matching
# PATTERN, no crash.

# check_io NAME PATTERN RC_REGEX SNIPPET
check_io() {
    local name="$1" pat="$2" want_rc="$3" snippet="$4"
    local err="$TMP/io.stderr" rc why=""
    S="$BIN" M="$GOOD" T="$TMP" timeout "$TIMEOUT" bash -c "$snippet" 2>"$err"
    rc=$?
    local lines first
    lines="$(grep -cv '^[[:space:]]*$' "$err")"
    first="$(grep -v '^[[:space:]]*$' "$err" | head -n 1)"
    if [ "$rc" -eq 124 ]; then why="timed out after ${TIMEOUT}s"
    elif ! [[ "$rc" =~ ^($want_rc)$ ]]; then why="exit code $rc, expected $want_rc"
    elif grep -qiE 'Segmentation|Aborted|core dumped|Sanitizer|runtime error:|terminate called' "$err"; then why="crash text on stderr"
    elif [ "$lines" -ne 1 ]; then why="stderr has $lines lines, expected 1"
    elif [[ "$first" != "llm-run: "* ]]; then why="stderr line does not start with 'llm-run: '"
    elif ! grep -qE -- "$pat" <<<"$first"; then why="error line does not match /$pat/"
    fi
    if [ -z "$why" ]; then pass=$((pass + 1)); echo "ok   $name: $first"
    else
        fail=$((fail + 1)); echo "FAIL $name: $why (rc=$rc)"
        sed 's/^/     stderr: /' "$err" | head -n 8 | cut -c 1-400
    fi
}

check_io "stdout is /dev/full" 'stdout: write failed: No space left' 1 \
    '"$S" -m "$M" -t 1 -p "Once upon a time" -n 40 >/dev/full'
check_io "stdout is /dev/full with --json" 'stdout: write failed' 1 \
    '"$S" -m "$M" -t 1 -p "Once upon a time" -n 40 --json >/dev/full'
# a pipe whose reader is already gone: deterministic EPIPE (no race with a reader exiting)
check_io "stdout is a closed pipe" 'stdout: write failed: Broken pipe' 1 \
    'python3 -c "import os,subprocess,sys
r,w=os.pipe(); os.close(r)
sys.exit(subprocess.call(sys.argv[1:], stdout=w))" "$S" -m "$M" -t 1 -p "Once upon a time" -n 40'
check_io "--logits-out to /dev/full" '/dev/full: write failed' 1 \
    '"$S" -m "$M" -t 1 -p "Once upon a time" -n 4 --logits-out /dev/full >/dev/null'
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    # a file size limit stands in for a full disk: the .npy is cut, the error names it
    check_io "--logits-out hits the file size limit (ulimit -f)" 'logits\.npy: write failed' 1 \
        'ulimit -f 64; trap "" XFSZ; exec "$S" -m "$M" -t 1 -p "Once upon a time" -n 40 --logits-out "$T/logits.npy" >/dev/null'
fi

# SIGINT during a long chunked prefill: exit 130, the .npy written so far stays valid.
python3 -c 'import sys; open(sys.argv[1],"w").write("Once upon a time there was a cat. " * 3000)' "$TMP/very-long.txt"
rm -f "$TMP/int.npy"
"$BIN" -m "$GOOD" -t 1 -n 8 --policy streaming --budget 64 --rope shifted --prefill-chunk 1 \
    --logits-out "$TMP/int.npy" "$TMP/very-long.txt" >"$TMP/int.out" 2>"$TMP/int.err" &
pid=$!
for _ in $(seq 1 100); do [ -s "$TMP/int.npy" ] && break; sleep 0.1; done
sleep 0.5
kill -INT "$pid"
wait "$pid"; rc=$?
rows=$(python3 -c 'import sys, numpy as np
a=np.load(sys.argv[1]); assert a.ndim==2 and a.shape[1]==512 and a.shape[0]>0 and np.isfinite(a).all(); print(a.shape[0])' "$TMP/int.npy" 2>&1)
if [ "$rc" -eq 130 ] && grep -q '^llm-run: interrupted after' "$TMP/int.err" && [[ "$rows" =~ ^[0-9]+$ ]] &&
   ! grep -qiE 'Sanitizer|runtime error' "$TMP/int.err"; then
    pass=$((pass + 1)); echo "ok   SIGINT during prefill: exit 130, $rows logits rows kept and loadable"
else
    fail=$((fail + 1)); echo "FAIL SIGINT during prefill: rc=$rc rows=$rows"; sed 's/^/     stderr: /' "$TMP/int.err" | head -5
fi

# Out of memory on the host: under ulimit -v the BLAS's work buffer cannot be had (OpenBLAS
# would spin forever in its allocation loop). One BLAS thread, so the limit is deterministic.
# AddressSanitizer builds reserve terabytes of shadow memory and cannot run under ulimit -v.
if [[ "$(ldd "$BIN" 2>/dev/null)" == *libasan* ]]; then   # (no grep -q: pipefail + SIGPIPE)
    echo "skip out of memory under ulimit -v: $BIN is an AddressSanitizer build"
else
    check_io "out of memory (ulimit -v 120000)" 'out of memory' 1 \
        'ulimit -v 120000; OPENBLAS_NUM_THREADS=1 exec "$S" -m "$M" -t 1 -p "Once upon a time" -n 4 >/dev/null'
    check_io "out of memory with 2 threads (ulimit -v 260000)" 'out of memory' 1 \
        'ulimit -v 260000; exec "$S" -m "$M" -t 2 -p "Once upon a time" -n 4 >/dev/null'
fi
