#!/usr/bin/env bash
# A small slice of each kind of sweep, as CI runs it (issue 5 "Done when"), and bad inputs:
#  - xsum (2 articles x 2 policies x 2 budgets, BUZZ prompt): one line per triple with output,
#    ROUGE (rouge-score stemmed + pltrdy) in [0, 1], KV bytes within budget, prompt cut to the
#    context (truncated, doc_words_kept), summary.csv/md rows; full's output is the same at both
#    budgets; ROUGE recomputed by `llm-run score rouge` from the outputs equals the lines';
#  - litm (.jsonl.gz, LITM prompt): em and em_strict in {0, 1}, gold_index recorded;
#  - cnndm with the HELM prompt (no BOS, stop at ###) and --fit skip: skipped lines are counted;
#  - summary.png is drawn when matplotlib is there;
#  - bad command lines and data files: one line on stderr, exit non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
XSUM="$SHARED/data/xsum/h2o_xsum_0shot.jsonl"
CNN="$SHARED/data/cnn_dailymail/cnn_dailymail_test_first1000.jsonl"
LITM="$SHARED/data/lost_in_the_middle/nq-open-10_total_documents_gold_at_9.first441.jsonl.gz"
setup_e2e "$XSUM" "$CNN" "$LITM"

# --- xsum
if timeout 300 "$BIN" eval --task xsum --data "$XSUM" --model "$MODEL" --policies full,buzz --budgets 0.3,0.6 \
        --limit 2 --max-new-tokens 32 -t 1 --out "$tmp/x" 2> "$tmp/x.err"; then
    R="$tmp/x/results.jsonl"
    check "xsum: 8 result lines" '[ "$(wc -l < "$R")" -eq 8 ]'
    check "xsum: ROUGE metrics in [0, 1]" 'jq -e -s "all(.[]; .metrics | [.rouge1,.rouge2,.rougeL,.rougeLsum,.pltrdy_rouge1,.pltrdy_rouge2,.pltrdy_rougeL] | all(. >= 0 and . <= 1))" "$R" > /dev/null'
    check "xsum: prompts fit the context of 512 with 32 new tokens; the long article cut (truncated, doc_words_kept)" \
        'jq -e -s "all(.[]; .n_prompt_tokens <= 481) and any(.[]; .truncated and .doc_words_kept > 0 and .n_prompt_tokens > 400)" "$R" > /dev/null'
    check "xsum: peak KV within budget (buzz 0.3: <= 0.3 of full + 1 token)" \
        'jq -e -s "all(.[] | select(.policy == \"buzz\" and .budget == 0.3); .kv.peak_bytes <= 0.3 * (.n_prompt_tokens + 32) * 1280 + 1280)" "$R" > /dev/null'
    check "xsum: full gives the same output at every budget" \
        '[ "$(jq -r "select(.policy == \"full\") | .output" "$R" | sort -u | wc -l)" -eq 2 ]'
    check "xsum: summary.csv has 4 rows with CI columns" \
        '[ "$(wc -l < "$tmp/x/summary.csv")" -eq 5 ] && head -1 "$tmp/x/summary.csv" | grep -q "rouge1_mean,rouge1_ci95"'
    check "xsum: summary.md table" 'grep -q "^| buzz | 0.3 | 2 |" "$tmp/x/summary.md"'
    if python3 -c "import matplotlib" 2> /dev/null; then
        check "xsum: summary.png drawn" '[ -s "$tmp/x/summary.png" ]'
    fi
    # ROUGE of the outputs through `llm-run score` (the metrics' own CLI) equals the lines'
    if "$BIN" score rouge "$XSUM" "$XSUM" --json 2> /dev/null | grep -q rouge1; then
        jq -r 'select(.policy == "buzz" and .budget == 0.3) | .output | gsub("\n"; " ")' "$R" > "$tmp/hyp.txt"
        head -n 2 "$XSUM" | jq -r '.summary_gt | gsub("\n"; " ")' > "$tmp/ref.txt"
        want=$(jq -s '[.[] | select(.policy == "buzz" and .budget == 0.3) | .metrics.rouge1] | add / length' "$R")
        got=$("$BIN" score rouge "$tmp/hyp.txt" "$tmp/ref.txt" --stem --json 2> /dev/null | jq '.rouge1.f')
        check "xsum: mean rouge1 $want equals llm-run score rouge --stem ($got)" \
            'awk -v a="$want" -v b="$got" "BEGIN { d = a - b; exit !(b != \"\" && d < 1e-9 && d > -1e-9) }"'
    fi
    # --rescore recomputes the metrics from the outputs (and touches nothing else)
    mkdir -p "$tmp/xr"; cp "$tmp/x/run.json" "$tmp/xr/"
    jq -c '.metrics.rouge1 = 7 | del(.metrics.pltrdy_rouge2)' "$R" > "$tmp/xr/results.jsonl"
    if timeout 60 "$BIN" eval --rescore --task xsum --data "$XSUM" --out "$tmp/xr" --no-plot 2> "$tmp/xr.err"; then
        check "--rescore restores the metrics of every line" 'diff <(jq -c "del(.timings)" "$R") <(jq -c "del(.timings)" "$tmp/xr/results.jsonl") > /dev/null'
    else
        bad "--rescore failed: $(tail -1 "$tmp/xr.err")"
    fi
