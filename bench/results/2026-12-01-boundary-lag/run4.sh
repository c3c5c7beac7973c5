#!/usr/bin/env bash
# Session 20 run 4: W2 decode on session 18's plans with part of each GEMV's first load buffer
# issued after its wait instead of before (AC_GEMV_LATE, an experiment in this build only), after
# the fast path's GPU tests with the late loads on.
set -uo pipefail
. tools/gpu_common.sh
export PLANS_IN=bench/results/2026-12-01-argmax-finish/plans
{
  date -u; cat build-device/COMMIT
  AC_GEMV_LATE="qkv=2,o=1,gate_up=2,down=1" gpu_tests "CudaFastPreset.*:CudaFastOps.*"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    for v in "" "qkv=2" "gate_up=2" "down=1" "o=1" "qkv=2,gate_up=2,down=1,o=1" ""; do
      AC_GEMV_LATE="$v" w2_decode $preset "late:${v:-none}" ""
    done
  done
  date -u
} 2>&1 | tee -a "$out/run4.log"
