#!/usr/bin/env bash
# Session 16 run 1: attn_o.cluster correctness (op test, tiny e2e) and a first W2 look on the fast route.
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "build-device: $(cat build-device/COMMIT)  head: $(cat build-device-head/COMMIT)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  gpu_tests "*CudaDecodeAttention*:*CudaFastPreset*:*AttentionWithOutput*:*CudaFixture*"
  for preset in llama-3.2-1b qwen3-1.7b qwen3-4b; do
    for round in 1 2; do
      bin=build-device-head/agentcompile; w2_decode $preset "head#$round" ""
      bin=build-device/agentcompile
      for v in "" attn_o=1 attn_o=2 attn_o=4; do w2_decode $preset "new:${v:-off}#$round" "$v"; done
    done
  done
  date -u
} 2>&1 | tee -a "$out/run1.log"
