#!/usr/bin/env bash
# Session 12 run 4: is today's 11% slower W2 the code or the machine? Session 11's binaries (dc6 =
# dc695a2+local, measured 1.1819 on Qwen3-1.7B then; s11 = 51b525d) against HEAD and HEAD without
# CUDA_CACHE_DISABLE; then the bench5 plan of Qwen3-1.7B at W2 with HEAD (copy bandwidth in the same run).
set -uo pipefail
SKIP_TESTS=1 ROUNDS=2 BUILDS="build-device-dc6 build-device-s11 build-device-nc build-device-head" tools/gpu_ab.sh > /dev/null 2>&1
BIN=build-device-head/agentcompile WORKLOADS=W2 PRESETS=qwen3-1.7b PLANS_IN=bench/results/2026-11-30-bench5 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh > $OUT/plans.log 2>&1
nvidia-smi -q -d CLOCK,PERFORMANCE,POWER > $OUT/smi.txt 2>&1
cat $OUT/ab.log; grep -iE "copy|ms/token|GB/s" $OUT/plans.log | head -10
