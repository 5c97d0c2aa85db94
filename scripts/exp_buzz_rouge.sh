#!/usr/bin/env bash
# BUZZ paper, ROUGE vs KV budget on XSum or CNN/DailyMail (Tables 1-2 / Fig. 5; EVAL.md "BUZZ").
#
#   scripts/exp_buzz_rouge.sh MODEL_DIR [xsum|cnndm] [OUT]
#
# BUZZ's protocol: prompt "Text: {document}\n\nSUMMARIZE the previous text to 50 words!" with BOS,
# greedy, --rope shifted for every method (POLICIES.md §1.7), budgets 10-50% of prompt + new
# tokens. Documents longer than the model's context are cut to fit (recorded per line).
# Env: POLICIES (default buzz,buzz_logn,h2o,streaming,local,full), BUDGETS (0.1,0.2,0.3,0.4,0.5),
# LIMIT (40 = BUZZ's num_samples), MAX_NEW (64; the paper allows 1000), THREADS, STYLE (buzz|helm).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:?usage: $0 MODEL_DIR [xsum|cnndm] [OUT]}"
TASK="${2:-xsum}"
OUT="${3:-out/buzz_rouge_$TASK}"
SHARED="${LLM_SHARED:-../shared}"
case "$TASK" in
    xsum) DATA="$SHARED/data/xsum/h2o_xsum_0shot.jsonl" ;;
    cnndm) DATA="$SHARED/data/cnn_dailymail/cnn_dailymail_test_first1000.jsonl" ;;
    *) echo "$0: task must be xsum or cnndm, got '$TASK'" >&2; exit 2 ;;
esac
exec ./llm-run eval --task "$TASK" --data "$DATA" --model "$MODEL" --prompt-style "${STYLE:-buzz}" --rope shifted \
    --policies "${POLICIES:-buzz,buzz_logn,h2o,streaming,local,full}" --budgets "${BUDGETS:-0.1,0.2,0.3,0.4,0.5}" \
    --limit "${LIMIT:-40}" --max-new-tokens "${MAX_NEW:-64}" -t "${THREADS:-1}" --out "$OUT"
