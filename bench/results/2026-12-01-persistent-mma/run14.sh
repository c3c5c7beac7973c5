#!/usr/bin/env bash
# Session 14, run 14: Nsight Compute on decode_layers.persistent (Qwen3-1.7B, first decode step):
# where the consumer warps stall (warp states, per-SASS-instruction stall samples), FMA and mma tiles.
. tools/gpu_common.sh
m=/tmp/ac-qwen3-1.7b
[ -f $m/model.safetensors ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --quiet >/dev/null
{
  date -u; cat build-device/COMMIT; which ncu; ncu --version | tail -1
  for cfg in "persistent=1,persistent_mma=0" "persistent=1"; do
    tag=$(echo $cfg | tr ',=' '__')
    AGENTCOMPILE_FAST_CONFIG=$cfg timeout 300 ncu --clock-control none -k regex:decode_layers --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats \
      --section MemoryWorkloadAnalysis -o $out/pl-$tag \
      $bin generate $m --prompt-tokens 1,2,3,4,5,6,7,8 --max-tokens 3 --ignore-eos --backend cuda --cuda-route fast > $out/ncu-run-$tag.txt 2>&1
    echo "== $cfg (ncu rc=$?)"; tail -3 $out/ncu-run-$tag.txt
    ncu --import $out/pl-$tag.ncu-rep --page details > $out/details-$tag.txt 2>&1
    grep -E "Duration|DRAM Throughput|Memory Throughput|Stall|Warp Cycles Per Issued|Issued Ipc|No Eligible|Active Warps|Eligible Warps|Issue Slot|Shared|Bank" $out/details-$tag.txt | head -60
    ncu --import $out/pl-$tag.ncu-rep --page source --csv --print-source sass > $out/sass-$tag.csv 2>&1
    python3 - $out/sass-$tag.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr_i = next((i for i, r in enumerate(rows) if any("Source" == c or "Address" in c for c in r)), None)
if hdr_i is None:
    print("no header; first lines:", rows[:3]); sys.exit()
hdr = rows[hdr_i]; data = rows[hdr_i + 1:]
print("columns:", [h for h in hdr][:40])
def col(name):
    for i, h in enumerate(hdr):
        if h.strip() == name: return i
    return None
si = col("Warp Stall Sampling (All Samples)") or col("Warp Stall Sampling (All Cycles)")
src = col("Source")
if si is None: print("no stall column"); sys.exit()
def num(x):
    try: return float(x.replace(",", ""))
    except: return 0.0
tot = sum(num(r[si]) for r in data if len(r) > si)
print(f"total samples {tot:.0f}")
stall_cols = [i for i, h in enumerate(hdr) if h.startswith("stall_") or "Stall" in h and i != si]
top = sorted((r for r in data if len(r) > si), key=lambda r: -num(r[si]))[:45]
for r in top:
    reasons = sorted(((num(r[i]), hdr[i]) for i in stall_cols if i < len(r) and num(r[i]) > 0), reverse=True)[:3]
    print(f"{num(r[si]):8.0f} {100*num(r[si])/max(tot,1):5.1f}%  {r[src][:70]:70s} {reasons}")
PY
  done
  date -u
} 2>&1 | tee $out/run14.log
rm -f $out/*.ncu-rep
