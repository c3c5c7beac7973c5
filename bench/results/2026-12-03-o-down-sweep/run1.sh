#!/usr/bin/env bash
# Session 30: one W2 run per point around Qwen3-1.7B's plan (session 22's, as an override with
# carveout 40) on the current engine: the carveout between the compile's 25/40/60, then every
# output and down projection point of a wide subset of gemv.fused's space, one region at a time;
# the plan itself every 12 runs (drift). Points within ~0.3% of the base go to a confirming run.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
m=qwen3-1.7b
plans=bench/results/2026-12-02-carveout-first/plans
p="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json)"
b="$p,smem_carveout=40"
n=0
run() { w2_decode $m "$1" "$2" | tee -a $out/sweep.log; n=$((n + 1)); [ $((n % 12)) = 0 ] && w2_decode $m "base@$n" "$b" | tee -a $out/sweep.log; }
run base "$b"
for c in 30 35 45 50; do run "carveout=$c" "$p,smem_carveout=$c"; done
for region in o down; do
  for blk in 256 128; do for ru in 2:4 2:2 4:2 4:1 1:4 2:1; do for s in 1 2 4 8; do
    [ $region = o ] && [ $s = 8 ] && continue
    [ $region = down ] && [ $s = 1 ] && continue
    pt="$blk:${ru%%:*}:${ru##*:}:$s"
    run "$region=$pt" "$b,$region=$pt"
  done; done; done
done
run base "$b"
rm -rf $out/runs
