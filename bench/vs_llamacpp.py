#!/usr/bin/env python3
"""llm-run and llama.cpp side by side on the same files, interleaved (issue 17).

    bench/vs_llamacpp.py [--reps 5] [--threads 1,2] [--models smollm2,qwen,110m-f32,110m-f16,110m-bf16]
                         [--out bench/llamacpp.md]

Reference: llama.cpp's llama-bench built by bench/llamacpp.sh from the llama-cpp-python sdist
(never in CI; run it once, 12-15 minutes). Files: the two real GGUF models
(scripts/fetch_model.sh) and the stories110M-shaped synthetic model (scripts/
make_synthetic_models.py) written as GGUF in F32, F16 and BF16 (scripts/make_test_gguf.py
--vocab dummy), so both engines read the very same bytes.

For every model and thread count, R rounds; each round runs the two engines one after the other,
alternating which goes first (A B, B A, ...), then a streaming-read bandwidth pass
(build/bench/bench_cpu --bw-only) with the same threads. Per round:
  llama-bench -p 128,512 -n 128 -r 1 (its own warm-up run), tests pp128, pp512, tg128;
  llm-run --prompt-ids (128 / 512 random ids) -n 1 for the prefill figures, and
  llm-run --prompt-ids (one id) -n 129 --ignore-eos for decode (128 decode steps),
each a fresh process; peak RSS from wait4 (ru_maxrss) of every process, the max per engine.
The table gives medians and the ratio llm-run / llama.cpp per figure, and decode as a fraction
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
    for label, path in models(a.models.split(",")):
        bpt = weight_bytes_per_token(llm, path)
        for T in [int(x) for x in a.threads.split(",")]:
            res = {k: [] for k in ("lc_pp128", "lc_pp512", "lc_tg128", "lr_pp128", "lr_pp512", "lr_tg128", "bw")}
            rss = {"lc": 0.0, "lr": 0.0}
            for rep in range(a.reps):
                def llamacpp():
                    out, r = run_rss([lb, "-m", path, "-p", "128,512", "-n", "128", "-r", "1", "-t", str(T), "-o", "json"])
                    rss["lc"] = max(rss["lc"], r)
                    for t in json.loads(out):
                        key = "lc_pp%d" % t["n_prompt"] if t["n_gen"] == 0 else "lc_tg%d" % t["n_gen"]
                        res[key].append(t["avg_ts"])

                def llmrun():
                    for n in (128, 512):
                        ids = ",".join(str(rng.randrange(1000, 20000)) for _ in range(n))
                        out, r = run_rss([llm, "-m", path, "--prompt-ids", ids, "-n", "1", "-t", str(T), "--json"])
                        rss["lr"] = max(rss["lr"], r)
                        res["lr_pp%d" % n].append(json.loads(out)["timings"]["prefill_tok_s"])
                    out, r = run_rss([llm, "-m", path, "--prompt-ids", str(rng.randrange(1000, 20000)), "-n", "129",
                                      "--ignore-eos", "-t", str(T), "--json"])
                    rss["lr"] = max(rss["lr"], r)
                    res["lr_tg128"].append(json.loads(out)["timings"]["decode_tok_s"])

                for f in ((llamacpp, llmrun) if rep % 2 == 0 else (llmrun, llamacpp)):
                    f()
                out, _ = run_rss([bw, "--bw-only", "--threads", str(T)])
                res["bw"].append(float(out.strip()))
                print("%s t%d round %d: %s" % (label, T, rep + 1, {k: round(v[-1], 1) for k, v in res.items()}), flush=True)
            med = {k: statistics.median(v) for k, v in res.items()}
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
        f.write("- Each round: both engines (alternating first), then a bandwidth pass; medians of %d rounds. "
                "Ratio = llm-run ÷ llama.cpp (> 1: llm-run faster; RSS: < 1 leaner).\n\n" % a.reps)
        f.write("| model | threads | pp128 llm-run / llama.cpp | ratio | pp512 llm-run / llama.cpp | ratio | tg128 llm-run / llama.cpp | ratio | decode ÷ bandwidth floor (llm-run / llama.cpp) | peak RSS MiB llm-run / llama.cpp | ratio |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|---|\n")
        for label, T, m, rss, bpt in rows:
            floor = m["bw"] * 1e9 / bpt if bpt else None
            fl = "%.0f%% / %.0f%% (floor %.0f tok/s at %.1f GB/s)" % (100 * m["lr_tg128"] / floor, 100 * m["lc_tg128"] / floor, floor, m["bw"]) if floor else "n/a"
            f.write("| %s | %d | %.1f / %.1f | %.2f | %.1f / %.1f | %.2f | %.1f / %.1f | %.2f | %s | %.0f / %.0f | %.2f |\n" % (
                label, T, m["lr_pp128"], m["lc_pp128"], m["lr_pp128"] / m["lc_pp128"], m["lr_pp512"], m["lc_pp512"],
                m["lr_pp512"] / m["lc_pp512"], m["lr_tg128"], m["lc_tg128"], m["lr_tg128"] / m["lc_tg128"], fl,
                rss["lr"], rss["lc"], rss["lr"] / rss["lc"]))
        f.write("\nNotes: tg128 is 128 decode steps after one token (llama-bench's tg from an empty context); "
                "pp is one prefill pass over random ids. llm-run's bytes per token: weights one decode step "
                "reads (--json weights.bytes_per_token); the floor ignores the small KV cache at these lengths.\n")
    print(open(a.out).read())


if __name__ == "__main__":
    main()
