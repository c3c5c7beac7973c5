#!/usr/bin/env bash
# Session 32 run 1 (GPU machine, build-device/ from build-pack/pack.tgz): the GPU tests of the
# touched paths, then W2 of session 22's Qwen3-1.7B plan as an override with per-region carveouts
# (carveout.<region>, a launch attribute), three interleaved rounds: the plan; down 256:4:1:8
# under the plan's 40 (1.8% slower in session 31) and under its own 30 (0.28% faster there, with
# a function attribute); the output projection under its own 60; both.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
gpu_tests '*CudaFastOps*:*CudaDecodeAttention*:*CudaFastPreset*:*CudaCompile*:*CudaDecodeAhead*' | tee $out/run1.log
plan=bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plan),smem_carveout=40"
for r in 1 2 3; do
  w2_decode qwen3-1.7b plan-$r "$b"
  w2_decode qwen3-1.7b down8-at40-$r "$b,down=256:4:1:8"
  w2_decode qwen3-1.7b down8-c30-$r "$b,down=256:4:1:8,carveout.down=30"
  w2_decode qwen3-1.7b o-c60-$r "$b,carveout.o=60"
  w2_decode qwen3-1.7b both-$r "$b,down=256:4:1:8,carveout.down=30,carveout.o=60"
done 2>&1 | tee -a $out/run1.log
rm -rf $out/runs
