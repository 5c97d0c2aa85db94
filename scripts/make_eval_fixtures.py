#!/usr/bin/env python3
"""Make the Hugging Face perplexity fixture of the eval tests (tests/fixtures/eval/).

    scripts/make_eval_fixtures.py [--model DIR] [--data FILE] [--windows N] [--out FILE]

Defaults: ../shared/models/stories260K on ../shared/data/tinystories/TinyStories-valid.excerpt_unverified.txt,
4 windows -> tests/fixtures/eval/stories260K_tinystories_ppl.json.

The token stream is built as `llm-run eval --task tinystories` builds it (eval/sweep.c):
every non-blank line of the file (trailing "\n" then "\r" removed) is tokenized with the
`sentencepiece` package and prefixed with BOS (id from config.json); the lines are concatenated
into one stream, cut into windows of max_position_embeddings tokens (a last window under 16
tokens is dropped). For each window transformers' LlamaForCausalLM (float32, eager attention,
CPU) runs ONE causal forward pass (the full cache), and the NLL of tokens[1:] under
log_softmax(logits[:-1]) (float64) is averaged: the window's mean NLL. The harness feeds the
same window one token at a time through the `full` policy and must match.

Requires torch, transformers, sentencepiece, numpy (not needed by the tests themselves).
"""
import argparse
import hashlib
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def main():
    shared = os.environ.get("LLM_SHARED", os.path.join(REPO, "..", "shared"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(shared, "models", "stories260K"))
    ap.add_argument("--data", default=os.path.join(shared, "data", "tinystories", "TinyStories-valid.excerpt_unverified.txt"))
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "eval", "stories260K_tinystories_ppl.json"))
    a = ap.parse_args()

    import numpy as np
    import sentencepiece as spm
    import torch
    import transformers
    from transformers import LlamaForCausalLM

    cfg = json.load(open(os.path.join(a.model, "config.json")))
    bos = cfg.get("bos_token_id", 1)
    ctx = cfg.get("max_position_embeddings", 2048)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(a.model, "tokenizer.model"))
    stream = []
    with open(a.data, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8")
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
            if line.strip(" \t") == "":
                continue
            stream += [bos] + sp.encode(line)
    windows = []
    for off in range(0, len(stream), ctx):
        w = stream[off:off + ctx]
        if len(w) < 16 or len(windows) == a.windows:
            break
        windows.append(w)

    torch.manual_seed(0)
    try:
        model = LlamaForCausalLM.from_pretrained(a.model, dtype=torch.float32, attn_implementation="eager")
    except TypeError:
        model = LlamaForCausalLM.from_pretrained(a.model, torch_dtype=torch.float32, attn_implementation="eager")
    model.eval()
    out = []
    nll_all = []
    for k, w in enumerate(windows):
        with torch.no_grad():
            logits = model(torch.tensor([w])).logits[0].double().numpy()
        lp = logits[:-1] - logits[:-1].max(axis=1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(axis=1, keepdims=True))
        nll = -lp[np.arange(len(w) - 1), np.array(w[1:])]
        nll_all.append(nll.mean())
        out.append({"id": f"w{k}", "n_tokens": len(w), "nll": float(nll.mean()), "ppl": float(np.exp(nll.mean())),
                    "first_ids": w[:8], "ids_sum": int(sum(w))})
        print(f"w{k}: {len(w)} tokens, nll {nll.mean():.6f}, ppl {np.exp(nll.mean()):.4f}")
    rec = {
        "what": "mean NLL (natural log) per window of the full-cache teacher-forced stream; see scripts/make_eval_fixtures.py",
        "model": os.path.basename(os.path.normpath(a.model)),
        "data": os.path.basename(a.data),
        "data_sha256": sha256(a.data),
        "weights_sha256": sha256(os.path.join(a.model, "model.safetensors")),
        "window": ctx,
        "bos": bos,
        "windows": out,
        "reference": "transformers LlamaForCausalLM, float32 weights and compute, attn_implementation=eager, CPU; "
                     "sentencepiece tokenization",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "sentencepiece": spm.__version__, "numpy": np.__version__},
        "command": "scripts/make_eval_fixtures.py " + " ".join(sys.argv[1:]),
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
