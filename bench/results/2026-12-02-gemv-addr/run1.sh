#!/usr/bin/env bash
# Session 27: gemv.fused's loads with one address per row and constant chunk offsets, no zeroing
# past the end (gemv-addr.diff), against the engine before it (build-device-head/): GPU tests of
# the GEMV and fast-path kernels on the new build, then W2 on session 22's plans as overrides
# (plan_override.py + each plan's carveout), interleaved rounds (ROUNDS, default 3).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
[ "${SKIP_TESTS:-0}" = 1 ] || gpu_tests '*CudaGemv*:*CudaFastOps*:*CudaFastPreset*:*CudaFixture*:*CudaDecodeAhead*:*CudaOps*' | tee -a $out/ab.log
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
new=$bin
for m in ${MODELS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  for round in $(seq 1 ${ROUNDS:-3}); do
    bin=build-device-head/agentcompile; w2_decode $m "head#$round" "$b" | tee -a $out/ab.log
    bin=$new; w2_decode $m "addr#$round" "$b" | tee -a $out/ab.log
  done
done
rm -rf $out/runs
