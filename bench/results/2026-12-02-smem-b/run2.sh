#!/usr/bin/env bash
# Session 23 run 2 (a build with exp.diff): the cluster attention's merge by pushes
# (AC_ATTN_PUSH: each block stores every block's share of its partials into that block's shared
# memory, one cluster barrier, a local merge, no barrier before leaving) against the pull merge
# (remote loads after the barrier, a second barrier before leaving). GPU tests with the push
# kernel, W2 interleaved on the three plans, and a timeline of Qwen3-1.7B with the push.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
ov() { python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$1/plan.json; }
declare -A carve=([llama-3.2-1b]=25 [qwen3-1.7b]=40 [qwen3-4b]=25)
push="attn_decode__cluster__=AC_ATTN_PUSH"
{
  date -u; echo "engine $(cat build-device/COMMIT) + exp.diff"
  AC_EXP_DEFINE=$push gpu_tests '*CudaDecodeAttention*:*CudaFastPreset*:*CudaFixture*:*CudaDecodeAhead*'
  for round in $(seq 1 ${ROUNDS:-3}); do
    for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
      b="$(ov $preset),smem_carveout=${carve[$preset]}"
      AC_EXP_DEFINE= w2_decode $preset "pull#$round" "$b"
      AC_EXP_DEFINE=$push w2_decode $preset "push#$round" "$b"
    done
  done
  b="$(ov qwen3-1.7b),smem_carveout=40"
  for v in pull push; do
    d=""; [ $v = push ] && d=$push
    AC_EXP_DEFINE=$d AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl-$v.csv w2_decode qwen3-1.7b "timeline-$v" "$b"
    python3 tools/timeline_summary.py $out/tl-$v.csv --marks attn | tail -9
    python3 tools/timeline_summary.py $out/tl-$v.csv | tail -12
    gzip -f $out/tl-$v.csv
  done
  date -u
} 2>&1 | tee -a "$out/run2.log"
rm -rf "$out/runs"
