#!/usr/bin/env bash
# The main job on the default model: a story from stories260K, greedy, with the full cache and
# with BUZZ at a 0.4 budget side by side... (policies beyond `full` arrive with the eviction work).
# Uses ../shared/models/stories260K when present, else downloads it (needs the internet).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${LLM_MODEL:-}"
if [ -z "$MODEL" ]; then
    if [ -f ../shared/models/stories260K/config.json ]; then
        MODEL=../shared/models/stories260K
    else
        MODEL=models/stories260K
        [ -f "$MODEL/config.json" ] || scripts/download_stories260k.sh "$MODEL"
    fi
fi
echo "== llm-run -m $MODEL -p \"Once upon a time\" -n 200" >&2
./llm-run -m "$MODEL" -p "Once upon a time" -n 200
