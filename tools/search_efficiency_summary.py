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

Usage: search_efficiency_summary.py OUT_PREFIX BACKEND DIR_OF_REPORTS MODEL_NAME...
  reads DIR/<model>-heuristic.report.json and DIR/<model>-none.report.json (or .json.gz), writes
  OUT_PREFIX.json and OUT_PREFIX.md, prints the summary tables.
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


def region_rows(model, heur, none):
    rows = []
    for key in heur:
        if key not in none:
            continue
        names = set(heur[key]["us"]) & set(none[key]["us"])  # measured in both compiles
        if len(names) <= 2:
            continue
        orders = {"heuristic": [n for n in heur[key]["order"] if n in names],
                  "none": [n for n in none[key]["order"] if n in names]}
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
    rows, env, not_explored = [], {}, 0
    for model in models:
        reports = {adv: load_report(folder, f"{model}-{adv}.report.json") for adv in ("heuristic", "none")}
        env = reports["heuristic"]["environment"]
        not_explored += sum(r["budget"]["not_explored"] for r in reports.values())
        rows += region_rows(model, timings(reports["heuristic"]), timings(reports["none"]))
    summary, needed = summarise(rows, True), summarise(rows, False)
    doc = {"backend": backend, "device": env.get("device"), "cores": env.get("cores"),
           "engine": env.get("engine_version"), "engine_commit": env.get("engine_commit"),
           "candidates_not_explored": not_explored,
           "metric": "specialised candidates evaluated in order until one within 2% of the best "
                     "specialised candidate; the fallback is left out; random = exact expectation",
           "summary": summary, "summary_fallback_not_within_2pct": needed, "regions": rows}
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    md = markdown(backend, env, summary, needed, rows)
    if not_explored:
        md += f"\nThe budget left {not_explored} candidates unmeasured; they are not counted.\n"
    with open(out + ".md", "w") as f:
        f.write(md)
    print(md.split("\n\n| model")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
