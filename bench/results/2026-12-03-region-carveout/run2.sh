#!/usr/bin/env bash
# Session 32 run 2 (GPU machine): Qwen3-1.7B compiled afresh with the decode-step tuning searching
# each route's points under its own carveouts too (25 and 60 besides the plan's), seeded with
# session 22's plan (--seed-plan), budget $BUDGET s; then its compiled-PyTorch peer and
# `bench e2e --plan` at W2 in the same run (copy bandwidth measured there, semantic check).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
(. tools/gpu_common.sh; gpu_tests '*CudaDecodeAhead*:*StepTuning*' | tee $out/run2-tests.log)
PRESETS=qwen3-1.7b BUDGET=${BUDGET:-330} COMPILED_PEER=1 WORKLOADS=W2 PEERS_IN=bench/results/2026-11-30-bench4/peers \
  COMPILE_EXTRA="--seed-plan bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b" tools/gpu_bench_plans.sh
