#!/usr/bin/env bash
# The shared prefill of a sweep (issue 16: "where prefill is identical across runs, compute it once
# per example and fork"; model/prefill_fork.c): a sweep that records each example's prefill once
# and replays it into the other policies' caches writes the same results, line for line (timings
# aside), as one that computes every prefill (--no-prefill-fork):
#  - stories260K (F32 cache), every policy, two budgets, xsum and passkey (the fork must happen:
#    lines marked timings.prefill_forked, none for buzz_logn, which rescales the attention);
#  - SmolLM2-135M Q4_1 (f16 cache, quantized weights) on one 10-document QA example with the
#    policies whose prefill statistics differ most (colsum, observation window, hashes, last
#    query), when the GGUF is fetched (CI fetches it);
#  - stories260K with an f16 cache (--kv-dtype f16: the replay of 16-bit K/V rows), every pass;
#  - a chunked prefill (--prefill-chunk) is never forked.
# The SmolLM2 sweeps run in the plain pass only: under the sanitizers each of their ~1,500-token
# prefills took ~3 minutes on a 2-core AMD Zen 3 host (AVX2 kernels, 2026-11-29), and the
# unforked sweep's five ran past its 10-minute limit; the f16 row above keeps the 16-bit replay
# under ASan/UBSan.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
XSUM="$SHARED/data/xsum/h2o_xsum_0shot.jsonl"
LITM="$SHARED/data/lost_in_the_middle/nq-open-10_total_documents_gold_at_4.first441.jsonl.gz"
setup_e2e "$XSUM" "$LITM"
need_jq
CACHE="${LLM_RUN_MODELS:-$HOME/.cache/llm-run}"
POLICIES=$("$BIN" --list-policies | awk '/^[^ \t]/ {print $1}' | paste -sd,)

# same_lines NAME DIR_A DIR_B: results.jsonl equal without timings, in the same order
same_lines() {
    jq -c 'del(.timings)' "$2/results.jsonl" > "$tmp/a.l" 2>/dev/null
    jq -c 'del(.timings)' "$3/results.jsonl" > "$tmp/b.l" 2>/dev/null
    if [ -s "$tmp/a.l" ] && cmp -s "$tmp/a.l" "$tmp/b.l"; then ok "$1: forked and computed prefills give the same $(wc -l < "$tmp/a.l") lines"
    else bad "$1: forked and computed prefills differ: $(diff "$tmp/a.l" "$tmp/b.l" | head -c 400)"; fi
}
# sweep OUT ARGS...: one sweep, quiet; its status
sweep() { local out=$1; shift; timeout 600 "$BIN" eval "$@" --no-plot -t 1 --out "$out" 2> "$out.err"; }

args=(--task xsum --data "$XSUM" --model "$MODEL" --policies "$POLICIES" --budgets 0.3,0.6 --limit 2 --max-new-tokens 24)
if sweep "$tmp/xf" "${args[@]}" && sweep "$tmp/xc" "${args[@]}" --no-prefill-fork; then
    same_lines "xsum, stories260K, every policy" "$tmp/xf" "$tmp/xc"
    n=$(jq -s '[.[] | select(.timings.prefill_forked)] | length' "$tmp/xf/results.jsonl")
    check "xsum: the fork happened (forked lines: $n)" '[ "$n" -ge 40 ]'
    check "xsum: buzz_logn (logit scale) is never forked" \
        '[ "$(jq -s "[.[] | select(.policy == \"buzz_logn\" and .timings.prefill_forked)] | length" "$tmp/xf/results.jsonl")" -eq 0 ]'
    check "xsum: a forked line's tok_s counts the prefill at its computed time (prefill_computed_ms)" \
        'jq -e -s "all(.[] | select(.timings.prefill_forked) | .timings; .prefill_computed_ms > 0 and (.tok_s * (.prefill_computed_ms + .decode_ms) / 1000) > 0)" "$tmp/xf/results.jsonl" > /dev/null &&
         jq -e -s "all(.[] | select(.timings.prefill_forked); (.timings.tok_s * (.timings.prefill_computed_ms + .timings.decode_ms) / 1000 - (.n_prompt_tokens + .n_generated_tokens)) | fabs < 0.01)" "$tmp/xf/results.jsonl" > /dev/null'
    check "xsum --no-prefill-fork: no line forked" \
        '[ "$(jq -s "[.[] | select(.timings.prefill_forked)] | length" "$tmp/xc/results.jsonl")" -eq 0 ]'
