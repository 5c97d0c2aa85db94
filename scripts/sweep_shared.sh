#!/usr/bin/env bash
# The smoke-test sweep in results/stories260k/ (issue 5 "Done when"): every policy of `llm-run --list-policies`
# at budgets 0.1..0.8 on the shared model stories260K (context 512):
#   results/stories260k/tinystories   perplexity, KL(full || policy), top-1 agreement on the TinyStories
#                         excerpt (every 512-token window, teacher-forced, eviction every step)
#   results/stories260k/xsum          ROUGE (rouge-score stemmed, and pltrdy) on the first 50 XSum articles,
#                         BUZZ prompt, 64 new tokens, articles cut to fit the context
#   results/stories260k/litm_gold{0,4,9}  best-subspan EM on 10-document QA with the gold document at 0/4/9
#                         (first $LITM_N questions, BUZZ prompt, 32 new tokens, documents cut to fit)
#
#   scripts/sweep_shared.sh [all|tinystories|xsum|litm] [MODEL_DIR]
#
# Resumable: rerunning continues where a run stopped. THREADS (default 1), OUT (default results/stories260k),
# LITM_N (default 20), XSUM_N (default 50) override the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
SHARED="${LLM_SHARED:-../shared}"
MODEL="${2:-$SHARED/models/stories260K}"
OUT="${OUT:-results/stories260k}"
THREADS="${THREADS:-1}"
LITM_N="${LITM_N:-20}"
XSUM_N="${XSUM_N:-50}"
BIN=./llm-run
POLICIES=$("$BIN" --list-policies | awk '/^[^ \t]/ {print $1}' | paste -sd,)
BUDGETS=0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8
D="$SHARED/data"
run() { echo "+ $BIN $*" >&2; "$BIN" "$@"; }

if [ "$what" = all ] || [ "$what" = tinystories ]; then
    run eval --task tinystories --data "$D/tinystories/TinyStories-valid.excerpt_unverified.txt" --model "$MODEL" \
        --policies "$POLICIES" --budgets "$BUDGETS" -t "$THREADS" --out "$OUT/tinystories"
fi
if [ "$what" = all ] || [ "$what" = xsum ]; then
    run eval --task xsum --data "$D/xsum/h2o_xsum_0shot.jsonl" --model "$MODEL" --prompt-style buzz \
        --max-new-tokens 64 --limit "$XSUM_N" --policies "$POLICIES" --budgets "$BUDGETS" -t "$THREADS" --out "$OUT/xsum"
fi
if [ "$what" = all ] || [ "$what" = litm ]; then
    for g in 0 4 9; do
        run eval --task litm --data "$D/lost_in_the_middle/nq-open-10_total_documents_gold_at_$g.first441.jsonl.gz" \
            --model "$MODEL" --prompt-style buzz --max-new-tokens 32 --limit "$LITM_N" --policies "$POLICIES" \
            --budgets "$BUDGETS" -t "$THREADS" --out "$OUT/litm_gold$g"
    done
fi
