#!/usr/bin/env python3
"""Summarises a decode-step timeline (AGENTCOMPILE_TIMELINE=<csv>, backends/cuda/timeline.h).

Each CSV row is one block: kernel, block, sm, start_ns, wait_ns (-1: no wait), end_ns, times from
the step's first block start. Blocks are grouped into launches in start order (the blocks of a
dependent launch start only after every block of the one before has started; a repeated block
index also opens a new launch). Per launch, against the previous launch's last block end:
  wait lag  first wait return - previous last end (the boundary: flush + release of the wait)
  span      last end - previous last end (the launch's share of the step)
and its own: blocks, first/last start, last end - first wait (work after the wait).
Prints every launch (--per-launch), the mean per kernel kind, and with --layers the mean per
kernel of a batch-1 decoder layer (launch 0 the embedding, then QKV, attention, output, gate/up,
down per layer; the first two and the last layer left out) as a markdown table row per kernel.
With --marks SUBSTR, the stage marks (AC_TIMELINE_MARK in a kernel's body) of the launches whose
kernel name holds SUBSTR, per kernel: for each mark, the mean over launches of the block mean and of
the last block's time there, from the launch's first wait return, and of the block mean from each
block's own wait return (its start when it did not wait).
With --waves SUBSTR, how those launches' blocks filled the GPU, per kernel: blocks per launch,
blocks started by the first wait return (the resident ones), blocks per SM over the launch, and
how many blocks ended in each microsecond after the first wait return (means over launches) — a
multi-wave grid ends in bursts.
With --residency SUBSTR, where those launches' blocks started against the kernel before them, per
kernel (means over launches): the blocks that started before its last block ended (beside it), on
the SMs still running one of its blocks at this launch's first start and on the others (per SM),
and those that started after it, on which SMs — e.g. the output projection's blocks that could
not start beside the attention, and where (bench/results/2026-12-02-carveout-first/).
  tools/timeline_summary.py timeline.csv [--per-launch] [--layers LABEL] [--marks SUBSTR] [--waves SUBSTR]
                                         [--residency SUBSTR]
"""
import csv
import sys
from collections import defaultdict


def short(name):
    # gemv__fused__w_bf16__block256__rows1__... -> gemv.fused 256:1:...; keeps the distinguishing parameters
    parts = name.split("__")
    fam = ".".join(parts[:2])
    params = [p for p in parts[2:] if not p.startswith("sm")]
    return fam + "{" + ",".join(params) + "}"


def launches(rows):
    out = []
    for r in rows:
        cur = out[-1] if out else None
        if cur is None or cur["kernel"] != r["kernel"] or r["block"] in cur["blocks"]:
            cur = {"kernel": r["kernel"], "blocks": set(), "rows": []}
            out.append(cur)
        cur["blocks"].add(r["block"])
        cur["rows"].append(r)
    return out


def first_wait(rs):
    # A launch's first released wait (its first block start when no block waited).
    return min((r["wait"] for r in rs if r["wait"] >= 0), default=min(r["start"] for r in rs))


LAYER = ["QKV", "attention", "output", "gate/up", "down"]


