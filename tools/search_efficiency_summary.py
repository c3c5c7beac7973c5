#!/usr/bin/env python3
"""Search efficiency from pairs of compile reports: how soon each candidate order reaches a good
candidate, with the fallback left out.

The compile report's own figure (report.json "efficiency") counts candidates in evaluation order,
and the fallback is always evaluated first: where the fallback is already within 2% of the best,
every order scores 1 and the figure says nothing about the order. Here, per region, only the
specialised (non-fallback) candidates count:

  good   = a candidate within 2% of the best specialised candidate's time;
  score  = 1-based position of the first good candidate in the order;
  orders = the heuristic advisor's (its compile's evaluation order), the space's own (the
           compile with --advisor none) and a random order (expected value, exact:
           (n + 1) / (g + 1) for n candidates of which g are good).

Each order is scored on both compiles' timings (the same candidates were measured twice), so the
difference between the orders is not mixed up with the timing noise between the two compiles;
the spread between the two columns shows how much that noise moves the figures.

The summary also gives the means over the regions where the fallback is not within 2% of the
best specialised candidate: those where picking a specialised route matters.

Search-efficiency curves (OUT_PREFIX.curves.json and OUT_PREFIX.svg): after n specialised
candidates measured in each order, the best time found so far as a share of the best of all
(best / found: 1 once the best is found), averaged over the regions of a phase (a region whose n
candidates were all measured counts 1). Orders: heuristic, none (the space's own order, which is
an exhaustive sweep's) and random (the exact expectation over orders); an exhaustive sweep reaches
1 only at n = the region's whole space. On the heuristic compile's timings.

Usage: search_efficiency_summary.py OUT_PREFIX BACKEND DIR_OF_REPORTS MODEL_NAME...
  reads DIR/<model>-heuristic.report.json and DIR/<model>-none.report.json (or .json.gz), writes
  OUT_PREFIX.json, OUT_PREFIX.md, OUT_PREFIX.curves.json and OUT_PREFIX.svg, prints the summary tables.
"""
import gzip
import json
import os
import sys

ORDERS = ("heuristic", "none", "random")


def timings(report):
    """{(region, phase): {"fallback": us or None, "order": [names], "us": {name: us or inf}}}."""
    out = {}
    for reg in report["regions"]:
        cands = reg["search"]["candidates"]
        fallback = [c for c in cands if c["family"].endswith(":fallback")]
        special = [c for c in cands if not c["family"].endswith(":fallback") and c["status"] != "skipped"]
        out[(reg["region"], reg["phase"])] = {
            "fallback": fallback[0]["median_us"] if fallback and fallback[0]["status"] == "ok" else None,
            "order": [c["candidate"] for c in special],
            "us": {c["candidate"]: (c["median_us"] if c["status"] == "ok" else float("inf")) for c in special},
        }
    return out


def score(order, us, good_us):
    for i, name in enumerate(order):
        if us[name] <= good_us:
            return i + 1
    return len(order)


def region_rows(model, heur, none, curve_inputs=None):
    rows = []
    for key in heur:
        if key not in none:
            continue
        names = set(heur[key]["us"]) & set(none[key]["us"])  # measured in both compiles
        if len(names) <= 2:
            continue
        orders = {"heuristic": [n for n in heur[key]["order"] if n in names],
                  "none": [n for n in none[key]["order"] if n in names]}
        us_h = {n: heur[key]["us"][n] for n in names}
        if curve_inputs is not None and min(us_h.values()) < float("inf"):
            curve_inputs.append((key[1], orders, us_h))
        row = {"model": model, "region": key[0], "phase": key[1], "candidates": len(names)}
        for timing_run, run in (("heuristic", heur[key]), ("none", none[key])):
            us = {n: run["us"][n] for n in names}
            best = min(us.values())
            if best == float("inf"):
                break
            good = sum(1 for v in us.values() if v <= best * 1.02)
            fb = run["fallback"]
            row[f"timings_{timing_run}"] = {
                "best_us": best, "good": good, "fallback_us": fb,
                "fallback_within_2pct": fb is not None and fb <= best * 1.02,
                "heuristic": score(orders["heuristic"], us, best * 1.02),
                "none": score(orders["none"], us, best * 1.02),
                "random": (len(names) + 1) / (good + 1)}
        else:
            rows.append(row)
    return rows


def best_ratio_curve(order, us, n_max):
    """best / best-so-far after 1..n_max candidates of `order` (1 past its end)."""
    best, found, out = min(us.values()), float("inf"), []
    for i in range(n_max):
        if i < len(order):
            found = min(found, us[order[i]])
        out.append(best / found if found < float("inf") else 0.0)
    return out


