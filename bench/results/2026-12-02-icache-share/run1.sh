#!/usr/bin/env bash
# Session 27: does sharing one kernel's code between two regions of a layer matter (the SM's
# instruction cache)? Qwen3-1.7B on session 22's plan (override route, carveout 40), the output
# projection at the down projection's point (one variant, one copy of the code for both) against
# the same with a second copy of the identical code (AC_EXP_SALT_K=K: the GEMVs of that K load a
# distinctly named function of the same body; salt.diff), and the reverse (down at O's point).
# Interleaved rounds (ROUNDS, default 3).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
m=qwen3-1.7b
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-$m/plan.json),smem_carveout=40"
for round in $(seq 1 ${ROUNDS:-3}); do
  w2_decode $m "plan#$round" "$b" | tee -a $out/ab.log
  AC_EXP_SALT_K=2048 w2_decode $m "plan+salt2048#$round" "$b" | tee -a $out/ab.log
  w2_decode $m "o=down-point#$round" "$b,o=256:2:2:4" | tee -a $out/ab.log
  AC_EXP_SALT_K=2048 w2_decode $m "o=down-point+salt#$round" "$b,o=256:2:2:4" | tee -a $out/ab.log
  w2_decode $m "down=o-point#$round" "$b,down=256:2:4:2" | tee -a $out/ab.log
  AC_EXP_SALT_K=6144 w2_decode $m "down=o-point+salt#$round" "$b,down=256:2:4:2" | tee -a $out/ab.log
done
rm -rf $out/runs
