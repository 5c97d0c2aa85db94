#!/usr/bin/env python3
"""Draw DIR/summary.png from DIR/summary.csv (written by `llm-run eval` / `llm-run eval-merge`).

    scripts/plot_sweep.py DIR [--out FILE]

One panel per headline metric of the task, metric vs budget with one line per policy and the
95% confidence interval as a band (the layout of the BUZZ paper's Figure 5):
  perplexity tasks: ppl, kl, top1_agree;  xsum/cnndm: rouge1, rouge2, rougeL (Google rouge-score,
  stemmed) and pltrdy_rougeL;  litm: em.
Budgets > 1 are token counts and are plotted as they are. Needs matplotlib (scripts/setup.sh).
Exits 1 with a one-line message when matplotlib or the CSV is missing.
"""
import argparse
import csv
import math
import os
import sys


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--out")
    a = ap.parse_args()
    path = os.path.join(a.dir, "summary.csv")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"plot_sweep: {path}: {e.strerror}", file=sys.stderr)
        return 1
    if not rows:
        print(f"plot_sweep: {path}: no rows", file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_sweep: matplotlib is not installed (scripts/setup.sh installs it)", file=sys.stderr)
        return 1

    cols = rows[0].keys()
    task = rows[0].get("task", "")
    candidates = ["ppl", "kl", "top1_agree", "rouge1", "rouge2", "rougeL", "pltrdy_rougeL", "em"]
    metrics = []
    for m in candidates:
        if m == "ppl" and "ppl" in cols:
            metrics.append(("ppl", "ppl", "ppl_ci95_lo", "ppl_ci95_hi"))
        elif f"{m}_mean" in cols:
            metrics.append((m, f"{m}_mean", f"{m}_ci95", None))
    if not metrics:
        print(f"plot_sweep: {path}: no metric column to plot", file=sys.stderr)
        return 1

    policies = []
    for r in rows:
        if r["policy"] not in policies:
            policies.append(r["policy"])
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics) + 1.6, 3.8), squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, (name, mean_col, lo_col, hi_col) in zip(axes[0], metrics):
        for k, p in enumerate(policies):
            pr = sorted((r for r in rows if r["policy"] == p), key=lambda r: num(r["budget"]))
            x = [num(r["budget"]) for r in pr]
            y = [num(r[mean_col]) for r in pr]
            if hi_col:
                lo = [num(r[lo_col]) for r in pr]
                hi = [num(r[hi_col]) for r in pr]
            else:
                ci = [num(r[lo_col]) for r in pr]
                lo = [m - (c if not math.isnan(c) else 0) for m, c in zip(y, ci)]
                hi = [m + (c if not math.isnan(c) else 0) for m, c in zip(y, ci)]
            style = "--" if p == "full" else "-"
            ax.plot(x, y, style, marker="o", ms=3, lw=1.2, color=cmap(k % 20), label=p)
            ax.fill_between(x, lo, hi, color=cmap(k % 20), alpha=0.12, lw=0)
        ax.set_xlabel("KV budget" + (" (tokens)" if any(num(r["budget"]) > 1 for r in rows) else " (fraction)"))
        ax.set_title(name)
        if name == "ppl":
            ax.set_yscale("log")
        elif name == "kl":
            ax.set_yscale("symlog", linthresh=1e-3)  # KL is 0 for full; small values stay visible
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), ncol=1)
    fig.suptitle(f"{task}: metric vs KV budget per policy (95% CI bands)")
    fig.tight_layout()
    out = a.out or os.path.join(a.dir, "summary.png")
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
