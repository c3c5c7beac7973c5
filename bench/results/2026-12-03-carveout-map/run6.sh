#!/usr/bin/env bash
# Session 31, sixth call (build with per-kernel-carveout.diff): down projection points with K split
# 2 (12 KB of staged x' per block) under smaller splits for their own kernel, and run 5's best
# (down 256:4:1:8 at carveout 30 for its kernel) repeated between bases; the lm_head (not in run 3) under its own.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
p="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json),smem_carveout=40"
run() { export AC_EXP_CARVEOUT="$3"; w2_decode qwen3-1.7b "$1" "$p$2"; unset AC_EXP_CARVEOUT; }
{
for r in 1 2 3; do
  run base "" ""
  run "down=256:4:1:8 D=30" ",down=256:4:1:8" "block256__rows4__unroll1__splitk8__batch1__epi1=30"
done
for c in 40 20 25 30 36; do
  run "down=128:2:4:2 D=$c" ",down=128:2:4:2" "block128__rows2__unroll4__splitk2__batch1__epi1=$c"
  run "down=256:1:4:2 D=$c" ",down=256:1:4:2" "block256__rows1__unroll4__splitk2__batch1__epi1=$c"
done
for c in 30 56 70; do run "lm_head L=$c" "" "epi3=$c"; done
run base "" ""
} 2>&1 | tee $out/run6.log
rm -rf $out/runs
