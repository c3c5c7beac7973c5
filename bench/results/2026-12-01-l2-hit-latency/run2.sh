#!/usr/bin/env bash
# Session 20 run 2: W2 decode on session 18's plans with the GEMVs' resident blocks per SM capped
# (AC_GEMV_BPS, an experiment in this build only: fewer bytes in flight on the chip, so the L2
# hits of each GEMV's staging and of the attention wait less). Same binary throughout.
set -uo pipefail
. tools/gpu_common.sh
export PLANS_IN=bench/results/2026-12-01-argmax-finish/plans
{
  date -u; cat build-device/COMMIT
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
  gpu_tests "CudaCompile.*:CompileReport.*:CudaFastPreset.*"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    AC_GEMV_BPS="qkv=99,o=99,gate_up=99,down=99" w2_decode $preset "natural" ""
    grep -h "\[exp\]" $out/runs/$preset-natural.err | sort -u
    for v in "" "gate_up=4" "gate_up=3" "down=3" "down=2" "qkv=3" "qkv=2" "o=3" "o=2" "" "gate_up=4,down=3" "gate_up=3,down=3,qkv=3,o=3" "gate_up=3,down=2,qkv=2,o=2"; do
      AC_GEMV_BPS="$v" w2_decode $preset "bps:${v:-none}" ""
      grep -h "\[exp\]" $out/runs/$preset-bps:${v:-none}.err | sort -u | sed 's/^/    /'
    done
  done
  date -u
} 2>&1 | tee -a "$out/run2.log"
