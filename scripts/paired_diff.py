#!/usr/bin/env python3
"""Paired difference of two policies on the same examples, from an eval results.jsonl.

    scripts/paired_diff.py RESULTS.jsonl METRIC A@BUDGET B@BUDGET [A@BUDGET B@BUDGET ...]
                           [--resamples 2000] [--seed 0] [--b-results OTHER.jsonl]

--b-results reads every pair's B from another sweep of the same examples (e.g. the same policy
with the question first: RESULTS = <task>_qfirst/, OTHER = <task>/).

For each pair: the examples both rows have, mean(A), mean(B), mean(A - B) and its 95% paired
percentile-bootstrap interval (resampling examples, seeded), as results/README.md's claims use
them ("full" at any budget is the full cache). METRIC is a key of the lines' "metrics" (rouge1,
rougeL, em, accuracy, ...). Standard library only.
"""
import argparse
import json
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("metric")
    ap.add_argument("pairs", nargs="+")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--b-results", help="read B of every pair from this results.jsonl")
    a = ap.parse_args()
    if len(a.pairs) % 2:
        sys.exit("paired_diff.py: give policies in pairs (A@BUDGET B@BUDGET)")
    def load(path):
        rows = {}
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                m = (r.get("metrics") or {}).get(a.metric)
                if m is None:
                    continue
                rows.setdefault((r["policy"], float(r["budget"])), {})[r["id"]] = float(m)
        return rows

    rows_a = load(a.results)
    rows_b = load(a.b_results) if a.b_results else rows_a

    def get(spec, rows):
        p, _, b = spec.partition("@")
        if p == "full" and not b:   # the full cache's line is the same at every budget: the largest set
            full = [v for (pp, _bb), v in rows.items() if pp == "full"]
            if full:
                return max(full, key=len)
        v = rows.get((p, float(b or 1)))
        if v is None:
            sys.exit(f"paired_diff.py: no lines for {spec} with metric {a.metric}")
        return v

    print(f"| A | B | n | mean A | mean B | A - B [95% paired bootstrap] |")
    print("|---|---|---|---|---|---|")
    for i in range(0, len(a.pairs), 2):
        A, B = get(a.pairs[i], rows_a), get(a.pairs[i + 1], rows_b)
        ids = sorted(set(A) & set(B))
        d = [A[k] - B[k] for k in ids]
        n = len(d)
        rng = random.Random(a.seed)
        means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(a.resamples))
        lo, hi = means[int(0.025 * a.resamples)], means[int(0.975 * a.resamples) - 1]
        ma, mb = sum(A[k] for k in ids) / n, sum(B[k] for k in ids) / n
        print(f"| {a.pairs[i]} | {a.pairs[i+1]} | {n} | {ma:.4f} | {mb:.4f} | {ma-mb:+.4f} [{lo:+.4f}, {hi:+.4f}] |")


if __name__ == "__main__":
    main()
