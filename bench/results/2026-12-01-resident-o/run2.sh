#!/usr/bin/env bash
# Session 17 run 2: gemv.resident for the output projection with the cluster attention's launch
# trigger after its wait (attn_late_trigger=1), on the fast route's defaults, against the head build.
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "build-device: $(cat build-device/COMMIT)  head: $(cat build-device-head/COMMIT)"
  gpu_tests "*CudaDecodeAttention*:*CudaFastPreset*:*FastConfig*:*CudaGemv*Resident*"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    for round in 1 2; do
      bin=build-device-head/agentcompile; w2_decode $preset "head_$round" ""
      bin=build-device/agentcompile; w2_decode $preset "new_$round" ""
      for v in attn_late_trigger=1 o_resident=128:8:2,attn_late_trigger=1 o_resident=256:16:4,attn_late_trigger=1 \
               o_resident=512:32:2,attn_late_trigger=1 o_resident=256:16:1,attn_late_trigger=1 o_resident=256:8:1,attn_late_trigger=1; do
        w2_decode $preset "${v//[=,:]/_}_$round" "$v"
      done
    done
  done
  date -u
} 2>&1 | tee -a "$out/run2.log"
rm -rf $out/runs
