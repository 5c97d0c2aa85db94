#!/usr/bin/env python3
"""Question first vs question last: every (policy, budget) of a sweep against the same policy and
budget in its `<task>_qfirst/` twin (same examples, `--question-position first`).

    scripts/qpos_table.py [RESULTS_DIR] [--resamples 2000] [--seed 0]

For each `<model>/<task>_qfirst/results.jsonl` under RESULTS_DIR (default: results/) with a
`<model>/<task>/results.jsonl` beside it, prints one Markdown row per (policy, budget) present in
both: n (the examples both have), the task's metric with the question last and first, and
first − last with its 95% paired percentile-bootstrap interval (resampling examples, seeded: the
method of scripts/paired_diff.py). The metric is the one the task's summary uses (em for litm,
acc for passkey).
"""
import argparse
import glob
import json
import os
import random

METRIC = {"litm": "em", "passkey": "acc", "niah": "acc", "xsum": "rouge1", "cnndm": "rouge1"}


def load(path, metric):
    rows = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            m = (r.get("metrics") or {}).get(metric)
            if m is not None:
                rows.setdefault((r["policy"], float(r["budget"])), {})[r["id"]] = float(m)
    return rows


def paired(d, resamples, seed):
    n = len(d)
    rng = random.Random(seed)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?", default="results")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print("| model | task | policy@budget | n | question last | question first | first − last [95% paired] |")
    print("|---|---|---|---|---|---|---|")
    for qf in sorted(glob.glob(os.path.join(a.results, "*", "*_qfirst", "results.jsonl"))):
        tdir = os.path.dirname(qf)
        model = os.path.basename(os.path.dirname(tdir))
        task = os.path.basename(tdir)[: -len("_qfirst")]
        ql = os.path.join(os.path.dirname(tdir), task, "results.jsonl")
        if not os.path.exists(ql):
            continue
        with open(qf) as f:
            first_line = json.loads(f.readline())
        metric = METRIC.get(first_line.get("task", task.split("_")[0]), "em")
        first, last = load(qf, metric), load(ql, metric)
        for key in sorted(first, key=lambda k: (k[0] in ("closedbook", "nocontext"), k[0] != "full", k[0], k[1])):
            if key not in last:
                continue
            ids = sorted(set(first[key]) & set(last[key]))
            if not ids:
                continue
            d = [first[key][i] - last[key][i] for i in ids]
            lo, hi = paired(d, a.resamples, a.seed)
            mf = sum(first[key][i] for i in ids) / len(ids)
            ml = sum(last[key][i] for i in ids) / len(ids)
            print(f"| {model} | {task} | {key[0]}@{key[1]:g} | {len(ids)} | {ml:.3f} | {mf:.3f} | "
                  f"{mf - ml:+.3f} [{lo:+.3f}, {hi:+.3f}] |")


if __name__ == "__main__":
    main()
