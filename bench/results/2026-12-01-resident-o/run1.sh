#!/usr/bin/env bash
# Session 17 run 1: gemv.resident for the output projection and attn_decode.cluster blocks past the
# group's outputs, on the fast route's defaults, against the head build; GPU tests first.
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "build-device: $(cat build-device/COMMIT)  head: $(cat build-device-head/COMMIT)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
  gpu_tests "*CudaGemv*:*CudaDecodeAttention*:*CudaFastPreset*:*FastConfig*:*KernelJit*Resident*"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    for round in 1 2; do
      bin=build-device-head/agentcompile; w2_decode $preset "head_$round" ""
      bin=build-device/agentcompile; w2_decode $preset "new_$round" ""
      for v in o_resident=256:16:1 o_resident=256:8:1 o_resident=512:32:2 o_resident=128:8:2 o_resident=256:16:4 \
               attn_block=512 attn_block=512,o_resident=256:16:1; do
        w2_decode $preset "${v//[=,:]/_}_$round" "$v"
      done
    done
  done
  date -u
} 2>&1 | tee -a "$out/run1.log"
rm -rf $out/runs
