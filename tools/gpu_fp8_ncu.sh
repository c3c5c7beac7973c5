#!/usr/bin/env bash
# On the GPU machine: why the FP8 GEMVs stream less than the bf16 ones (gemv.mma_fp8 moved 1.0-1.7
# TB/s at batch 8; the bit-move widening, fp8_cvt=1, did not help, so the conversions' count alone
# does not explain it). Nsight Compute on one decode step's projections of Qwen3-1.7B (the 4th
# layer's four GEMVs, after the warm-up): gemv.mma_fp8 at batch 8 (W5, fp8-block), gemv.mma at
# batch 8 on the bf16 model beside it, and gemv.fp8 at batch 1 (W2, fp8-block): DRAM throughput,
# occupancy and registers, issue activity, the pipes' utilisation and each stall reason per issued
# instruction -> $OUT/ncu-fp8-<case>.txt, a summary table in $OUT/fp8_ncu.log.
# Needs build-device/ carried; about 5 minutes.
#   [MODEL=qwen3-1.7b] tools/gpu_fp8_ncu.sh
set -uo pipefail
source tools/gpu_common.sh
m=${MODEL:-qwen3-1.7b}
stalls=""
for s in long_scoreboard short_scoreboard math_pipe_throttle mio_throttle lg_throttle wait barrier not_selected \
         dispatch_stall no_instruction branch_resolving drain membar tex_throttle sleeping selected; do
  stalls+="smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio,"
done
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  command -v ncu > /dev/null || { echo "no ncu on this machine"; exit 0; }
  for w in "" fp8-block; do
    d=/tmp/ac-$m${w:+-$w}
    [ -f $d/model.safetensors ] || $bin synth-model --preset $m --out $d --seed 11 ${w:+--weights $w} --quiet > /dev/null
  done
  # case: folder suffix, workload, the kernels (regex on the variant name)
  for c in "mma_fp8 fp8-block W5 gemv__mma_fp8__" "mma_bf16 - W5 gemv__mma__" "fp8_b1 fp8-block W2 gemv__fp8__"; do
    set -- $c
    d=/tmp/ac-$m; [ "$2" = - ] || d=$d-$2
    echo "== ncu: $1 ($3, kernels $4)"
    # Skip the warm-up steps and three layers' four projections: the 4th layer of a steady step.
    timeout 170 ncu --clock-control none -k regex:$4 --launch-skip 300 --launch-count 4 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
      --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --metrics "${stalls%,}" \
      $bin bench e2e --model $d --backend cuda --cuda-route fast --workloads $3 --repeats 1 --validate-tokens 1 --quiet \
      > "$out/ncu-fp8-$1.txt" 2>&1
    echo "ncu exit $?"
  done
  python3 tools/ncu_summary.py "$out" ncu-fp8 mma_fp8 mma_bf16 fp8_b1
  date -u
} 2>&1 | tee "$out/fp8_ncu.log"
