#!/usr/bin/env bash
# End-to-end runs of every policy (`./llm-run --list-policies`) on a 300+-token TinyStories
# prompt, -n 64 --json, at budgets 0.2, 0.4, 0.6 and 1.0 (POLICIES.md §1.2, §7.6):
#  - exit status 0 and a non-empty text;
#  - kv.peak_bytes <= the budget's bytes: ceil(budget * (n_prompt + 64)) tokens x bytes per
#    token, bytes per token = kv.full_bytes / (n_prompt + decode steps) (decode steps: the
#    generated tokens, less the last one unless the run stopped at EOS). A policy whose capacity
#    floor C_min (measured: the mean head capacity at --budget 1e-6) is above the budget's
#    tokens is held to C_min instead, with a note;
#  - kv.allocated_bytes = sum over (layer, head) of (capacity + 1) slots (head_capacities);
#    an allocation above the budget's (limit + 1 slots per head) is printed as a note;
#  - a table policy x budget: peak / average KV bytes and whether the greedy text equals full's.
# subgen_stream's sketch (kv.sketch_bytes) is left out of these two checks and noted (see check_run).
# Also: --prefill-chunk 64 at budget 0.4 for every policy (peak <= the budget's bytes; the
# chunk's scratch K/V is outside the cache and printed separately), and a prompt longer than
# the model's context (512): streaming --rope shifted --prefill-chunk 64 --budget 0.3 succeeds,
# while full on it fails with a one-line error.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
N_NEW=64
setup_e2e "$TINYSTORIES"
need_jq

# prompts: ~330 tokens (the first 680 characters, cut at a word boundary) and ~870 tokens
tinystories_prompt 680 "$tmp/prompt.txt"
tinystories_prompt 1800 "$tmp/long.txt"

# run OUT [flags...] PROMPT: stdout to $tmp/OUT.json, stderr to $tmp/OUT.err; llm-run's status
# (also in RC)
run() {
    local out=$1; shift
    "$BIN" -m "$MODEL" -t 1 -n "$N_NEW" --json "$@" > "$tmp/$out.json" 2> "$tmp/$out.err"
    RC=$?; return $RC
}
j() { jq -r "$2" "$tmp/$1.json" 2>/dev/null; }

mapfile -t POLICIES < <("$BIN" --list-policies | awk '/^[^ \t]/ {print $1}')
[ "${#POLICIES[@]}" -gt 0 ] || { bad "--list-policies printed no policy"; echo "$pass passed, $fail failed"; exit 1; }
echo "policies: ${POLICIES[*]}"

run full --policy full "$tmp/prompt.txt" || { bad "full failed: $(head -1 "$tmp/full.err")"; echo "$pass passed, $fail failed"; exit 1; }
N=$(j full .n_prompt_tokens)
FULL_TEXT=$(j full .text)
[ "$N" -ge 300 ] || bad "the prompt has $N tokens, expected 300+"
echo "prompt: $N tokens, -n $N_NEW"

# capacity floor of each policy: the mean head capacity at a vanishing budget (1 if that fails).
# A floor of prompt + max_new means the policy ignores the budget (full, §2.1).
declare -A FLOOR
for p in "${POLICIES[@]}"; do
    if run "floor_$p" --policy "$p" --budget 1e-6 "$tmp/prompt.txt"; then
        FLOOR[$p]=$(j "floor_$p" '[.kv.head_capacities[][]] | add / length | ceil')
    else
        FLOOR[$p]=1
    fi
done
echo "capacity floors (mean head capacity at --budget 1e-6): $(for p in "${POLICIES[@]}"; do printf '%s=%s ' "$p" "${FLOOR[$p]}"; done)"

