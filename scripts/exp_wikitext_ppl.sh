#!/usr/bin/env bash
# BUZZ paper, WikiText perplexity at cache sizes 50 and 100 (Table 3; EVAL.md "BUZZ"
# eval_long_ppl.py): every row tokenized with BOS, rows concatenated, fed one token per step with
# eviction after every step, --rope shifted; PPL = exp(mean NLL). Also KL(full || policy) and
# top-1 agreement against the full cache on the same stream.
#
#   scripts/exp_wikitext_ppl.sh MODEL_DIR [OUT]
#
# The stream is cut into windows of the model's context (each from an empty cache; the full cache
# cannot go beyond the context). The paper used the validation split; the shared data has the
# test split. Env: POLICIES (buzz,buzz_logn,h2o,streaming,local,full), BUDGETS (50,100 tokens),
# LIMIT (windows, default 8), WINDOW, THREADS.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:?usage: $0 MODEL_DIR [OUT]}"
OUT="${2:-out/wikitext_ppl}"
SHARED="${LLM_SHARED:-../shared}"
exec ./llm-run eval --task wikitext --data "$SHARED/data/wikitext/wikitext-2-raw-v1.test.hf_rows.jsonl" \
    --model "$MODEL" --rope shifted --policies "${POLICIES:-buzz,buzz_logn,h2o,streaming,local,full}" \
    --budgets "${BUDGETS:-50,100}" --limit "${LIMIT:-8}" ${WINDOW:+--ppl-window "$WINDOW"} -t "${THREADS:-1}" --out "$OUT"
