#!/usr/bin/env bash
# Session 27 run 2: the cluster attention's code made shorter (experiment macros through
# AC_EXP_DEFINE: the score loop unrolled 4 or 2 instead of fully, P.V's row loop 2 or 1 instead of
# 4), Qwen3-1.7B on session 22's plan (override route, carveout 40), interleaved rounds (ROUNDS,
# default 3); first the SASS of nvcc cubins of the plan's templates (build-sync/plan_*.cubin) into
# $OUT/sass/.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
mkdir -p $OUT/sass
for c in build-sync/plan_*.cubin; do /usr/local/cuda/bin/nvdisasm -c -fun 0 "$c" >/dev/null 2>&1; /usr/local/cuda/bin/cuobjdump -sass "$c" > $OUT/sass/$(basename $c .cubin).sass 2>&1; done
. tools/gpu_common.sh
m=qwen3-1.7b
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-$m/plan.json),smem_carveout=40"
a=attn_decode__cluster
for round in $(seq 1 ${ROUNDS:-3}); do
  w2_decode $m "plan#$round" "$b" | tee -a $out/ab.log
  for d in AC_EXP_SCORE_U4 AC_EXP_SCORE_U2 AC_EXP_PV_U2 "AC_EXP_SCORE_U2;$a=AC_EXP_PV_U1"; do
    AC_EXP_DEFINE="$a=$d" w2_decode $m "$d#$round" "$b" | tee -a $out/ab.log
  done
done
rm -rf $out/runs