# check_run OUT POLICY BUDGET LABEL: the checks of one --json run; sets PEAK AVG SAME NOTE.
# One jq call computes everything: bytes per token, the budget's tokens, the limits.
check_run() {
    local out=$1 p=$2 b=$3 label=$4 floor=${FLOOR[$2]:-1} v
    NOTE=""; PEAK="-"; AVG="-"; SAME="-"
    v=$(jq -r --argjson b "$b" --argjson nn "$N_NEW" --argjson floor "$floor" --arg full "$FULL_TEXT" '
        .n_prompt_tokens as $n | .n_generated_tokens as $g
        | (if .stop == "eos" then $g elif $g > 0 then $g - 1 else 0 end) as $steps
        | (.kv.full_bytes / ($n + $steps)) as $bpt
        | ([(($b * ($n + $nn)) - 1e-9 | ceil), 1] | max) as $cb
        | (if $floor >= $n + $nn then "ignores" elif $floor > $cb then "floor" else "budget" end) as $kind
        | (if $kind == "budget" then $cb else $floor end) as $limit
        | (.kv.sketch_bytes // 0) as $sk
        | (.kv.peak_bytes - $sk) as $pk
        | [.kv.head_capacities[][]] as $caps
        | ($caps | length) as $nlh | ($caps | map(. + 1) | add) as $slots
        | [ (.text | length > 0), .kv.peak_bytes, .kv.avg_bytes, $bpt, $cb, $limit, $kind,
            ($pk / $bpt),
            ($pk <= $limit * $bpt * (1 + 1e-9)),
            ($pk <= $cb * $bpt * (1 + 1e-9)),
            (((.kv.allocated_bytes - $sk - $slots * $bpt / $nlh) | fabs) <= 1e-6 * .kv.allocated_bytes + 1e-9),
            .kv.allocated_bytes, $slots, ($slots / $nlh - 1), ($slots <= $nlh * ($limit + 1)),
            (.text == $full), $sk ] | map(tostring) | join(" ")' "$tmp/$out.json" 2>/dev/null)
    if [ -z "$v" ]; then bad "$label: unreadable --json output: $(head -c 200 "$tmp/$out.json")"; return; fi
    local nonempty peak avg bpt cb limit kind ptok peak_ok peak_cb alloc_ok alloc slots meancap alloc_in same sk
    read -r nonempty peak avg bpt cb limit kind ptok peak_ok peak_cb alloc_ok alloc slots meancap alloc_in same sk <<<"$v"
    PEAK=$peak; AVG=$avg
    [ "$nonempty" = true ] || { bad "$label: empty text"; return; }
    if [ "$peak_ok" != true ]; then
        bad "$label: peak $peak B ($ptok tokens/head) > budget $limit tokens x $bpt B"
        return
    fi
    # subgen_stream: its sketch is reported beside the slots (kv.sketch_bytes, in peak and
    # allocated bytes); the budget bounds the slots plus the sketch in the spec's units (§8.3,
    # checked by init), while the sketch is stored in f32 with its counts: docs/KV_CACHE.md
    [ "$sk" != 0 ] && NOTE="+ sketch $sk B beside the slots (f32, §8.3 units within the budget)"
    case $kind in
        ignores) NOTE="ignores --budget: capacity = prompt + max_new" ;;
        floor) [ "$peak_cb" = true ] || NOTE="floor: peak $ptok tok/head > budget $cb tok, within C_min $floor" ;;
    esac
    if [ "$alloc_ok" != true ]; then
        bad "$label: allocated_bytes $alloc != sum(head capacity + 1) = $slots slots"
        return
    fi
    [ "$alloc_in" = true ] || NOTE="${NOTE:+$NOTE; }alloc: mean capacity $meancap > $limit"
    [ "$same" = true ] && SAME=yes || SAME=no
    ok "$label: peak $ptok tok/head <= $limit ($kind), allocated = sum(cap+1)${NOTE:+ (note: $NOTE)}"
}

kib() { [ "$1" = - ] && echo - || awk -v b="$1" 'BEGIN { printf "%.1f", b / 1024 }'; }

