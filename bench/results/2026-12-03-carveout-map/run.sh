#!/usr/bin/env bash
# Session 31 on the H200: W2 of session 22's plans under carveouts 0-100, the driver's chosen split
# per kernel (Nsight Compute) at a few of them, and Qwen3-1.7B's timeline at 38 against 40.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $out/env.txt
gpu_tests "*CudaDecodeAttention*:*CudaFastOps*" | tee $out/tests.log
PRESETS=qwen3-1.7b VALUES="$(seq 0 2 100) 39 41" NCU=1 NCU_VALUES="38 40 42 25 60" tools/probes/gpu_carveout_sweep.sh
PRESETS="llama-3.2-1b qwen3-4b" VALUES="$(seq 0 4 100)" NCU=1 NCU_VALUES="25 40" tools/probes/gpu_carveout_sweep.sh
p="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json)"
for c in 38 40; do
  OUT=$out/tl-$c FAST_CONFIG="$p,smem_carveout=$c" PRESETS=qwen3-1.7b tools/gpu_timeline.sh > /dev/null 2>&1
  echo "timeline at carveout $c: rc=$? $(ls $out/tl-$c)"
done
rm -rf $out/runs
