#!/usr/bin/env bash
# Session 13, run 7: the compile tries the persistent layers (plan field `persistent`): GPU tests,
# then Qwen3-4B compiled for the CUDA backend and benchmarked with its plan (bench e2e --plan).
. tools/gpu_common.sh
{
  date -u; cat build-device/COMMIT
  gpu_tests "*CudaFastPreset*:*CudaCompile*:*CudaSearch*:*KernelJit.Persistent*"
  cp $out/runs/tests.txt $out/tests-run7.txt
  grep -E "^\[ (compile|fast) \]" $out/runs/tests.txt | head -30
} 2>&1 | tee $out/run7.log
rm -rf $out/runs
WORKLOADS=W2 PRESETS=qwen3-4b BUDGET_4B=150 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh 2>&1 | tail -40
