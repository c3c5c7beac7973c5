#!/usr/bin/env bash
# Session 27 run 1: how much of an added delay at each point of a layer reaches the W2 step
# (experiment switch AC_EXP_DELAY="SUBSTR=NSw|e", delay.diff: the blocks of the kernel variants whose
# name contains SUBSTR resume NS later after a wait that waited (w), or stay NS longer at their end
# (e)), on session 22's compiled plans, interleaved rounds (ROUNDS, default 2). MODELS: presets
# (default qwen3-1.7b). Sensitivity = (ms/token - base) / (layers * NS).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
export PLANS_IN=bench/results/2026-12-02-carveout-first/plans
D=${D:-1000}
# Qwen3-1.7B's plan: QKV 128:2:4:1 (epi0), O 256:2:4:2 (splitk2, epi1), gate/up 128:1:4:1 (epi2),
# down 256:2:2:4 (splitk4, epi1), lm_head epi3, the attention a cluster kernel.
points=${POINTS:-"none=0w batch1__epi0=${D}w attn_decode__cluster=${D}w attn_decode__cluster=${D}e attn_decode__cluster=$((D/2))e splitk2__batch1__epi1=${D}w batch1__epi2=${D}w splitk4__batch1__epi1=${D}w"}
for m in ${MODELS:-qwen3-1.7b}; do
  for round in $(seq 1 ${ROUNDS:-2}); do
    for pt in $points; do AC_EXP_DELAY=$pt w2_decode $m "$pt#$round" "" | tee -a $out/ab.log; done
  done
done
rm -rf $out/runs
