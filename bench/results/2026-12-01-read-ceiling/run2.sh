#!/usr/bin/env bash
# Session 18 run 2: the argmax epilogue without fence/counter (argmax_finish after it), and the
# grid-stride GEMV prototype against gemv.fused at four shapes.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
{ build-sync/gemv_ceiling 128256 2048 3; build-sync/gemv_ceiling 8192 2048 2; build-sync/gemv_ceiling 9728 2560 2;
  build-sync/gemv_ceiling 6144 2048 2; } 2>&1 | tee $out/gemv_ceiling.log
GTEST_FILTER='*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*' ROUNDS=3 \
  PLANS_IN=bench/results/2026-12-01-recompiled/plans tools/gpu_ab.sh > /dev/null 2>&1
cat $out/ab.log
