#!/usr/bin/env bash
# Session 22: the presets compiled afresh with the shared-memory carveout timed before the
# decode-step tuning (the tuning's points then compete under it), then W2 against the
# compiled-PyTorch peer measured in the same run. On the GPU machine, one lease, two commands:
#   GPU_TESTS=1 PRESETS="llama-3.2-1b qwen3-1.7b" bench/results/2026-12-02-carveout-first/run.sh
#   PRESETS=qwen3-4b bench/results/2026-12-02-carveout-first/run.sh
set -uo pipefail
if [ "${GPU_TESTS:-0}" = 1 ]; then
  . tools/gpu_common.sh
  gpu_tests 'CudaCompile.RegionsCountedAndAttentionTimedAsAKernel:CudaSearch*:CudaFastPreset*' | tee "$out/tests.log"
  cp "$out/runs/tests.txt" "$out/tests.txt"; rm -rf "$out/runs"
fi
COMPILED_PEER=1 WORKLOADS=W2 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
