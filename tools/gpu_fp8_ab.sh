#!/usr/bin/env bash
# On the GPU machine: the FP8 GEMV's points end to end. From kernel_sweep's FP8 samples ($SWEEP:
# jsonl files of tools/gpu_sweep.sh with SWEEP_FAMILY=fp8), each model's fastest point per
# projection and the one point per projection with the least total time (tools/fp8_points.py);
# then W2 decode (128 greedy tokens after the 128-token prompt, fast route) of each model's
# fp8-block synthetic folder at the engine's FP8 defaults, at the common points and at its own,
# REPEAT rounds interleaved; the tokens compared by checksum. Needs build-device/ carried.
#   SWEEP="$OUT/s1/sweep.jsonl" [MODELS=...] [REPEAT=2] tools/gpu_fp8_ab.sh -> $OUT/fp8_ab.log, fp8_points.{txt,json}
set -uo pipefail
source tools/gpu_common.sh
log=$out/fp8_ab.log
models=${MODELS:-llama-3.2-1b qwen3-1.7b qwen3-4b}
{
  date -u; nvidia-smi --query-gpu=name --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  python3 tools/fp8_points.py $SWEEP --json "$out/fp8_points.json" | tee "$out/fp8_points.txt"
  common=$(grep '^common:' "$out/fp8_points.txt" | awk '{print $2}')
  export W2_WEIGHTS=${W2_WEIGHTS:-fp8-block}
  for r in $(seq "${REPEAT:-2}"); do
    for m in $models; do
      own=$(grep "^$m:" "$out/fp8_points.txt" | awk '{print $2}')
      w2_decode "$m" "defaults-$r" ""
      w2_decode "$m" "common-$r" "$common"
      w2_decode "$m" "own-$r" "$own"
    done
  done
  date -u
} 2>&1 | tee "$log"
