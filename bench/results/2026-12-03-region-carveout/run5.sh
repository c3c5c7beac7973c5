#!/usr/bin/env bash
# Session 32 run 5 (GPU machine): Qwen3-1.7B compiled again with the engine that also tries 80 as a
# route's carveout and re-times gains of 0.1-0.5% (a route's, and the routes' combined) in three
# interleaved rounds, seeded with run 2's plan (--seed-plan: its points and route carveouts), budget
# $BUDGET s; then its compiled-PyTorch peer and `bench e2e --plan` at W2 in the same run.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
PRESETS=qwen3-1.7b BUDGET=${BUDGET:-400} COMPILED_PEER=1 WORKLOADS=W2 PEERS_IN=bench/results/2026-11-30-bench4/peers \
  COMPILE_EXTRA="--seed-plan bench/results/2026-12-03-region-carveout/run2/plan-qwen3-1.7b" tools/gpu_bench_plans.sh
