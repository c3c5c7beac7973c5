#!/usr/bin/env bash
# Session 24 run 1: session 23's engine (a8711cf, the vector split-K epilogue of d5be5ac) against
# b240b03 (before it), W2 on session 22's plans, three interleaved rounds, no GPU tests. On the
# GPU machine with build-device/agentcompile (a8711cf) and build-device-base/agentcompile (b240b03)
# carried (tools/build_device.sh in a worktree of b240b03 for the latter):
BUILDS="build-device build-device-base" PLANS_IN=bench/results/2026-12-02-carveout-first/plans SKIP_TESTS=1 ROUNDS=3 \
  PRESETS="qwen3-4b qwen3-1.7b llama-3.2-1b" tools/gpu_ab.sh
