#!/usr/bin/env bash
# Perplexity, KL and top-1 agreement of `llm-run eval` (issue 5 "Metrics", "Tests"):
#  - test_full_ppl_equals_hugging_face: the full cache's per-window mean NLL on the TinyStories
#    excerpt equals transformers' (tests/fixtures/eval/stories260K_tinystories_ppl.json, made by
#    scripts/make_eval_fixtures.py), |dNLL| <= 1e-4, same token counts;
#  - test_kl_zero_agreement_one_when_budget_covers_everything: every policy but buzz_logn at
#    budget 1.0 has KL = 0 and top-1 agreement = 1 exactly, and the same NLL as full;
#  - buzz_logn at budget 1.0 (it rescales the logits) and local at 0.1 must show KL > 0 and
#    agreement < 1 (the measure can fail);
#  - budgets in tokens (BUZZ Table 3 style: cache 50) give capacity 50.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
DATA="$TINYSTORIES"
FIX=tests/fixtures/eval/stories260K_tinystories_ppl.json
setup_e2e "$DATA"

# --- full vs Hugging Face
nw=$(jq '.windows | length' "$FIX")
if ! timeout 300 "$BIN" eval --task tinystories --data "$DATA" --model "$MODEL" --policies full --budgets 1 \
        --limit "$nw" --out "$tmp/hf" -t 1 --no-plot 2> "$tmp/hf.err"; then
    bad "full run failed: $(tail -1 "$tmp/hf.err")"
else
    for k in $(seq 0 $((nw - 1))); do
        want=$(jq -r ".windows[$k] | \"\(.n_tokens) \(.nll)\"" "$FIX")
        got=$(jq -r "select(.id == \"w$k\") | \"\(.n_tokens) \(.metrics.nll)\"" "$tmp/hf/results.jsonl")
        if awk -v w="$want" -v g="$got" 'BEGIN { split(w, a, " "); split(g, b, " ");
                d = a[2] - b[2]; if (d < 0) d = -d; exit !(a[1] == b[1] && d <= 1e-4) }'; then
            ok "test_full_ppl_equals_hugging_face w$k: tokens/nll $got (HF $want)"
        else
            bad "test_full_ppl_equals_hugging_face w$k: got '$got', Hugging Face '$want'"
        fi
    done
fi

# --- identity at a budget that covers everything
mapfile -t POLICIES < <("$BIN" --list-policies | awk '/^[^ \t]/ {print $1}')
ID=$(printf '%s\n' "${POLICIES[@]}" | grep -vx buzz_logn | paste -sd,)
if ! timeout 300 "$BIN" eval --task tinystories --data "$DATA" --model "$MODEL" --policies "$ID,buzz_logn" \
        --budgets 1,0.1 --limit 2 --ppl-window 192 --out "$tmp/id" -t 1 --no-plot 2> "$tmp/id.err"; then
    bad "identity sweep failed: $(tail -1 "$tmp/id.err")"
else
    R="$tmp/id/results.jsonl"
    for p in ${ID//,/ }; do
        v=$(jq -s -r --arg p "$p" '[.[] | select(.policy == $p and .budget == 1)] as $a
              | [.[] | select(.policy == "full" and .budget == 1)] as $f
              | if ($a | length) == 2 and all($a[]; .metrics.kl == 0 and .metrics.top1_agree == 1)
                   and ([$a[].metrics.nll] == [$f[].metrics.nll]) then "yes" else ([$a[].metrics | [.kl, .top1_agree, .nll]] | tostring) end' "$R")
        [ "$v" = yes ] && ok "test_kl_zero_agreement_one_when_budget_covers_everything: $p" ||
            bad "test_kl_zero_agreement_one_when_budget_covers_everything: $p: $v"
    done
    for pb in "buzz_logn 1" "local 0.1"; do
        set -- $pb
        v=$(jq -s -r --arg p "$1" --argjson b "$2" '[.[] | select(.policy == $p and .budget == $b)]
              | if length == 2 and all(.[]; .metrics.kl > 0 and .metrics.top1_agree < 1) then "yes" else (map(.metrics) | tostring) end' "$R")
        [ "$v" = yes ] && ok "KL > 0 and agreement < 1 for $1 at budget $2" || bad "$1 at budget $2 should differ from full: $v"
    done
fi

# --- a budget in tokens: capacity 50 (BUZZ Table 3 "cache size 50")
if timeout 120 "$BIN" eval --task tinystories --data "$DATA" --model "$MODEL" --policies streaming --budgets 50 \
        --limit 1 --out "$tmp/tok" -t 1 --no-plot 2> "$tmp/tok.err"; then
    cap=$(jq -r '.kv.capacity' "$tmp/tok/results.jsonl")
    [ "$cap" = 50 ] && ok "--budgets 50 is a 50-token cache" || bad "--budgets 50: capacity $cap"
else
    bad "token budget run failed: $(tail -1 "$tmp/tok.err")"
fi
finish
