#!/usr/bin/env python3
"""Hugging Face transformers on the same weights, for bench/bench_cuda.sh (same prompt shape as
llm-run's runs: BOS + ("the" x (ctx - gen - 1)), greedy, batch 1, full cache).

    python3 bench/hf_bench.py MODEL_DIR --ctx 4096 --gen 64 [--dtype float16]

Prints one JSON line: {"ctx", "gen", "prefill_tok_s", "decode_tok_s", "peak_gpu_bytes",
"torch", "transformers"}. Decode time = generate(ctx-gen prompt, gen new tokens) minus the time
of the prefill forward alone, over gen − 1 decode steps (as llm-run counts them). Exits 3
(with a line on stderr) when torch/transformers/CUDA are not available."""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--the-id", type=int, default=278, help="token id of '▁the' (LLaMA-2: 278)")
    a = ap.parse_args()
    try:
        import torch
        import transformers
        from transformers import LlamaForCausalLM
    except Exception as e:  # noqa: BLE001
        print("hf_bench: torch/transformers not importable: %s" % e, file=sys.stderr)
        sys.exit(3)
    if not torch.cuda.is_available():
        print("hf_bench: torch sees no CUDA device", file=sys.stderr)
        sys.exit(3)
    dt = getattr(torch, a.dtype)
    model = LlamaForCausalLM.from_pretrained(a.model, torch_dtype=dt).cuda().eval()
    n_prompt = a.ctx - a.gen
    ids = torch.tensor([[1] + [a.the_id] * (n_prompt - 1)], device="cuda")
    with torch.no_grad():
        model(ids[:, :16])  # warm-up
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        model(ids)
        torch.cuda.synchronize()
        t_prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=a.gen,
                       min_new_tokens=a.gen, do_sample=False)
        torch.cuda.synchronize()
        t_gen = time.perf_counter() - t0
    steps = a.gen - 1
    print(json.dumps({"ctx": a.ctx, "gen": a.gen, "prefill_tok_s": n_prompt / t_prefill,
                      "decode_tok_s": steps / max(t_gen - t_prefill, 1e-9),
                      "peak_gpu_bytes": torch.cuda.max_memory_allocated(),
                      "torch": torch.__version__, "transformers": transformers.__version__}))


if __name__ == "__main__":
    main()
