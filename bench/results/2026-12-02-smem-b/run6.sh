#!/usr/bin/env bash
# Session 23 run 6: the engine with run 5's vector reductions as gemv.fused's split-K epilogue
# (no experiment variable): GPU tests (the new split-K cases, mlp.fused's moved red_add4), and W2
# of the three plans, one run each.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
ov() { python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$1/plan.json; }
declare -A carve=([llama-3.2-1b]=25 [qwen3-1.7b]=40 [qwen3-4b]=25)
{
  date -u; echo "engine $(cat build-device/COMMIT)"
  gpu_tests '*CudaGemv*:*CudaMlpFused*:*CudaFastPreset*:*CudaFixture*:*CudaFastOps*:*CudaDecodeAhead*'
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do w2_decode $preset "engine" "$(ov $preset),smem_carveout=${carve[$preset]}"; done
  date -u
} 2>&1 | tee -a "$out/run6.log"
rm -rf "$out/runs"
