#!/usr/bin/env python3
"""Make the Hugging Face reference fixtures for the real GGUF models (tests/fixtures/gguf/).

    scripts/make_gguf_fixtures.py [--only smollm2-135m|qwen2.5-0.5b] [--out DIR]

For each model (fetched with scripts/fetch_model.sh, sha256 checked):
  1. load it with transformers' GGUF support (AutoModelForCausalLM.from_pretrained(dir,
     gguf_file=...), which dequantizes every tensor to float32 with the `gguf` package and
     un-permutes llama's q/k rows), attn_implementation="eager", float32;
  2. build prompts as token ids with transformers' tokenizer from the same GGUF: raw text of
     ~5, ~60 and ~600 tokens (the start of shared XSum / WikiText texts) and a chat-formatted
     one (apply_chat_template, one user turn asking for a summary); the ids are the fixture:
     the test feeds them to llm-run with --prompt-ids, so tokenization does not enter here;
  3. one forward pass over each prompt: per position the argmax and the top1 - top2 margin, and
     the last position's full logits row (float32);
  4. greedy continuation: model.generate(do_sample=False, 32 new tokens, no EOS stop) on the
     first 4 prompts, with each step's margin.

Writes NAME.npz (ids_K, argmax_K, margin_K, last_K, gen_K, genmargin_K for prompt K) and
NAME.json (sizes, versions, the GGUF's sha256, command). Needs torch, transformers, gguf,
accelerate (never installed by CI: the fixtures are committed).
"""
import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("LLM_SHARED", os.path.join(REPO, "..", "shared"))
N_GEN = 32


def texts():
    with open(os.path.join(SHARED, "data/xsum/h2o_xsum_0shot.jsonl")) as f:
        x = [json.loads(l) for _, l in zip(range(3), f)]
    art = [r["article"] for r in x]
    with open(os.path.join(SHARED, "data/wikitext/wikitext-2-raw-v1.test.joined_nn.txt")) as f:
        wiki = f.read(20000)
    return art, wiki


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--out", default=os.path.join(REPO, "tests/fixtures/gguf"))
    args = ap.parse_args()
    import torch
    import transformers
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    art, wiki = texts()
    for name in ["smollm2-135m", "qwen2.5-0.5b"]:
        if args.only and args.only != name:
            continue
        path = subprocess.check_output([os.path.join(REPO, "scripts/fetch_model.sh"), name], text=True).strip()
        d, f = os.path.dirname(path), os.path.basename(path)
        tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
        model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, torch_dtype=torch.float32,
                                                     attn_implementation="eager")
        model.eval()
        enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]
        chat = tok.apply_chat_template(
            [{"role": "user", "content": "Summarize this article in one sentence.\n\n" + " ".join(art[1].split()[:150])}],
            add_generation_prompt=True, tokenize=False)
        prompts = [
            ("raw-5", enc("The capital of France is")[:5]),
            ("raw-60", enc(art[0])[:60]),
            ("chat", enc(chat)),
            ("raw-600", enc(wiki)[:600]),
        ]
        out, meta = {}, {"model": name, "file": f, "sha256": sha256(path), "prompts": [],
                          "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                                       "gguf": getattr(gguf, "__version__", None) or
                                       subprocess.check_output([sys.executable, "-m", "pip", "show", "gguf"], text=True).split("Version: ")[1].split()[0]},
                          "command": " ".join(["scripts/make_gguf_fixtures.py"] + sys.argv[1:]),
                          "vocab": model.config.vocab_size}
        for k, (label, ids) in enumerate(prompts):
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0].float().numpy()
            top2 = np.sort(logits, axis=1)[:, -2:]
            out[f"ids_{k}"] = np.array(ids, dtype=np.int32)
            out[f"argmax_{k}"] = logits.argmax(axis=1).astype(np.int32)
            out[f"margin_{k}"] = (top2[:, 1] - top2[:, 0]).astype(np.float32)
            out[f"last_{k}"] = logits[-1].astype(np.float16)   # cosine >= 0.999 needs no more
            with torch.no_grad():
                g = model.generate(torch.tensor([ids]), max_new_tokens=N_GEN, do_sample=False,
                                   output_scores=True, return_dict_in_generate=True,
                                   eos_token_id=None, pad_token_id=0, min_new_tokens=N_GEN)
            gen = g.sequences[0, len(ids):].numpy().astype(np.int32)
            sc = torch.stack(g.scores)[:, 0].float().numpy()
            s2 = np.sort(sc, axis=1)[:, -2:]
            out[f"gen_{k}"] = gen
            out[f"genmargin_{k}"] = (s2[:, 1] - s2[:, 0]).astype(np.float32)
            meta["prompts"].append({"label": label, "n": len(ids), "n_gen": int(len(gen)),
                                    "min_margin": float(out[f"margin_{k}"].min()),
                                    "positions_margin_ge_0.5": int((out[f"margin_{k}"] >= 0.5).sum())})
            print(name, label, len(ids), "tokens; greedy:", tok.decode(gen)[:80].replace("\n", " "), flush=True)
        np.savez_compressed(os.path.join(args.out, name + ".npz"), **out)
        with open(os.path.join(args.out, name + ".json"), "w") as fo:
            json.dump(meta, fo, indent=1)
        print("wrote", os.path.join(args.out, name + ".npz"))


if __name__ == "__main__":
    main()
