#!/usr/bin/env bash
# Decode's thread count may change between steps (model/forward.c decode_threads_*: one step on
# the other count now and then, a switch when it is faster) and the rows of a decode matvec are
# split with stealing (kernels/cpu/rowsteal.h): neither may change an output, and a prefill
# product's rows are cut into the same slices for any -t (kernels/cpu/matmul.c prefill_slices:
# the BLAS's bits depend on the cut; on an AMD Zen 3 host, the AVX2 family, every prompt row of
# -t 2 differed from -t 1 before, 2026-11-29). The logits of
# every prompt position and decode step (--logits-out) must be byte-identical for -t 1, -t 2 and
# -t 2 with LLM_ADAPT_THREADS=flip (1 and 2 threads alternating every step), on stories260K
# (F32, and BF16 via --dtype) and, when it is in the model cache, SmolLM2-135M Q4_1.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/support/lib.sh
setup_e2e "$TINYSTORIES"
tinystories_prompt 400 "$tmp/prompt.txt"
GG=${LLM_RUN_MODELS:-$HOME/.cache/llm-run}/SmolLM2-135M-Instruct.Q4_1.gguf

# check LABEL MODEL [flags...]
check() {
    local label=$1 model=$2; shift 2
    local i=0 ref=
    for setting in "1" "2" "2 flip" "3 flip"; do
        local t=${setting%% *} mode=1
        [[ "$setting" == *flip ]] && mode=flip
        i=$((i + 1))
        if ! LLM_ADAPT_THREADS=$mode "$BIN" -m "$model" -t "$t" -n 24 --ignore-eos --logits-out "$tmp/$i.npy" "$@" \
                "$tmp/prompt.txt" > /dev/null 2> "$tmp/err"; then
            bad "$label -t $t ($mode): failed: $(head -1 "$tmp/err")"
            return
        fi
        if [ -z "$ref" ]; then ref=$tmp/$i.npy; continue; fi
        if cmp -s "$ref" "$tmp/$i.npy"; then ok "$label: -t $t LLM_ADAPT_THREADS=$mode logits byte-identical to -t 1"
        else bad "$label: -t $t LLM_ADAPT_THREADS=$mode logits differ from -t 1"; fi
    done
}
check "stories260K f32" "$MODEL"
check "stories260K bf16" "$MODEL" --dtype bf16
if [ -f "$GG" ]; then check "SmolLM2 Q4_1" "$GG"
else echo "skip SmolLM2 Q4_1: $GG not found (scripts/fetch_model.sh smollm2-135m)"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
