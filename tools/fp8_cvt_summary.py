#!/usr/bin/env python3
"""Summarises a kernel_sweep FP8 run made with both widenings of the codes (CVT 0: cvt
instructions, CVT 1: bit moves): per (model, region), the best point at each CVT, and over the
points measured at both, how much faster CVT 1 ran (median, min, max of time(CVT 0) / time(CVT 1)).

    python3 tools/fp8_cvt_summary.py SWEEP.jsonl
"""
import collections
import json
import re
import statistics
import sys


def main(path):
    points = collections.defaultdict(dict)  # (model, region) -> {(point name without cvt, cvt): us}
    gbps = {}
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("status") != "ok":
            continue
        m = re.search(r"__cvt([01])__", r["variant"])
        if not m:
            continue
        key = (r["model"], r["region"])
        base = r["variant"].replace(m.group(0), "__")
        points[key][(base, int(m.group(1)))] = r["us"]
        gbps[(key, base, int(m.group(1)))] = r["GBps"]
    if not points:
        print(f"{path}: no FP8 points with a CVT")
        return 1
    print(f"{'model':14} {'region':8} {'best cvt0':>22} {'best cvt1':>22}  cvt0/cvt1 over points (median, min, max)")
    for key in sorted(points):
        t = points[key]
        best = {}
        for c in (0, 1):
            at = [(us, base) for (base, cvt), us in t.items() if cvt == c]
            best[c] = min(at) if at else None
        ratios = [t[(base, 0)] / t[(base, 1)] for (base, cvt) in t if cvt == 0 and (base, 1) in t]

        def show(c):
            if not best[c]:
                return f"{'-':>22}"
            us, base = best[c]
            return f"{us:8.2f} us {gbps[(key, base, c)]:6.0f} GB/s"

        spread = (f"{statistics.median(ratios):.3f} ({min(ratios):.3f}, {max(ratios):.3f}) over {len(ratios)}"
                  if ratios else "no pairs")
        print(f"{key[0]:14} {key[1]:8} {show(0)} {show(1)}  {spread}")
        if best[1]:
            print(f"{'':24}best cvt1 point: {best[1][1]}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
