#!/usr/bin/env python3
"""gate/up's blocks per SM and block completions per microsecond after the first wait, from the
committed plan timelines (mean over a step's gate/up launches):
  python3 bench/results/2026-12-01-plan-timeline/gate_up_waves.py"""
import csv, gzip, os, sys
from collections import defaultdict

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools"))
import timeline_summary as ts  # noqa: E402

# KiB of weights per gate/up block: rows per block x K x 2 matrices x 2 bytes (the plans' points)
for m, kib in [("llama-3.2-1b", 8 * 2048 * 2 * 2 / 1024), ("qwen3-1.7b", 4 * 2048 * 2 * 2 / 1024)]:
    rows = []
    with gzip.open(os.path.join(here, f"timeline-{m}.csv.gz"), "rt") as f:
        for r in csv.DictReader(f):
            rows.append({"kernel": r["kernel"], "block": int(r["block"]), "sm": int(r["sm"]),
                         "start": int(r["start_ns"]) / 1e3, "wait": int(r["wait_ns"]) / 1e3,
                         "end": int(r["end_ns"]) / 1e3, "marks": {}})
    rows.sort(key=lambda r: r["start"])
    hist, per_sm, resident, n = defaultdict(float), [], [], 0
    for l in ts.launches(rows):
        if "epi2" not in l["kernel"]:
            continue
        n += 1
        rs = l["rows"]
        w0 = ts.first_wait(rs)
        counts = defaultdict(int)
        for r in rs:
            hist[int(r["end"] - w0)] += 1
            counts[r["sm"]] += 1
        per_sm.append((min(counts.values()), max(counts.values())))
        resident.append(sum(1 for r in rs if r["start"] <= w0))
    print(f"{m}: {n} launches, blocks per SM {min(a for a, _ in per_sm)}-{max(b for _, b in per_sm)}, "
          f"resident at the first wait {sum(resident) / n:.0f}; blocks ending per us after it:")
    for b in sorted(hist):
        print(f"  {b:3d}-{b + 1:3d} us: {hist[b] / n:6.1f} blocks ({hist[b] / n * kib / 1024:5.1f} MiB of weights)")
