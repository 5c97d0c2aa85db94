#!/usr/bin/env python3
"""Draw what a KV cache kept, from a --dump-kept file (llm-run or llm-run eval).

    scripts/plot_kept.py DUMP.jsonl [--id ID] [--policy P] [--budget B] [--step S] [--out FILE]

Picks the first line matching the filters (--step: decode steps done, 0 = right after the
prefill, the default) and draws a heatmap: prompt position (x) by layer (y), the colour the share
of the layer's KV heads that keep the position. Spans the line carries (eval's lines: the needle,
each document with the gold one highlighted, the question, the article) are marked above the map.
Writes FILE (default DUMP-<id>-<policy>-<budget>-step<S>.png). Needs matplotlib.
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump")
    ap.add_argument("--id")
    ap.add_argument("--policy")
    ap.add_argument("--budget", type=float)
    ap.add_argument("--step", type=int, default=0)
    ap.add_argument("--out")
    a = ap.parse_args()
    rec = None
    try:
        with open(a.dump) as f:
            for line in f:
                r = json.loads(line)
                if a.id is not None and r.get("id") != a.id:
                    continue
                if a.policy is not None and r.get("policy") != a.policy:
                    continue
                if a.budget is not None and abs(r.get("budget", -1) - a.budget) > 1e-9:
                    continue
                if r.get("step") != a.step:
                    continue
                rec = r
                break
    except OSError as e:
        print(f"plot_kept: {a.dump}: {e.strerror}", file=sys.stderr)
        return 1
    if rec is None:
        print(f"plot_kept: {a.dump}: no line matches (id {a.id}, policy {a.policy}, budget {a.budget}, step {a.step})",
              file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:
        print("plot_kept: matplotlib is not installed (scripts/setup.sh installs it)", file=sys.stderr)
        return 1
    n, L, H = rec["n_prompt"], rec["n_layers"], rec["n_kv_heads"]
    grid = [[0.0] * n for _ in range(L)]
    for l, heads in enumerate(rec["kept"]):
        for pos in heads:
            for p in pos:
                if 0 <= p < n:
                    grid[l][p] += 1.0 / H
    fig, ax = plt.subplots(figsize=(min(16, 4 + n / 60), 2.2 + L * 0.12))
    im = ax.imshow(grid, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=1, interpolation="nearest",
                   extent=(-0.5, n - 0.5, -0.5, L - 0.5))
    fig.colorbar(im, ax=ax, label="share of KV heads keeping the position")
    ax.set_xlabel("prompt position (token)")
    ax.set_ylabel("layer")
    spans = rec.get("spans", {})
    gold = rec.get("gold_index")
    top = L - 0.5
    for name, (s0, s1) in spans.items():
        color, label = "white", name
        if name == "needle":
            color = "red"
        elif name == "question":
            color = "deepskyblue"
        elif name.startswith("doc"):
            k = int(name[3:]) if name[3:].isdigit() else -1
            color = "lime" if gold is not None and k == gold else "lightgray"
            label = f"d{k}" + (" (gold)" if gold is not None and k == gold else "")
        elif name == "document":
            color = "orange"
        ax.add_patch(Rectangle((s0 - 0.5, top + 0.2), max(1, s1 - s0), L * 0.04 + 0.4, color=color, clip_on=False))
        ax.axvline(s0 - 0.5, color=color, lw=0.6, alpha=0.7)
        ax.axvline(s1 - 0.5, color=color, lw=0.6, alpha=0.7)
        ax.text((s0 + s1) / 2, top + L * 0.05 + 0.8, label, ha="center", va="bottom", fontsize=7, color="black", clip_on=False)
    title = f"{rec.get('task', 'llm-run')} {rec.get('id', '')}: {rec.get('policy', '')} @ {rec.get('budget', '')}, " \
            f"after {'the prefill' if a.step == 0 else f'{a.step} decode steps'}"
    ax.set_title(title, pad=40)
    out = a.out or f"{os.path.splitext(a.dump)[0]}-{rec.get('id', 'run')}-{rec.get('policy', 'p')}-{rec.get('budget', 'b')}-step{a.step}.png"
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
