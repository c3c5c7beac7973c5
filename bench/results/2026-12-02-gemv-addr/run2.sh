#!/usr/bin/env bash
# Session 27 run 2: the plan re-tuned for the new GEMV code — Qwen3-1.7B compiled on the new build
# with --seed-plan session 22's plan (BUDGET, default 120 s), then W2 interleaved: the head build on
# session 22's plan (override route, carveout 40) against the new build on the new plan (plan route).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
m=qwen3-1.7b
[ -f /tmp/ac-$m/model.safetensors ] || $bin synth-model --preset $m --out /tmp/ac-$m --seed 11 --quiet >/dev/null
start=$(date +%s)
$bin compile /tmp/ac-$m --out $out/plan-$m --backend cuda --budget ${BUDGET:-120} --db /tmp/ac-tune.db \
  --seed-plan bench/results/2026-12-02-carveout-first/plans/plan-$m > $out/compile-$m.log 2>&1
echo "compile exit $? in $(( $(date +%s) - start )) s"
grep -i "seed plan\|smem_carveout\|kept" $out/plan-$m/report.md | head -12
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-$m/plan.json),smem_carveout=40"
new=$bin
for round in $(seq 1 ${ROUNDS:-3}); do
  bin=build-device-head/agentcompile; PLANS_IN= w2_decode $m "head+plan22#$round" "$b" | tee -a $out/ab.log
  bin=$new; PLANS_IN=$out w2_decode $m "addr+retuned#$round" "" | tee -a $out/ab.log
done
rm -rf $out/runs
