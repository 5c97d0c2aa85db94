#!/usr/bin/env bash
# The committed sweeps on the real instruction models (issue 16), resumable and sharded:
#
#   scripts/sweep_real.sh smollm2|qwen [all|xsum|litm|passkey|wikitext]
#
# Each sweep runs as SHARDS single-thread shards side by side (-t 1, one per core), each
# `nohup`-friendly (stdin closed, its progress in OUT/<model>/<task>/logs/shard-i.log), then
# `llm-run eval-merge` joins them into OUT/<model>/<task>/ (results.jsonl, run.json,
# summary.csv/md, summary.png; passkey: cells.csv and the heatmaps; wikitext: per_1k.csv).
# Rerunning resumes every shard where it stopped (a killed run loses at most its run in flight).
#
# Grids (the issue's):
#   smollm2  xsum 50 articles x {full local streaming h2o buzz buzz_logn snapkv ada_snapkv pyramidkv
#            tova} x {0.2, 0.4}, the 7 other policies at 0.4, {full h2o buzz snapkv} at 0.1 and 0.6,
#            + the no-context row; litm 20 questions per gold position (0, 4, 9) x {full streaming h2o
#            buzz snapkv ada_snapkv} x {0.2, 0.4} + closedbook; passkey depths {0 .25 .5 .75 1} x
#            lengths {1k 2k} x 4 samples x {full streaming h2o buzz snapkv} at 0.2 + no needle;
#            wikitext one 4096-token stream x the 10 main policies at 0.2, --rope absolute and shifted,
#            fed 256 tokens at a time.
#   qwen     xsum 30 x {full streaming h2o buzz snapkv $EXTRA} x {0.2, 0.4}; litm 10 per gold position
#            x the same at 0.4 + closedbook; passkey 5 depths x {1k 2k 4k} x 2 samples x {full
#            streaming h2o buzz snapkv} at 0.2 + no needle.
# Env: OUT (results), SHARDS (2), THREADS (1), LIMIT (examples per sweep instead of the grid's:
# LIMIT=1 checks the script on a tiny slice), EXTRA (qwen's sixth policy, chosen from SmolLM2's
# results; default tova), BIN (./llm-run), QPOS (question position, last; `first` writes the litm
# and passkey sweeps to <task>_qfirst/ beside the question-last ones), NO_MERGE=1 (shards only).
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:?usage: $0 smollm2|qwen [all|xsum|litm|passkey|wikitext]}"
what="${2:-all}"
SHARED="${LLM_SHARED:-../shared}"
OUT="${OUT:-results}"
SHARDS="${SHARDS:-2}"
THREADS="${THREADS:-1}"
BIN="${BIN:-./llm-run}"
QPOS="${QPOS:-last}"
SUF=; [ "$QPOS" = first ] && SUF=_qfirst
D="$SHARED/data"
case "$model" in
    smollm2) M="${SMOLLM2:-$HOME/.cache/llm-run/SmolLM2-135M-Instruct.Q4_1.gguf}"; fetch=smollm2-135m ;;
    qwen)    M="${QWEN:-$HOME/.cache/llm-run/Qwen2.5-Coder-0.5B-Instruct.gguf}"; fetch=qwen2.5-0.5b ;;
    *) echo "sweep_real.sh: unknown model '$model' (smollm2 or qwen)" >&2; exit 2 ;;
esac
[ -f "$M" ] || scripts/fetch_model.sh "$fetch"
MAIN10=full,local,streaming,h2o,buzz,buzz_logn,snapkv,ada_snapkv,pyramidkv,tova
OTHER7=scissorhands,l2norm,hashevict,random,subgen,subgen_stream,ada_pyramidkv
Q6="full,streaming,h2o,buzz,snapkv,${EXTRA:-tova}"
lim() { echo "${LIMIT:-$1}"; }

# shards DIR ARGS...: SHARDS shards of one sweep into DIR, side by side; fails if one fails
shards() {
    local dir=$1; shift
    mkdir -p "$dir/logs"
    local pids=() i
    for ((i = 0; i < SHARDS; i++)); do
        echo "+ $BIN eval $* --shard $i/$SHARDS --out $dir" >> "$dir/logs/shard-$i.log"
        "$BIN" eval "$@" -m "$M" -t "$THREADS" --question-position "$QPOS" --no-plot \
            --shard "$i/$SHARDS" --out "$dir" < /dev/null >> "$dir/logs/shard-$i.log" 2>&1 &
        pids+=($!)
    done
    local rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    if [ "$rc" -ne 0 ]; then echo "sweep_real.sh: a shard of $dir failed (see $dir/logs/)" >&2; return 1; fi
}
merge() { [ "${NO_MERGE:-0}" = 1 ] || "$BIN" eval-merge "$1"; }

