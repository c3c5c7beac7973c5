#!/usr/bin/env bash
# Session 23 run 5 (a build with exp.diff + the AC_EXP_RED_VEC path of gemv.cuh): split-K output
# and down projections adding a warp's two (or four) consecutive rows with one vector reduction
# (red.global.add.v2.f32) instead of one scalar red each — half the L2 atomics at the plans'
# points (ROWS 2), where the boundary after down (split-K 4: 8192 reds into 2048 floats) is
# 1.6 us against ~1.0 after the others. GPU tests with it, W2 interleaved, a Qwen3-1.7B timeline.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
ov() { python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$1/plan.json; }
declare -A carve=([llama-3.2-1b]=25 [qwen3-1.7b]=40 [qwen3-4b]=25)
vec="__epi1__=AC_EXP_RED_VEC"
{
  date -u; echo "engine $(cat build-device/COMMIT) + exp.diff + red-vec"
  AC_EXP_DEFINE=$vec gpu_tests '*CudaGemv*:*CudaFastPreset*:*CudaFixture*:*CudaFastOps*'
  for round in $(seq 1 ${ROUNDS:-3}); do
    for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
      b="$(ov $preset),smem_carveout=${carve[$preset]}"
      AC_EXP_DEFINE= w2_decode $preset "scalar#$round" "$b"
      AC_EXP_DEFINE=$vec w2_decode $preset "vec#$round" "$b"
    done
  done
  b="$(ov qwen3-1.7b),smem_carveout=40"
  AC_EXP_DEFINE=$vec AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl-vec.csv w2_decode qwen3-1.7b "timeline-vec" "$b"
  python3 tools/timeline_summary.py $out/tl-vec.csv --layers vec | tail -7
  gzip -f $out/tl-vec.csv
  date -u
} 2>&1 | tee -a "$out/run5.log"
rm -rf "$out/runs"
