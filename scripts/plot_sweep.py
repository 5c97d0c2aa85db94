#!/usr/bin/env python3
"""Draw the plots of a sweep folder from DIR/summary.csv (written by `llm-run eval` / `eval-merge`).

    scripts/plot_sweep.py DIR [--out FILE]

summary.png: small multiples, one row per headline metric and one column per policy family
(recency: local, streaming; attention scores: h2o, scissorhands, tova; BUZZ: buzz, buzz_logn;
SnapKV family: snapkv, pyramidkv, ada_*; others), metric vs budget with the 95% interval as a
band, the full cache (dashed) and the no-context baseline (dotted, when there is one) in every
panel, so no axis holds more than a few lines. Headline metrics: perplexity tasks ppl, kl,
top1_agree; xsum/cnndm rouge1, rouge2, rougeL; litm em; passkey/niah acc.
passkey_heatmap.png (passkey/niah, from DIR/cells.csv): accuracy as a depth x length heatmap,
one panel per policy at each budget.
Budgets > 1 are token counts. Needs matplotlib (scripts/setup.sh); exits 1 with a one-line
message when it or the CSV is missing.
"""
import argparse
import csv
import math
import os
import sys

FAMILIES = [
    ("recency", ["local", "streaming"]),
    ("attention scores", ["h2o", "scissorhands", "tova"]),
    ("BUZZ", ["buzz", "buzz_logn"]),
    ("SnapKV family", ["snapkv", "pyramidkv", "ada_snapkv", "ada_pyramidkv"]),
    ("others", ["subgen", "subgen_stream", "hashevict", "l2norm", "random"]),
]
BASELINES = ("closedbook", "nocontext")


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def heatmaps(plt, d, task, out):
    path = os.path.join(d, "cells.csv")
    if not os.path.exists(path):
        return
    cells = read_csv(path)
    if not cells:
        return
    keys = []
    for c in cells:
        k = (c["policy"], num(c["budget"]))
        if k not in keys:
            keys.append(k)
    depths = sorted({num(c["depth"]) for c in cells})
    lengths = sorted({int(num(c["length"])) for c in cells})
    ncol = min(4, len(keys))
    nrow = (len(keys) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(2.1 + 0.9 * len(lengths) * ncol, 0.6 + 0.55 * len(depths) * nrow + 0.6),
                             squeeze=False)
    im = None
    for ax, (p, b) in zip([a for row in axes for a in row], keys):
        grid = [[math.nan] * len(lengths) for _ in depths]
        for c in cells:
            if c["policy"] == p and num(c["budget"]) == b:
                grid[depths.index(num(c["depth"]))][lengths.index(int(num(c["length"])))] = num(c["acc"])
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto", origin="upper")
        for i in range(len(depths)):
            for j in range(len(lengths)):
                if not math.isnan(grid[i][j]):
                    ax.text(j, i, f"{grid[i][j]:.2f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(lengths)), [str(x) for x in lengths], fontsize=7)
        ax.set_yticks(range(len(depths)), [f"{x:g}" for x in depths], fontsize=7)
        ax.set_title(f"{p} @ {b:g}", fontsize=9)
        ax.set_xlabel("prompt tokens", fontsize=7)
        ax.set_ylabel("needle depth", fontsize=7)
    for ax in [a for row in axes for a in row][len(keys):]:
        ax.axis("off")
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.6, label="accuracy")
    fig.suptitle(f"{task}: accuracy by needle depth x prompt length")
    fig.savefig(out, dpi=110, bbox_inches="tight")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--out")
    a = ap.parse_args()
    path = os.path.join(a.dir, "summary.csv")
    try:
        rows = read_csv(path)
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
    metrics = []
    for m in ["ppl", "kl", "top1_agree", "rouge1", "rouge2", "rougeL", "em", "acc"]:
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
    known = {p for _, ps in FAMILIES for p in ps}
    fams = [(name, [p for p in ps if p in policies]) for name, ps in FAMILIES]
    extra = [p for p in policies if p not in known and p != "full" and p not in BASELINES]
    if extra:
        fams.append(("other", extra))
    fams = [(n, ps) for n, ps in fams if ps] or [("full", [])]

    def series(p, mean_col, lo_col, hi_col):
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
        return x, y, lo, hi

    budgets = [num(r["budget"]) for r in rows if r["policy"] not in BASELINES]
    xlab = "KV budget" + (" (tokens)" if any(b > 1 for b in budgets) else " (fraction)")
    nr, nc = len(metrics), len(fams)
    fig, axes = plt.subplots(nr, nc, figsize=(2.9 * nc + 0.8, 2.3 * nr + 0.8), squeeze=False, sharex=True)
    cmap = plt.get_cmap("tab10")
    for i, (name, mean_col, lo_col, hi_col) in enumerate(metrics):
        for j, (fam, ps) in enumerate(fams):
            ax = axes[i][j]
            if "full" in policies:
                x, y, lo, hi = series("full", mean_col, lo_col, hi_col)
                if x:
                    v = y[0]
                    ax.axhline(v, color="black", ls="--", lw=1, label="full")
            for b in BASELINES:
                if b in policies:
                    x, y, _, _ = series(b, mean_col, lo_col, hi_col)
                    if y and not math.isnan(y[0]):
                        ax.axhline(y[0], color="gray", ls=":", lw=1.2, label=b)
            for k, p in enumerate(ps):
                x, y, lo, hi = series(p, mean_col, lo_col, hi_col)
                ax.plot(x, y, "-", marker="o", ms=3, lw=1.2, color=cmap(k % 10), label=p)
                ax.fill_between(x, lo, hi, color=cmap(k % 10), alpha=0.15, lw=0)
            if name == "ppl":
                ax.set_yscale("log")
            elif name == "kl":
                ax.set_yscale("symlog", linthresh=1e-3)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(fam, fontsize=10)
            if j == 0:
                ax.set_ylabel(name)
            if i == nr - 1:
                ax.set_xlabel(xlab, fontsize=8)
            if i == 0:
                ax.legend(fontsize=6, loc="best")
    ev = rows[0].get("evidence", "")
    sub = {"yes": "evidence check: full beats the no-context baseline",
           "no": "evidence check FAILED: not context-sensitive for this model",
           "n/a": ""}.get(ev, "")
    fig.suptitle(f"{task}: metric vs KV budget per policy family (95% bands)" + (f"\n{sub}" if sub else ""), fontsize=11)
    fig.tight_layout()
    out = a.out or os.path.join(a.dir, "summary.png")
    fig.savefig(out, dpi=110)
    heatmaps(plt, a.dir, task, os.path.join(a.dir, "passkey_heatmap.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
