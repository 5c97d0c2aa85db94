#!/usr/bin/env python3
"""Issue 14's "not slower than the F32 path per byte read", measured on llm-run and on llama.cpp
alike: each engine decodes the quantized GGUF and the same model in F32 (bench/gguf_f32.py
writes it, cached beside the models), and the ratio is

    (tok/s quantized × bytes per token quantized) ÷ (tok/s F32 × bytes per token F32)

per round, both files read by the same engine in the same round; the table gives the median
over rounds. It shows whether a per-byte gap is ours or the format's on this CPU: llama.cpp's
ratio on the same files is the outside reference.

    bench/per_byte_vs_llamacpp.py [--reps 5] [--threads 1,2] [--models smollm2,qwen] [--out FILE]

Each round runs the four decodes (llama.cpp and llm-run × quantized and F32: llama-bench
-p 0 -n 128 -r 1; llm-run --prompt-ids ID -n 129 --ignore-eos) in an order rotated from round
to round. Bytes per token: the weights one decode step reads (llm-run --json
weights.bytes_per_token of each file; the same tensors for both engines); the KV cache at
these lengths is below 1% and left out. Needs bench/llamacpp.sh's build (never in CI) and the
`gguf` package. A shared, noisy host: read the ratios, not the absolute figures.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from vs_llamacpp import models   # the same files, fetched the same way (scripts/fetch_model.sh)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("LLM_RUN_MODELS", os.path.expanduser("~/.cache/llm-run"))


def sh(cmd):
    return subprocess.check_output(cmd, text=True, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="smollm2,qwen")
    ap.add_argument("--out", default=os.path.join(REPO, "bench/per_byte_llamacpp.md"))
    a = ap.parse_args()
    lb = os.path.join(sh([os.path.join(REPO, "bench/llamacpp.sh")]).strip(), "llama-bench")
    llm = os.path.join(REPO, "llm-run")
    if not os.access(llm, os.X_OK):
        sys.exit("llm-run not built (make llm-run)")
    commit = sh([os.path.join(REPO, "bench/llamacpp.sh"), "--commit"]).strip()
    t0 = time.time()
    rows = []
    for label, q in models(a.models.split(",")):
        f32 = os.path.join(CACHE, os.path.basename(q).replace(".gguf", "") + ".F32.gguf")
        if not os.path.exists(f32):
            subprocess.check_call([sys.executable, os.path.join(REPO, "bench/gguf_f32.py"), q, f32 + ".part"])
            os.rename(f32 + ".part", f32)
        bpt = {}
        for k, p in (("q", q), ("f", f32)):
            j = json.loads(sh([llm, "-m", p, "--prompt-ids", "1", "-n", "1", "-t", "1", "--json"]))
            bpt[k] = j["weights"]["bytes_per_token"]
        for T in [int(x) for x in a.threads.split(",")]:
            tps = {e: [] for e in ("lc_q", "lc_f", "lr_q", "lr_f")}

            def lc(k, p):
                out = sh([lb, "-m", p, "-p", "0", "-n", "128", "-r", "1", "-t", str(T), "-o", "json"])
                tps["lc_" + k].append(json.loads(out)[0]["avg_ts"])

            def lr(k, p):
                out = sh([llm, "-m", p, "--prompt-ids", "1000", "-n", "129", "--ignore-eos", "-t", str(T), "--json"])
                tps["lr_" + k].append(json.loads(out)["timings"]["decode_tok_s"])

            runs = [lambda: lc("q", q), lambda: lr("q", q), lambda: lc("f", f32), lambda: lr("f", f32)]
            for rep in range(a.reps):
                k = rep % len(runs)
                for r in runs[k:] + runs[:k]:
                    r()
                print("%s t%d round %d: %s" % (label, T, rep + 1, {e: round(v[-1], 1) for e, v in tps.items()}), flush=True)
            per_round = {e: [tps[e + "_q"][i] * bpt["q"] / (tps[e + "_f"][i] * bpt["f"]) for i in range(a.reps)]
                         for e in ("lc", "lr")}
            ratio = {e: statistics.median(v) for e, v in per_round.items()}
            ratio.update({e + "_range": (min(v), max(v)) for e, v in per_round.items()})
            rows.append((label, T, {e: statistics.median(v) for e, v in tps.items()}, ratio, bpt))
    cpu = sh(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"]).strip()
    flags = sh(["sh", "-c", "lscpu | sed -n 's/^Flags: *//p'"]).split()
    isa = " ".join(f for f in flags if f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16"))
    with open(a.out, "w") as f:
        f.write("# Per byte against F32, llm-run and llama.cpp on the same files (issue 14)\n\n")
        f.write("Written by `bench/per_byte_vs_llamacpp.py --reps %d --threads %s --models %s` on %s in %d s.\n\n" % (
            a.reps, a.threads, a.models, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), int(time.time() - t0)))
        f.write("- Machine: %s, %d CPUs; ISA flags: %s.\n- llama.cpp: %s (bench/llamacpp.sh).\n" % (cpu, os.cpu_count(), isa, commit))
        f.write("- Decode tg128 (128 steps after one token); per byte = tok/s × weight bytes per token, quantized ÷ F32 "
                "(bench/gguf_f32.py's dequantized copy), per round, median of %d rounds (in brackets: the lowest and highest round); tok/s: medians.\n\n" % a.reps)
        f.write("| model | threads | weights MB/token (quantized / F32) | llm-run tok/s (quantized / F32) | llama.cpp tok/s (quantized / F32) "
                "| per byte ÷ F32: llm-run | per byte ÷ F32: llama.cpp | quantized decode: llm-run ÷ llama.cpp |\n|---|---|---|---|---|---|---|---|\n")
        for label, T, m, ratio, bpt in rows:
            f.write("| %s | %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.0f%% (%.0f-%.0f) | %.0f%% (%.0f-%.0f) | %.2f |\n" % (
                label, T, bpt["q"] / 1e6, bpt["f"] / 1e6, m["lr_q"], m["lr_f"], m["lc_q"], m["lc_f"],
                100 * ratio["lr"], 100 * ratio["lr_range"][0], 100 * ratio["lr_range"][1],
                100 * ratio["lc"], 100 * ratio["lc_range"][0], 100 * ratio["lc_range"][1], m["lr_q"] / m["lc_q"]))
    print(open(a.out).read())


if __name__ == "__main__":
    main()
