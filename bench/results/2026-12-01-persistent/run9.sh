#!/usr/bin/env bash
# Session 13, run 9: after store_new_kv (one helper for the new k/v row's stores): the attention
# and persistent GPU tests.
. tools/gpu_common.sh
{
  date -u; cat build-device/COMMIT
  gpu_tests "*CudaFastPreset*:*CudaDecodeAttention*:*CudaFixture*:*CudaAttentionEval*"
  date -u
} 2>&1 | tee $out/run9.log
rm -rf $out/runs
