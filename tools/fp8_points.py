#!/usr/bin/env python3
"""The FP8 GEMV's points from kernel_sweep's samples (SWEEP_FAMILY=fp8): per model the fastest
point of each projection, and the one point per projection with the least total time over the
models (a default's candidate). Prints AGENTCOMPILE_FAST_CONFIG overrides (qkv_fp8=B:R:U:S,...).
  tools/fp8_points.py sweep.jsonl [more.jsonl ...] [--json out.json]"""
import json
import re
import sys
from collections import defaultdict

SLOTS = ["qkv", "o", "gate_up", "down"]


def point(variant):
    v = dict(re.findall(r"__(block|rows|unroll|splitk)(\d+)", variant))
    return tuple(int(v[k]) for k in ("block", "rows", "unroll", "splitk"))


def main(argv):
    out = None
    if "--json" in argv:
        i = argv.index("--json")
        out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    us = defaultdict(dict)  # (model, region) -> point -> us
    for path in argv:
        for line in open(path):
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("status") == "ok":
                us[(r["model"], r["region"])][point(r["variant"])] = r["us"]
    models = sorted({m for m, _ in us})
    result = {"per_model": {}, "common": {}}
    for m in models:
        best = {}
        for s in SLOTS:
            pts = us.get((m, s))
            if pts:
                p = min(pts, key=pts.get)
                best[s] = {"point": p, "us": pts[p]}
        result["per_model"][m] = best
        print(f"{m}: " + ",".join(f"{s}_fp8={':'.join(map(str, b['point']))}" for s, b in best.items()) +
              "   # " + " ".join(f"{s} {b['us']:.2f}us" for s, b in best.items()))
    for s in SLOTS:
        common = None
        for m in models:
            pts = set(us.get((m, s), {}))
            common = pts if common is None else common & pts
        if not common:
            continue
        total = {p: sum(us[(m, s)][p] for m in models) for p in common}
        p = min(total, key=total.get)
        best_sum = sum(result["per_model"][m][s]["us"] for m in models)
        result["common"][s] = {"point": p, "us_total": total[p], "best_total": best_sum}
    print("common: " + ",".join(f"{s}_fp8={':'.join(map(str, c['point']))}" for s, c in result["common"].items()) +
          "   # " + " ".join(f"{s} +{100 * (c['us_total'] / c['best_total'] - 1):.1f}%" for s, c in result["common"].items()))
    if out:
        json.dump(result, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