def random_curve(us, n_max):
    """The expectation of best / best-so-far over random orders, exactly: with the times sorted
    t1 <= ... <= tN, the first n of a random order have t_i as their best with probability
    C(N - i, n - 1) / C(N, n)."""
    from math import comb
    t = sorted(us.values())
    n_all, best, out = len(t), t[0], []
    for n in range(1, n_max + 1):
        if n >= n_all:
            out.append(1.0)
            continue
        e = sum((best / t[i - 1] if t[i - 1] < float("inf") else 0.0) * comb(n_all - i, n - 1)
                for i in range(1, n_all - n + 2)) / comb(n_all, n)
        out.append(e)
    return out


def curves(rows_with_orders):
    """{phase: {"regions": k, "n": [1..], order: [mean best / found]}} over the regions of each phase."""
    by_phase = {}
    for phase, order_lists, us in rows_with_orders:
        by_phase.setdefault(phase, []).append((order_lists, us))
    out = {}
    for phase, regs in sorted(by_phase.items()):
        n_max = max(len(us) for _, us in regs)
        c = {"regions": len(regs), "n": list(range(1, n_max + 1))}
        for order in ORDERS:
            per = [random_curve(us, n_max) if order == "random" else best_ratio_curve(o[order], us, n_max)
                   for o, us in regs]
            c[order] = [sum(p[i] for p in per) / len(per) for i in range(n_max)]
        out[phase] = c
    return out


