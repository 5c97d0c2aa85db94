# Sourced by tests/test_bad_inputs.sh: an eval sweep whose results file cannot be written
# (issue 7: a full disk). The run must end non-zero with its last stderr line naming
# results.jsonl and the problem, and results.jsonl must hold only complete JSON lines (the
# ones written before the disk filled up).
DATA="$SHARED/data/tinystories/TinyStories-valid.excerpt_unverified.txt"
if ! "$BIN" eval --help >/dev/null 2>&1 || [ ! -f "$DATA" ]; then
    echo "skip eval full-disk cases: no 'llm-run eval' or no $DATA"
else
    EV=(eval --task tinystories --data "$DATA" --model "$GOOD" --policies full,local
        --budgets 0.5 --limit 4 --ppl-window 64 --threads 1 --no-plot)
    # reference: the complete run
    timeout "$TIMEOUT" "$BIN" "${EV[@]}" --out "$TMP/ev-ok" >/dev/null 2>"$TMP/ev-ok.err"
    n_ok=$(grep -c '' "$TMP/ev-ok/results.jsonl" 2>/dev/null || echo 0)
    sz_ok=$(stat -c %s "$TMP/ev-ok/results.jsonl" 2>/dev/null || echo 0)

    # check_eval NAME PATTERN OUT: runs the sweep into OUT (prepared by the caller) in a shell
    # with the given prefix (limits), then checks exit, stderr's last line and results.jsonl
    check_eval() {
        local name="$1" pat="$2" out="$3" prefix="$4" rc why="" last
        S="$BIN" timeout "$TIMEOUT" bash -c "$prefix"' exec "$S" "$@"' _ "${EV[@]}" --out "$out" \
            >/dev/null 2>"$TMP/ev.err"
        rc=$?
        last="$(grep -v '^[[:space:]]*$' "$TMP/ev.err" | tail -n 1)"
        if [ "$rc" -eq 0 ]; then why="exit code 0"
        elif [ "$rc" -eq 124 ]; then why="timed out"
        elif [ "$rc" -ge 128 ]; then why="crashed: exit code $rc"
        elif grep -qiE 'Segmentation|Aborted|core dumped|Sanitizer|runtime error:' "$TMP/ev.err"; then why="crash text on stderr"
        elif [[ "$last" != llm-run* ]]; then why="last stderr line does not start with llm-run"
        elif ! grep -qE -- "$pat" <<<"$last"; then why="last stderr line does not match /$pat/"
        elif [ -f "$out/results.jsonl" ] && ! python3 -c 'import json,sys
d=open(sys.argv[1],"rb").read()
assert d == b"" or d.endswith(b"\n"), "torn last line"
for l in d.splitlines(): json.loads(l)' "$out/results.jsonl" 2>"$TMP/ev.py"; then
            why="results.jsonl is not complete JSON lines: $(tail -n 1 "$TMP/ev.py")"
        fi
        if [ -z "$why" ]; then pass=$((pass + 1)); echo "ok   $name: $last"
        else fail=$((fail + 1)); echo "FAIL $name: $why (rc=$rc)"; tail -n 5 "$TMP/ev.err" | sed 's/^/     stderr: /'; fi
    }
    if [ "$n_ok" -lt 2 ]; then
        fail=$((fail + 1)); echo "FAIL eval reference run wrote $n_ok lines:"; tail -n 3 "$TMP/ev-ok.err"
    else
        mkdir -p "$TMP/ev-full"; ln -s /dev/full "$TMP/ev-full/results.jsonl"
        check_eval "eval: results.jsonl a link to /dev/full" 'results\.jsonl.*(No space|write|not a regular file)' \
            "$TMP/ev-full" ""
        # a file-size limit between one and all lines: the disk "fills up" mid-sweep
        kb=$(( (sz_ok / 2 + 1023) / 1024 )); [ "$kb" -lt 1 ] && kb=1
        mkdir -p "$TMP/ev-fsize"
        check_eval "eval: disk full mid-sweep (ulimit -f ${kb} KiB of $sz_ok bytes)" 'results\.jsonl' \
            "$TMP/ev-fsize" "ulimit -f $kb; trap '' XFSZ;"
        n_part=$(grep -c '' "$TMP/ev-fsize/results.jsonl" 2>/dev/null || echo 0)
        echo "     ($n_part of $n_ok lines kept)"
    fi
fi
