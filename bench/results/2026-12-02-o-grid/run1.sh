#!/usr/bin/env bash
# Session 22 run 1: the output projection's grid size in the chain. The standing plans (session
# 20's compiles, bench/results/2026-12-01-w2-measured-ceilings/plans) with each model's carveout
# (session 21) as an override, against the same with other points of the output projection — fewer
# blocks leave SM slots for gate/up's blocks to become resident (and issue their first loads)
# while the attention runs. Interleaved, ROUNDS rounds, same tokens expected.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-01-w2-measured-ceilings/plans
ov() { python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$1/plan.json; }
declare -A carve=([llama-3.2-1b]=25 [qwen3-1.7b]=40 [qwen3-4b]=60)
declare -A os=(
  [qwen3-1.7b]="256:2:4:2 256:2:4:1 128:2:4:2 256:4:2:2 256:2:2:2 256:1:4:2 128:2:4:1 256:4:2:1"
  [llama-3.2-1b]="256:2:4:1 256:4:2:2 128:2:4:1 256:4:2:1 256:1:4:2"
  [qwen3-4b]="256:2:4:4 128:2:4:2 256:2:4:2 256:2:4:1 256:4:2:2")
{
  date -u; echo "engine $(cat build-device/COMMIT)"
  for preset in ${PRESETS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
    base="$(ov $preset),smem_carveout=${carve[$preset]}"
    echo "$preset base: $base"
    for round in $(seq 1 ${ROUNDS:-2}); do
      w2_decode $preset "plan#$round" "$base"
      for o in ${os[$preset]}; do w2_decode $preset "o$o#$round" "$base,o=$o"; done
    done
  done
  date -u
} 2>&1 | tee -a "$out/run1.log"
rm -rf "$out/runs"
