#!/usr/bin/env bash
# Session 26, seed plan: GPU tests of the build (the seeded compile of tiny-llama among them), then
# Qwen3-1.7B compiled afresh with --seed-plan session 22's plan (BUDGET, default 150 s) and benched
# at W2 with the compiled-PyTorch peer measured in the same run.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
dest=${OUT:-/tmp/out}
. tools/gpu_common.sh
gpu_tests '*CudaCompile*:*CudaOps.*:*CudaDecodeAhead*' | tee $dest/gpu-tests.log
OUT=$dest/seeded PRESETS=qwen3-1.7b BUDGET=${BUDGET:-150} COMPILED_PEER=1 WORKLOADS=W2 \
  COMPILE_EXTRA="--seed-plan bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b" \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
