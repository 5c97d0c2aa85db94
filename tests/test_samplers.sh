#!/usr/bin/env bash
# llama.cpp's samplers end to end (cli/options_sampling.c, model/sampler.c; tests/test_sampler.c
# compares each stage with llama.cpp itself), on stories260K (-t 1) and SmolLM2 when fetched:
#   * settings that leave one token are the greedy run's text: --top-k 1 at --temp 5 (in either
#     order), --min-p 1 at --temp 3 with temperature first, --mirostat 2 --mirostat-ent 0;
#   * every sampler is reproducible (the same --seed, the same text) and samples (seeds 1-4 give
#     at least two texts);
#   * each generated id obeys its stage, checked with numpy on the run's own logits
#     (--logits-out): --typical (the locally typical set), --top-nsigma, XTC with threshold 0
#     behind --top-k 2 (always the second most likely token), min-p before and after the
#     temperature (--samplers), Mirostat 2.0 (mu followed step by step), dynamic temperature
#     (the candidates of top-k 3 only);
#   * DRY with a huge multiplier, --dry-allowed-length 2, no breakers and the whole context as its
#     window: no generated token completes a 3-gram seen earlier in prompt + output (stories260K
#     and SmolLM2, greedy), where the plain greedy run does; a breaker changes the text, and -e
#     escapes breakers ('\x6f' is "o");
#   * -l ID-inf bans a token (never generated; the greedy text changes), -l ID+100 forces it, and
#     greedy ids with two biases are the argmax of the biased logits (numpy).
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
SHARED=${LLM_SHARED:-../shared}
M=$SHARED/models/stories260K
BIN=${LLM_RUN:-./llm-run}
SMOL=${LLM_RUN_MODELS:-$HOME/.cache/llm-run}/SmolLM2-135M-Instruct.Q4_1.gguf
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
run() { "$BIN" -m "$M" -t 1 "$@" 2>"$TMP/err"; }
same() {
    if cmp -s "$2" "$3"; then ok "$1"; else bad "$1: outputs differ ($(head -c 80 "$2" | tr '\n' ' ') | $(head -c 80 "$3" | tr '\n' ' '))"; fi
}

P=(-p "Once upon a time" -n 40)
run "${P[@]}" >"$TMP/plain" || bad "plain run failed: $(head -1 "$TMP/err")"

# one token left: greedy
for flags in "--temp 5 --top-k 1" "--temperature 5 --top-k 1 --samplers temperature;top_k" \
             "--temp 3 --top-p 1 --min-p 1 --samplers temp;min_p" "--temp 0.8 --mirostat 2 --mirostat-ent 0"; do
    # shellcheck disable=SC2086
    run "${P[@]}" --seed 3 $flags >"$TMP/f"
    same "$flags: the greedy text" "$TMP/plain" "$TMP/f"
done

# reproducible, and sampling
for flags in "--temp 0.8" "--temp 1 --typical 0.7" "--temp 1 --top-nsigma 1" "--temp 1 --xtc-probability 0.5" \
             "--temp 0.8 --dynatemp-range 0.5" "--temp 0.8 --mirostat 1" "--temp 0.8 --mirostat 2" \
             "--temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05 --sampling-seq kpmt" "--temp 1 --adaptive-target 0.3" \
             "--temp 0.8 --dry-multiplier 0.8"; do
    texts=()
    for seed in 1 2 3 4; do
        # shellcheck disable=SC2086
        run "${P[@]}" --seed "$seed" $flags >"$TMP/s$seed" || bad "$flags --seed $seed failed: $(head -1 "$TMP/err")"
        texts+=("$(md5sum <"$TMP/s$seed")")
    done
    # shellcheck disable=SC2086
    run "${P[@]}" --seed 2 $flags >"$TMP/again"
    same "$flags: --seed 2 twice, the same text" "$TMP/s2" "$TMP/again"
    n=$(printf '%s\n' "${texts[@]}" | sort -u | wc -l)
    [ "$n" -ge 2 ] && ok "$flags: seeds 1-4 give $n texts" || bad "$flags: seeds 1-4 give one text"
done

