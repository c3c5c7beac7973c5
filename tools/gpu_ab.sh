#!/usr/bin/env bash
# On the GPU machine: W2 decode (128-token prompt, 128 new tokens, greedy, batch 1) of several
# engine builds in one run, interleaved per preset and repeated (ROUNDS, default 2) so that every
# build sees the same machine and the spread shows; each build is a folder holding agentcompile
# (and COMMIT). VARIANTS: fast-path overrides run on build-device/ after the builds. PROMPT_LEN:
# the prompt's length (default 128, W2; 2048 gives W3's context). GPU tests of
# build-device/ first (GTEST_FILTER; SKIP_TESTS=1 leaves them out).
#   BUILDS="build-device-head build-device" VARIANTS="attn_split=64" tools/gpu_ab.sh -> $OUT/ab.log (appended
#   by each call), $OUT/ab-<time>.tgz
set -uo pipefail
. tools/gpu_common.sh
{
  date -u
  for b in ${BUILDS:-build-device-head build-device}; do echo "$b: $(cat $b/COMMIT)"; done
  echo "prompt: ${PROMPT_LEN:-128} tokens, 128 generated"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
  [ "${SKIP_TESTS:-0}" = 1 ] || gpu_tests "${GTEST_FILTER:-*CudaGemv*:*CudaDecodeAttention*:*FastConfig*}"
  main_bin=$bin
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    for round in $(seq 1 ${ROUNDS:-2}); do
      for b in ${BUILDS:-build-device-head build-device}; do bin=$b/agentcompile; w2_decode $preset "$b#$round" ""; done
    done
    bin=$main_bin
    for v in ${VARIANTS:-}; do w2_decode $preset "build-device:$v" "$v"; done
  done
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
  date -u
} 2>&1 | tee -a "$out/ab.log"
tar czf "$out/ab-$(date +%s).tgz" -C "$out" runs && rm -rf "$out/runs"
