#!/usr/bin/env python3
"""One real-model prompt of tests/fixtures/gguf (scripts/make_gguf_fixtures.py: Hugging Face
transformers in F32 on the GGUF's dequantized weights) against llm-run's output: issue 14's
criteria. Used by tests/test_gguf.sh, tests/test_kv_dtype.sh and bench/act_bits_hf.sh.

    gguf_vs_hf.py FIXTURE.npz K LOGITS.npy RUN.json
    gguf_vs_hf.py --ids FIXTURE.npz K      (prints prompt K's token ids as a JSON array, for
                                            llm-run --prompt-ids @FILE)

FIXTURE's prompt K (ids_K, argmax_K, margin_K, last_K, gen_K, genmargin_K); LOGITS.npy from
`llm-run --prompt-ids <ids_K> -n 32 --logits-out`, RUN.json its --json. Criteria: top-1 equal at
every position where transformers' top1 - top2 margin is >= 0.5 and at >= 98% of all positions,
cosine >= 0.999 at the last prompt position, the greedy 32 tokens equal or diverging only where
transformers' own margin is < 0.5. Prints one line; exit 1 when a criterion fails."""
import json, sys
import numpy as np
if sys.argv[1] == "--ids":
    print(json.dumps(np.load(sys.argv[2])["ids_" + sys.argv[3]].tolist()))
    sys.exit(0)
fx, k, lpath, opath = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
d = np.load(fx)
ids, am, mg, last = d["ids_" + k], d["argmax_" + k], d["margin_" + k], d["last_" + k].astype(np.float32)
gen, gmg = d["gen_" + k], d["genmargin_" + k]
L = np.load(lpath)
n = len(ids)
P = L[:n]
ours = P.argmax(axis=1)
agree = ours == am
sure = mg >= 0.5
cos = float(np.dot(P[-1], last) / (np.linalg.norm(P[-1]) * np.linalg.norm(last)))
maxdiff = float(np.abs(P[-1] - last).max())
out = json.load(open(opath))
toks = out["tokens"]
# greedy: equal, or the first difference where transformers' own margin is < 0.5
div = next((i for i in range(min(len(toks), len(gen))) if toks[i] != gen[i]), None)
stopped_ok = out["stop"] == "eos" and len(toks) < len(gen)
problems = []
if not agree[sure].all():
    problems.append("top-1 differs at %d positions with margin >= 0.5 (first %d)" % ((~agree[sure]).sum(), np.nonzero(~agree & sure)[0][0]))
if agree.mean() < 0.98:
    problems.append("top-1 agreement %.4f < 0.98" % agree.mean())
if cos < 0.999:
    problems.append("last-position cosine %.5f < 0.999" % cos)
gmsg = "greedy 32 equal"
if div is not None:
    if gmg[div] >= 0.5:
        problems.append("greedy diverges at step %d where transformers' margin is %.3f >= 0.5" % (div, gmg[div]))
    gmsg = "greedy diverges at step %d (transformers' margin %.3f < 0.5)" % (div, gmg[div])
elif len(toks) < len(gen):
    if not stopped_ok:
        problems.append("generated %d tokens, transformers %d" % (len(toks), len(gen)))
    gmsg = "greedy equal until llm-run stopped at end of generation (step %d: transformers' token %d)" % (len(toks), gen[len(toks)])
print("%d tokens: top-1 %.4f (all %d with margin >= 0.5 equal: %s), last cosine %.6f, max |diff| %.4f; %s%s" % (
    n, agree.mean(), sure.sum(), bool(agree[sure].all()), cos, maxdiff, gmsg, ("; " + "; ".join(problems)) if problems else ""))
sys.exit(1 if problems else 0)