# each generated id against its stage, on the run's logits
check() {   # name, python condition name, then flags
    local name="$1" cond="$2"
    shift 2
    run -p "Once upon a time" -n 48 --seed 5 "$@" --logits-out "$TMP/l.npy" --json >"$TMP/j.json" || { bad "$name: run failed"; return; }
    local v
    v=$(python3 - "$TMP/l.npy" "$TMP/j.json" "$cond" <<'PY'
import json, sys
import numpy as np
L = np.load(sys.argv[1]).astype(np.float32); j = json.load(open(sys.argv[2])); cond = sys.argv[3]
n = j["n_prompt_tokens"]; gen = j["tokens"]
def softmax(x):
    e = np.exp((x - x.max()).astype(np.float64)); return e / e.sum()
mu = 2 * 3.0
bad = []
for k, g in enumerate(gen):
    x = L[n - 1 + k]
    if cond == "typical":          # --typical 0.5 --top-p 1 --temp 1
        p = softmax(x); ent = -(p * np.log(p)).sum(); sc = np.abs(-np.log(p) - ent)
        order = np.argsort(sc, kind="stable"); cum = np.cumsum(p[order])
        keep = set(order[: int(np.argmax(cum > 0.5)) + 1].tolist())
        if g not in keep: bad.append(k)
    elif cond == "nsigma":         # --top-nsigma 1 --top-p 1 --temp 1
        if x[g] < x.max() - 1.0 * x.std(): bad.append(k)
    elif cond == "xtc":            # --top-k 2 --xtc-probability 1 --xtc-threshold 0
        if g != int(np.argsort(-x, kind="stable")[1]): bad.append(k)
    elif cond == "minp_first":     # --samplers min_p;temp --min-p 0.2 --temp 3 --top-p 1
        if x[g] < x.max() + np.log(0.2) - 1e-4: bad.append(k)
    elif cond == "temp_first":     # --samplers temp;min_p --min-p 0.2 --temp 3 --top-p 1
        if x[g] / 3 < x.max() / 3 + np.log(0.2) - 1e-4: bad.append(k)
    elif cond == "mirostat2":      # --mirostat 2 --mirostat-ent 3 --mirostat-lr 0.1 --temp 0.8
        p = softmax(x / 0.8); s = -np.log2(p)
        keep = np.nonzero(s <= mu)[0]
        if len(keep) == 0: keep = np.array([int(np.argmax(x))])
        if g not in set(keep.tolist()): bad.append(k); continue
        q = p[keep] / p[keep].sum(); mu -= 0.1 * (-np.log2(q[list(keep).index(g)]) - 3.0)
    elif cond == "top3":           # --top-k 3 --dynatemp-range 0.5 --temp 0.8
        if g not in set(np.argsort(-x, kind="stable")[:3].tolist()): bad.append(k)
print("ok %d" % len(gen) if not bad else "steps %s of %d" % (bad[:5], len(gen)))
PY
)
    [ "${v%% *}" = ok ] && ok "$name: ${v#ok } ids as numpy's stage allows" || bad "$name: $v"
}
check "--typical 0.5" typical --temp 1 --top-p 1 --typical 0.5
check "--top-nsigma 1" nsigma --temp 1 --top-p 1 --top-nsigma 1
check "XTC threshold 0 behind --top-k 2: the second token" xtc --temp 1 --top-k 2 --top-p 1 --xtc-probability 1 --xtc-threshold 0
check "--samplers min_p;temp: min-p on the unscaled logits" minp_first --samplers "min_p;temp" --min-p 0.2 --temp 3 --top-p 1
check "--samplers temp;min_p: min-p at the temperature" temp_first --samplers "temp;min_p" --min-p 0.2 --temp 3 --top-p 1
check "--mirostat 2: mu followed" mirostat2 --mirostat 2 --mirostat-ent 3 --mirostat-lr 0.1 --temp 0.8
check "--dynatemp-range behind --top-k 3" top3 --top-k 3 --dynatemp-range 0.5 --temp 0.8

# the logit bias
first=$(run "${P[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"][0])')
run "${P[@]}" -l "$first-inf" --json >"$TMP/j.json"
v=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tokens"]; print("ok" if int(sys.argv[2]) not in t and len(t) == 40 else "found %s" % t)' "$TMP/j.json" "$first")
[ "$v" = ok ] && ok "-l $first-inf: token $first never generated" || bad "-l $first-inf: $v"
run "${P[@]}" -n 6 -l 7+100 --json >"$TMP/j.json"
v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$TMP/j.json")
[ "$v" = "[7, 7, 7, 7, 7, 7]" ] && ok "-l 7+100: token 7 every step" || bad "-l 7+100: $v"
run -p "Once upon a time" -n 40 -l 300+2.5 -l "$first-1.5" -l 300+0.5 --logits-out "$TMP/l.npy" --json >"$TMP/j.json"
v=$(python3 - "$TMP/l.npy" "$TMP/j.json" "$first" <<'PY'
import json, sys
import numpy as np
L = np.load(sys.argv[1]).astype(np.float32); j = json.load(open(sys.argv[2])); first = int(sys.argv[3])
n = j["n_prompt_tokens"]; gen = j["tokens"]
for k, g in enumerate(gen):
    x = L[n - 1 + k].copy(); x[300] += np.float32(2.5); x[first] -= np.float32(1.5); x[300] += np.float32(0.5)
    if int(np.argmax(x)) != g: print("step %d: %d, numpy %d" % (k, g, int(np.argmax(x)))); sys.exit()
print("ok %d" % len(gen))
PY
)
[ "${v%% *}" = ok ] && ok "-l 300+2.5 -l $first-1.5 -l 300+0.5: ${v#ok } greedy ids are numpy's argmax of the biased logits" || bad "-l biases: $v"

