#!/usr/bin/env bash
# llm-run perplexity (cli/perplexity.c, eval/ppl_chunks.c), llama-perplexity's protocol:
#   * the protocol, recomputed outside: on stories260K (a SentencePiece model that adds BOS),
#     -c 64 --chunks 3, each chunk's logits from `llm-run --prompt-ids` (its first id replaced by
#     BOS) --logits-out, the second half scored in numpy as llama.cpp's log_softmax does: the
#     running values and the final estimate (and its ±) equal llm-run perplexity's to the
#     printed digits;
#   * against llama.cpp: SmolLM2-135M Q4_1 on WikiText-2's test text, -c 128 --chunks 8, against
#     llama-perplexity on the same file (tests/fixtures/perplexity/llamacpp_smollm2.txt, made by
#     scripts/make_perplexity_fixture.sh): every running value within 0.2% of llama.cpp's on the
#     model's F32 copy and within 2.5% of llama.cpp's on the Q4_1 file (whose 8-bit activations
#     move its running values by up to 1.7%), the final estimate within 0.3% of the latter (0.11% here);
#   * --json carries the same figure; --policy full --prefill-chunk 32 gives the one-pass figure
#     (1e-3); streaming at budget 0.5 with --prefill-chunk 32 evicts, and scores worse;
#   * refusals: a policy without --prefill-chunk, a text shorter than two chunks, --ppl-stride,
#     --kl-divergence-base, -c over the model's context, no text, a sampling option.
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
SHARED=${LLM_SHARED:-../shared}
BIN=${LLM_RUN:-./llm-run}
M=$SHARED/models/stories260K
SMOL=${LLM_RUN_MODELS:-$HOME/.cache/llm-run}/SmolLM2-135M-Instruct.Q4_1.gguf
WIKI=$SHARED/data/wikitext/wiki.test.raw.reconstructed
STORY=$SHARED/data/tinystories/TinyStories-valid.excerpt_unverified.txt
FIX=tests/fixtures/perplexity/llamacpp_smollm2.txt
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

# --- the protocol, recomputed from --logits-out (stories260K adds BOS: the chunk's first id becomes it)
"$BIN" perplexity -m "$M" -f "$STORY" -c 64 --chunks 3 -t 1 >"$TMP/out" 2>"$TMP/err" || bad "stories260K perplexity failed: $(tail -1 "$TMP/err")"
"$BIN" tokenize -m "$M" -f "$STORY" --ids >"$TMP/ids" 2>/dev/null || bad "tokenize failed"
python3 - "$TMP" "$BIN" "$M" <<'EOF' && ok "stories260K -c 64 --chunks 3: the running values and the final estimate equal numpy's llama.cpp protocol on --logits-out" || bad "stories260K: llm-run perplexity differs from the protocol recomputed (above)"
import json, re, subprocess, sys
import numpy as np
tmp, bin_, model = sys.argv[1:4]
ids = json.load(open(tmp + "/ids"))
assert ids[0] == 1, "stories260K adds BOS"
n_ctx, first, nll = 64, 32, []
running = []
for c in range(3):
    chunk = ids[c * n_ctx:(c + 1) * n_ctx]
    chunk = [1] + chunk[1:]
    subprocess.run([bin_, "-m", model, "-t", "1", "--prompt-ids", ",".join(map(str, chunk)), "-n", "1",
                    "--logits-out", tmp + "/l.npy"], check=True, capture_output=True)
    L = np.load(tmp + "/l.npy")[:n_ctx].astype(np.float32)
    for j in range(first, n_ctx - 1):
        row = L[j]
        mx = row.max()
        s = np.sum(np.exp(row - mx).astype(np.float64))
        nll.append(-(float(row[ids[c * n_ctx + j + 1]] - mx) - np.log(s)))
    running.append(np.exp(np.mean(nll)))
x = np.array(nll)
ppl = np.exp(x.mean())
err = np.sqrt((np.mean(x * x) - x.mean() ** 2) / (len(x) - 1)) * ppl
out = open(tmp + "/out").read()
got = [float(v) for v in re.findall(r"\[\d+\]([0-9.]+),", out)]
fin = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out)
want = ["%.4f" % v for v in running]
print("     llm-run", got, fin.groups() if fin else None, "| numpy", want, "%.4f %.5f" % (ppl, err))
assert ["%.4f" % v for v in got] == want, "running values"
assert fin and fin.group(1) == "%.4f" % ppl and abs(float(fin.group(2)) - err) <= 2e-5, "final estimate"
EOF

# --- against llama-perplexity on SmolLM2 (fixture)
if [ ! -f "$SMOL" ]; then
    bad "SmolLM2 not found at $SMOL (scripts/fetch_model.sh smollm2-135m)"
