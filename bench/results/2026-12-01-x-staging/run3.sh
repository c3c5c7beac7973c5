#!/usr/bin/env bash
# Session 19: gemv.fused issuing its second load buffer before the wait and x' staging, against f2ec34b.
export PLANS_IN=bench/results/2026-12-01-argmax-finish/plans
BUILDS="build-device-head build-device" ROUNDS=3 GTEST_FILTER='*CudaGemv*:*CudaFastOps*:*CudaFastPreset*:*CudaFixture*:*CudaDecodeAhead*' tools/gpu_ab.sh
PRESETS=qwen3-1.7b tools/gpu_timeline.sh
python3 tools/timeline_summary.py $OUT/timeline-qwen3-1.7b.csv --waves epi2 >> $OUT/timeline.log
