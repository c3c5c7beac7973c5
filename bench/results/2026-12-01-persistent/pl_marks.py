# Summarises decode_layers.persistent's per-block marks in a timeline CSV (kernels/cuda/persistent/decode_layers.cuh:
# mark k minus the block's start = a sum over the step, in ns): mean / min / max over blocks.
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kernel"].startswith("decode_layers")]
names = ["counter waits", "ring waits", "staging", "attention", "producer stage waits", "tile work"]
if not rows:
    print("no decode_layers blocks"); sys.exit()
span = [int(r["end_ns"]) - int(r["start_ns"]) for r in rows]
print(f"{len(rows)} blocks; block span us: mean {sum(span)/len(span)/1e3:.1f} min {min(span)/1e3:.1f} max {max(span)/1e3:.1f}")
for k, n in enumerate(names):
    v = [int(r[f"mark{k}_ns"]) - int(r["start_ns"]) for r in rows if int(r[f"mark{k}_ns"]) >= 0]
    if v:
        print(f"  {n:22s} us: mean {sum(v)/len(v)/1e3:8.1f}  min {min(v)/1e3:8.1f}  max {max(v)/1e3:8.1f}")
other = sorted({r["kernel"] for r in csv.DictReader(open(sys.argv[1]))})
print("kernels:", other)
