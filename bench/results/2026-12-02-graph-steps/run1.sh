#!/usr/bin/env bash
# Session 26 run 1: FastConfig graph_steps (one captured graph of K consecutive decode steps, the
# host polling each step's token tag instead of an event) at K = 1, 2, 4, 8 (build-device/) against
# the engine before it (build-device-head/, HEAD 0f013d1), W2 on session 22's plans as overrides
# (plan_override.py + each plan's carveout), interleaved rounds (ROUNDS, default 2); GPU tests first
# unless SKIP_TESTS=1. MODELS: the presets (default all three).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
[ "${SKIP_TESTS:-0}" = 1 ] || gpu_tests '*CudaDecodeAhead*:*CudaFastPreset*:*CudaFixture*:*CudaFastOps*:*CudaGemv*:FastConfig*' | tee -a $out/ab.log
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
new=$bin
for m in ${MODELS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  for round in $(seq 1 ${ROUNDS:-2}); do
    bin=build-device-head/agentcompile; w2_decode $m "head#$round" "$b" | tee -a $out/ab.log
    bin=$new
    for k in 1 2 4 8; do w2_decode $m "graph_steps=$k#$round" "$b,graph_steps=$k" | tee -a $out/ab.log; done
  done
done
rm -rf $out/runs
