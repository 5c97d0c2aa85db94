#!/usr/bin/env python3
"""llm-run and llama.cpp side by side on the same files, interleaved (issue 17).

    bench/vs_llamacpp.py [--reps 5] [--threads 1,2] [--models smollm2,qwen,110m-f32,110m-f16,110m-bf16]
                         [--act-bits 16,8] [--out bench/llamacpp.md]

Reference: llama.cpp's llama-bench built by bench/llamacpp.sh from the llama-cpp-python sdist
(never in CI; run it once, 12-15 minutes). Files: the two real GGUF models
(scripts/fetch_model.sh) and the stories110M-shaped synthetic model (scripts/
make_synthetic_models.py) written as GGUF in F32, F16 and BF16 (scripts/make_test_gguf.py
--vocab dummy), so both engines read the very same bytes.

For every model and thread count, R rounds; each round runs the engines one after the other
(llama.cpp and llm-run once per --act-bits setting: 16, the default, and 8, llama.cpp's own
activation numbers), rotating which goes first, then a streaming-read bandwidth pass
(build/bench/bench_cpu --bw-only) with the same threads. Per round:
  llama-bench -p 128,512 -n 128 -r 1 (its own warm-up run), tests pp128, pp512, tg128;
  llm-run --prompt-ids (128 / 512 random ids) -n 1 for the prefill figures, and
  llm-run --prompt-ids (one id) -n 129 --ignore-eos for decode (128 decode steps),
each a fresh process; peak RSS from wait4 (ru_maxrss) of every process, the max per engine.
The table gives the best round for prefill (one pass: a stall only slows it) and the median round
for decode, the ratio llm-run / llama.cpp per figure, and decode as a fraction
of the bandwidth floor (bytes read per token / bandwidth of the same round). The host is shared
and noisy: ratios from interleaved rounds are the figures to read, not the absolute ones.
"""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("LLM_RUN_MODELS", os.path.expanduser("~/.cache/llm-run"))


