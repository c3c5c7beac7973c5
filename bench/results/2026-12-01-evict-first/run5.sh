#!/usr/bin/env bash
# Session 18 run 5: weights marked evict-first in L2 (load_stream16's cache policy): A/B against
# f1a64ca on this session's plans, 3 rounds interleaved; GEMV op tests first.
set -uo pipefail
GTEST_FILTER='*CudaGemv*:*CudaFastOps*:*FastDecodeGemv*' ROUNDS=3 \
  PLANS_IN=bench/results/2026-12-01-argmax-finish/plans tools/gpu_ab.sh > /dev/null 2>&1
cat ${OUT:-/tmp/out}/ab.log
