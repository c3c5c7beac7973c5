#!/usr/bin/env bash
# On the GPU machine: why our prompt GEMM (gemm.wgmma) is slower than cuBLAS on the same shape.
# Nsight Compute on Qwen3-1.7B's 2048-row output projection (added into the f32 residual: the
# slowest against cuBLAS, 0.58x; kernel_sweep SWEEP_FAMILY=gemm, one GEMM and one point per run): cuBLAS's kernels,
# gemm.wgmma's fastest point in the sweep (BN 256, 4 stages, PIPE 1, TMA, a block per tile) and its
# persistent form (SCHED 1, BN 128): duration, DRAM and L2 throughput, shared-memory traffic,
# occupancy, issue activity and each stall reason per issued instruction; the second launch of
# each kernel is profiled (the first is the sweep's check) -> $OUT/ncu-gemm-<case>.txt, a summary
# line per kernel in $OUT/gemm_ncu.log. Needs build-device/ carried; about 3 minutes.
#   [GEMMS=o] tools/gpu_gemm_ncu.sh
set -uo pipefail
source tools/gpu_common.sh
stalls=""
for s in long_scoreboard short_scoreboard math_pipe_throttle mio_throttle lg_throttle wait barrier not_selected \
         dispatch_stall no_instruction branch_resolving drain membar sleeping selected; do
  stalls+="smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio,"
done
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  command -v ncu > /dev/null || { echo "no ncu on this machine"; exit 0; }
  # case: name, the points' name part (none: cuBLAS alone), how many launches to skip
  for c in "cublas none 0" "wgmma_tiles bn256__stages4__epi2__pipe1__load1__cluster1__sched0 1" \
           "wgmma_pingpong bn128__stages4__epi2__pipe1__load1__cluster1__sched1 1"; do
    set -- $c
    k=""; [ "$2" = none ] || k="regex:gemm__wgmma"
    echo "== ncu: $1 (${GEMMS:-o})"
    SWEEP_FAMILY=gemm SWEEP_GEMMS=${GEMMS:-o} SWEEP_POINTS=$2 timeout 150 ncu --clock-control none ${k:+-k $k} \
      --launch-skip $3 --launch-count 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
      --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --metrics "${stalls%,}" build-device/kernel_sweep qwen3-1.7b > "$out/ncu-gemm-$1.txt" 2>&1
    echo "ncu exit $?"
  done
  python3 tools/ncu_summary.py "$out" ncu-gemm cublas wgmma_tiles wgmma_pingpong
  date -u
} 2>&1 | tee "$out/gemm_ncu.log"
