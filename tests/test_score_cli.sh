#!/usr/bin/env bash
# `llm-run score rouge|em|self-bleu`: the CLI's means against the reference packages' outputs
# in tests/fixtures/eval (scripts/make_rouge_fixtures.py), and its errors.
#
# The fixture records whose texts fit on one line are written out as HYP/REF (PRED/ANSWERS)
# files; the CLI's --json means must equal the fixture means within 1e-6. The `rouge` 1.0.1
# package's test files ($LLM_SHARED/data/rouge/pltrdy_rouge_tests_{hyp,ref}.txt; LLM_SHARED
# defaults to ../shared) are scored with --impl pltrdy against FilesRouge's mean. Bad inputs
# must exit non-zero with one line on stderr naming the file (and line). Needs jq.
# LLM_RUN overrides the binary (default ./llm-run). Prints "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

BIN="${LLM_RUN:-./llm-run}"
SHARED="${LLM_SHARED:-../shared}"
FIX=tests/fixtures/eval
if [ ! -x "$BIN" ] || ! command -v jq >/dev/null; then
    echo "test_score_cli: needs $BIN (make llm-run) and jq (scripts/setup.sh)" >&2
    echo "0 passed, 1 failed"; exit 1
fi
TMP="$(mktemp -d "${TMPDIR:-/tmp}/llm-score.XXXXXX")" || exit 1
trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0
ok()  { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# rouge JSON -> the 12 numbers rouge1/2/L/Lsum x p/r/f
vec='[.rouge1, .rouge2, .rougeL, .rougeLsum] | map([.p, .r, .f]) | add'

# close NAME GOT_JSON_ARRAY WANT_JSON_ARRAY: all |diff| < 1e-6
close() {
    local d
    d=$(jq -n --argjson a "$2" --argjson b "$3" \
        'if ($a|length) == ($b|length) and ($a|length) > 0
         then [range($a|length) | ($a[.] - $b[.]) | fabs] | max else 1e9 end' 2>/dev/null)
    if [ -n "$d" ] && jq -n --argjson d "$d" '$d < 1e-6' | grep -q true; then
        ok "$1 (max |diff| $d)"
    else
        bad "$1: got $2, want $3"
    fi
}

# ---------------------------------------------------------------- rouge means vs the packages
oneline='select((.target + .prediction) | test("[\n\r]") | not)'
jq -r "$oneline | .prediction" $FIX/rouge_pairs.jsonl > "$TMP/hyp.txt"
jq -r "$oneline | .target" $FIX/rouge_pairs.jsonl > "$TMP/ref.txt"
n=$(wc -l < "$TMP/hyp.txt")
for mode in g gs; do
    flag=""; [ "$mode" = gs ] && flag="--stem"
    want=$(jq -s "map($oneline | .$mode) | transpose | map(add / length)" $FIX/rouge_pairs.jsonl)
    if got=$("$BIN" score rouge "$TMP/hyp.txt" "$TMP/ref.txt" $flag --json 2>"$TMP/err"); then
        close "rouge-score${flag:+ $flag} mean over $n pairs" "$(jq -c "$vec" <<<"$got")" "$want"
    else bad "rouge-score $flag: $(cat "$TMP/err")"; fi
done
pl='select(.pl != null) | '"$oneline"
jq -r "$pl | .prediction" $FIX/rouge_pairs.jsonl > "$TMP/phyp.txt"
jq -r "$pl | .target" $FIX/rouge_pairs.jsonl > "$TMP/pref.txt"
want=$(jq -s "map($pl | .pl) | transpose | map(add / length)" $FIX/rouge_pairs.jsonl)
if got=$("$BIN" score rouge "$TMP/phyp.txt" "$TMP/pref.txt" --impl pltrdy --json 2>"$TMP/err"); then
    close "pltrdy mean over $(wc -l < "$TMP/phyp.txt") pairs" "$(jq -c "$vec" <<<"$got")" "$want"
else bad "pltrdy: $(cat "$TMP/err")"; fi

V="$SHARED/data/rouge"
if [ -f "$V/pltrdy_rouge_tests_hyp.txt" ]; then
    if got=$("$BIN" score rouge "$V/pltrdy_rouge_tests_hyp.txt" "$V/pltrdy_rouge_tests_ref.txt" \
             --impl=pltrdy --json 2>"$TMP/err"); then
        close "pltrdy on the package's test files (FilesRouge mean)" "$(jq -c "$vec" <<<"$got")" \
              "$(jq -c .files_avg $FIX/pltrdy_vectors.json)"
    else bad "pltrdy test files: $(cat "$TMP/err")"; fi
else
    bad "pltrdy test files: $V/pltrdy_rouge_tests_hyp.txt not found (set LLM_SHARED)"
fi

if out=$("$BIN" score rouge "$TMP/hyp.txt" "$TMP/ref.txt" 2>&1) && grep -q '^rougeLsum ' <<<"$out" \
   && grep -q "mean over $n pairs" <<<"$out"; then ok "table output"
else bad "table output: $out"; fi

# ---------------------------------------------------------------- em, self-bleu
jq -r 'select(.prediction | test("[\n\r]") | not) | .prediction' $FIX/em_cases.jsonl > "$TMP/pred.txt"
jq -c 'select(.prediction | test("[\n\r]") | not) | .answers' $FIX/em_cases.jsonl > "$TMP/answers.jsonl"
want=$(jq -s 'map(select(.prediction | test("[\n\r]") | not) | .em) | [add / length]' $FIX/em_cases.jsonl)
if got=$("$BIN" score em "$TMP/pred.txt" "$TMP/answers.jsonl" --json 2>"$TMP/err"); then
    close "em mean over $(wc -l < "$TMP/pred.txt") cases" "$(jq -c '[.em]' <<<"$got")" "$want"
else bad "em: $(cat "$TMP/err")"; fi
sb='select(.self_bleu != null and (.text | test("[\n\r]") | not))'
jq -r "$sb | .text" $FIX/bleu_cases.jsonl > "$TMP/texts.txt"
want=$(jq -s "map($sb | .self_bleu) | [add / length]" $FIX/bleu_cases.jsonl)
if got=$("$BIN" score self-bleu "$TMP/texts.txt" --json 2>"$TMP/err"); then
    close "self-bleu mean over $(wc -l < "$TMP/texts.txt") texts" "$(jq -c '[.self_bleu]' <<<"$got")" "$want"
else bad "self-bleu: $(cat "$TMP/err")"; fi

# ---------------------------------------------------------------- errors
# fails NAME WANT_RC PATTERN ARGS...: exit code WANT_RC, nothing on stdout, one stderr line
# matching PATTERN (grep -E)
fails() {
    local name="$1" want="$2" pat="$3"; shift 3
    "$BIN" score "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
    local lines; lines=$(grep -c . "$TMP/err")
    if [ "$rc" -eq "$want" ] && [ ! -s "$TMP/out" ] && [ "$lines" -eq 1 ] && grep -Eq -e "$pat" "$TMP/err"; then
        ok "$name: $(cat "$TMP/err")"
    else
        bad "$name: rc $rc (want $want), stderr: $(cat "$TMP/err"), stdout: $(head -c 200 "$TMP/out")"
    fi
}
printf 'a b\nc d\n' > "$TMP/two.txt"; printf 'a b\n' > "$TMP/one.txt"
printf 'a b\n\nc\n' > "$TMP/h3.txt"; printf 'a b\nx\nc\n' > "$TMP/r3.txt"
printf '["a"]\n["b", 1]\n' > "$TMP/ans_notstr.jsonl"; printf '["a"]\n{"x": 1\n' > "$TMP/ans_bad.jsonl"
printf 'ok\nbad \xff byte\n' > "$TMP/bad_utf8.txt"; : > "$TMP/empty.txt"
fails "line counts differ" 1 "two.txt has 2 lines but .*one.txt has 1" rouge "$TMP/two.txt" "$TMP/one.txt" --json
fails "missing file" 1 "nope.txt: cannot open" rouge "$TMP/nope.txt" "$TMP/one.txt"
fails "empty file" 1 "empty.txt: no lines" em "$TMP/empty.txt" "$TMP/one.txt"
fails "answers not strings" 1 "ans_notstr.jsonl:2: not a JSON list of strings" em "$TMP/two.txt" "$TMP/ans_notstr.jsonl" --json
fails "answers bad JSON" 1 "ans_bad.jsonl:2: not a JSON list" em "$TMP/two.txt" "$TMP/ans_bad.jsonl"
fails "invalid UTF-8" 1 "bad_utf8.txt:2: not valid UTF-8" rouge "$TMP/bad_utf8.txt" "$TMP/two.txt"
fails "pltrdy empty hypothesis" 1 "h3.txt:2 .*hypothesis has no sentence" rouge "$TMP/h3.txt" "$TMP/r3.txt" --impl pltrdy
fails "self-bleu without '.'" 1 "two.txt:1: self-BLEU needs" self-bleu "$TMP/two.txt"
fails "bad --impl" 2 "--impl foo" rouge "$TMP/two.txt" "$TMP/two.txt" --impl foo
fails "unknown option" 2 "unknown option --bogus" rouge "$TMP/two.txt" "$TMP/two.txt" --bogus
fails "wrong arity" 2 "expected" rouge "$TMP/two.txt"
# Google rouge-score: an empty line is a valid (zero) score
if got=$("$BIN" score rouge "$TMP/h3.txt" "$TMP/r3.txt" --json 2>&1) && jq -e '.rouge1.p >= 0' <<<"$got" >/dev/null; then
    ok "rouge-score accepts an empty hypothesis line"
else bad "rouge-score empty line: $got"; fi

echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
