#!/usr/bin/env bash
# What each policy family keeps, on SmolLM2-135M-Instruct (issue 16, "Seeing what a policy
# kept"): one passkey prompt (1k tokens, key at depth 0.5) and one 10-document QA prompt (gold
# document at position 4), each under streaming (sink + window), h2o and buzz (heavy hitters),
# snapkv and pyramidkv (observation window) and ada_snapkv (adaptive per head) at budget 0.2;
# --dump-kept after the prefill, drawn by scripts/plot_kept.py with the needle / documents /
# question marked. Writes results/smollm2/kept/{passkey,litm}-POLICY.png and the dumps (.jsonl).
#
#   scripts/make_kept_pictures.sh        (about 2 minutes on one core; BIN, SMOLLM2, OUT as in sweep_real.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${LLM_SHARED:-../shared}"
BIN="${BIN:-./llm-run}"
M="${SMOLLM2:-$HOME/.cache/llm-run/SmolLM2-135M-Instruct.Q4_1.gguf}"
[ -f "$M" ] || M=$(scripts/fetch_model.sh smollm2-135m)
OUT="${OUT:-results}/smollm2/kept"
POLICIES=streaming,h2o,buzz,snapkv,pyramidkv,ada_snapkv
mkdir -p "$OUT"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rm -f "$OUT/passkey.jsonl" "$OUT/litm.jsonl"
"$BIN" eval -m "$M" -t 1 --task passkey --depths 0.5 --lengths 1k --samples 1 --limit 1 \
    --policies "$POLICIES" --budgets 0.2 --no-plot --dump-kept "$OUT/passkey.jsonl" --out "$tmp/passkey" >/dev/null
"$BIN" eval -m "$M" -t 1 --task litm --data "$SHARED/data/lost_in_the_middle/nq-open-10_total_documents_gold_at_4.first441.jsonl.gz" \
    --limit 1 --policies "$POLICIES" --budgets 0.2 --no-plot --dump-kept "$OUT/litm.jsonl" --out "$tmp/litm" >/dev/null
for task in passkey litm; do
    for p in ${POLICIES//,/ }; do
        python3 scripts/plot_kept.py "$OUT/$task.jsonl" --policy "$p" --budget 0.2 --out "$OUT/$task-$p.png"
    done
done
gzip -f "$OUT/passkey.jsonl" "$OUT/litm.jsonl"
echo "wrote $OUT"
