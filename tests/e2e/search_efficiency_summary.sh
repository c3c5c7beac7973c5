#!/usr/bin/env bash
# tools/search_efficiency_summary.py on two hand-made compile reports (heuristic and none orders) of
# one model: the count of candidates until a good one per order, and the search-efficiency curves
# (best / best so far after n candidates, per phase), the random order's against the mean over every
# permutation; the figure is well-formed SVG. No GPU.
set -euo pipefail
src=${AC_SRC:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
def cand(name, us, status="ok"):
    return {"candidate": name, "family": name.split("{")[0], "status": status, "median_us": us}
def report(orders):
    regions = []
    for (region, phase), names in orders.items():
        us = TIMES[(region, phase)]
        regions.append({"region": region, "phase": phase, "search": {"candidates":
            [cand("cpu:fallback", 10.0)] + [cand(n, us[n], "ok" if us[n] else "failed") for n in names]}})
    return {"environment": {"device": "test", "cores": 1}, "budget": {"not_explored": 0}, "regions": regions}
TIMES = {("attn_in", "decode"): {"f{A}": 4.0, "f{B}": 1.0, "f{C}": 2.0, "f{D}": 8.0},
         ("mlp_in", "prefill"): {"g{A}": 3.0, "g{B}": None, "g{C}": 1.5}}
heur = {("attn_in", "decode"): ["f{C}", "f{B}", "f{A}", "f{D}"], ("mlp_in", "prefill"): ["g{C}", "g{A}", "g{B}"]}
none = {("attn_in", "decode"): ["f{A}", "f{B}", "f{C}", "f{D}"], ("mlp_in", "prefill"): ["g{A}", "g{B}", "g{C}"]}
json.dump(report(heur), open(f"{t}/m-heuristic.report.json", "w"))
json.dump(report(none), open(f"{t}/m-none.report.json", "w"))
PY
python3 "$src/tools/search_efficiency_summary.py" "$tmp/out" cpu "$tmp" m >"$tmp/stdout" || fail "the summary failed"
for f in out.json out.md out.curves.json out.svg; do [ -s "$tmp/$f" ] || fail "$f not written"; done
python3 - "$tmp" <<'PY'
import itertools, json, sys, xml.dom.minidom
t = sys.argv[1]
s = json.load(open(f"{t}/out.json"))
rows = {r["region"]: r for r in s["regions"]}
h = rows["attn_in"]["timings_heuristic"]
assert (h["heuristic"], h["none"], h["good"]) == (2, 2, 1), h  # C then B; A then B
assert abs(h["random"] - 5 / 2) < 1e-12, h  # (n + 1) / (g + 1)
c = json.load(open(f"{t}/out.curves.json"))["phases"]
d, p = c["decode"], c["prefill"]
assert d["regions"] == 1 and d["n"] == [1, 2, 3, 4], d
assert d["heuristic"] == [0.5, 1.0, 1.0, 1.0], d  # C (2 us) then B (1 us): best / found
assert d["none"] == [0.25, 1.0, 1.0, 1.0], d
times = [4.0, 1.0, 2.0, 8.0]
perms = list(itertools.permutations(times))
want = [sum(1.0 / min(q[:n]) for q in perms) / len(perms) for n in range(1, 5)]
assert all(abs(a - b) < 1e-12 for a, b in zip(d["random"], want)), (d["random"], want)
# A failed candidate counts as never good: C (1.5) first, A (3) first.
assert p["heuristic"] == [1.0, 1.0, 1.0] and p["none"] == [0.5, 0.5, 1.0], p
xml.dom.minidom.parse(f"{t}/out.svg")
assert "Search-efficiency curves" in open(f"{t}/out.md").read()
PY
echo "search_efficiency_summary: ok"
