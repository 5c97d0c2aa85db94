#!/usr/bin/env bash
# Sharded sweeps (issue 5 "Tasks and sweeps"):
#  - test_shard_merge_equals_unsharded: --shard 0/2 and 1/2 into one --out (each writes
#    OUT/shard-i-of-2/), then `llm-run eval-merge OUT`: OUT/results.jsonl equals the unsharded
#    run's line for line (timings aside), and so does summary.csv (tok_s aside);
#  - the shard defaults from SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT;
#  - merging twice changes nothing (duplicates dropped);
#  - bad --shard values are one-line errors.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
LITM="$SHARED/data/lost_in_the_middle/nq-open-10_total_documents_gold_at_4.first441.jsonl.gz"
setup_e2e "$LITM"
RUN=(eval --task litm --data "$LITM" --model "$MODEL" --policies full,streaming --budgets 0.25,0.5 --limit 5
     --max-new-tokens 12 -t 1 --no-plot)
strip() { jq -c 'del(.timings)' "$1"; }
csv() { cut -d, -f1-$(( $(head -1 "$1" | tr ',' '\n' | wc -l) - 1 )) "$1"; }

timeout 300 "$BIN" "${RUN[@]}" --out "$tmp/one" 2> "$tmp/one.err" || bad "unsharded run: $(tail -1 "$tmp/one.err")"
timeout 300 "$BIN" "${RUN[@]}" --shard 0/2 --out "$tmp/sh" 2> "$tmp/s0.err" || bad "shard 0/2: $(tail -1 "$tmp/s0.err")"
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 timeout 300 "$BIN" "${RUN[@]}" --out "$tmp/sh" 2> "$tmp/s1.err" ||
    bad "shard 1/2 from SLURM: $(tail -1 "$tmp/s1.err")"
n0=$(wc -l < "$tmp/sh/shard-0-of-2/results.jsonl"); n1=$(wc -l < "$tmp/sh/shard-1-of-2/results.jsonl")
[ "$n0" -eq 12 ] && [ "$n1" -eq 8 ] && ok "shards hold examples 0,2,4 ($n0 lines) and 1,3 ($n1 lines, shard from SLURM_ARRAY_TASK_*)" ||
    bad "shard sizes $n0 and $n1 (want 12 and 8)"
if timeout 60 "$BIN" eval-merge --no-plot "$tmp/sh" 2> "$tmp/m.err"; then
    diff <(strip "$tmp/sh/results.jsonl") <(strip "$tmp/one/results.jsonl") > /dev/null &&
        ok "test_shard_merge_equals_unsharded: results.jsonl ($(wc -l < "$tmp/sh/results.jsonl") lines)" ||
        bad "test_shard_merge_equals_unsharded: merged results differ"
    diff <(csv "$tmp/sh/summary.csv") <(csv "$tmp/one/summary.csv") > /dev/null &&
        ok "merged summary.csv equals the unsharded one (tok_s aside)" || bad "summary.csv differs: $(diff <(csv "$tmp/sh/summary.csv") <(csv "$tmp/one/summary.csv") | head -3)"
    cp "$tmp/sh/results.jsonl" "$tmp/first.jsonl"
    timeout 60 "$BIN" eval-merge --no-plot "$tmp/sh" 2> "$tmp/m2.err"
    cmp -s "$tmp/sh/results.jsonl" "$tmp/first.jsonl" && grep -q "20 duplicates dropped" "$tmp/m2.err" &&
        ok "merging again is a no-op ($(tail -1 "$tmp/m2.err" | sed 's/.*(//; s/).*//'))" || bad "second merge changed the file: $(tail -1 "$tmp/m2.err")"
    timeout 60 "$BIN" eval-merge --no-plot --out "$tmp/elsewhere" "$tmp/sh/shard-0-of-2" "$tmp/sh/shard-1-of-2" 2> /dev/null &&
        diff <(strip "$tmp/elsewhere/results.jsonl") <(strip "$tmp/one/results.jsonl") > /dev/null &&
        ok "eval-merge --out OUT DIR1 DIR2 gives the same file" || bad "eval-merge --out OUT DIR1 DIR2 differs"
else
    bad "eval-merge failed: $(tail -1 "$tmp/m.err")"
fi
for s in 2/2 -1/2 1 a/b 0/0; do
    if "$BIN" "${RUN[@]}" --shard "$s" --out "$tmp/bad" 2> "$tmp/bad.err"; then bad "--shard $s accepted"
    elif [ "$(wc -l < "$tmp/bad.err")" -eq 1 ] && grep -q -- "--shard" "$tmp/bad.err"; then ok "--shard $s: $(cat "$tmp/bad.err")"
    else bad "--shard $s: $(cat "$tmp/bad.err")"; fi
done
finish
