#!/usr/bin/env bash
# Session 14, run 11: more consumer warps (persistent_block 416 / 544) on run 10's binaries.
. tools/gpu_common.sh
. scratch/wd.sh
{
  date -u; cat build-device/COMMIT
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    wd $preset persistent "persistent=1"
    wd $preset block416 "persistent=1,persistent_block=416"
    wd $preset block544 "persistent=1,persistent_block=544"
    wd $preset block160 "persistent=1,persistent_block=160"
  done
  for cfg in "persistent=1,persistent_block=416" "persistent=1,persistent_block=544"; do
    rm -f $out/tl.csv
    AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl.csv wd qwen3-1.7b "timeline-$cfg" "$cfg"
    python3 scratch/pl_marks.py $out/tl.csv
  done
  date -u
} 2>&1 | tee $out/run11.log
tar czf $out/runs11.tgz -C $out runs && rm -rf $out/runs $out/tl.csv
