#!/usr/bin/env bash
# Session 30 run 1: where the cluster attention lets the output projection launch
# (AC_EXP_ATTN_LAUNCH in decode_fused.cuh, one build each: L0 as the engine, before its wait on the
# QKV projection; L1 once the query, key and value are in; L2 right after the wait; L3 as L0 with
# AC_EXP_DOWN_LATE in gemv.cuh: the 256:2:2:4 point — Qwen3-1.7B's down projection and the default
# one, in none of the other plans — lets the next kernel launch only once its x' is staged). GPU
# tests of L1 and L3, then W2 on session 22's plans as overrides with their carveouts, interleaved rounds.
# Then (with L0) the rest of the one-region sweep of ../2026-12-03-o-down-sweep/ and carveouts
# 36-44 for Qwen3-1.7B.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
for v in 1 3; do
  bin=build-device-L$v/agentcompile
  rm -rf build-device && cp -r build-device-L$v build-device
  echo "== L$v" | tee -a $out/ab.log
  gpu_tests '*CudaDecodeAttention*:*CudaFastPreset*:*CudaDecodeAhead*' | tee -a $out/ab.log
done
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
for m in qwen3-1.7b llama-3.2-1b qwen3-4b; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  for round in 1 2 3; do
    for v in 0 1 2 3; do bin=build-device-L$v/agentcompile; w2_decode $m "L$v#$round" "$b" | tee -a $out/ab.log; done
  done
done
bin=build-device-L0/agentcompile
m=qwen3-1.7b
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=40"
p="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json)"
n=0
run() { w2_decode $m "$1" "$2" | tee -a $out/sweep2.log; n=$((n + 1)); [ $((n % 12)) = 0 ] && w2_decode $m "base@$n" "$b" | tee -a $out/sweep2.log; }
run base "$b"
for c in 36 37 38 39 41 42 43 44; do run "carveout=$c" "$p,smem_carveout=$c"; done
for blk in 128 256; do
  for ru in 1:1 1:2 1:4 2:1 2:2 2:4 4:1 4:2; do run "qkv=$blk:${ru%%:*}:${ru##*:}:1" "$b,qkv=$blk:${ru%%:*}:${ru##*:}:1"; done
  for ru in 1:1 1:2 1:4 2:1 2:2 4:1; do run "gate_up=$blk:${ru%%:*}:${ru##*:}:1" "$b,gate_up=$blk:${ru%%:*}:${ru##*:}:1"; done
  for ru in 1:2 1:4 2:1 2:2 2:4 4:1 4:2; do run "lm_head=$blk:${ru%%:*}:${ru##*:}:1" "$b,lm_head=$blk:${ru%%:*}:${ru##*:}:1"; done
done
for a in attn_block=64 attn_block=256 attn_block=512 attn_cluster=4 attn_cluster=16; do run "$a" "$b,$a"; done
run base "$b"
rm -rf $out/runs
