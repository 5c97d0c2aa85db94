#!/usr/bin/env bash
# Golden text: greedy output equals llama2.c's run.c output stored in ../shared/models/golden.
# llama2.c's -n counts positions from BOS: it prints n tokens after BOS, the prompt's included,
# so the generated count is n - (prompt tokens after BOS). It stops early on token 1 (BOS).
set -uo pipefail
cd "$(dirname "$0")/.."
SHARED="${LLM_SHARED:-../shared}"
G="$SHARED/models/golden"
if [ ! -d "$G" ]; then echo "SKIP: $G not found"; echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
pass=0; fail=0
check() { # name model prompt n_steps golden_file
    local name=$1 model=$2 prompt=$3 steps=$4 file=$5
    local n_prompt
    n_prompt=$(./llm-run -m "$model" -p "$prompt" -n 0 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_prompt_tokens"])') || { echo "FAIL $name: llm-run failed"; fail=$((fail+1)); return; }
    local n_new=$((steps - (n_prompt - 1)))
    # command substitution drops trailing newlines on both sides (llm-run ends its text with one)
    local out expected
    out=$(printf '%s' "$prompt"; ./llm-run -m "$model" -p "$prompt" -n "$n_new" 2>/dev/null)
    expected=$(cat "$file")
    if [ "$out" == "$expected" ]; then
        echo "ok   $name ($n_new tokens generated, prompt '$prompt')"; pass=$((pass+1))
    else
        echo "FAIL $name: output differs from $file"
        diff <(printf '%s' "$out") "$file" | head -5
        fail=$((fail+1))
    fi
}
check stories260K_noprompt "$SHARED/models/stories260K" "" 200 "$G/stories260K_t0_n200_noprompt.txt"
check stories260K_shoggoth "$SHARED/models/stories260K" "One day, Lily met a Shoggoth" 256 "$G/stories260K_t0_n256_shoggoth.txt"
check babyllama_noprompt "$SHARED/models/babyllama-tok105" "" 256 "$G/babyllama_tok105_t0_n256_noprompt.txt"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