TABLE="$tmp/table.txt"
printf "%-14s %-6s %12s %12s %10s %s\n" policy budget "peak KiB" "avg KiB" "=full" note > "$TABLE"
for p in "${POLICIES[@]}"; do
    for b in 0.2 0.4 0.6 1.0; do
        out="${p}_$b"
        if ! run "$out" --policy "$p" --budget "$b" "$tmp/prompt.txt"; then
            rc=$RC
            bad "$p --budget $b: exit status $rc ($(head -1 "$tmp/$out.err"))"
            printf "%-14s %-6s %12s %12s %10s %s\n" "$p" "$b" - - - "exit $rc" >> "$TABLE"
            continue
        fi
        check_run "$out" "$p" "$b" "$p --budget $b"
        printf "%-14s %-6s %12s %12s %10s %s\n" "$p" "$b" "$(kib "$PEAK")" "$(kib "$AVG")" "$SAME" "$NOTE" >> "$TABLE"
    done
done

# chunked prefill at 0.4: eviction between chunks keeps the cache within the budget
for p in "${POLICIES[@]}"; do
    out="${p}_chunk"
    if ! run "$out" --policy "$p" --budget 0.4 --prefill-chunk 64 "$tmp/prompt.txt"; then
        bad "$p --budget 0.4 --prefill-chunk 64: exit status $RC ($(head -1 "$tmp/$out.err"))"
        continue
    fi
    [ "$(j "$out" .kv.prefill_chunk)" = 64 ] || { bad "$p --prefill-chunk 64: kv.prefill_chunk = $(j "$out" .kv.prefill_chunk)"; continue; }
    check_run "$out" "$p" 0.4 "$p --budget 0.4 --prefill-chunk 64"
done
echo "(the prefill chunk's scratch K/V, 64 tokens x $(j full '.kv.allocated_bytes / ([.kv.head_capacities[][] + 1] | add) * (.kv.head_capacities | length) * (.kv.head_capacities[0] | length)') B, is outside the cache and not part of the peak)"

# a prompt longer than the model's context
CTX=$(jq .max_position_embeddings "$MODEL/config.json")
one_line_error() { # OUT LABEL: non-zero exit checked by the caller; one stderr line "llm-run: ..."
    local out=$1 label=$2 lines
    lines=$(wc -l < "$tmp/$out.err")
    if [ "$lines" -eq 1 ] && head -1 "$tmp/$out.err" | grep -q '^llm-run: '; then
        ok "$label fails with one line: $(head -1 "$tmp/$out.err" | cut -c1-120)"
    else
        bad "$label: expected one stderr line starting 'llm-run: ', got $lines: $(head -3 "$tmp/$out.err" | tr '\n' '|')"
    fi
}
if run long_streaming --policy streaming --rope shifted --prefill-chunk 64 --budget 0.3 "$tmp/long.txt"; then
    nl=$(j long_streaming .n_prompt_tokens)
    if [ "$nl" -le "$CTX" ]; then bad "the long prompt has $nl tokens, not more than the context $CTX"
    else
        check_run long_streaming streaming 0.3 "streaming --rope shifted --prefill-chunk 64 --budget 0.3 on a $nl-token prompt (context $CTX)"
    fi
else
    bad "streaming --rope shifted --prefill-chunk 64 --budget 0.3 on the long prompt: exit status $RC ($(head -1 "$tmp/long_streaming.err"))"
fi
if run long_full --policy full --rope shifted --prefill-chunk 64 --budget 0.3 "$tmp/long.txt"; then
    bad "full --rope shifted --prefill-chunk 64 on a prompt longer than the context succeeded"
else
    rc=$?
    [ "$rc" -lt 128 ] || bad "full on the long prompt crashed (exit $rc)"
    one_line_error long_full "full --rope shifted --prefill-chunk 64 on the long prompt (exit $rc)"
fi
if run long_full_abs --policy full "$tmp/long.txt"; then
    bad "full on a prompt longer than the context succeeded"
else
    rc=$?
    [ "$rc" -lt 128 ] || bad "full on the long prompt crashed (exit $rc)"
    one_line_error long_full_abs "full (absolute) on the long prompt (exit $rc)"
fi

echo
echo "KV bytes per policy and budget (prompt $N tokens, -n $N_NEW; =full: greedy text equals full's):"
cat "$TABLE"
echo
finish
