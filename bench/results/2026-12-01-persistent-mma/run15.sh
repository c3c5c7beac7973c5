#!/usr/bin/env bash
# Session 14, run 15: the GPU tests on the committed engine (persistent plan's static-memory
# estimate), and the persistent kernel against the chain once more.
. tools/gpu_common.sh
. scratch/wd.sh
{
  date -u; cat build-device/COMMIT
  gpu_tests "*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    wd $preset default ""
    wd $preset persistent "persistent=1"
  done
  date -u
} 2>&1 | tee $out/run15.log
tar czf $out/runs15.tgz -C $out runs && rm -rf $out/runs
