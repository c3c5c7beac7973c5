#!/usr/bin/env bash
# Session 16 run 3: attn_o.cluster with the faster tile product, tile issued before the wait or after the query.
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "build-device: $(cat build-device/COMMIT)  head: $(cat build-device-head/COMMIT)"
  gpu_tests "*CudaDecodeAttention*:*CudaFastPreset*:*AttentionWithOutput*"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    for round in 1 2; do
      bin=build-device-head/agentcompile; w2_decode $preset "head_$round" ""
      bin=build-device/agentcompile
      for v in attn_o=1 attn_o=1,attn_o_late=1 attn_o=2 attn_o=2,attn_o_late=1; do w2_decode $preset "${v//[=,]/_}_$round" "$v"; done
    done
  done
  mkdir -p $out/tl
  OUT=$out/tl PRESETS=qwen3-1.7b FAST_CONFIG=attn_o=2,attn_o_late=1 tools/gpu_timeline.sh > /dev/null 2>&1
  python3 tools/timeline_summary.py $out/tl/timeline-qwen3-1.7b.csv 2>&1 | tail -8
  python3 tools/timeline_summary.py $out/tl/timeline-qwen3-1.7b.csv --marks attn_o 2>&1 | head -12
  date -u
} 2>&1 | tee -a "$out/run3.log"
rm -rf $out/runs
