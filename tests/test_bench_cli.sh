#!/usr/bin/env bash
# llm-run bench (cli/bench.c), llama-bench's tests and table, on stories260K: the rows it makes
# (ppN and tgN per thread count, ppN+tgM for -pg, "@ dD" with -d, in llama-bench's order), each
# with a positive mean and its repetitions (--o json: samples_ts has -r values whose mean is
# avg_ts), the md / csv / json / jsonl forms, llama-bench's accepted flags, and one-line refusals.
# Nothing here is timed: the values are only checked to be finite and positive.
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
SHARED=${LLM_SHARED:-../shared}
BIN=${LLM_RUN:-./llm-run}
M=$SHARED/models/stories260K
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

"$BIN" bench -m "$M" -p 16,32 -n 8 -t 1,2 -r 2 >"$TMP/md" 2>"$TMP/err" || bad "bench -p 16,32 -n 8 -t 1,2 failed: $(tail -1 "$TMP/err")"
got=$(awk -F'|' 'NR > 2 { gsub(/ /, "", $6); gsub(/^ +| +$/, "", $7); print $6 ":" $7 }' "$TMP/md" | tr '\n' ' ')
[ "$got" = "1:pp16 1:pp32 1:tg8 2:pp16 2:pp32 2:tg8 " ] && ok "md rows in llama-bench's order: $got" || bad "md rows: '$got'"
head -1 "$TMP/md" | grep -q '^| model | size | params | backend | threads | test | t/s |$' && ok "md header is llama-bench's" || bad "md header: $(head -1 "$TMP/md")"
awk -F'|' 'NR > 2 { split($8, a, "±"); if (!(a[1] + 0 > 0) || a[2] == "") exit 1 }' "$TMP/md" && ok "every row: mean > 0 ± sd" || bad "a row without a positive mean ± sd: $(cat "$TMP/md")"

"$BIN" bench -m "$M" -p 16 -n 4 -pg 8,4 -d 8 -r 3 -t 1 -o json >"$TMP/json" 2>"$TMP/err" || bad "bench -o json failed: $(tail -1 "$TMP/err")"
python3 - "$TMP/json" <<'EOF' && ok "-o json: pp16, tg4, pp8+tg4 at depth 8, 3 samples each, avg_ts their mean" || bad "-o json (above)"
import json, math, sys
rows = json.load(open(sys.argv[1]))
got = [(r["n_prompt"], r["n_gen"], r["n_depth"], r["n_threads"]) for r in rows]
assert got == [(16, 0, 8, 1), (0, 4, 8, 1), (8, 4, 8, 1)], got
for r in rows:
    s = r["samples_ts"]
    assert len(s) == 3 and all(x > 0 and math.isfinite(x) for x in s), s
    assert abs(sum(s) / 3 - r["avg_ts"]) <= 1e-6 * r["avg_ts"], r
    assert r["stddev_ts"] >= 0 and r["model_n_params"] > 0 and r["model_size"] > 0
EOF
"$BIN" bench -m "$M" -p 16 -n 0 -d 8 -r 1 --no-warmup >"$TMP/d" 2>/dev/null
grep -q '| pp16 @ d8 |' "$TMP/d" && ok "-d 8 names the test 'pp16 @ d8'; -n 0 drops tg" || bad "-d: $(cat "$TMP/d")"
[ "$(grep -c '| tg' "$TMP/d")" = 0 ] || bad "-n 0 still ran a tg test"

"$BIN" bench -m "$M" -p 16 -n 4 -r 2 -o csv >"$TMP/csv" 2>/dev/null
python3 - "$TMP/csv" <<'EOF' && ok "-o csv: a header and one line per test" || bad "-o csv (above)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["n_prompt"], r["n_gen"]) for r in rows] == [("16", "0"), ("0", "4")], rows
assert all(float(r["avg_ts"]) > 0 for r in rows)
EOF
"$BIN" bench -m "$M" -p 16 -n 4 -r 1 -o jsonl >"$TMP/jsonl" 2>/dev/null
python3 -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; assert len(rows) == 2' "$TMP/jsonl" 2>/dev/null &&
    ok "-o jsonl: one object a line" || bad "-o jsonl: $(cat "$TMP/jsonl")"
"$BIN" bench -m "$M" -p 16 -n 4 -r 1 -b 2048 -ub 512 -fa on -ngl 0 -ctk f16 -ctv f16 --progress >"$TMP/acc" 2>"$TMP/err" &&
    [ "$(grep -c '| pp16 \|| tg4 ' "$TMP/acc")" = 2 ] && ok "-b, -ub, -fa, -ngl 0, -ctk/-ctv f16, --progress accepted" ||
    bad "llama-bench's flags: $(tail -1 "$TMP/err")"

refuse() {   # name, pattern, args...
    local name=$1 pat=$2; shift 2
    if "$BIN" bench "$@" >/dev/null 2>"$TMP/e"; then bad "$name: exit 0"; return; fi
    if [ "$(wc -l <"$TMP/e")" -eq 1 ] && grep -Eq -- "$pat" "$TMP/e"; then ok "$name: $(cat "$TMP/e")"; else bad "$name: $(head -3 "$TMP/e")"; fi
}
refuse "no -m" '-m MODEL is required' -p 16
refuse "an unknown option" "unknown option '--frob'" -m "$M" --frob
refuse "-ngl 99" 'runs on the CPU' -m "$M" -ngl 99
refuse "-ctk q8_0" 'quantized KV caches' -m "$M" -ctk q8_0
refuse "-o sql" 'sql is llama-bench' -m "$M" -o sql
refuse "-p abc" "not an integer" -m "$M" -p abc
refuse "-pg 8" 'expected PP,TG' -m "$M" -pg 8
refuse "a missing model file" 'nope' -m "$TMP/nope.gguf"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
