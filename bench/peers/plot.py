#!/usr/bin/env python3
"""Chart of an `agentcompile bench e2e --json-out` report: decode ms/token per model for our
engine and each peer (log scale), the weight-streaming floor (weight bytes / copy bandwidth
measured in the same run) marked per model. Runs where the semantic check did not pass are
hatched and labelled "not counted".

    python3 bench/peers/plot.py REPORT.json --workload W2 --out chart.png
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("--workload", default="W2")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        sys.exit(f"error: plot.py: matplotlib is not installed here ({e}); copy the JSON report to a machine with it")
    try:
        rep = json.load(open(args.report))
    except (OSError, ValueError) as e:
        sys.exit(f"error: {args.report}: {e}")
    if rep.get("schema") != "agentcompile.bench/1" or rep.get("tier") != "e2e":
        sys.exit(f"error: {args.report}: not an agentcompile bench e2e report")
    rows = [r for r in rep["results"] if r["workload"] == args.workload]
    if not rows:
        sys.exit(f"error: {args.report}: no results for workload {args.workload}")
    floors = {m["name"]: m.get("floor_ms") for m in rep.get("models", [])}
    series = ["agentcompile"] + sorted({p for r in rows for p in r.get("peers", {})},
                                       key=lambda p: (p != "torch-compiled", p))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(2.2 + 2.4 * len(rows), 4.5))
    for i, s in enumerate(series):
        for j, r in enumerate(rows):
            v = r["decode_ms_per_token"] if s == "agentcompile" else r.get("peers", {}).get(s, {}).get("decode_ms_per_token")
            if v is None:
                continue
            x = j - 0.4 + width * (i + 0.5)
            uncounted = s == "agentcompile" and not r.get("counted", False)
            ax.bar(x, v, width, color=f"C{i}", hatch="//" if uncounted else None, edgecolor="black", linewidth=0.5,
                   label=s if j == 0 else None)
            ax.text(x, v * 1.05, f"{v:.2f}" + ("\nnot counted" if uncounted else ""), ha="center", va="bottom", fontsize=7)
    for j, r in enumerate(rows):
        f = floors.get(r["model"])
        if f:
            ax.hlines(f, j - 0.45, j + 0.45, colors="red", linestyles="--", label="bandwidth floor" if j == 0 else None)
    ax.set_xticks(range(len(rows)), [r["model"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("decode ms/token (log scale, lower is better)")
    gpu = (rep.get("environment", {}).get("gpu") or {}).get("name", "CPU")
    ax.set_title(f"{args.workload}: batch {rows[0]['batch']}, prompt {rows[0]['prompt']}, {rows[0]['gen']} new tokens; "
                 f"{gpu}, {rep.get('created', '')[:10]}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=130)


if __name__ == "__main__":
    main()
