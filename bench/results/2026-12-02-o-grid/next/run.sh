#!/usr/bin/env bash
# PREPARED IN SESSION 22, NOT RUN (the device refused: too little time left to start it): does an output projection that leaves
# registers free let gate/up's blocks start, and load, beside the attention? Needs a build with
# minb.diff (AC_EXP_MINB="NAME_PART=m;...": __launch_bounds__(BLOCK, m) for the variants whose
# name holds NAME_PART). Qwen3-1.7B, this session's plan as an override (carveout 40 appended):
# its O 256:2:4:2 (~118 registers: two blocks beside the attention do not fit), O 256:2:2:2 (72:
# all fit, one gate/up block per SM beside them), and 256:2:2:2 bounded to 4 blocks per SM (64, no
# spill under nvcc: two gate/up blocks fit). W2 interleaved, then the timeline of each with
# --residency (how many gate/up blocks start beside the attention).
set -uo pipefail
. tools/gpu_common.sh
base="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json),smem_carveout=40"
o2=block256__rows2__unroll2__splitk2__batch1__epi1
{
  date -u; echo "engine $(cat build-device/COMMIT) + minb.diff"
  for round in $(seq 1 ${ROUNDS:-2}); do
    w2_decode qwen3-1.7b "plan#$round" "$base"
    w2_decode qwen3-1.7b "o256:2:2:2#$round" "$base,o=256:2:2:2"
    AC_EXP_MINB="$o2=4" w2_decode qwen3-1.7b "o256:2:2:2-minb4#$round" "$base,o=256:2:2:2"
    AC_EXP_MINB="$o2=3" w2_decode qwen3-1.7b "o256:2:2:2-minb3#$round" "$base,o=256:2:2:2"
  done
  for v in ${TIMELINES:-plan o2 o2minb4}; do
    ov=$base; [ $v != plan ] && ov="$base,o=256:2:2:2"
    minb=""; [ $v = o2minb4 ] && minb="$o2=4"
    AC_EXP_MINB=$minb AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl-$v.csv w2_decode qwen3-1.7b "timeline-$v" "$ov"
    python3 tools/timeline_summary.py $out/tl-$v.csv --residency gemv
  done
  date -u
} 2>&1 | tee -a "$out/next.log"
rm -rf "$out/runs"
