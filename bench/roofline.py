#!/usr/bin/env python3
"""Decode tok/s of the CUDA backend on H100 / H200 for LLaMA-2-7B (F16 and Q4_K), ESTIMATED from
what the emulator counts (no GPU involved): the device bytes a decode step touches and the nodes
of its CUDA graph, measured on LLaMA-2-7B-shaped random GGUF files cut to 1 and 2 layers (the
per-layer and fixed parts, extrapolated to 32 layers), plus the KV cache's bytes at a context.

    bench/roofline.py [--emu build/emu/llm-run-emu] [--work DIR] [--ctx 512,4096,16384]
                      [--budget 1.0,0.4] [--out FILE.md]

Counting: EMU_TOUCH=1 (tests/cuda_emu/engine_emu.cc) protects every device allocation before each
graph launch and counts the pages the step's kernels and copies fault on: the step's distinct
bytes, i.e. its DRAM traffic if every byte moves once (weights are read once per token; L2
reuse across steps is ignored, which favours nobody at 7B). Page granularity overcounts small
buffers by under 4 KiB each. The KV part is the formula slots x layers x KV heads x head_dim x 2
(K and V) x 2 bytes (f16), checked against the emulator's count at the measured context.

Model of a step: t = bytes / (BW x eff) + nodes x t_node + t_launch + t_sync, with BW the HBM
bandwidth (H100 SXM 3.35 TB/s, H200 4.8 TB/s), eff the fraction of it a streaming kernel reaches
(default 0.90: bench/bandwidth.cu measures it on the machine; gpu_validate.sh reports it), t_node
the extra time per graph node (default 2 us: the launch gap plus the tail of small kernels),
t_launch a graph launch (8 us) and t_sync the wait and the 4-byte copy back (10 us). The HBM floor
is bytes / BW. Printed as an estimate with these assumptions; bench/gpu_validate.sh measures."""
import argparse
import json
import os
import subprocess
import sys

GPUS = {"H100 SXM (HBM3 3.35 TB/s)": 3.35e12, "H200 (HBM3e 4.8 TB/s)": 4.8e12}
L7, HKV7, HD7 = 32, 32, 128


def emu_step(emu, model, n1, n2):
    """(touched bytes per decode step, graph nodes per step, kernels per step) from two runs"""
    out = []
    for n in (n1, n2):
        st = model + ".stats.%d" % n
        env = dict(os.environ, EMU_TOUCH="1", EMU_STATS=st, EMU_SMS="2")
        cmd = [emu, "-m", model, "--prompt-ids", "1,5,9,13,17,21,25,29", "-n", str(n), "--ignore-eos", "--temp", "0",
               "--device", "cuda", "--policy", "full"]
        r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            sys.exit("roofline: %s: %s" % (" ".join(cmd), r.stderr.strip()[-300:]))
        out.append(json.load(open(st)))
    a, b = out
    d = (b["graph_launches"] - a["graph_launches"]) or 1
    return ((b["touch_bytes"] - a["touch_bytes"]) / d, (b["graph_nodes"] - a["graph_nodes"]) / d,
            (b["kernels"] - a["kernels"]) / d)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--emu", default="build/emu/llm-run-emu")
    ap.add_argument("--work", default="build/roofline")
    ap.add_argument("--ctx", default="512,4096,16384")
    ap.add_argument("--budget", default="1.0,0.4")
    ap.add_argument("--eff", type=float, default=0.90)
    ap.add_argument("--t-node", type=float, default=2e-6)
    ap.add_argument("--t-launch", type=float, default=8e-6)
    ap.add_argument("--t-sync", type=float, default=10e-6)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    rows, lines = [], []
    per = {}
    for typ in ("F16", "Q4_K"):
        m = {}
        for L in (1, 2):
            path = os.path.join(a.work, "llama7b-%s-%dL.gguf" % (typ, L))
            if not os.path.exists(path):
                mix = "embd=F16,output=Q6_K" if typ == "Q4_K" else ""
                cmd = [sys.executable, os.path.join(here, "make_random_gguf.py"), path, "--shape", "llama7b",
                       "--layers", str(L), "--type", typ] + (["--mix", mix] if mix else [])
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            m[L] = emu_step(a.emu, path, 3, 5)
        layer = tuple(m[2][i] - m[1][i] for i in range(3))
        fixed = tuple(m[1][i] - layer[i] for i in range(3))
        per[typ] = (layer, fixed)
        lines.append("%s: per layer %.1f MB, %.0f graph nodes (%.0f kernels); fixed %.1f MB, %.0f nodes (%.0f kernels)"
                     % (typ, layer[0] / 1e6, layer[1], layer[2], fixed[0] / 1e6, fixed[1], fixed[2]))
    kv_slot = L7 * HKV7 * HD7 * 2 * 2  # bytes of one cached token, f16 K and V, all layers
    for typ in ("F16", "Q4_K"):
        layer, fixed = per[typ]
        w = fixed[0] + L7 * layer[0]
        nodes = fixed[1] + L7 * layer[1]
        kern = fixed[2] + L7 * layer[2]
        for ctx in map(int, a.ctx.split(",")):
            for b in map(float, a.budget.split(",")):
                live = ctx * b  # the cache holds budget x context slots at the end (decode near the end)
                byts = w + live * kv_slot
                for g, bw in GPUS.items():
                    floor = bw / byts
                    t = byts / (bw * a.eff) + nodes * a.t_node + a.t_launch + a.t_sync
                    rows.append((typ, ctx, b, g, byts / 1e9, kern, nodes, floor, 1 / t, 100 / t / floor))
    hdr = ("| weights | context | budget | GPU | GB per token | kernels | graph nodes | HBM floor tok/s "
           "| estimated tok/s | % of floor |\n|---|---|---|---|---|---|---|---|---|---|")
    body = "\n".join("| %s | %d | %.1f | %s | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f%% |" % r for r in rows)
    text = ("# Decode roofline of the CUDA backend, LLaMA-2-7B (ESTIMATE, no GPU)\n\n"
            "Counted by the emulator on 1- and 2-layer LLaMA-2-7B-shaped GGUF files (EMU_TOUCH), extrapolated to "
            "32 layers:\n\n" + "\n".join("- " + l for l in lines) +
            "\n\nAssumptions: %.0f%% of the HBM bandwidth reached by the streaming kernels, %.1f us per graph node, "
            "%.0f us per graph launch, %.0f us for the host wait and the token's copy back; KV f16, "
            "budget x context live slots; Q4_K model: every matrix Q4_K, LM head Q6_K, embedding F16 (one row read). "
            "The floor is bytes / peak bandwidth.\n\n" % (100 * a.eff, a.t_node * 1e6, a.t_launch * 1e6,
                                                          a.t_sync * 1e6) + hdr + "\n" + body + "\n")
    print(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    main()
