#!/usr/bin/env bash
# Session 17 run 10: split-K output / down projections reduced in a thread block cluster
# (cluster_splitk=1, gemv.cluster) instead of atomics: the standing plans' points as overrides,
# and the defaults; GPU tests of gemv.cluster and the tiny presets first.
set -uo pipefail
. tools/gpu_common.sh
declare -A plan=(
 [llama-3.2-1b]="down=256:2:4:2,gate_up=256:1:2:1,lm_head=256:4:1:1,o=256:2:4:2,qkv=256:1:4:1,attn_block=256"
 [qwen3-1.7b]="down=256:2:2:4,gate_up=128:1:4:1,lm_head=256:4:1:1,o=256:2:1:4,qkv=128:2:4:1,attn_block=256"
 [qwen3-4b]="down=128:2:1:8,gate_up=256:1:2:1,lm_head=256:4:1:1,o=128:2:1:4,qkv=256:2:1:1,attn_block=512")
{
  date -u; echo "build-device: $(cat build-device/COMMIT)"
  gpu_tests "*CudaGemv*Cluster*:*CudaFastPreset*"
  for preset in llama-3.2-1b qwen3-1.7b qwen3-4b; do
    p=${plan[$preset]}
    for round in 1 2; do
      w2_decode $preset "plan_$round" "$p"
      w2_decode $preset "plan_clusterk_$round" "$p,cluster_splitk=1"
    done
    w2_decode $preset "default" ""
    w2_decode $preset "default_clusterk" "cluster_splitk=1"
  done
  date -u
} 2>&1 | tee -a "$out/run10.log"
rm -rf $out/runs