else bad "xsum sweeps: $(tail -1 "$tmp/xf.err") $(tail -1 "$tmp/xc.err")"; fi

args=(--task passkey --model "$MODEL" --policies full,streaming,h2o,snapkv,tova --budgets 0.2 --lengths 300
      --depths 0.5 --samples 2 --max-new-tokens 8)
if sweep "$tmp/pf" "${args[@]}" && sweep "$tmp/pc" "${args[@]}" --no-prefill-fork; then
    same_lines "passkey, stories260K" "$tmp/pf" "$tmp/pc"
    check "passkey: each sample's prompt recorded once, replayed 4 times" \
        '[ "$(jq -s "[.[] | select(.timings.prefill_forked)] | length" "$tmp/pf/results.jsonl")" -eq 8 ]'
else bad "passkey sweeps: $(tail -1 "$tmp/pf.err") $(tail -1 "$tmp/pc.err")"; fi

args=(--task passkey --model "$MODEL" --policies full,h2o,snapkv,hashevict,tova --budgets 0.2 --lengths 300
      --depths 0.5 --samples 1 --max-new-tokens 8 --kv-dtype f16)
if sweep "$tmp/hf" "${args[@]}" && sweep "$tmp/hc" "${args[@]}" --no-prefill-fork; then
    same_lines "passkey, stories260K, f16 cache" "$tmp/hf" "$tmp/hc"
    check "passkey f16: the prompt recorded once, replayed 4 times" \
        '[ "$(jq -s "[.[] | select(.timings.prefill_forked)] | length" "$tmp/hf/results.jsonl")" -eq 4 ]'
else bad "passkey f16 sweeps: $(tail -1 "$tmp/hf.err") $(tail -1 "$tmp/hc.err")"; fi

args=(--task xsum --data "$XSUM" --model "$MODEL" --policies h2o,snapkv --budgets 0.3 --limit 1 --max-new-tokens 8
      --prefill-chunk 64)
if sweep "$tmp/cf" "${args[@]}"; then
    check "a chunked prefill is not forked" \
        '[ "$(jq -s "[.[] | select(.timings.prefill_forked)] | length" "$tmp/cf/results.jsonl")" -eq 0 ]'
else bad "chunked sweep: $(tail -1 "$tmp/cf.err")"; fi

S="$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ "${BUILD:-build}" = build-san ]; then
    echo "skip SmolLM2 under the sanitizers (its prefills take minutes each there; the plain pass runs it)"
elif [ -f "$S" ]; then
    args=(--task litm --data "$LITM" --model "$S" --policies full,h2o,snapkv,hashevict,tova
          --budgets 0.2 --limit 1 --max-new-tokens 8)
    if sweep "$tmp/sf" "${args[@]}" && sweep "$tmp/sc" "${args[@]}" --no-prefill-fork; then
        same_lines "litm, SmolLM2 Q4_1 (f16 cache)" "$tmp/sf" "$tmp/sc"
        check "litm SmolLM2: the 4 runs after full's replay its prefill" \
            '[ "$(jq -s "[.[] | select(.timings.prefill_forked)] | length" "$tmp/sf/results.jsonl")" -eq 4 ]'
    else bad "SmolLM2 sweeps: $(tail -1 "$tmp/sf.err") $(tail -1 "$tmp/sc.err")"; fi
else echo "skip SmolLM2: $S not fetched (scripts/fetch_model.sh smollm2-135m)"; fi
finish
