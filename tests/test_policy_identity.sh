#!/usr/bin/env bash
# Identity (POLICIES.md §1.2, §15.1.2): when the capacity covers prompt + max_new (--budget 1.0)
# nothing can be evicted, so every policy except buzz_logn must give logits that are
# bit-identical to --policy full (--logits-out files equal byte for byte: every prompt position
# and every decode step) and the same generated tokens. buzz_logn scales the logits
# (log_512 n, §4.9), so its logits must differ. The same with --rope shifted for full,
# streaming, buzz and h2o (compared with full --rope shifted); and full --rope shifted equals
# full --rope absolute (without eviction, ranks are positions).
# Policies: every one `./llm-run --list-policies` prints (first word of its non-indented lines).
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
skipped=0
setup_e2e "$TINYSTORIES"
need_jq
# ~330-token TinyStories prompt: the first 680 characters, cut at a word boundary (the greedy
# continuation of this cut runs the full -n without an end of story)
tinystories_prompt 680 "$tmp/prompt.txt"
N_NEW=40

# run NAME [flags...]: writes $tmp/NAME.npy, $tmp/NAME.json, $tmp/NAME.err; returns llm-run's
# status (also in RC)
run() {
    local name=$1; shift
    "$BIN" -m "$MODEL" -t 1 -n "$N_NEW" --budget 1.0 --json --logits-out "$tmp/$name.npy" "$@" \
        "$tmp/prompt.txt" > "$tmp/$name.json" 2> "$tmp/$name.err"
    RC=$?; return $RC
}
tokens() { jq -c '.tokens' "$tmp/$1.json" 2>/dev/null; }

mapfile -t POLICIES < <("$BIN" --list-policies | awk '/^[^ \t]/ {print $1}')
if [ "${#POLICIES[@]}" -eq 0 ]; then bad "--list-policies printed no policy"; echo "$pass passed, $fail failed"; exit 1; fi
echo "policies: ${POLICIES[*]}"

if ! run full_abs --policy full; then
    bad "full (reference) failed: $(head -1 "$tmp/full_abs.err")"
    echo "$pass passed, $fail failed"; exit 1
fi
n_prompt=$(jq .n_prompt_tokens "$tmp/full_abs.json")
echo "prompt: $n_prompt tokens, -n $N_NEW, reference: full ($(tokens full_abs | head -c 60)...)"

# compare NAME REF DESCRIPTION: logits byte-identical and the same tokens
same_as() {
    local name=$1 ref=$2 what=$3
    if ! cmp -s "$tmp/$name.npy" "$tmp/$ref.npy"; then
        bad "$what: --logits-out differs from $ref ($(cmp "$tmp/$name.npy" "$tmp/$ref.npy" 2>&1 | head -1))"
    elif [ "$(tokens "$name")" != "$(tokens "$ref")" ]; then
        bad "$what: generated tokens differ from $ref"
    else
        ok "$what: logits byte-identical to $ref, same $(jq '.tokens | length' "$tmp/$name.json") tokens"
    fi
}

for p in "${POLICIES[@]}"; do
    [ "$p" = full ] && continue
    if ! run "$p" --policy "$p"; then
        bad "$p --budget 1.0: exit status $RC ($(head -1 "$tmp/$p.err"))"
        continue
    fi
    if [ "$p" = buzz_logn ]; then
        # log-n scaling changes the attention: the logits must differ
        if cmp -s "$tmp/$p.npy" "$tmp/full_abs.npy"; then
            bad "buzz_logn --budget 1.0: logits are identical to full (the log_512 n scale is not applied)"
        else
            ok "buzz_logn --budget 1.0: logits differ from full (log_512 n scaling)"
        fi
        continue
    fi
    same_as "$p" full_abs "$p --budget 1.0"
done

# --rope shifted: without eviction ranks are positions
if run full_sh --policy full --rope shifted; then
    same_as full_sh full_abs "full --rope shifted vs --rope absolute"
    for p in streaming buzz h2o; do
        if [[ " ${POLICIES[*]} " != *" $p "* ]]; then
            echo "skip $p --rope shifted: policy not built"; skipped=$((skipped+1)); continue
        fi
        if ! run "${p}_sh" --policy "$p" --rope shifted; then
            bad "$p --rope shifted --budget 1.0: exit status $RC ($(head -1 "$tmp/${p}_sh.err"))"
            continue
        fi
        same_as "${p}_sh" full_sh "$p --rope shifted --budget 1.0"
    done
else
    bad "full --rope shifted failed: $(head -1 "$tmp/full_sh.err")"
fi

finish
