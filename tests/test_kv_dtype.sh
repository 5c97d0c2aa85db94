#!/usr/bin/env bash
# The KV cache in 16 bits (--kv-dtype f32|f16|bf16|auto, issue 17).
# stories260K (an F32 checkpoint, ~330-token TinyStories prompt, -n 40):
#   * the default is f32 (--json kv.kv_dtype, the stderr kv line) and --kv-dtype f32 gives
#     logits byte-identical to it (today's results: the golden and Hugging Face tests hold them);
#   * f16 / bf16 logits close to f32, per row max|d| / max|f32| <= 4e-3 / 3.2e-2 (about 8 units
#     of f16's 2^-11 / bf16's 2^-8 rounding; measured 2.2e-3 / 2.1e-2 on this tiny 5-layer
#     model) and mean over rows <= 1e-3 / 8e-3, but NOT equal: max >= 1e-4 / 1e-3 (the cache
#     really holds 16-bit values);
#   * every byte figure halves: peak, average, full and allocated bytes at f16 (and bf16) are
#     exactly half of f32's, also for a budgeted chunked run;
#   * identity: at --budget 1.0 every policy but buzz_logn gives logits byte-identical to full
#     under f16 (buzz_logn differs), under --rope shifted for streaming/buzz/h2o, and under bf16
#     for the policies that read cached keys/values;
#   * --kv-mem-limit sizes with the real element size: a limit f32 does not fit runs at f16, and
#     the budget suggested for a small limit is larger at f16 and runs within the limit;
#   * a bad --kv-dtype: exit 2 and one line naming the flag.
# The GGUF models (scripts/fetch_model.sh; skipped when not fetched):
#   * the default is f16 for SmolLM2 (Q4_1) and Qwen2.5 (16-bit/quantized weights), with
#     2-byte K/V in the figures (--json, and `llm-run eval`'s results);
#   * the default cache against the transformers fixtures of test_gguf.sh (which pins f32 there):
#     top-1 equal at every position where transformers' top1 - top2 margin is >= 0.5;
#   * SmolLM2 prompt logits at f16 vs f32: top-1 agreement >= 0.99 at the positions where the
#     f32 run's top1 - top2 margin is >= 0.5 (test_gguf.sh's "sure" positions), and over all
#     positions no worse than the kernel-family noise floor (f32 under LLM_SIMD=scalar vs the
#     default family: the same model with only the summation order changed) minus 0.05. (This
#     4-bit model turns any perturbation into ~3% logit noise through its 8-bit activation
#     quantization: two f32 runs that differ only in summation order agree on 94-95% of the
#     top-1 over all positions, so 0.99 over all of them is out of reach for any change.)
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
SHARED=${LLM_SHARED:-../shared}
M=$SHARED/models/stories260K
DATA=$SHARED/data/tinystories/TinyStories-valid.excerpt_unverified.txt
BIN=${LLM_RUN:-./llm-run}
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }
for f in "$M/config.json" "$DATA"; do
    if [ ! -f "$f" ]; then echo "SKIP: $f not found"; echo "0 passed, 0 failed"; exit 0; fi
