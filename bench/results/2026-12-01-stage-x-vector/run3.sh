#!/usr/bin/env bash
# Session 15, run 3: x' staged with cp.async (gemv_copy_x / gemv_scale_x) against cee6a5e: every GPU
# test, W2 on the fast route (2 interleaved rounds), then the committed plans (bench5's), W2,
# interleaved twice.
set -uo pipefail
BUILDS="build-device-head build-device" ROUNDS=2 GTEST_FILTER="*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*" tools/gpu_ab.sh
P=bench/results/2026-11-30-bench5; Q=bench/results/2026-11-30-bench4/peers
for r in 1 2; do
  OUT=$OUT/head$r BIN=build-device-head/agentcompile PLANS_IN=$P PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh > /dev/null 2>&1
  OUT=$OUT/new$r PLANS_IN=$P PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh > /dev/null 2>&1
done
for d in head1 new1 head2 new2; do mkdir -p /tmp/x$d; tar xzf $OUT/$d/bench-plans.tgz -C /tmp/x$d
  for m in llama-3.2-1b qwen3-1.7b qwen3-4b; do echo "plan $d $(grep '| cuda plan' /tmp/x$d/e2e-$m.md)"; done; done | tee $OUT/plans.txt
