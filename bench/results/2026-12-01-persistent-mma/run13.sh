#!/usr/bin/env bash
# Session 14, run 13: two tiles per consumer round (persistent_tiles) and four independent mma
# accumulators; mma x tiles against the chain.
. tools/gpu_common.sh
. scratch/wd.sh
{
  date -u; cat build-device/COMMIT
  wd tiny-qwen3 smoke-persistent "persistent=1" 30
  gpu_tests "*CudaFastPreset*:*FastPersistent*:*KernelJit*:*CudaFixture*"
  for r in 1 2; do
    for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
      wd $preset default-$r ""
      wd $preset mma-t2-$r "persistent=1"
      wd $preset fma-t2-$r "persistent=1,persistent_mma=0"
      if [ $r = 1 ]; then
        wd $preset mma-t1 "persistent=1,persistent_tiles=1"
        wd $preset fma-t1 "persistent=1,persistent_mma=0,persistent_tiles=1"
        wd $preset mma-t2-48kx4 "persistent=1,persistent_stage_kb=48,persistent_stages=4"
        wd $preset mma-t2-16kx8 "persistent=1,persistent_stage_kb=16,persistent_stages=8"
        wd $preset fma-t2-16kx8 "persistent=1,persistent_mma=0,persistent_stage_kb=16,persistent_stages=8"
      fi
    done
  done
  date -u
  for cfg in "persistent=1" "persistent=1,persistent_mma=0"; do
    rm -f $out/tl.csv
    AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl.csv wd qwen3-1.7b "timeline-$cfg" "$cfg"
    python3 scratch/pl_marks.py $out/tl.csv
  done
  date -u
} 2>&1 | tee $out/run13.log
tar czf $out/runs13.tgz -C $out runs && rm -rf $out/runs $out/tl.csv