# DRY: no repeated 3-gram ends in the output
for model in "$M" "$SMOL"; do
    [ -f "$model" ] || [ -d "$model" ] || { echo "skip DRY on $model: missing"; continue; }
    ids=$("$BIN" tokenize -m "$model" -p "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. the cat" --ids 2>/dev/null | tr -d '[] ')
    for dry in "" "--dry-multiplier 1000 --dry-allowed-length 2 --dry-penalty-last-n -1 --dry-sequence-breaker none"; do
        # shellcheck disable=SC2086
        "$BIN" -m "$model" -t 1 --prompt-ids "$ids" -n 40 --ignore-eos $dry --json >"$TMP/j.json" 2>"$TMP/err" || bad "DRY run failed: $(head -1 "$TMP/err")"
        v=$(python3 - "$TMP/j.json" "$ids" <<'PY'
import json, sys
gen = json.load(open(sys.argv[1]))["tokens"]; seq = [int(x) for x in sys.argv[2].split(",")]
n = len(seq); seq += gen; rep = []
for i in range(n, len(seq)):
    tri = tuple(seq[i - 2:i + 1])
    if any(tuple(seq[j:j + 3]) == tri for j in range(0, i - 2)): rep.append(i - n)
print("ok %d" % len(gen) if not rep else "repeats at steps %s" % rep[:6])
PY
)
        if [ -z "$dry" ]; then
            [ "${v%% *}" != ok ] && ok "$(basename "$model") greedy without DRY repeats 3-grams ($v)" || bad "$(basename "$model"): the plain greedy run repeats nothing: the DRY check below could not fail"
        else
            [ "${v%% *}" = ok ] && ok "$(basename "$model") DRY x1000: ${v#ok } ids, no 3-gram repeated" || bad "$(basename "$model") DRY: $v"
        fi
    done
done
# breakers matter (a breaker "o" cuts the repeats: another text than none), and -e escapes them
DP=(-p $'Tom ran.\nTom ran.\nTom ran.\nTom ran.\nTom' -n 30 --dry-multiplier 1000 --dry-allowed-length 1 --dry-penalty-last-n -1)
run "${DP[@]}" --dry-sequence-breaker none >"$TMP/none"
run "${DP[@]}" --dry-sequence-breaker o >"$TMP/o"
run "${DP[@]}" -e --dry-sequence-breaker '\x6f' >"$TMP/esc"
cmp -s "$TMP/none" "$TMP/o" && bad "DRY breaker o: the same text as no breakers" || ok "DRY breaker o changes the text (repeats cut at it)"
same "-e --dry-sequence-breaker '\x6f' is the breaker o" "$TMP/o" "$TMP/esc"

# a real vocabulary (49152 ids): the chain and Mirostat run, reproducibly
if [ -f "$SMOL" ]; then
    for flags in "--temp 0.8 --typical 0.9" "--temp 0.8 --mirostat 1" "--temp 0.7 --top-k 40 --top-p 0.95 --min-p 0.05"; do
        # shellcheck disable=SC2086
        "$BIN" -m "$SMOL" -t 1 --chat -p "Name three colors." -n 24 --seed 9 $flags >"$TMP/a" 2>"$TMP/err" || bad "SmolLM2 $flags failed: $(head -1 "$TMP/err")"
        # shellcheck disable=SC2086
        "$BIN" -m "$SMOL" -t 1 --chat -p "Name three colors." -n 24 --seed 9 $flags >"$TMP/b" 2>/dev/null
        [ -s "$TMP/a" ] && same "SmolLM2 $flags: the same text twice" "$TMP/a" "$TMP/b" || bad "SmolLM2 $flags: no text"
    done
else
    echo "skip SmolLM2 cases: $SMOL missing (scripts/fetch_model.sh smollm2-135m)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