else
    bad "xsum slice failed: $(tail -1 "$tmp/x.err")"
fi

# --- litm (gzip)
if timeout 300 "$BIN" eval --task litm --data "$LITM" --model "$MODEL" --policies streaming,h2o --budgets 0.2,0.5 \
        --limit 2 --max-new-tokens 16 -t 1 --no-plot --out "$tmp/q" 2> "$tmp/q.err"; then
    R="$tmp/q/results.jsonl"
    check "litm: 8 lines, em and em_strict in {0, 1}, gold_index 9, prompt style litm" \
        '[ "$(jq -s "length" "$R")" -eq 8 ] && jq -e -s "all(.[]; (.metrics.em == 0 or .metrics.em == 1) and (.metrics.em_strict == 0 or .metrics.em_strict == 1) and .gold_index == 9 and .prompt_style == \"litm\")" "$R" > /dev/null'
    check "litm: the 10 documents cut evenly to fit (doc_words_kept recorded)" 'jq -e -s "all(.[]; .truncated and .doc_words_kept >= 0 and .n_prompt_tokens <= 497)" "$R" > /dev/null'
else
    bad "litm slice failed: $(tail -1 "$tmp/q.err")"
fi

# --- cnndm, HELM prompt, --fit skip
if timeout 300 "$BIN" eval --task cnndm --data "$CNN" --model "$MODEL" --prompt-style helm --fit skip --policies local \
        --budgets 0.5 --limit 3 -t 1 --no-plot --out "$tmp/c" 2> "$tmp/c.err"; then
    R="$tmp/c/results.jsonl"
    check "cnndm --fit skip: 3 skipped lines naming the prompt length" \
        '[ "$(jq -s "[.[] | select(.skipped | test(\"tokens exceeds 385\"))] | length" "$R")" -eq 3 ]'
    check "cnndm: summary counts them" 'grep -q "| local | 0.5 | 0 (+skipped) |" "$tmp/c/summary.md"'
else
    bad "cnndm slice failed: $(tail -1 "$tmp/c.err")"
fi
if timeout 300 "$BIN" eval --task cnndm --data "$CNN" --model "$MODEL" --prompt-style helm --policies full \
        --limit 1 -t 1 --no-plot --out "$tmp/c2" 2> "$tmp/c2.err"; then
    check "cnndm helm: 128 new tokens by default, no '###' in the output" \
        'jq -e "(.n_generated_tokens <= 128) and (.output | contains(\"###\") | not) and .prompt_style == \"helm\"" "$tmp/c2/results.jsonl" > /dev/null'
else
    bad "cnndm helm failed: $(tail -1 "$tmp/c2.err")"
fi