def layer_table(ls, label):
    layers = (len(ls) - 2) // len(LAYER)
    acc = {n: [0.0] * 6 for n in LAYER}
    count = 0
    for layer in range(2, layers - 1):
        for j, n in enumerate(LAYER):
            i = 1 + len(LAYER) * layer + j
            rs = ls[i]["rows"]
            prev = max(r["end"] for r in ls[i - 1]["rows"])
            s0 = min(r["start"] for r in rs)
            w0 = first_wait(rs)
            ends = sorted(r["end"] for r in rs)
            for k, v in enumerate([len(rs), w0 - s0, w0 - prev, ends[-1] - w0,
                                   ends[-1] - ends[len(ends) // 2], ends[-1] - prev]):
                acc[n][k] += v
        count += 1
    total = 0.0
    for n in LAYER:
        a = [x / count for x in acc[n]]
        total += a[5]
        print(f"| {label} | {n} | {a[0]:.0f} | {a[1]:.2f} | {a[2]:.2f} | {a[3]:.2f} | {a[4]:.2f} | {a[5]:.2f} |")
    print(f"| {label} | **layer** | | | | | | **{total:.2f}** |")


def picked_by_kernel(ls, sub):
    picked = [l for l in ls if sub in l["kernel"]]
    if not picked:
        sys.exit(f"no launch of a kernel holding {sub!r}")
    by_name = defaultdict(list)
    for l in picked:
        by_name[short(l["kernel"])].append(l)
    return by_name


def marks_table(ls, sub):
    for name, group in picked_by_kernel(ls, sub).items():
        names = sorted({k for l in group for r in l["rows"] for k in r["marks"]}) + ["end"]
        mean = defaultdict(float)
        last = defaultdict(float)
        own = defaultdict(float)
        for l in group:
            rs = l["rows"]
            w0 = first_wait(rs)
            for k in names:
                at = [(r, r["end"] if k == "end" else r["marks"].get(k, -1)) for r in rs]
                at = [(r, v) for r, v in at if v >= 0]
                if at:
                    mean[k] += sum(v - w0 for _, v in at) / len(at) / len(group)
                    last[k] += max(v - w0 for _, v in at) / len(group)
                    own[k] += sum(v - (r["wait"] if r["wait"] >= 0 else r["start"]) for r, v in at) / len(at) / len(group)
        print(f"{len(group)} launches of {name}; us from the first wait return (and from each block's own)")
        print(f"{'mark':>6} {'block mean':>10} {'last block':>10} {'own wait':>9}")
        for k in names:
            print(f"{k:>6} {mean[k]:10.2f} {last[k]:10.2f} {own[k]:9.2f}")


def waves_table(ls, sub):
    for name, group in picked_by_kernel(ls, sub).items():
        n = len(group)
        hist = defaultdict(float)
        resident = 0.0
        lo, hi = None, 0
        for l in group:
            rs = l["rows"]
            w0 = first_wait(rs)
            per_sm = defaultdict(int)
            for r in rs:
                hist[int(r["end"] - w0)] += 1.0 / n
                per_sm[r["sm"]] += 1
            resident += sum(1 for r in rs if r["start"] <= w0) / n
            lo = min(per_sm.values()) if lo is None else min(lo, min(per_sm.values()))
            hi = max(hi, max(per_sm.values()))
        blocks = sum(len(l["rows"]) for l in group) / n
        print(f"{n} launches of {name}: {blocks:.0f} blocks, {resident:.0f} started by the first wait return, "
              f"{lo}-{hi} per SM; blocks ending per us after the first wait return")
        for b in sorted(hist):
            print(f"{b:5d}-{b + 1:<3d} {hist[b]:8.1f}")


def residency_table(ls, sub):
    all_sms = {r["sm"] for l in ls for r in l["rows"]}
    acc = defaultdict(lambda: defaultdict(float))
    for i, l in enumerate(ls):
        if i == 0 or sub not in l["kernel"]:
            continue
        prev = ls[i - 1]["rows"]
        prev_end = max(r["end"] for r in prev)
        s0 = min(r["start"] for r in l["rows"])
        busy = {r["sm"] for r in prev if r["end"] > s0}  # still running the previous kernel
        a = acc[short(l["kernel"])]
        a["n"] += 1
        a["blocks"] += len(l["rows"])
        a["busy_sms"] += len(busy)
        a["free_sms"] += len(all_sms - busy)
        for r in l["rows"]:
            where = "busy" if r["sm"] in busy else "free"
            a[("beside_" if r["start"] < prev_end else "after_") + where] += 1
    if not acc:
        sys.exit(f"no launch of a kernel holding {sub!r} after another")
    for name, a in acc.items():
        m = defaultdict(float, {k: v / a["n"] for k, v in a.items()})
        per = lambda k, sms: m[k] / m[sms] if m[sms] else 0.0
        print(f"{int(a['n'])} launches of {name}: {m['blocks']:.0f} blocks; beside the kernel before "
              f"{m['beside_busy'] + m['beside_free']:.1f}: {m['beside_busy']:.1f} on the {m['busy_sms']:.1f} SMs still "
              f"running it ({per('beside_busy', 'busy_sms'):.2f} per SM), {m['beside_free']:.1f} on the other "
              f"{m['free_sms']:.1f} ({per('beside_free', 'free_sms'):.2f} per SM); after it "
              f"{m['after_busy'] + m['after_free']:.1f}: {m['after_busy']:.1f} on those SMs, {m['after_free']:.1f} on the others")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = []
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            rows.append({"kernel": r["kernel"], "block": int(r["block"]), "sm": int(r["sm"]),
                         "start": int(r["start_ns"]) / 1e3, "wait": int(r["wait_ns"]) / 1e3,
                         "end": int(r["end_ns"]) / 1e3,
                         "marks": {k[:-3]: int(v) / 1e3 for k, v in r.items()
                                   if k.startswith("mark") and v not in (None, "", "-1")}})
    rows.sort(key=lambda r: r["start"])
    ls = launches(rows)
    prev_end = 0.0
    kinds = defaultdict(lambda: defaultdict(float))
    per = "--per-launch" in sys.argv
    if per:
        print(f"{'#':>4} {'kernel':60} {'blocks':>6} {'start0':>8} {'startN':>8} {'wait0':>8} {'end':>8} {'lag':>6} {'span':>6}")
    for i, l in enumerate(ls):
        rs = l["rows"]
        s0 = min(r["start"] for r in rs)
        sn = max(r["start"] for r in rs)
        w0 = first_wait(rs)
        end = max(r["end"] for r in rs)
        lag = w0 - prev_end
        span = end - prev_end
        k = kinds[short(l["kernel"])]
        k["n"] += 1
        k["span"] += span
        k["lag"] += lag
        k["work"] += end - w0
        k["blocks"] += len(rs)
        k["start_spread"] += sn - s0
        if per:
            print(f"{i:4d} {short(l['kernel'])[:60]:60} {len(rs):6d} {s0:8.2f} {sn:8.2f} {w0:8.2f} {end:8.2f} {lag:6.2f} {span:6.2f}")
        prev_end = end
    total = prev_end
    if "--marks" in sys.argv:
        marks_table(ls, sys.argv[sys.argv.index("--marks") + 1])
        return
    if "--residency" in sys.argv:
        residency_table(ls, sys.argv[sys.argv.index("--residency") + 1])
        return
    if "--waves" in sys.argv:
        waves_table(ls, sys.argv[sys.argv.index("--waves") + 1])
        return
    if "--layers" in sys.argv:
        label = sys.argv[sys.argv.index("--layers") + 1]
        layer_table(ls, label)
        return
    print(f"step: {len(ls)} launches, {len(rows)} blocks, {total:.1f} us from the first block start to the last block end")
    print(f"{'kernel kind':70} {'launches':>8} {'blocks':>7} {'span us':>8} {'lag us':>7} {'work us':>8} {'share':>6}")
    for name, k in sorted(kinds.items(), key=lambda kv: -kv[1]["span"]):
        n = k["n"]
        print(f"{name[:70]:70} {int(n):8d} {k['blocks'] / n:7.0f} {k['span'] / n:8.2f} {k['lag'] / n:7.2f} "
              f"{k['work'] / n:8.2f} {100 * k['span'] / total:5.1f}%")


if __name__ == "__main__":
    main()
