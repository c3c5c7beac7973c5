#!/usr/bin/env bash
# On the GPU machine: what earlier commits changed without a GPU run, checked in one call.
# Every CUDA test (the attention kernel at ILP 1 and 4, the CUDA search's GPU tests, plan kernel
# binaries), then W2 decode (128-token prompt, 128 new tokens, greedy) per preset with the default
# fast-path config and with attention variations (ILP 4; splits), and batched decode of
# llama-3.2-1b at batch 1/2/4/8 (gemv.mma from batch 3, gemv.fused below), whether ncu can time
# kernels here (SKIP_TESTS, SKIP_BATCHED, SKIP_NCU=1 leave parts out; VARIANTS replaces the
# variations). Binaries carried in build-device/ (tools/build_device.sh).
#   tools/gpu_verify.sh -> $OUT/verify.log, $OUT/verify.tgz (per-run JSON)
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "engine $(cat build-device/COMMIT 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  [ "${SKIP_TESTS:-0}" = 1 ] || gpu_tests "${GTEST_FILTER:-*Cuda*}"
  echo "== W2 decode per preset: defaults vs attention variations"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    w2_decode $preset default ""
    for v in ${VARIANTS:-attn_ilp=4 attn_split=64 attn_split=128 attn_split=256 attn_split=64,attn_ilp=4}; do w2_decode $preset "$v" "$v"; done
    w2_decode $preset default-again ""
  done
  m=/tmp/ac-llama-3.2-1b
  [ "${SKIP_BATCHED:-0}" = 1 ] || { echo "== batched decode, llama-3.2-1b (bench e2e 128/64 at batch 1, 2, 4, 8)"
  timeout 200 $bin bench e2e --backend cuda --cuda-route fast --model $m --workloads 128/64,128/64x2,128/64x4,128/64x8 \
    --repeats 2 --quiet --json-out "$out/runs/batched.json" --md-out /tmp/batched.md >/dev/null 2>"$out/runs/batched.err" \
    && grep -E "^\|" /tmp/batched.md | cut -c1-200 || { echo "batched FAILED"; tail -3 "$out/runs/batched.err"; }; }
  [ "${SKIP_NCU:-0}" = 1 ] || { echo "== ncu probe"
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:gemv --launch-count 3 \
    $bin generate $m --prompt-tokens 1,2,3 --max-tokens 2 --ignore-eos --backend cuda --cuda-route fast > "$out/runs/ncu.txt" 2>&1
  echo "ncu rc=$?"; grep -E "gpu__time_duration|==PROF==|ERR" "$out/runs/ncu.txt" | head -8; }
  date -u
} 2>&1 | tee "$out/verify.log"
tar czf "$out/verify.tgz" -C "$out" runs && rm -rf "$out/runs"
