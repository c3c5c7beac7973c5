#!/usr/bin/env bash
# Session 32 run 4 (GPU machine): run 3's two gains together (the output projection and gate/up
# under their own 80), against run 2's plan as an override; three interleaved rounds.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
plan=bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plan),smem_carveout=40,down=256:4:1:8,carveout.down=25,carveout.o=60"
for r in 1 2 3; do
  w2_decode qwen3-1.7b new-$r "$b"
  w2_decode qwen3-1.7b o80-gu80-$r "$b,carveout.o=80,carveout.gate_up=80"
  w2_decode qwen3-1.7b o80-gu60-$r "$b,carveout.o=80,carveout.gate_up=60"
  w2_decode qwen3-1.7b o100-gu80-$r "$b,carveout.o=100,carveout.gate_up=80"
  w2_decode qwen3-1.7b o80-gu80-lm80-$r "$b,carveout.o=80,carveout.gate_up=80,carveout.lm_head=80"
done 2>&1 | tee $out/run4.log
rm -rf $out/runs
