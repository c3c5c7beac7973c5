#!/usr/bin/env python3
"""Chart of an `agentcompile bench e2e --json-out` report: decode ms/token per model for our
engine and each peer (log scale), the weight-streaming floor (weight bytes / copy bandwidth
measured in the same run) marked per model. Runs that do not count (semantic check not passed,
no reference, failed) are hatched and labelled "not counted".

    python3 bench/peers/plot.py REPORT.json --workload W2 --out chart.png   # matplotlib
    python3 bench/peers/plot.py REPORT.json --workload W2 --out chart.svg   # no dependencies
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape


def load(path, workload):
    try:
        rep = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit(f"error: {path}: {e}")
    if not isinstance(rep, dict) or rep.get("schema") != "agentcompile.bench/1" or rep.get("tier") != "e2e":
        sys.exit(f"error: {path}: not an agentcompile bench e2e report")
    rows = [r for r in rep["results"] if r["workload"] == workload]
    if not rows:
        sys.exit(f"error: {path}: no results for workload {workload}")
    return rep, rows


def series_of(rows):
    """[(name, [value or None per row], [counted per row])], ours first, then the peers."""
    peers = sorted({p for r in rows for p in r.get("peers", {})}, key=lambda p: (p != "torch-compiled", p))
    out = [("agentcompile", [r.get("decode_ms_per_token") for r in rows], [bool(r.get("counted")) for r in rows])]
    for p in peers:
        out.append((p, [r.get("peers", {}).get(p, {}).get("decode_ms_per_token") for r in rows], [True] * len(rows)))
    return out


def title(rep, rows, workload):
    gpu = (rep.get("environment", {}).get("gpu") or {}).get("name", "CPU")
    r = rows[0]
    return (f"{workload}: batch {r['batch']}, prompt {r['prompt']}, {r['gen']} new tokens; {gpu}, "
            f"{rep.get('created', '')[:10]}, engine {rep.get('environment', {}).get('engine_commit', '?')}")


def plot_png(rep, rows, workload, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        sys.exit(f"error: plot.py: matplotlib is not installed here ({e}); use --out FILE.svg")
    floors = {m["name"]: m.get("floor_ms") for m in rep.get("models", [])}
    series = series_of(rows)
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(2.2 + 2.4 * len(rows), 4.5))
    for i, (name, values, counted) in enumerate(series):
        for j, v in enumerate(values):
            if v is None:
                continue
            x = j - 0.4 + width * (i + 0.5)
            ax.bar(x, v, width, color=f"C{i}", hatch=None if counted[j] else "//", edgecolor="black", linewidth=0.5,
                   label=name if j == 0 else None)
            ax.text(x, v * 1.05, f"{v:.2f}" + ("" if counted[j] else "\nnot counted"), ha="center", va="bottom", fontsize=7)
    for j, r in enumerate(rows):
        if floors.get(r["model"]):
            ax.hlines(floors[r["model"]], j - 0.45, j + 0.45, colors="red", linestyles="--",
                      label="bandwidth floor" if j == 0 else None)
    ax.set_xticks(range(len(rows)), [r["model"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("decode ms/token (log scale, lower is better)")
    ax.set_title(title(rep, rows, workload), fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=130)


def plot_svg(rep, rows, workload, out):
    """The same chart as SVG text, for machines without matplotlib."""
    floors = {m["name"]: m.get("floor_ms") for m in rep.get("models", [])}
    series = series_of(rows)
    values = [v for _, vs, _ in series for v in vs if v] + [f for f in floors.values() if f]
    lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    hi = max(hi, lo + 1)
    W, H, left, top, bottom = 180 + 220 * len(rows), 420, 70, 40, 60
    ph = H - top - bottom
    y = lambda v: top + ph * (hi - math.log10(v)) / (hi - lo)
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="11">{escape(title(rep, rows, workload))}</text>']
    for e in range(lo, hi + 1):
        s.append(f'<line x1="{left}" x2="{W - 110}" y1="{y(10 ** e):.1f}" y2="{y(10 ** e):.1f}" stroke="#ddd"/>')
        s.append(f'<text x="{left - 6}" y="{y(10 ** e) + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    s.append(f'<text transform="translate(16,{top + ph / 2}) rotate(-90)" text-anchor="middle">decode ms/token (log)</text>')
    group = (W - 110 - left) / len(rows)
    width = 0.8 * group / len(series)
    for j, r in enumerate(rows):
        x0 = left + group * j + 0.1 * group
        for i, (name, vs, counted) in enumerate(series):
            v = vs[j]
            if not v:
                continue
            x = x0 + width * i
            fill = colors[i % len(colors)] if counted[j] else "none"
            s.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{width:.1f}" height="{top + ph - y(v):.1f}" fill="{fill}" '
                     f'stroke="{colors[i % len(colors)]}" stroke-width="1.5"/>')
            label = f"{v:.2f}" + ("" if counted[j] else " (not counted)")
            s.append(f'<text x="{x + width / 2:.1f}" y="{y(v) - 4:.1f}" text-anchor="middle" font-size="9">{label}</text>')
        if floors.get(r["model"]):
            fy = y(floors[r["model"]])
            s.append(f'<line x1="{x0:.1f}" x2="{x0 + 0.8 * group:.1f}" y1="{fy:.1f}" y2="{fy:.1f}" stroke="red" '
                     f'stroke-dasharray="5,3"/>')
        s.append(f'<text x="{x0 + 0.4 * group:.1f}" y="{H - bottom + 18}" text-anchor="middle">{escape(r["model"])}</text>')
    for i, (name, _, _) in enumerate(series + [("bandwidth floor", None, None)]):
        color = "red" if name == "bandwidth floor" else colors[i % len(colors)]
        s.append(f'<rect x="{W - 100}" y="{top + 18 * i}" width="10" height="10" fill="{color}"/>')
        s.append(f'<text x="{W - 85}" y="{top + 9 + 18 * i}">{escape(name)}</text>')
    s.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("--workload", default="W2")
    ap.add_argument("--out", required=True, help="FILE.png (matplotlib) or FILE.svg (no dependencies)")
    args = ap.parse_args()
    rep, rows = load(args.report, args.workload)
    (plot_svg if args.out.endswith(".svg") else plot_png)(rep, rows, args.workload, args.out)


if __name__ == "__main__":
    main()
