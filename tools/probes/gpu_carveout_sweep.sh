#!/usr/bin/env bash
# On the GPU machine: W2 decode of each preset's compiled plan (as an AGENTCOMPILE_FAST_CONFIG
# override, so the carveout can change) under every shared-memory carveout in $VALUES, one run
# each, the plan's own carveout first and last; with NCU=1 also Nsight Compute's launch
# statistics of the first decode step's kernels under each carveout in $NCU_VALUES ("Shared Memory
# Configuration Size": the split the driver chose per kernel). Why: on Qwen3-1.7B's plan carveout
# 40 was 1.5-2.5% faster than 39, 41 and every other value from 30 to 50
# (bench/results/2026-12-03-attn-launch/), and the compile tries only 25, 40 and 60.
#   PRESETS="qwen3-1.7b" VALUES="$(seq 20 2 60)" tools/probes/gpu_carveout_sweep.sh -> $OUT/carveout_sweep.log
# Needs build-device/ (tools/build_device.sh); $PLANS_IN_SWEEP: the folder of plan-<preset>/plan.json
# (default: session 22's plans; not $PLANS_IN, which makes w2_decode run a plan without overrides).
set -uo pipefail
. tools/gpu_common.sh
plans=${PLANS_IN_SWEEP:-bench/results/2026-12-02-carveout-first/plans}
to_override=bench/results/2026-12-01-pf-next-weights/plan_override.py
for m in ${PRESETS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
  p="$(python3 $to_override $plans/plan-$m/plan.json)" || { echo "$m: no plan in $plans"; continue; }
  own=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cuda_fast'].get('smem_carveout', -1))" $plans/plan-$m/plan.json)
  w2_decode $m "plan:$own" "$p,smem_carveout=$own" | tee -a $out/carveout_sweep.log
  for c in ${VALUES:-$(seq 0 5 100)}; do w2_decode $m "carveout=$c" "$p,smem_carveout=$c" | tee -a $out/carveout_sweep.log; done
  w2_decode $m "plan:$own" "$p,smem_carveout=$own" | tee -a $out/carveout_sweep.log
  [ "${NCU:-0}" = 1 ] || continue
  for c in ${NCU_VALUES:-39 40 41}; do
    AGENTCOMPILE_FAST_CONFIG="$p,smem_carveout=$c" timeout 240 ncu --clock-control none -k regex:"gemv__|attn_decode__(cluster|fused)|argmax" --launch-count 8 \
      --section LaunchStats --section Occupancy $bin generate /tmp/ac-$m --prompt-tokens 1,2,3,4,5,6,7,8 --max-tokens 2 \
      --ignore-eos --backend cuda --cuda-route fast > "$out/ncu-carveout-$m-$c.txt" 2>&1
    echo "== $m carveout $c (ncu rc=$?)" | tee -a $out/carveout_sweep.log
    grep -E "^  [a-z_]+|Shared Memory Configuration Size|Shared Memory Per Block|Block Limit Shared Mem|Block Limit Registers|Registers Per Thread|Theoretical Occupancy" \
      "$out/ncu-carveout-$m-$c.txt" | tee -a $out/carveout_sweep.log
  done
done
rm -rf $out/runs
