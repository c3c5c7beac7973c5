#!/usr/bin/env bash
# On the GPU machine: the FP8 codes widened by bit moves (fp8_cvt=1, the CVT 1 of gemv.fp8 and
# gemv.mma_fp8) against the cvt instructions (the default), in one device call:
#   1. the GPU tests: CudaGemvFp8 (every case, the Bits cases at CVT 1 against the CPU reference),
#      CudaGemvFp8Codes (every finite code through both families at both CVTs; CVT 1's outputs bit
#      for bit as CVT 0's);
#   2. kernel_sweep: gemv.fp8 at batch 1 (Llama-3.2-1B, Qwen3-1.7B) and gemv.mma_fp8 at batch 8
#      (Qwen3-1.7B), every point at both CVTs; per region the best point of each and the default
#      point at each (tools/fp8_cvt_summary.py);
#   3. W2 decode of the fp8-block presets with fp8_cvt=0 and 1, ROUNDS rounds interleaved, the
#      tokens compared by checksum (they must agree: the same values); then W5 (batch 8) of
#      Qwen3-1.7B fp8-block through bench e2e at gemv.mma's points (what FP8 batches ran before
#      they had their own), at the defaults and with fp8_cvt=1, each with its semantic check
#      against the CPU reference of the same quantized weights.
# Needs build-device/ carried; about 9 minutes (one device call: the log is written as it goes).
#   [ROUNDS=2] [MODELS="llama-3.2-1b qwen3-1.7b"] tools/gpu_fp8_cvt.sh
#     -> $OUT/fp8_cvt.log, $OUT/sweep-fp8-b1.jsonl, $OUT/sweep-fp8-b8.jsonl, $OUT/w5-qwen3-1.7b-<mma-points|defaults|cvt1>.{json,md}
set -uo pipefail
source tools/gpu_common.sh
log=$out/fp8_cvt.log
models=${MODELS:-llama-3.2-1b qwen3-1.7b}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  [ -n "${SKIP_TESTS:-}" ] || TEST_TIMEOUT=200 gpu_tests '*CudaGemvFp8*'
  echo "== kernel_sweep: gemv.fp8 at batch 1, both CVTs"
  SWEEP_FAMILY=fp8 SWEEP_BATCH=1 timeout 150 build-device/kernel_sweep $models > "$out/sweep-fp8-b1.jsonl" 2> "$out/runs/sweep-b1.err"
  echo "kernel_sweep exit $?"; python3 tools/fp8_cvt_summary.py "$out/sweep-fp8-b1.jsonl"
  echo "== kernel_sweep: gemv.mma_fp8 at batch 8, both CVTs"
  SWEEP_FAMILY=fp8_mma SWEEP_BATCH=8 timeout 120 build-device/kernel_sweep qwen3-1.7b > "$out/sweep-fp8-b8.jsonl" 2> "$out/runs/sweep-b8.err"
  echo "kernel_sweep exit $?"; python3 tools/fp8_cvt_summary.py "$out/sweep-fp8-b8.jsonl"
  echo "== W2 decode, fp8-block, fp8_cvt 0 and 1"
  export W2_WEIGHTS=fp8-block
  for r in $(seq "${ROUNDS:-2}"); do
    for m in $models; do
      w2_decode "$m" "cvt0-$r" "fp8_cvt=0"
      w2_decode "$m" "cvt1-$r" "fp8_cvt=1"
    done
  done
  echo "== W5 (batch 8), Qwen3-1.7B fp8-block: gemv.mma's points (the old FP8 ones), the defaults, fp8_cvt=1"
  dir=/tmp/ac-qwen3-1.7b-fp8-block
  old_points=qkv_mma_fp8=512:1:1:1,o_mma_fp8=256:1:1:4,down_mma_fp8=128:1:1:8
  for cfg in "mma-points:$old_points" "defaults:" "cvt1:fp8_cvt=1"; do
    label=${cfg%%:*}
    AGENTCOMPILE_FAST_CONFIG=${cfg#*:} timeout 200 $bin bench e2e --model "$dir" --backend cuda --cuda-route fast \
      --workloads W5 --repeats 2 --validate-tokens 8 --json-out "$out/w5-qwen3-1.7b-$label.json" \
      --md-out "$out/w5-qwen3-1.7b-$label.md" --quiet 2>"$out/runs/w5.err" >/dev/null
    echo "$label (${cfg#*:}): exit $? $(tail -1 "$out/runs/w5.err")"
    e2e_rows "$out/w5-qwen3-1.7b-$label.json"
  done
  date -u
} 2>&1 | tee "$log"
