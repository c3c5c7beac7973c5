#!/usr/bin/env bash
# Timelines of one Qwen3-1.7B W2 step on its plan's points, without and with O's blocks asking L2
# for gate/up's first 8 MiB (each matrix): which kernels the prefetch lengthens.
set -uo pipefail
P=bench/results/2026-12-01-w2-measured-ceilings/plans
base=$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $P/plan-qwen3-1.7b/plan.json)
top=$OUT
for v in pf_gu_kb=0 pf_gu_kb=8192; do
  d=$top/${v//=/-}; mkdir -p $d
  OUT=$d PRESETS=qwen3-1.7b FAST_CONFIG="$base,$v" tools/gpu_timeline.sh > /dev/null 2>&1
  echo "== $v"; grep -E "decode" $d/timeline.log | head -2
  python3 tools/timeline_summary.py $d/timeline-qwen3-1.7b.csv --layers "$v"
  python3 tools/timeline_summary.py $d/timeline-qwen3-1.7b.csv --marks attn_decode | tail -12
  gzip $d/timeline-qwen3-1.7b.csv
done
