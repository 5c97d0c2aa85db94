#!/usr/bin/env bash
# BUZZ paper, 10-document QA (Lost in the Middle NQ-open) with the gold document at 0, 4 and 9
# (Fig. 6; EVAL.md "BUZZ" and "Lost in the Middle"): best-subspan EM (and BUZZ's strict EM) per
# gold position.
#
#   scripts/exp_litm_qa.sh MODEL_DIR [OUT]      -> OUT/gold0, OUT/gold4, OUT/gold9
#
# The paper's cache limit is 300 tokens (~25% of a 1.2k-token prompt): BUDGETS defaults to 0.25
# (a fraction; give 300 for the absolute setting on a 4k-context model). Documents are cut evenly
# to fit the model's context (recorded per line). Env: POLICIES (buzz,h2o,streaming,local,full),
# BUDGETS, LIMIT (441 = all), MAX_NEW (32), STYLE (buzz | litm), THREADS.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:?usage: $0 MODEL_DIR [OUT]}"
OUT="${2:-out/litm_qa}"
SHARED="${LLM_SHARED:-../shared}"
for g in 0 4 9; do
    ./llm-run eval --task litm --data "$SHARED/data/lost_in_the_middle/nq-open-10_total_documents_gold_at_$g.first441.jsonl.gz" \
        --model "$MODEL" --prompt-style "${STYLE:-buzz}" --rope shifted \
        --policies "${POLICIES:-buzz,h2o,streaming,local,full}" --budgets "${BUDGETS:-0.25}" \
        --limit "${LIMIT:-441}" --max-new-tokens "${MAX_NEW:-32}" -t "${THREADS:-1}" --out "$OUT/gold$g"
done