def run_rss(cmd):
    """Runs cmd; returns (stdout, peak RSS MiB) with wait4's rusage."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.execvp(cmd[0], cmd)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("failed (%d): %s" % (os.waitstatus_to_exitcode(status), " ".join(cmd)))
    return b"".join(chunks).decode(), ru.ru_maxrss / 1024.0


def models(names):
    out = []
    fetch = lambda n: subprocess.check_output([os.path.join(REPO, "scripts/fetch_model.sh"), n], text=True).strip()
    syn = os.path.join(REPO, "models/stories110M-syn")
    for n in names:
        if n == "smollm2":
            out.append(("SmolLM2-135M Q4_1", fetch("smollm2-135m")))
        elif n == "qwen":
            out.append(("Qwen2.5-0.5B Q5_0/Q4_K/Q6_K", fetch("qwen2.5-0.5b")))
        elif n.startswith("110m-"):
            dt = n.split("-")[1].upper()
            if not os.path.exists(os.path.join(syn, "config.json")):
                subprocess.check_call([sys.executable, os.path.join(REPO, "scripts/make_synthetic_models.py"),
                                       os.path.join(REPO, "models"), "--only", "stories110M-syn"])
            path = os.path.join(CACHE, "stories110M-syn-%s.gguf" % dt)
            if not os.path.exists(path):
                subprocess.check_call([sys.executable, os.path.join(REPO, "scripts/make_test_gguf.py"), syn, path,
                                       "--vocab", "dummy", "--dtype", dt])
            out.append(("110M shape %s" % dt, path))
        else:
            sys.exit("unknown model " + n)
    return out


def weight_bytes_per_token(llm, path):
    """Bytes one decode step reads in weights (llm-run --json reports it)."""
    out, _ = run_rss([llm, "-m", path, "--prompt-ids", "1", "-n", "1", "-t", "1", "--json"])
    j = json.loads(out)
    return j.get("weights", {}).get("bytes_per_token")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="smollm2,qwen,110m-f32,110m-f16,110m-bf16")
    ap.add_argument("--act-bits", default="16,8", help="llm-run's --act-bits settings to run (each its own column)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench/llamacpp.md"))
    a = ap.parse_args()
    binl = subprocess.check_output([os.path.join(REPO, "bench/llamacpp.sh")], text=True).strip()
    lb = os.path.join(binl, "llama-bench")
    llm = os.path.join(REPO, "llm-run")
    bw = os.path.join(REPO, "build/bench/bench_cpu")
    for b in (llm, bw):
        if not os.access(b, os.X_OK):
            sys.exit("%s not built (make llm-run build/bench/bench_cpu)" % b)
    commit = subprocess.check_output([os.path.join(REPO, "bench/llamacpp.sh"), "--commit"], text=True).strip()
    rng = random.Random(0)
    rows = []
    t_start = time.time()
    load0 = open("/proc/loadavg").read().split()[:3]
    bits = [int(b) for b in a.act_bits.split(",")]
    engines = ["lc"] + ["lr%d" % b for b in bits]
    for label, path in models(a.models.split(",")):
        bpt = weight_bytes_per_token(llm, path)
        for T in [int(x) for x in a.threads.split(",")]:
            res = {"%s_%s" % (e, t): [] for e in engines for t in ("pp128", "pp512", "tg128")}
            res["bw"] = []
            rss = {e: 0.0 for e in engines}
            for rep in range(a.reps):
                def llamacpp():
                    out, r = run_rss([lb, "-m", path, "-p", "128,512", "-n", "128", "-r", "1", "-t", str(T), "-o", "json"])
                    rss["lc"] = max(rss["lc"], r)
                    for t in json.loads(out):
                        key = "lc_pp%d" % t["n_prompt"] if t["n_gen"] == 0 else "lc_tg%d" % t["n_gen"]
                        res[key].append(t["avg_ts"])

                def llmrun(b):
                    e = "lr%d" % b
                    for n in (128, 512):
                        ids = ",".join(str(rng.randrange(1000, 20000)) for _ in range(n))
                        out, r = run_rss([llm, "-m", path, "--prompt-ids", ids, "-n", "1", "-t", str(T), "--act-bits", str(b), "--json"])
                        rss[e] = max(rss[e], r)
                        res["%s_pp%d" % (e, n)].append(json.loads(out)["timings"]["prefill_tok_s"])
                    out, r = run_rss([llm, "-m", path, "--prompt-ids", str(rng.randrange(1000, 20000)), "-n", "129",
                                      "--ignore-eos", "-t", str(T), "--act-bits", str(b), "--json"])
                    rss[e] = max(rss[e], r)
                    res[e + "_tg128"].append(json.loads(out)["timings"]["decode_tok_s"])

                runs = [llamacpp] + [(lambda b=b: llmrun(b)) for b in bits]
                k = rep % len(runs)
                for f in runs[k:] + runs[:k]:
                    f()
                out, _ = run_rss([bw, "--bw-only", "--threads", str(T)])
                res["bw"].append(float(out.strip()))
                print("%s t%d round %d: %s" % (label, T, rep + 1, {k: round(v[-1], 1) for k, v in res.items()}), flush=True)
            # prefill is one pass per round: the best round on both sides (a stall on a shared
            # host only slows a pass); decode (128 steps) and bandwidth: the median round
            med = {k: max(v) if "_pp" in k else statistics.median(v) for k, v in res.items()}
            rows.append((label, T, med, rss, bpt))
    secs = int(time.time() - t_start)
    cpu = subprocess.check_output("lscpu | sed -n 's/^Model name: *//p'", shell=True, text=True).strip()
    flags = subprocess.check_output("lscpu | sed -n 's/^Flags: *//p'", shell=True, text=True).split()
    isa = " ".join(f for f in flags if f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8"))
    with open(a.out, "w") as f:
        f.write("# llm-run vs llama.cpp on the same files\n\n")
        f.write("Written by `bench/vs_llamacpp.py --reps %d --threads %s --models %s` on %s in %d s.\n\n" % (
            a.reps, a.threads, a.models, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), secs))
        f.write("- Machine: %s, %d CPUs; ISA flags: %s. Load average at the start: %s.\n" % (cpu, os.cpu_count(), isa, " ".join(load0)))
        f.write("- llama.cpp: %s, built by bench/llamacpp.sh (%s).\n" % (commit, open(os.path.join(os.path.dirname(binl), "..", "FLAGS")).read().strip() if os.path.exists(os.path.join(os.path.dirname(binl), "..", "FLAGS")) else "flags not recorded"))
        f.write("- Each round: every engine (rotating which goes first), then a bandwidth pass; prefill (pp): the best of %d rounds, decode (tg) and bandwidth: their median. "
                "llm-run N-bit: `--act-bits N` (16, the default: int16 activations; 8: llama.cpp's Q8 activations). "
                "Ratio = llm-run ÷ llama.cpp (> 1: llm-run faster; RSS: < 1 leaner).\n\n" % a.reps)
        lrs = ["lr%d" % b for b in bits]
        names = " / ".join("llm-run %d-bit" % b for b in bits)
        f.write("| model | threads | test | %s / llama.cpp (tok/s) | %s | decode ÷ bandwidth floor (%s / llama.cpp) |\n" % (
            names, " | ".join("ratio %d-bit" % b for b in bits), names))
        f.write("|---|---|---|---|%s---|\n" % ("---|" * len(bits)))
        for label, T, m, rss, bpt in rows:
            floor = m["bw"] * 1e9 / bpt if bpt else None
            for t in ("pp128", "pp512", "tg128"):
                vals = " / ".join("%.1f" % m["%s_%s" % (e, t)] for e in lrs) + " / %.1f" % m["lc_" + t]
                ratios = " | ".join("%.2f" % (m["%s_%s" % (e, t)] / m["lc_" + t]) for e in lrs)
                fl = ""
                if t == "tg128":
                    fl = ("%s / %.0f%% (floor %.0f tok/s at %.1f GB/s)" % (" / ".join("%.0f%%" % (100 * m[e + "_tg128"] / floor) for e in lrs),
                          100 * m["lc_tg128"] / floor, floor, m["bw"])) if floor else "n/a"
                f.write("| %s | %d | %s | %s | %s | %s |\n" % (label, T, t, vals, ratios, fl))
        f.write("\nPeak RSS MiB (max over the runs): " + "; ".join(
            "%s t%d: %s" % (label, T, ", ".join("%s %.0f" % (e, rss[e]) for e in ["lc"] + lrs)) for label, T, m, rss, bpt in rows) + ".\n")
        f.write("\nNotes: tg128 is 128 decode steps after one token (llama-bench's tg from an empty context); "
                "pp is one prefill pass over random ids. llm-run's bytes per token: weights one decode step "
                "reads (--json weights.bytes_per_token); the floor ignores the small KV cache at these lengths.\n")
    print(open(a.out).read())


if __name__ == "__main__":
    main()
