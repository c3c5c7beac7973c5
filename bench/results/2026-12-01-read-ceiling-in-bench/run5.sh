#!/usr/bin/env bash
# Session 19: the read ceiling in `bench e2e` (probe/read.cuh): its GPU tests, then W2 on the
# argmax-finish plans against bench4's peer records.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT
build-device/agentcompile_tests --gtest_filter='*ReadProbe*:*KernelJit.FastPath*:BenchReport*' > $OUT/run5-tests.txt 2>&1; echo "tests rc=$?"
grep -E "OK|FAILED|PASSED|SKIPPED" $OUT/run5-tests.txt | head -20
PLANS_IN=bench/results/2026-12-01-argmax-finish/plans WORKLOADS=W2 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