def svg(curve_doc, title):
    """The curves as one SVG figure, a panel per phase (written here: one small figure needs no
    plotting library)."""
    colors = {"heuristic": "#1b6ca8", "none": "#c0392b", "random": "#7f8c8d"}
    pw, ph, m = 420, 260, 46
    phases = list(curve_doc)
    width, height = pw * max(1, len(phases)), ph + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
             f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13">{title}</text>']
    for k, phase in enumerate(phases):
        c = curve_doc[phase]
        x0, y0, w, h = k * pw + m, 30, pw - m - 14, ph - 60
        lo = min(min(c[o]) for o in ORDERS)
        lo = min(0.5, lo)
        sx = lambda n: x0 + w * (n - 1) / max(1, len(c["n"]) - 1)
        sy = lambda v: y0 + h * (1 - (v - lo) / (1 - lo))
        parts.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
        parts.append(f'<text x="{x0 + w / 2}" y="{y0 - 4}" text-anchor="middle">{phase} ({c["regions"]} regions)</text>')
        for v in (lo, (lo + 1) / 2, 1.0):
            parts.append(f'<text x="{x0 - 4}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        for n in sorted({1, len(c["n"]) // 2 or 1, len(c["n"])}):
            parts.append(f'<text x="{sx(n):.1f}" y="{y0 + h + 14}" text-anchor="middle">{n}</text>')
        parts.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 28}" text-anchor="middle">candidates measured</text>')
        for i, order in enumerate(ORDERS):
            pts = " ".join(f"{sx(n):.1f},{sy(v):.1f}" for n, v in zip(c["n"], c[order]))
            parts.append(f'<polyline fill="none" stroke="{colors[order]}" stroke-width="1.6" points="{pts}"/>')
            parts.append(f'<text x="{x0 + w - 4}" y="{y0 + h - 8 - 13 * i}" text-anchor="end" fill="{colors[order]}">{order}</text>')
    parts.append(f'<text x="8" y="{30 + (ph - 60) / 2}" transform="rotate(-90 8 {30 + (ph - 60) / 2})" '
                 f'text-anchor="middle">best / best so far</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def means(cells):
    s = {"regions": len(cells), "fallback_within_2pct": sum(1 for c in cells if c["fallback_within_2pct"])}
    for order in ORDERS:
        s[f"mean_{order}"] = sum(c[order] for c in cells) / max(1, len(cells))
        if order != "random":
            s[f"first_{order}"] = sum(1 for c in cells if c[order] == 1)
    return s


def summarise(rows, fallback_good):
    """Means per compile's timings: over every region (fallback_good=True) or only over the
    regions where the fallback is not within 2% of the best specialised candidate."""
    summary = {}
    for run in ("heuristic", "none"):
        cells = [r[f"timings_{run}"] for r in rows]
        if not fallback_good:
            cells = [c for c in cells if not c["fallback_within_2pct"]]
        summary[f"timings_of_{run}_compile"] = means(cells)
    return summary


def summary_table(summary):
    lines = ["| timings of | regions | fallback within 2% of the best | heuristic | none | random | first: heuristic | first: none |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for run, s in summary.items():
        lines.append(f"| {run.split('_')[2]} compile | {s['regions']} | {s['fallback_within_2pct']} | "
                     f"{s['mean_heuristic']:.2f} | {s['mean_none']:.2f} | {s['mean_random']:.2f} | "
                     f"{s['first_heuristic']} | {s['first_none']} |")
    return lines


def markdown(backend, env, summary, needed, rows):
    device = env.get("device", "?") + (f", {env['cores']} threads" if env.get("cores") else "")
    lines = [f"# Search efficiency without the fallback ({backend}, {device})", "",
             "Per region: specialised candidates (the fallback left out) evaluated, in each order, until one "
             "is within 2% of the best specialised candidate. `heuristic` = the heuristic advisor's order, "
             "`none` = the candidate space's own order, `random` = expected over random orders. Each order "
             "is scored on the timings of both compiles (every candidate measured from an empty tuning DB); "
             "lower is better; `first` = regions where the order's first candidate was good.", "",
             "Every region:", ""]
    lines += summary_table(summary)
    lines += ["", "Only the regions where the fallback is not within 2% of the best specialised candidate "
              "(where choosing a specialised route matters):", ""]
    lines += summary_table(needed)
    lines += ["", "| model | region | phase | candidates | good (h / n timings) | heuristic | none | random |",
              "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        h, n = r["timings_heuristic"], r["timings_none"]
        lines.append(f"| {r['model']} | {r['region']} | {r['phase']} | {r['candidates']} | {h['good']} / {n['good']} | "
                     f"{h['heuristic']} / {n['heuristic']} | {h['none']} / {n['none']} | "
                     f"{h['random']:.1f} / {n['random']:.1f} |")
    return "\n".join(lines) + "\n"


def load_report(folder, name):
    path = os.path.join(folder, name)
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    with gzip.open(path + ".gz") as f:
        return json.load(f)


def main(argv):
    if len(argv) < 5:
        print(__doc__.strip().split("Usage: ")[1], file=sys.stderr)
        return 2
    out, backend, folder, models = argv[1], argv[2], argv[3], argv[4:]
    rows, env, not_explored, curve_inputs = [], {}, 0, []
    for model in models:
        reports = {adv: load_report(folder, f"{model}-{adv}.report.json") for adv in ("heuristic", "none")}
        env = reports["heuristic"]["environment"]
        not_explored += sum(r["budget"]["not_explored"] for r in reports.values())
        rows += region_rows(model, timings(reports["heuristic"]), timings(reports["none"]), curve_inputs)
    summary, needed = summarise(rows, True), summarise(rows, False)
    doc = {"backend": backend, "device": env.get("device"), "cores": env.get("cores"),
           "engine": env.get("engine_version"), "engine_commit": env.get("engine_commit"),
           "candidates_not_explored": not_explored,
           "metric": "specialised candidates evaluated in order until one within 2% of the best "
                     "specialised candidate; the fallback is left out; random = exact expectation",
           "summary": summary, "summary_fallback_not_within_2pct": needed, "regions": rows}
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    curve_doc = curves(curve_inputs)
    with open(out + ".curves.json", "w") as f:
        json.dump({"backend": backend, "device": env.get("device"), "metric": "mean over a phase's regions of the best "
                   "specialised time over the best found after n specialised candidates (heuristic compile's timings)",
                   "phases": curve_doc}, f, indent=1)
    with open(out + ".svg", "w") as f:
        f.write(svg(curve_doc, f"Search efficiency ({backend}, {env.get('device', '?')}): best found vs candidates measured"))
    md = markdown(backend, env, summary, needed, rows)
    md += "\nSearch-efficiency curves (mean best / best-so-far after n specialised candidates):\n\n"
    md += "| phase | regions | order | n=1 | n=2 | n=4 | n=8 | n=16 |\n|---|---:|---|---:|---:|---:|---:|---:|\n"
    for phase, c in curve_doc.items():
        for order in ORDERS:
            vals = [f"{c[order][n - 1]:.3f}" if n <= len(c["n"]) else "" for n in (1, 2, 4, 8, 16)]
            md += f"| {phase} | {c['regions']} | {order} | " + " | ".join(vals) + " |\n"
    if not_explored:
        md += f"\nThe budget left {not_explored} candidates unmeasured; they are not counted.\n"
    with open(out + ".md", "w") as f:
        f.write(md)
    print(md.split("\n\n| model")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
