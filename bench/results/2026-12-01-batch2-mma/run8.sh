#!/usr/bin/env bash
# Session 12 run 8: gemv.mma from batch 2 on (mma_min_batch 2): the GPU tests, then bench5's plans
# at W2 and batch 2 / 4 / 8 with the semantic check against the CPU reference.
set -uo pipefail
. tools/gpu_common.sh
gpu_tests "*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*" | tee $OUT/tests-summary.log
grep -E "^\[ +(OK|FAILED) +\]|\[ fast \]" $out/runs/tests.txt > $OUT/tests-list.log
BIN=build-device/agentcompile WORKLOADS="W2,128/128x2,128/128x4,W5" PLANS_IN=bench/results/2026-11-30-bench5 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh > /dev/null 2>&1
mkdir -p /tmp/bp && tar xzf $OUT/bench-plans.tgz -C /tmp/bp && grep -h "cuda plan" /tmp/bp/e2e-*.md