# --- generation equals llm-run's own (same prompt, policy, budget): text, tokens, KV bytes
printf '{"document": "Once upon a time, there was a little dog named Max.", "summary": "x"}\n' > "$tmp/g.jsonl"
printf '{"name": "plain", "bos": true, "templates": {"xsum": "{document}"}}\n' > "$tmp/plain.json"
if timeout 120 "$BIN" eval --task xsum --data "$tmp/g.jsonl" --prompt-style "$tmp/plain.json" --model "$MODEL" \
        --policies full,h2o --budgets 0.5 --max-new-tokens 60 -t 1 --no-plot --out "$tmp/g" 2> "$tmp/g.err"; then
    for p in full h2o; do
        want=$("$BIN" -m "$MODEL" -p "Once upon a time, there was a little dog named Max." -n 60 -t 1 --json --policy $p --budget 0.5 |
               jq -c '[.text, .n_generated_tokens, .kv.peak_bytes, .kv.avg_bytes]')
        got=$(jq -c "select(.policy == \"$p\") | [.output, .n_generated_tokens, .kv.peak_bytes, .kv.avg_bytes]" "$tmp/g/results.jsonl")
        check "test_generation_equals_llm_run ($p at 0.5: text, tokens, KV peak/avg bytes)" '[ -n "$want" ] && [ "$want" = "$got" ]'
    done
else
    bad "plain-prompt run failed: $(tail -1 "$tmp/g.err")"
fi

# --- bad inputs: one line, non-zero exit
printf '{"article": "x", "summary_gt": "y"}\n{"article": \n' > "$tmp/bad.jsonl"
printf 'not gzip but named so' > "$tmp/empty.jsonl"; : > "$tmp/empty.jsonl"
expect_err() { # expect_err PATTERN ARGS...
    local pat=$1; shift
    if timeout 60 "$BIN" eval "$@" 2> "$tmp/e.err" > /dev/null; then bad "accepted: $*"
    elif [ "$(wc -l < "$tmp/e.err")" -eq 1 ] && grep -q -- "$pat" "$tmp/e.err"; then ok "error: $(cat "$tmp/e.err")"
    else bad "bad error for '$*': $(cat "$tmp/e.err")"; fi
}
expect_err "--task: unknown task 'rouge'" --task rouge --data "$XSUM" --out "$tmp/e"
expect_err "--task is required" --data "$XSUM" --out "$tmp/e"
expect_err "--out DIR is required" --task xsum --data "$XSUM"
expect_err "--policies: unknown policy 'nope'" --task xsum --data "$XSUM" --policies full,nope --out "$tmp/e"
expect_err "--budgets: '0' is not a number > 0" --task xsum --data "$XSUM" --budgets 0.5,0 --out "$tmp/e"
expect_err "--prompt-style: zz: no such prompt style" --task xsum --data "$XSUM" --prompt-style zz --model "$MODEL" --out "$tmp/e"
expect_err "no template for task xsum" --task xsum --data "$XSUM" --prompt-style litm --model "$MODEL" --out "$tmp/e"
expect_err "nope.jsonl: cannot open" --task xsum --data "$tmp/nope.jsonl" --model "$MODEL" --out "$tmp/e"
expect_err "bad.jsonl: line 2: xsum: not valid JSON" --task xsum --data "$tmp/bad.jsonl" --model "$MODEL" --out "$tmp/e"
expect_err "empty.jsonl: no examples" --task xsum --data "$tmp/empty.jsonl" --model "$MODEL" --out "$tmp/e"
expect_err "config.json" --task xsum --data "$XSUM" --model "$tmp" --out "$tmp/e"
expect_err "--max-new-tokens 600: leaves no room" --task xsum --data "$XSUM" --model "$MODEL" --max-new-tokens 600 --out "$tmp/e"
expect_err "--ppl-window 1024: longer than the model's context" --task tinystories --data "$TINYSTORIES" --model "$MODEL" --ppl-window 1024 --out "$tmp/e"
expect_err "unknown option '--bogus'" --task xsum --bogus 1
finish
