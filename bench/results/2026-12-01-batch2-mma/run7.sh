#!/usr/bin/env bash
# Session 12 run 7: batch 2 on gemv.mma (mma_min_batch=2) against gemv.fused (the default, 3), fast
# route defaults (no plan), interleaved, two rounds; batch 4 alongside as the mma reference.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
bin=build-device-head/agentcompile; o=$OUT/r7; mkdir -p $o
for m in llama-3.2-1b qwen3-1.7b qwen3-4b; do
  d=/tmp/ac-bench/models/$m; [ -f $d/model.safetensors ] || $bin synth-model --preset $m --out $d --seed 11 --quiet
  for round in 1 2; do
    for cfg in "" "mma_min_batch=2"; do
      tag=$m-${cfg:-default}-$round
      AGENTCOMPILE_FAST_CONFIG=$cfg $bin bench e2e --backend cuda --cuda-route fast --model $d --workloads 128/128x2,128/128x4 \
        --repeats 3 --tie-epsilon 0.1 --json-out $o/$tag.json --md-out $o/$tag.md --quiet > /dev/null 2> $o/$tag.err
      echo "$tag exit $?"; grep "cuda fast" $o/$tag.md
    done
  done
done 2>&1 | tee $OUT/r7.log
tar czf $OUT/r7.tgz -C $OUT r7 && rm -rf $o
