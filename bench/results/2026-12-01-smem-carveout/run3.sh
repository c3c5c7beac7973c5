#!/usr/bin/env bash
# W2 decode on the standing plans and on the same plans with each model's best carveout
# (smem_carveout in cuda_fast), interleaved, then the GPU tests of the build.
set -uo pipefail
. tools/gpu_common.sh
d=bench/results/2026-12-01-smem-carveout
{
  date -u; echo "engine $(cat build-device/COMMIT)"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    for round in 1 2; do
      PLANS_IN=bench/results/2026-12-01-w2-measured-ceilings/plans w2_decode $preset "plan#$round" ""
      PLANS_IN=$d/plans w2_decode $preset "plan+carveout#$round" ""
    done
  done
  gpu_tests 'CudaFastPreset*:CudaCompile.RegionsCountedAndAttentionTimedAsAKernel:FastConfig*:CudaSearch*:CudaFixturePlan*'
  date -u
} 2>&1 | tee -a "$out/run3.log"
cp "$out/runs/tests.txt" "$out/tests.txt" 2>/dev/null; rm -rf "$out/runs"
