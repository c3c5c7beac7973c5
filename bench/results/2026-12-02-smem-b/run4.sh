#!/usr/bin/env bash
# Session 23 run 4: session 22's open question — with the output projection at 256:2:2:2 (64
# registers: all of its blocks fit beside the attention) do gate/up's blocks start, and load,
# beside it? The timeline of Qwen3-1.7B's plan with that point (carveout 40), with --residency.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-qwen3-1.7b/plan.json),smem_carveout=40"
{
  date -u; echo "engine $(cat build-device/COMMIT) + exp.diff (no experiment variable set)"
  AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl-o2.csv w2_decode qwen3-1.7b "timeline-o256:2:2:2" "$b,o=256:2:2:2"
  python3 tools/timeline_summary.py $out/tl-o2.csv --residency gemv
  python3 tools/timeline_summary.py $out/tl-o2.csv | tail -10
  gzip -f $out/tl-o2.csv
  date -u
} 2>&1 | tee -a "$out/run4.log"
rm -rf "$out/runs"
