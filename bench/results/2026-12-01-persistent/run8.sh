#!/usr/bin/env bash
# Session 13, run 8: every GPU test on the committed engine (4579021).
. tools/gpu_common.sh
{
  date -u; cat build-device/COMMIT
  gpu_tests "*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*"
  grep -E "tests ran|PASSED|FAILED" $out/runs/tests.txt | head
  date -u
} 2>&1 | tee $out/run8.log
rm -rf $out/runs
