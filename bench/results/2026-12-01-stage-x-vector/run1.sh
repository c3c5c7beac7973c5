#!/usr/bin/env bash
# Session 15, run 1: the committed plans (bench5's) on the engine before (cee6a5e) and after (5494642)
# the vector staging, W2; the compiled peer measured in the second run.
set -uo pipefail
P=bench/results/2026-11-30-bench5; Q=bench/results/2026-11-30-bench4/peers
OUT=$OUT/head BIN=build-device-head/agentcompile PLANS_IN=$P PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh
OUT=$OUT/new PLANS_IN=$P COMPILED_PEER=1 PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh
