#!/usr/bin/env python3
"""Decode tok/s of several llm-run settings (binaries, thread counts, environments) measured
interleaved in one invocation (A B C A B C ..., medians), idle or with one core kept busy.

    bench/threads_ab.py [--busy] [--reps 5] [-m MODEL] [-n 96] [--prompt TEXT] \
        NAME=BINARY:THREADS[:VAR=VALUE,...] ...

NAME=BINARY:THREADS runs BINARY -m MODEL -p PROMPT -n N --ignore-eos -t THREADS --json and reads
timings.decode_tok_s. --busy starts `sh -c 'while :; do :; done'` pinned to the last CPU for
the whole run (as bench/issue17_rows.py's busy-core row). Prints one line per setting (median,
all reps) and its ratio to the first setting, plus the host's load average before and after.
Example (issue 17 target b, the current build against a saved one):
    bench/threads_ab.py --busy new1=./llm-run:1 new2=./llm-run:2 old2=/tmp/old/llm-run:2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOL = os.path.join(os.path.expanduser("~"), ".cache", "llm-run", "SmolLM2-135M-Instruct.Q4_1.gguf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("-m", "--model", default=SMOL)
    ap.add_argument("-n", type=int, default=96)
    ap.add_argument("--prompt", default="Once upon a time")
    ap.add_argument("--prompt-ids", default=None, help="instead of --prompt (models without a tokenizer)")
    ap.add_argument("settings", nargs="+")
    a = ap.parse_args()
    sets = []
    for s in a.settings:
        name, rest = s.split("=", 1)
        parts = rest.split(":")
        env = dict(os.environ)
        if len(parts) > 2 and parts[2]:
            for kv in parts[2].split(","):
                k, v = kv.split("=", 1)
                env[k] = v
        sets.append((name, parts[0], parts[1], env))
    prompt = ["--prompt-ids", a.prompt_ids] if a.prompt_ids else ["-p", a.prompt]
    load0 = open("/proc/loadavg").read().split()[:3]
    busy = None
    if a.busy:
        busy = subprocess.Popen(["taskset", "-c", str(os.cpu_count() - 1), "sh", "-c", "while :; do :; done"])
    res = {s[0]: [] for s in sets}
    try:
        for r in range(a.reps):
            order = sets if r % 2 == 0 else sets[::-1]
            for name, binary, t, env in order:
                out = subprocess.run([binary, "-m", a.model] + prompt + ["-n", str(a.n), "--ignore-eos", "-t", t, "--json"],
                                     capture_output=True, text=True, env=env, cwd=REPO)
                if out.returncode != 0:
                    sys.exit("threads_ab: %s failed: %s" % (name, out.stderr.strip()[-300:]))
                res[name].append(json.loads(out.stdout)["timings"]["decode_tok_s"])
            print("round %d: %s" % (r + 1, "  ".join("%s %.1f" % (s[0], res[s[0]][-1]) for s in sets)), file=sys.stderr, flush=True)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    load1 = open("/proc/loadavg").read().split()[:3]
    base = statistics.median(res[sets[0][0]])
    print("%s, %s, -n %d, %d rounds interleaved; load average before %s, after %s" % (
        os.path.basename(a.model), "one core busy (spin loop on CPU %d)" % (os.cpu_count() - 1) if a.busy else "no added load",
        a.n, a.reps, " ".join(load0), " ".join(load1)))
    for name, binary, t, env in sets:
        m = statistics.median(res[name])
        print("  %-10s %-28s -t %s: median %6.1f tok/s  (%.2fx %s)  reps %s" % (
            name, binary, t, m, m / base, sets[0][0], " ".join("%.1f" % x for x in res[name])))


if __name__ == "__main__":
    main()
