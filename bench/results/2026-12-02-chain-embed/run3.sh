#!/usr/bin/env bash
# Session 25 run 3 (engine 1bc76d6: the decode-step tuning also times the routes' gains inside
# the margin together): Qwen3-1.7B compiled afresh and benched (W2, compiled-PyTorch peer measured
# now); then Llama-3.2-1B and Qwen3-4B on session 22's plans with their peers measured now.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
dest=${OUT:-/tmp/out}
OUT=$dest/fresh PRESETS=qwen3-1.7b BUDGET=${BUDGET:-100} COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
OUT=$dest/old PRESETS="llama-3.2-1b qwen3-4b" PLANS_IN=bench/results/2026-12-02-carveout-first/plans COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
