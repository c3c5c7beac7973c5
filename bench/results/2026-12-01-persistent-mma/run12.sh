#!/usr/bin/env bash
# Session 14, run 12: the persistent kernel's tiles on the tensor cores (persistent_mma=1, the new
# default) against the FMA tiles (persistent_mma=0) and the chain; a sweep of stage sizes.
. tools/gpu_common.sh
. scratch/wd.sh
{
  date -u; cat build-device/COMMIT
  wd tiny-qwen3 smoke-persistent "persistent=1" 30
  gpu_tests "*CudaFastPreset*:*FastPersistent*:*KernelJit*:*CudaFixture*"
  for r in 1 2; do
    for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
      wd $preset default-$r ""
      wd $preset mma-$r "persistent=1"
      wd $preset fma-$r "persistent=1,persistent_mma=0"
      if [ $r = 1 ]; then
        wd $preset mma-16kx8 "persistent=1,persistent_stage_kb=16,persistent_stages=8"
        wd $preset mma-24kx6 "persistent=1,persistent_stage_kb=24,persistent_stages=6"
        wd $preset mma-40kx4 "persistent=1,persistent_stage_kb=40,persistent_stages=4"
        wd $preset mma-48kx4 "persistent=1,persistent_stage_kb=48,persistent_stages=4"
        wd $preset mma-splits16 "persistent=1,persistent_splits=16"
      fi
    done
  done
  date -u
  for cfg in "persistent=1"; do
    rm -f $out/tl.csv
    AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl.csv wd qwen3-1.7b "timeline-$cfg" "$cfg"
    python3 scratch/pl_marks.py $out/tl.csv
  done
  date -u
} 2>&1 | tee $out/run12.log
tar czf $out/runs12.tgz -C $out runs && rm -rf $out/runs $out/tl.csv
