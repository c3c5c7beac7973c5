#!/usr/bin/env bash
# Session 31, fifth call (build with per-kernel-carveout.diff): near-miss points of session 30's
# sweep whose staged x' (so shared memory per block, so the driver's split thresholds) differs from
# the plan's point, each under several carveouts for its own kernel (the others at the plan's 40):
# a point could have lost in that sweep only because carveout 40 put it on a slow split.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
p="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json),smem_carveout=40"
run() { export AC_EXP_CARVEOUT="$3"; w2_decode qwen3-1.7b "$1" "$p$2"; unset AC_EXP_CARVEOUT; }
{
run base "" ""
for c in 40 25 30 36 44; do
  run "down=256:4:1:8 D=$c" ",down=256:4:1:8" "block256__rows4__unroll1__splitk8__batch1__epi1=$c"
  run "down=128:4:1:8 D=$c" ",down=128:4:1:8" "block128__rows4__unroll1__splitk8__batch1__epi1=$c"
  run "attn_cluster=16 A=$c" ",attn_cluster=16" "cluster16=$c"
done
for c in 40 30 44 50 60; do
  run "o=128:4:1:4 O=$c" ",o=128:4:1:4" "block128__rows4__unroll1__splitk4__batch1__epi1=$c"
  run "o=256:4:1:4 O=$c" ",o=256:4:1:4" "block256__rows4__unroll1__splitk4__batch1__epi1=$c"
done
run base "" ""
} 2>&1 | tee $out/run5.log
rm -rf $out/runs
