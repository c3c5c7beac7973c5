#!/usr/bin/env bash
# Session 19: the attention's warm-up pass (decode_cluster.cuh) against f2ec34b's kernels.
export PLANS_IN=bench/results/2026-12-01-argmax-finish/plans
BUILDS="build-device-head build-device" ROUNDS=3 GTEST_FILTER='*CudaDecodeAttention*:*CudaFastPreset*:*CudaFixture*:*CudaDecodeAhead*' tools/gpu_ab.sh
PRESETS=qwen3-1.7b tools/gpu_timeline.sh
PRESETS=qwen3-1.7b BIN=build-device-head/agentcompile tools/gpu_timeline.sh
