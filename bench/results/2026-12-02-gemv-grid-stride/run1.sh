#!/usr/bin/env bash
# Session 22: gemv.fused with a grid-stride body (the experiment build of grid-stride.diff):
# AC_EXP_GS_EPI=e compiles the GEMVs of epilogue e (2: gate/up, 1: output and down, 0: QKV) with
# it, AC_EXP_GPB=g gives each block g row groups (grid / g), whose steps run as one stream (the next
# group's first loads in flight while one ends; x' staged once per block). W2 on this session's
# compiled plans, interleaved, ROUNDS rounds; every run's tokens must equal the base's (crc).
set -uo pipefail
. tools/gpu_common.sh
export PLANS_IN=bench/results/2026-12-02-carveout-first/plans
declare -A vs=(
  [qwen3-1.7b]="2:1 2:2 2:3 2:4 2:6 1:2 0:2"
  [llama-3.2-1b]="2:1 2:2 2:4 2:6"
  [qwen3-4b]="2:1 2:2 2:4 2:7")
{
  date -u; echo "engine $(cat build-device/COMMIT) + grid-stride.diff"
  for preset in ${PRESETS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
    for round in $(seq 1 ${ROUNDS:-2}); do
      w2_decode $preset "base#$round" ""
      for v in ${vs[$preset]}; do
        AC_EXP_GS_EPI=${v%%:*} AC_EXP_GPB=${v##*:} w2_decode $preset "gs-epi${v%%:*}-gpb${v##*:}#$round" ""
      done
    done
  done
  date -u
} 2>&1 | tee -a "$out/run1.log"
rm -rf "$out/runs"
