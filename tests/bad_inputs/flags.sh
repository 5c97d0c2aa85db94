# Sourced by tests/test_bad_inputs.sh: more bad flags and values (issue 7).

check "-p missing its value" "'-p'|-p:" -m "$GOOD" -n 4 -p
check "--logits-out missing its value" '--logits-out' -m "$GOOD" -p hi -n 4 --logits-out
check "--policy-config missing its value" '--policy-config' -m "$GOOD" -p hi --policy-config
check "--system missing its value" '--system' -m "$GOOD" -p hi --chat --system
check "-n empty" '-n' -m "$GOOD" -p hi -n ""
check "-n 1e3" '-n.*1e3' -m "$GOOD" -p hi -n 1e3
check "-n 0x10" '-n.*0x10' -m "$GOOD" -p hi -n 0x10
check "--temp 1e999" '--temp' -m "$GOOD" "${P[@]}" --temp 1e999
check "--temp inf" '--temp' -m "$GOOD" "${P[@]}" --temp inf
check "--top-p -0.1" '--top-p' -m "$GOOD" "${P[@]}" --top-p -0.1
check "--top-k abc" '--top-k' -m "$GOOD" "${P[@]}" --top-k abc
check "--seed -1" '--seed' -m "$GOOD" "${P[@]}" --seed -1
check "--threads 100000" '--threads' -m "$GOOD" "${P[@]}" --threads 100000
check "--budget inf" '--budget' -m "$GOOD" "${P[@]}" --budget inf
check "--budget 1e999" '--budget' -m "$GOOD" "${P[@]}" --budget 1e999
check "--budget-tokens abc" '--budget-tokens' -m "$GOOD" "${P[@]}" --budget-tokens abc
check "--budget-tokens 3000000000" '--budget-tokens' -m "$GOOD" "${P[@]}" --budget-tokens 3000000000
check "--prefill-chunk x" '--prefill-chunk' -m "$GOOD" "${P[@]}" --prefill-chunk x
check "policy parameter value with a newline (one line)" 'h2o-score' -m "$GOOD" "${P[@]}" --policy h2o --budget 0.5 --h2o-score $'sum\nmean'
check "policy parameter out of range (--policy streaming --sink -1)" 'sink' -m "$GOOD" "${P[@]}" --policy streaming --budget 0.5 --sink -1
check "policy parameter too long" 'sink' -m "$GOOD" "${P[@]}" --policy streaming --budget 0.5 --sink "$(printf '1%.0s' {1..200})"

printf '{"policy": "streaming", "budget": 1e999}' >"$TMP/inf-budget.json"
check "--policy-config budget 1e999" 'inf-budget\.json.*budget' -m "$GOOD" "${P[@]}" --policy-config "$TMP/inf-budget.json"
printf '{"policy": "h2o", "budget": 0.5, "h2o-score": "sum\\nmean"}' >"$TMP/nl-value.json"
check "--policy-config value with an escaped newline (one line)" 'nl-value\.json.*h2o-score' -m "$GOOD" "${P[@]}" --policy-config "$TMP/nl-value.json"
printf '{"policy": "streaming", "sink": [4]}' >"$TMP/array-value.json"
check "--policy-config value an array" 'array-value\.json.*sink' -m "$GOOD" "${P[@]}" --policy-config "$TMP/array-value.json"
printf '{"policy": "streaming"} trailing' >"$TMP/trailing.json"
check "--policy-config trailing data" 'trailing\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/trailing.json"
: >"$TMP/empty-preset.json"
check "--policy-config empty file" 'empty-preset\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/empty-preset.json"
head -c 2000000 /dev/zero | tr '\0' ' ' >"$TMP/huge-preset.json"
check "--policy-config over 1 MiB" 'huge-preset\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/huge-preset.json"

# prompts longer than the context
check "--chat prompt longer than the context" 'context' -m "$GOOD" -n 4 --chat "$TMP/long.txt"
check_stdin() {   # check_stdin NAME PATTERN FILE args...: like check, prompt from stdin
    local name="$1" pat="$2" file="$3"; shift 3
    local saved_bin="$BIN"
    BIN=/bin/sh check "$name" "$pat" -c 'exec "$0" "$@" <"'"$file"'"' "$saved_bin" "$@"
    BIN="$saved_bin"
}
check_stdin "prompt from stdin longer than the context" 'context' "$TMP/long.txt" -m "$GOOD" -n 4 -

# KV memory cap and device (the CUDA merge)
check "--kv-mem-limit 0" '--kv-mem-limit' -m "$GOOD" "${P[@]}" --kv-mem-limit 0
check "--kv-mem-limit abc" '--kv-mem-limit' -m "$GOOD" "${P[@]}" --kv-mem-limit abc
check "--kv-mem-limit too small for the cache" '--kv-mem-limit' -m "$GOOD" "${P[@]}" --kv-mem-limit 0.000000001
check "--device bogus" '--device.*bogus' -m "$GOOD" "${P[@]}" --device bogus
