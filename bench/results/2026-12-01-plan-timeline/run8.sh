#!/usr/bin/env bash
# Session 17 run 8: one-wave gate/up grids (more rows per block) on the fast route's defaults.
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "build-device: $(cat build-device/COMMIT)"
  for preset in llama-3.2-1b qwen3-1.7b; do
    for round in 1 2; do
      w2_decode $preset "default_$round" ""
      for v in gate_up=256:2:1:1 gate_up=128:4:1:1 gate_up=128:2:2:1 gate_up=256:1:4:1; do w2_decode $preset "${v//[=,:]/_}_$round" "$v"; done
    done
  done
  date -u
} 2>&1 | tee -a "$out/run8.log"
rm -rf $out/runs