done
command -v jq >/dev/null || { echo "FAIL: jq is needed"; echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tr '\n' ' ' < "$DATA" | head -c 680 | sed 's/ [^ ]*$//' > "$tmp/prompt.txt"

# run NAME MODEL [flags...]: $tmp/NAME.{npy,json,err}; returns llm-run's status
run() {
    local name=$1 model=$2; shift 2
    timeout 300 "$BIN" -m "$model" -t 1 -n 40 --json --logits-out "$tmp/$name.npy" "$@" "$tmp/prompt.txt" \
        > "$tmp/$name.json" 2> "$tmp/$name.err"
}
kvj() { jq -r ".kv.$2" "$tmp/$1.json"; }

# ------------------------------------------------------------------ default, f32 = today
for dt in auto f32 f16 bf16; do
    run "full_$dt" "$M" --kv-dtype "$dt" || bad "--kv-dtype $dt: exit $? ($(head -1 "$tmp/full_$dt.err"))"
done
if [ "$(kvj full_auto kv_dtype)" = f32 ] && [ "$(kvj full_f16 kv_dtype)" = f16 ] && [ "$(kvj full_bf16 kv_dtype)" = bf16 ]; then
    ok "stories260K (F32 weights): the default is f32; --json kv.kv_dtype names the dtype"
else
    bad "kv.kv_dtype: default '$(kvj full_auto kv_dtype)', f16 '$(kvj full_f16 kv_dtype)', bf16 '$(kvj full_bf16 kv_dtype)'"
fi
"$BIN" -m "$M" -t 1 -n 4 --kv-dtype f16 "$tmp/prompt.txt" >/dev/null 2>"$tmp/line.err"
if grep -q "^kv: policy full, f16, " "$tmp/line.err"; then ok "the stderr kv line names the dtype: $(grep '^kv:' "$tmp/line.err" | cut -c1-60)..."
else bad "the stderr kv line does not name f16: $(grep '^kv:' "$tmp/line.err")"; fi
if cmp -s "$tmp/full_auto.npy" "$tmp/full_f32.npy"; then ok "--kv-dtype f32: logits byte-identical to the default (f32) run"
else bad "--kv-dtype f32: logits differ from the default run"; fi

# ------------------------------------------------------------------ f16 / bf16 close, not equal
for spec in "f16 4e-3 1e-3 1e-4" "bf16 3.2e-2 8e-3 1e-3"; do
    set -- $spec
    if msg=$(python3 - "$tmp/full_f32.npy" "$tmp/full_$1.npy" "$2" "$3" "$4" <<'PY'
import sys
import numpy as np
def die(m): print(m); sys.exit(1)
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
tmax, tmean, floor = map(float, sys.argv[3:6])
if a.shape != b.shape: die("shapes %s vs %s" % (a.shape, b.shape))
e = np.abs(a - b).max(axis=1) / np.abs(a).max(axis=1)
msg = "per-row max|d|/max|f32|: max %.3g (row %d), mean %.3g over %d rows" % (e.max(), e.argmax(), e.mean(), len(e))
if e.max() > tmax or e.mean() > tmean: die(msg + " > %g / %g" % (tmax, tmean))
if e.max() < floor: die(msg + ": below %g, the cache did not change" % floor)
print(msg)
PY
    ); then ok "--kv-dtype $1 vs f32 on stories260K: $msg"; else bad "--kv-dtype $1 vs f32 on stories260K: $msg"; fi
done

# ------------------------------------------------------------------ bytes halve
half() { # NAME16 NAME32 WHAT: every byte figure of NAME16 is exactly half of NAME32's
    local f r=""
    for f in peak_bytes avg_bytes full_bytes allocated_bytes; do
        local a b
        a=$(kvj "$1" $f) b=$(kvj "$2" $f)
        # exact in binary; cJSON may print 15 significant digits where 17 would round-trip
        if ! jq -ne --argjson a "$a" --argjson b "$b" '(($a * 2 - $b) | fabs) <= 1e-13 * $b and $a > 0' >/dev/null; then
            r="$r $f $a vs $b;"
        fi
    done
    if [ -z "$r" ]; then ok "$3: peak/avg/full/allocated bytes exactly half of f32's ($(kvj "$1" peak_bytes) vs $(kvj "$2" peak_bytes) peak)"
    else bad "$3: bytes not half of f32's:$r"; fi
}
half full_f16 full_f32 "full, f16"
half full_bf16 full_f32 "full, bf16"
for dt in f32 f16; do run "h2o_$dt" "$M" --kv-dtype "$dt" --policy h2o --budget 0.4 --prefill-chunk 64 || bad "h2o 0.4 --kv-dtype $dt: exit $?"; done
if [ "$(kvj h2o_f16 live_peak_tokens)" = "$(kvj h2o_f32 live_peak_tokens)" ]; then half h2o_f16 h2o_f32 "h2o 0.4, chunked prefill, f16"
else bad "h2o 0.4: peak tokens differ between f16 and f32 ($(kvj h2o_f16 live_peak_tokens) vs $(kvj h2o_f32 live_peak_tokens))"; fi

# ------------------------------------------------------------------ identity with full
same() { # NAME REF WHAT
    if cmp -s "$tmp/$1.npy" "$tmp/$2.npy" && [ "$(jq -c .tokens "$tmp/$1.json")" = "$(jq -c .tokens "$tmp/$2.json")" ]; then
        ok "$3: logits byte-identical to full"
    else bad "$3: logits differ from full ($(cmp "$tmp/$1.npy" "$tmp/$2.npy" 2>&1 | head -1))"; fi
}
mapfile -t POLICIES < <("$BIN" --list-policies | awk '/^[^ \t]/ {print $1}')
[ "${#POLICIES[@]}" -gt 10 ] || bad "--list-policies printed ${#POLICIES[@]} policies"
for p in "${POLICIES[@]}"; do
    [ "$p" = full ] && continue
    if ! run "id_$p" "$M" --kv-dtype f16 --policy "$p" --budget 1.0; then bad "$p f16 --budget 1.0: exit $? ($(head -1 "$tmp/id_$p.err"))"; continue; fi
    if [ "$p" = buzz_logn ]; then
        if cmp -s "$tmp/id_$p.npy" "$tmp/full_f16.npy"; then bad "buzz_logn f16 --budget 1.0: identical to full (log-n scale not applied)"
        else ok "buzz_logn f16 --budget 1.0: differs from full (log_512 n scaling)"; fi
        continue
    fi
    same "id_$p" full_f16 "$p --kv-dtype f16 --budget 1.0"
done
run sh_full "$M" --kv-dtype f16 --rope shifted || bad "full f16 --rope shifted: exit $?"
for p in streaming buzz h2o; do
    run "sh_$p" "$M" --kv-dtype f16 --rope shifted --policy "$p" --budget 1.0 || bad "$p f16 shifted: exit $?"
    same "sh_$p" sh_full "$p --kv-dtype f16 --rope shifted --budget 1.0"
done
for p in h2o snapkv ada_pyramidkv subgen subgen_stream hashevict l2norm tova; do
    run "idb_$p" "$M" --kv-dtype bf16 --policy "$p" --budget 1.0 || bad "$p bf16: exit $?"
    same "idb_$p" full_bf16 "$p --kv-dtype bf16 --budget 1.0"
done

# ------------------------------------------------------------------ --kv-mem-limit
a32=$(kvj full_f32 allocated_bytes)
lim=$(jq -n --argjson a "$a32" '$a * 0.75 / 1e9')
"$BIN" -m "$M" -t 1 -n 40 --kv-dtype f32 --kv-mem-limit "$lim" "$tmp/prompt.txt" >/dev/null 2>"$tmp/l32.err"; rc32=$?
"$BIN" -m "$M" -t 1 -n 40 --kv-dtype f16 --kv-mem-limit "$lim" --json "$tmp/prompt.txt" >"$tmp/l16.json" 2>"$tmp/l16.err"; rc16=$?
if [ $rc32 -eq 2 ] && grep -q "4-byte K/V" "$tmp/l32.err" && [ $rc16 -eq 0 ] &&
   jq -e --argjson l "$lim" '.kv.allocated_bytes <= $l * 1e9' "$tmp/l16.json" >/dev/null; then
    ok "--kv-mem-limit $lim GB (3/4 of the f32 cache): f32 stops, f16 runs ($(jq .kv.allocated_bytes "$tmp/l16.json") bytes)"
else bad "--kv-mem-limit $lim: f32 rc $rc32 ($(head -1 "$tmp/l32.err")), f16 rc $rc16 ($(head -1 "$tmp/l16.err"))"; fi
for dt in f32 f16; do
    "$BIN" -m "$M" -t 1 -n 40 --policy h2o --kv-dtype $dt --kv-mem-limit 0.00003 "$tmp/prompt.txt" >/dev/null 2>"$tmp/s_$dt.err"
    eval "rc_$dt=$?"
    eval "sg_$dt=$(sed -n 's/.*try --budget \([0-9.]*\).*/\1/p' "$tmp/s_$dt.err")"
done
if [ "$rc_f32" -eq 2 ] && [ "$rc_f16" -eq 2 ] && [ -n "$sg_f32" ] && [ -n "$sg_f16" ] && grep -q "2-byte K/V" "$tmp/s_f16.err" &&
   jq -ne --argjson a "$sg_f16" --argjson b "$sg_f32" '$a > $b' >/dev/null; then
    ok "--kv-mem-limit 3e-5 GB, h2o: suggests --budget $sg_f32 at f32 and $sg_f16 at f16 (2-byte K/V)"
    for dt in f32 f16; do
        eval "b=\$sg_$dt"
        if "$BIN" -m "$M" -t 1 -n 40 --policy h2o --kv-dtype $dt --budget "$b" --kv-mem-limit 0.00003 --json \
            "$tmp/prompt.txt" >"$tmp/r.json" 2>"$tmp/r.err" && jq -e '.kv.allocated_bytes <= 30000' "$tmp/r.json" >/dev/null; then
            ok "--kv-dtype $dt: the suggested --budget $b runs within the limit ($(jq .kv.allocated_bytes "$tmp/r.json") bytes)"
        else bad "--kv-dtype $dt: the suggested --budget $b: $(head -1 "$tmp/r.err")"; fi
    done
else bad "--kv-mem-limit suggestions: f32 rc $rc_f32 '$sg_f32', f16 rc $rc_f16 '$sg_f16' ($(head -1 "$tmp/s_f16.err"))"; fi

# ------------------------------------------------------------------ bad value
out=$("$BIN" -m "$M" -p x --kv-dtype q8_0 2>&1); rc=$?
if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && [[ "$out" == *--kv-dtype* ]]; then ok "--kv-dtype q8_0: exit 2, '$out'"
else bad "--kv-dtype q8_0: exit $rc, '$out'"; fi

# ------------------------------------------------------------------ GGUF models
CACHE=${LLM_RUN_MODELS:-$HOME/.cache/llm-run}   # where scripts/fetch_model.sh puts them
S=$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf Q=$CACHE/Qwen2.5-Coder-0.5B-Instruct.gguf
for spec in "SmolLM2:$S" "Qwen2.5:$Q"; do
    name=${spec%%:*} gg=${spec#*:}
    if [ ! -f "$gg" ]; then echo "skip $name: $gg not fetched (scripts/fetch_model.sh)"; continue; fi
    if timeout 300 "$BIN" -m "$gg" -t 2 -n 2 -p "The capital of France is" --json >"$tmp/g.json" 2>"$tmp/g.err"; then
        bpt=$(jq '.kv.full_bytes / (.n_prompt_tokens + 1)' "$tmp/g.json")
        if [ "$(jq -r .kv.kv_dtype "$tmp/g.json")" = f16 ]; then ok "$name (quantized/16-bit weights): the default is f16 ($bpt bytes per token)"
        else bad "$name: default kv_dtype $(jq -r .kv.kv_dtype "$tmp/g.json")"; fi
    else bad "$name: exit $? ($(head -1 "$tmp/g.err"))"; fi
done
# the default (f16) cache against the Hugging Face transformers fixtures of tests/test_gguf.sh
# (F32 compute on the dequantized weights): top-1 equal wherever transformers' margin >= 0.5
for spec in "smollm2-135m:$S" "qwen2.5-0.5b:$Q"; do
    name=${spec%%:*} gg=${spec#*:} FX=tests/fixtures/gguf/${spec%%:*}.npz
    [ -f "$gg" ] && [ -f "$FX" ] || continue
    for k in 0 1 2 3; do
        python3 tests/support/gguf_vs_hf.py --ids "$FX" $k >"$tmp/ids.json"
        if ! timeout 300 "$BIN" -m "$gg" --prompt-ids @"$tmp/ids.json" -n 1 -t 2 --logits-out "$tmp/fx.npy" --json >"$tmp/fx.json" 2>"$tmp/fx.err"; then
            bad "$name prompt $k: exit $? ($(head -1 "$tmp/fx.err"))"; continue
        fi
        if msg=$(python3 - "$FX" $k "$tmp/fx.npy" "$(jq -r .kv.kv_dtype "$tmp/fx.json")" <<'PY'
import sys
import numpy as np
d, k = np.load(sys.argv[1]), sys.argv[2]
am, mg = d["argmax_" + k], d["margin_" + k]
P = np.load(sys.argv[3])[:len(am)]
agree, sure = P.argmax(1) == am, mg >= 0.5
print("%s cache, %d tokens: top-1 equal at %d/%d positions with margin >= 0.5 (all positions %.4f)" % (
    sys.argv[4], len(am), agree[sure].sum(), sure.sum(), agree.mean()))
sys.exit(0 if agree[sure].all() and sys.argv[4] == "f16" else 1)
PY
        ); then ok "$name prompt $k vs transformers, default cache: $msg"; else bad "$name prompt $k vs transformers, default cache: $msg"; fi
    done
done
if [ -f "$S" ]; then
    for dt in f32 f16; do
        run "s_$dt" "$S" -t 2 -n 1 --kv-dtype $dt || bad "SmolLM2 --kv-dtype $dt: exit $?"
    done
    LLM_SIMD=scalar run s_sc "$S" -t 2 -n 1 --kv-dtype f32 || bad "SmolLM2 LLM_SIMD=scalar: exit $?"
    if msg=$(python3 - "$tmp" <<'PY'
import sys
import numpy as np
def die(m): print(m); sys.exit(1)
d = sys.argv[1]
a, b, c = (np.load("%s/s_%s.npy" % (d, k)) for k in ("f32", "f16", "sc"))
if a.shape != b.shape or a.shape != c.shape: die("shapes %s %s %s" % (a.shape, b.shape, c.shape))
s = np.sort(a, axis=1)
sure = s[:, -1] - s[:, -2] >= 0.5
ag = a.argmax(1) == b.argmax(1)
floor = (a.argmax(1) == c.argmax(1)).mean()
msg = ("top-1 agreement %.4f at the %d positions with margin >= 0.5, %.4f at all %d (noise floor: f32 scalar vs "
       "default family %.4f)" % (ag[sure].mean(), sure.sum(), ag.mean(), len(ag), floor))
if np.array_equal(a, b): die("f16 logits equal f32's")
if ag[sure].mean() < 0.99 or ag.mean() < floor - 0.05: die(msg)
print(msg)
PY
    ); then ok "SmolLM2 prompt logits, f16 vs f32: $msg"; else bad "SmolLM2 prompt logits, f16 vs f32: $msg"; fi
    if timeout 300 "$BIN" eval --task tinystories --data "$DATA" --model "$S" --policies full --budgets 1 --ppl-window 32 \
        --limit 1 --no-plot -t 2 --out "$tmp/ev" >/dev/null 2>"$tmp/ev.err" &&
       jq -e '.kv.peak_bytes == 31 * 30 * 3 * 64 * 2 * 2' "$tmp/ev/results.jsonl" >/dev/null; then
        ok "llm-run eval on SmolLM2: peak bytes $(jq .kv.peak_bytes "$tmp/ev/results.jsonl") = 31 tokens x 30 layers x 3 KV heads x 64 x 2 (K,V) x 2 bytes"
    else bad "llm-run eval on SmolLM2: $(head -1 "$tmp/ev.err") $(jq -c .kv "$tmp/ev/results.jsonl" 2>/dev/null)"; fi
fi
finish
