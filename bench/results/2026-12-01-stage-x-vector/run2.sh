#!/usr/bin/env bash
# Session 15, run 2: the committed plans (bench5's), W2, on the engine before (cee6a5e) and after
# (5494642) the vector staging, interleaved twice, no peer measured in between.
set -uo pipefail
P=bench/results/2026-11-30-bench5; Q=bench/results/2026-11-30-bench4/peers
for r in 1 2; do
  OUT=$OUT/head$r BIN=build-device-head/agentcompile PLANS_IN=$P PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh
  OUT=$OUT/new$r PLANS_IN=$P PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
