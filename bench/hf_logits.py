#!/usr/bin/env python3
"""Teacher-forced logits of Hugging Face transformers, in the row layout of llm-run's
--logits-out with --force-ids (bench/gpu_validate.sh: llm-run on the GPU vs transformers on the
same weights).

    python3 bench/hf_logits.py MODEL_DIR --prompt-ids 1,2,3 --force-ids 7,8,9 OUT.npy
        [--device cuda] [--dtype float32]

Rows: one per prompt position, then one per forced id but the last (the decode steps' inputs
are prompt + forced[:-1]), float32 [rows][vocab] — what llm-run writes for the same ids. One
forward pass over the whole sequence (full attention: compare with llm-run's `full` policy or a
budget that evicts nothing). Exits 3 with one line on stderr when torch/transformers are missing.
"""
import argparse
import sys

import numpy as np


def ids(s):
    return [int(x) for x in s.split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--force-ids", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("out")
    a = ap.parse_args()
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except Exception as e:  # noqa: BLE001
        print("hf_logits: torch/transformers not importable: %s" % e, file=sys.stderr)
        sys.exit(3)
    seq = ids(a.prompt_ids) + ids(a.force_ids)[:-1]
    dev = a.device if (a.device != "cuda" or torch.cuda.is_available()) else "cpu"
    m = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype=getattr(torch, a.dtype)).to(dev).eval()
    with torch.no_grad():
        out = m(torch.tensor([seq], device=dev)).logits[0].float().cpu().numpy()
    np.save(a.out, out.astype(np.float32))
    print("hf_logits: %d rows x %d on %s (transformers %s)" % (out.shape[0], out.shape[1], dev,
                                                               __import__("transformers").__version__))


if __name__ == "__main__":
    main()