else
    "$BIN" perplexity -m "$SMOL" -f "$WIKI" -c 128 --chunks 8 -t 2 >"$TMP/smol" 2>"$TMP/err" || bad "SmolLM2 perplexity failed: $(tail -1 "$TMP/err")"
    python3 - "$TMP/smol" "$FIX" <<'EOF' && ok "SmolLM2 Q4_1 -c 128 --chunks 8 on WikiText-2: within 0.2% of llama-perplexity on the F32 copy and 2.5% of it on the Q4_1 file, every chunk; the final estimate within 0.3%" || bad "SmolLM2: llm-run perplexity is not llama-perplexity's (above)"
import re, sys
out, fix = open(sys.argv[1]).read(), open(sys.argv[2]).read()
got = [float(v) for v in re.findall(r"\[\d+\]([0-9.]+),", out)]
ref = {}
for block in fix.split("model ")[1:]:
    name = block.split("\n")[0]
    ref["f32" if "F32" in name else "q"] = [float(v) for v in re.findall(r"\[\d+\]([0-9.]+),", block)]
print("     llm-run   ", got)
print("     llama.cpp q", ref["q"])
print("     llama.cpp f", ref["f32"])
assert len(got) == 8 == len(ref["q"]) == len(ref["f32"])
for g, q, f in zip(got, ref["q"], ref["f32"]):
    assert abs(g - f) <= 0.002 * f and abs(g - q) <= 0.025 * q, (g, q, f)
assert abs(got[-1] - ref["q"][-1]) <= 0.003 * ref["q"][-1], "the final estimate"
EOF
fi

# --- --json, chunked prefill, a policy under a budget
j() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d[sys.argv[2]])' "$@"; }
"$BIN" perplexity -m "$M" -f "$STORY" -c 128 --chunks 2 -t 1 --json >"$TMP/full.json" 2>/dev/null
"$BIN" perplexity -m "$M" -f "$STORY" -c 128 --chunks 2 -t 1 >"$TMP/full.txt" 2>/dev/null
p_full=$(j "$TMP/full.json" ppl 2>/dev/null)
p_txt=$(sed -n 's/Final estimate: PPL = \([0-9.]*\).*/\1/p' "$TMP/full.txt")
python3 -c "import sys; assert '%.4f' % float(sys.argv[1]) == sys.argv[2]" "$p_full" "$p_txt" 2>/dev/null &&
    ok "--json ppl $p_full is the printed estimate $p_txt" || bad "--json ppl '$p_full' vs printed '$p_txt'"
"$BIN" perplexity -m "$M" -f "$STORY" -c 128 --chunks 2 -t 1 --json --policy full --prefill-chunk 32 >"$TMP/pc.json" 2>/dev/null
"$BIN" perplexity -m "$M" -f "$STORY" -c 128 --chunks 2 -t 1 --json --policy streaming --budget 0.5 --prefill-chunk 32 >"$TMP/st.json" 2>/dev/null
p_pc=$(j "$TMP/pc.json" ppl 2>/dev/null); p_st=$(j "$TMP/st.json" ppl 2>/dev/null)
python3 -c "import sys; a, b = map(float, sys.argv[1:]); assert abs(a - b) <= 1e-3 * a" "$p_full" "$p_pc" 2>/dev/null &&
    ok "--prefill-chunk 32 with the full cache: $p_pc (one pass: $p_full)" || bad "--prefill-chunk 32: '$p_pc' vs one pass '$p_full'"
python3 -c "import sys; a, b = map(float, sys.argv[1:]); assert b > a * 1.001" "$p_full" "$p_st" 2>/dev/null &&
    ok "streaming --budget 0.5 --prefill-chunk 32 evicts and scores worse: $p_st (full $p_full)" || bad "streaming under a budget: '$p_st' vs full '$p_full'"

# --- refusals, one line each
refuse() {   # name, pattern, args...
    local name=$1 pat=$2; shift 2
    if "$BIN" perplexity "$@" >/dev/null 2>"$TMP/e"; then bad "$name: exit 0"; return; fi
    if [ "$(wc -l <"$TMP/e")" -eq 1 ] && grep -Eq "$pat" "$TMP/e"; then ok "$name: $(cat "$TMP/e")"; else bad "$name: $(head -3 "$TMP/e")"; fi
}
printf 'Once upon a time there was a cat.\n' >"$TMP/short.txt"
refuse "a policy without --prefill-chunk" 'evicts only between prefill chunks' -m "$M" -f "$STORY" --policy h2o --budget 0.5
refuse "a text shorter than two chunks" 'needs at least 256' -m "$M" -f "$TMP/short.txt" -c 128
refuse "--ppl-stride" 'ppl-stride: the strided' -m "$M" -f "$STORY" --ppl-stride 32
refuse "--kl-divergence-base" 'kl-divergence-base' -m "$M" -f "$STORY" --kl-divergence-base x.kld
refuse "-c over the context" 'longer than the model' -m "$M" -f "$STORY" -c 100000
refuse "no text" 'no text' -m "$M"
refuse "a sampling option" 'sampling and stop options do not apply' -m "$M" -f "$STORY" --temp 0.8

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
