#!/usr/bin/env bash
# Session 17 run 5: the full GPU test set on bad78d9 (its host-only changes b8096a9 and bad78d9 had
# not run on the GPU).
set -uo pipefail
. tools/gpu_common.sh
{ date -u; echo "build-device: $(cat build-device/COMMIT)"
  gpu_tests "*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*"
  grep -E "^\[ *(OK|FAILED) *\]" $out/runs/tests.txt | sed 's/ ([0-9]* ms)//' > $out/run5-tests.txt
  grep -E "^\[ (fast|compile|attn) \]" $out/runs/tests.txt >> $out/run5-tests.txt
  date -u; } 2>&1 | tee -a "$out/run5.log"
rm -rf $out/runs
