#!/usr/bin/env python3
"""Decode bytes/s ÷ bandwidth (issue 17 target a) of several bench_cpu builds, interleaved.

    bench/decode_ab.py [--reps 5] [--threads 2] [--dtypes f32,f16,bf16] NAME=BENCH_CPU ...

Runs BENCH_CPU --decode-only --threads N stories110M-syn=models/stories110M-syn:DTYPE for each
dtype, the builds in turn (A B A B ..., order reversed every other round), and prints per build
and dtype the median decode tok/s and the median ratio of bytes/s to the bandwidth measured in
the same run (bench_cpu's "÷ bandwidth" column: context 64, policy full, 48 steps), with every
rep, and the host's load average before and after. bench_cpu makes its own OpenMP wait choice
(cli/runtime.c) unless OMP_WAIT_POLICY / GOMP_SPINCOUNT are set. Needs models/stories110M-syn
(`scripts/make_synthetic_models.py models --only stories110M-syn`; `make bench` makes it).
Example: keep a copy of build/bench/bench_cpu before a change, then
    bench/decode_ab.py old=/tmp/old/bench_cpu new=build/bench/bench_cpu
"""
import argparse
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtypes", default="f32,f16,bf16")
    ap.add_argument("--model", default="models/stories110M-syn")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    builds = [b.split("=", 1) for b in a.builds]
    dts = a.dtypes.split(",")
    res = {(n, d): ([], []) for n, _ in builds for d in dts}
    load0 = open("/proc/loadavg").read().split()[:3]
    for r in range(a.reps):
        for name, binary in (builds if r % 2 == 0 else builds[::-1]):
            cmd = [binary, "--decode-only", "--threads", str(a.threads)] + ["%s=%s:%s" % (d, a.model, d) for d in dts]
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
            if out.returncode != 0:
                sys.exit("decode_ab: %s failed: %s" % (name, out.stderr.strip()[-300:]))
            for line in out.stdout.splitlines():
                f = [x.strip() for x in line.strip().strip("|").split("|")]
                if len(f) == 10 and f[0] in dts and f[3] == "full":
                    res[(name, f[0])][0].append(float(f[6]))
                    res[(name, f[0])][1].append(float(f[9].rstrip("%")))
        print("round %d: %s" % (r + 1, "  ".join("%s/%s %.0f%%" % (n, d, res[(n, d)][1][-1]) for n, _ in builds for d in dts
                                                 if res[(n, d)][1])), file=sys.stderr, flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    print("stories110M-syn decode, context 64, policy full, %d threads, %d rounds interleaved; load average before %s, after %s" % (
        a.threads, a.reps, " ".join(load0), " ".join(load1)))
    for d in dts:
        for name, binary in builds:
            tps, frac = res[(name, d)]
            print("  %-5s %-8s median %6.1f tok/s, %3.0f%% of bandwidth  (reps %s)" % (
                d, name, statistics.median(tps), statistics.median(frac), " ".join("%.0f%%" % x for x in frac)))


if __name__ == "__main__":
    main()
