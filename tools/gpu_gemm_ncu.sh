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
  python3 - "$out" <<'PY'
import re, sys
# Per profiled kernel: its name, duration, DRAM and L2 throughput, registers, occupancy, issue
# slots busy and the three largest stall reasons (warps per issued instruction).
for case in ("cublas", "wgmma_tiles", "wgmma_pingpong"):
    try:
        text = open(f"{sys.argv[1]}/ncu-gemm-{case}.txt").read()
    except OSError:
        continue
    # A kernel's section starts with its name (demangled, may hold spaces), grid x block, context.
    head = r"\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context"
    for block in re.split(r"\n  (?=[^\n]*" + head + ")", text)[1:]:
        name = re.split(r" " + head, block)[0].strip()
        def num(label):
            m = re.search(re.escape(label) + r"\s+(\S+)\s+([\d.,]+)", block)
            return (m.group(2) + " " + m.group(1)) if m else "?"
        st = sorted(((float(v.replace(",", "")), k) for k, v in re.findall(
            r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio\s+\S*\s+([\d.,]+)", block)), reverse=True)
        print(f"{case:15s} {name[:58]:58s} {num('Duration'):>12s}  DRAM {num('DRAM Throughput'):>8s}  "
              f"L2 {num('L2 Cache Throughput'):>8s}  SM {num('Compute (SM) Throughput'):>8s}  "
              f"regs {num('Registers Per Thread'):>6s}  occ {num('Achieved Occupancy'):>8s}  "
              f"issue {num('Issue Slots Busy'):>8s}  stalls " + ", ".join(f"{k} {v:.2f}" for v, k in st[:3]))
PY
  date -u
} 2>&1 | tee "$out/gemm_ncu.log"