if [ "$model" = smollm2 ]; then
    if [ "$what" = all ] || [ "$what" = xsum ]; then
        X=(--task xsum --data "$D/xsum/h2o_xsum_0shot.jsonl" --limit "$(lim 50)")
        shards "$OUT/smollm2/xsum" "${X[@]}" --policies "$MAIN10" --budgets 0.2,0.4 --baseline
        shards "$OUT/smollm2/xsum" "${X[@]}" --policies "$OTHER7" --budgets 0.4
        shards "$OUT/smollm2/xsum" "${X[@]}" --policies full,h2o,buzz,snapkv --budgets 0.1,0.6
        merge "$OUT/smollm2/xsum"
    fi
    if [ "$what" = all ] || [ "$what" = litm ]; then
        for g in 0 4 9; do
            shards "$OUT/smollm2/litm_gold$g$SUF" --task litm --limit "$(lim 20)" --baseline \
                --data "$D/lost_in_the_middle/nq-open-10_total_documents_gold_at_$g.first441.jsonl.gz" \
                --policies full,streaming,h2o,buzz,snapkv,ada_snapkv --budgets 0.2,0.4
            merge "$OUT/smollm2/litm_gold$g$SUF"
        done
    fi
    if [ "$what" = all ] || [ "$what" = passkey ]; then
        shards "$OUT/smollm2/passkey$SUF" --task passkey --depths 0,0.25,0.5,0.75,1 --lengths 1k,2k --samples 4 \
            --policies full,streaming,h2o,buzz,snapkv --budgets 0.2 --baseline ${LIMIT:+--limit "$LIMIT"}
        merge "$OUT/smollm2/passkey$SUF"
    fi
    if [ "$what" = all ] || [ "$what" = wikitext ]; then
        # one stream: the two rope modes run side by side instead of shards
        W=(--task wikitext --data "$D/wikitext/wikitext-2-raw-v1.test.hf_rows.jsonl" --ppl-window 4096 --limit 1
           --prefill-chunk 256 --policies "$MAIN10" --budgets 0.2 -m "$M" -t "$THREADS" --no-plot)
        mkdir -p "$OUT/smollm2/wikitext/logs" "$OUT/smollm2/wikitext_shifted/logs"
        "$BIN" eval "${W[@]}" --rope absolute --out "$OUT/smollm2/wikitext" < /dev/null >> "$OUT/smollm2/wikitext/logs/run.log" 2>&1 & a=$!
        "$BIN" eval "${W[@]}" --rope shifted --out "$OUT/smollm2/wikitext_shifted" < /dev/null >> "$OUT/smollm2/wikitext_shifted/logs/run.log" 2>&1 & b=$!
        wait "$a"; wait "$b"
        for d in wikitext wikitext_shifted; do "$BIN" eval-merge "$OUT/smollm2/$d" > /dev/null 2>&1 || true; done
    fi
else
    if [ "$what" = all ] || [ "$what" = xsum ]; then
        shards "$OUT/qwen2.5-0.5b/xsum" --task xsum --data "$D/xsum/h2o_xsum_0shot.jsonl" --limit "$(lim 30)" \
            --policies "$Q6" --budgets 0.2,0.4 --baseline
        merge "$OUT/qwen2.5-0.5b/xsum"
    fi
    if [ "$what" = all ] || [ "$what" = litm ]; then
        for g in 0 4 9; do
            shards "$OUT/qwen2.5-0.5b/litm_gold$g$SUF" --task litm --limit "$(lim 10)" --baseline \
                --data "$D/lost_in_the_middle/nq-open-10_total_documents_gold_at_$g.first441.jsonl.gz" \
                --policies "$Q6" --budgets 0.4
            merge "$OUT/qwen2.5-0.5b/litm_gold$g$SUF"
        done
    fi
    if [ "$what" = all ] || [ "$what" = passkey ]; then
        shards "$OUT/qwen2.5-0.5b/passkey$SUF" --task passkey --depths 0,0.25,0.5,0.75,1 --lengths 1k,2k,4k --samples 2 \
            --policies full,streaming,h2o,buzz,snapkv --budgets 0.2 --baseline ${LIMIT:+--limit "$LIMIT"}
        merge "$OUT/qwen2.5-0.5b/passkey$SUF"
    fi
fi
