#!/usr/bin/env bash
# Results that survive interruption (issue 5 "Tasks and sweeps", "Tests"):
#  - test_resume_after_kill9: a sweep killed with SIGKILL mid-way and restarted gives the same
#    results.jsonl as an uninterrupted run (timings aside);
#  - test_torn_last_line_is_cut: a half-written last line is cut on restart, the rest resumes;
#  - test_write_error_keeps_complete_lines: a write error (file size limit, as on a full disk)
#    stops the run with one line naming the file and a non-zero exit, the file holds only
#    complete lines, and a rerun completes it;
#  - test_other_configuration_refused: resuming with another --ppl-window into the same folder fails.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
TS="$TINYSTORIES"
XSUM="$SHARED/data/xsum/h2o_xsum_0shot.jsonl"
setup_e2e "$TS" "$XSUM"
PPL=(eval --task tinystories --data "$TS" --model "$MODEL" --policies full,h2o,buzz,streaming,tova,snapkv
     --budgets 0.2,0.5 --limit 4 --ppl-window 256 -t 1 --no-plot)
GEN=(eval --task xsum --data "$XSUM" --model "$MODEL" --policies local,buzz --budgets 0.3,0.6 --limit 3
     --max-new-tokens 24 -t 1 --no-plot)
strip() { jq -c 'del(.timings)' "$1"; }
same() { # same A B WHAT
    if [ -f "$1" ] && [ -f "$2" ] && [ "$(wc -l < "$1")" -gt 0 ] && diff <(strip "$1") <(strip "$2") > "$tmp/diff"; then
        ok "$3 ($(wc -l < "$1") lines equal, timings aside)"
    else
        bad "$3: $(head -3 "$tmp/diff" 2>/dev/null)"
    fi
}

timeout 300 "$BIN" "${PPL[@]}" --out "$tmp/ref" 2> "$tmp/ref.err" || bad "reference run: $(tail -1 "$tmp/ref.err")"
total=$(wc -l < "$tmp/ref/results.jsonl")

# kill -9 once a third of the lines are there (no `timeout` wrapper: $! must be llm-run itself)
"$BIN" "${PPL[@]}" --out "$tmp/kill" 2> "$tmp/kill.err" &
pid=$!
for _ in $(seq 1 3000); do
    [ -f "$tmp/kill/results.jsonl" ] && [ "$(wc -l < "$tmp/kill/results.jsonl")" -ge $((total / 3)) ] && break
    sleep 0.02
done
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
n_killed=$(wc -l < "$tmp/kill/results.jsonl")
if [ "$n_killed" -lt "$total" ]; then ok "killed mid-way with $n_killed/$total lines"; else bad "the run finished before the kill ($n_killed lines)"; fi
timeout 300 "$BIN" "${PPL[@]}" --out "$tmp/kill" 2> "$tmp/kill2.err" || bad "resumed run: $(tail -1 "$tmp/kill2.err")"
grep -q "$n_killed already done" "$tmp/kill2.err" && ok "the rerun skipped the $n_killed done runs" ||
    bad "the rerun did not report $n_killed done runs: $(grep 'already done' "$tmp/kill2.err")"
same "$tmp/kill/results.jsonl" "$tmp/ref/results.jsonl" "test_resume_after_kill9"

# a torn last line (generation task)
timeout 300 "$BIN" "${GEN[@]}" --out "$tmp/gref" 2> "$tmp/gref.err" || bad "generation run: $(tail -1 "$tmp/gref.err")"
mkdir -p "$tmp/torn"; cp "$tmp/gref/run.json" "$tmp/torn/"
head -n 5 "$tmp/gref/results.jsonl" > "$tmp/torn/results.jsonl"
sed -n 6p "$tmp/gref/results.jsonl" | head -c 77 >> "$tmp/torn/results.jsonl"
timeout 300 "$BIN" "${GEN[@]}" --out "$tmp/torn" 2> "$tmp/torn.err" || bad "run after a torn line: $(tail -1 "$tmp/torn.err")"
grep -q "torn last line" "$tmp/torn.err" && ok "the torn line was reported" || bad "no report of the torn line"
same "$tmp/torn/results.jsonl" "$tmp/gref/results.jsonl" "test_torn_last_line_is_cut"

# a write error: a 6 KiB file size limit (SIGXFSZ ignored, so write() fails with EFBIG)
( trap '' XFSZ; ulimit -f 6; exec timeout 300 "$BIN" "${PPL[@]}" --out "$tmp/full" ) 2> "$tmp/full.err"
rc=$?
lines=$(wc -l < "$tmp/full/results.jsonl")
if [ "$rc" -ne 0 ] && grep -q "results.jsonl: write failed" "$tmp/full.err" && [ "$lines" -lt "$total" ] &&
   [ "$(tail -c 1 "$tmp/full/results.jsonl" | od -An -c | tr -d ' ')" = '\n' ] && jq -e . "$tmp/full/results.jsonl" > /dev/null; then
    ok "test_write_error_keeps_complete_lines: exit $rc, '$(grep 'write failed' "$tmp/full.err" | head -1)', $lines complete lines"
else
    bad "test_write_error_keeps_complete_lines: exit $rc, $lines lines, stderr: $(tail -2 "$tmp/full.err")"
fi
timeout 300 "$BIN" "${PPL[@]}" --out "$tmp/full" 2> "$tmp/full2.err" || bad "rerun after the write error: $(tail -1 "$tmp/full2.err")"
same "$tmp/full/results.jsonl" "$tmp/ref/results.jsonl" "rerun after a write error completes the same file"

# another configuration into the same folder
if timeout 60 "$BIN" "${PPL[@]}" --ppl-window 128 --out "$tmp/ref" 2> "$tmp/cfg.err"; then
    bad "test_other_configuration_refused: a different --ppl-window was accepted"
elif [ "$(wc -l < "$tmp/cfg.err")" -eq 1 ] && grep -q "run.json.*window differs" "$tmp/cfg.err"; then
    ok "test_other_configuration_refused: $(cat "$tmp/cfg.err")"
else
    bad "test_other_configuration_refused: $(cat "$tmp/cfg.err")"
fi
finish
