#!/usr/bin/env bash
# On the GPU machine: the tensor-core batched GEMV (gemv.mma) checked and measured. Every CUDA
# test (both GEMV families against the CPU), a sweep of both families at batch 8 on the target
# shapes, and batched decode at batch 2, 4 and 8 (bench e2e, 128-token prompt, 64 new tokens)
# with gemv.mma and with gemv.fused (AGENTCOMPILE_FAST_CONFIG=batched_mma=0). Binaries carried
# in build-device/ (tools/build_device.sh).
#   tools/gpu_mma_check.sh -> $OUT/mma_check.log, $OUT/sweep-b8.txt, $OUT/mma-check.tgz (with
#   sweep-b8.jsonl and batched-<model>-<config>.{json,err})
set -uo pipefail
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
bin=build-device/agentcompile
{
  date -u; echo "engine $(cat build-device/COMMIT 2>/dev/null || echo unknown)"
  if [ "${SKIP_TESTS:-0}" != 1 ]; then
    echo "== GPU tests (${GTEST_FILTER:-*Cuda*})"
    AGENTCOMPILE_GPU_LARGE=1 timeout 300 build-device/agentcompile_tests --gtest_filter="${GTEST_FILTER:-*Cuda*}" 2>&1 \
      | grep -E "FAILED|Failure|Expected|Which|actual|error|exception|^\[  PASSED|^\[ (fast|fixture)|tests ran" | head -60
  fi
  echo "== sweep at batch ${SWEEP_BATCH:-8} (gemv.fused and gemv.mma)"
  SWEEP_BATCH=${SWEEP_BATCH:-8} SWEEP_FAMILY=${SWEEP_FAMILY:-both} timeout ${SWEEP_TIMEOUT:-200} build-device/kernel_sweep ${SWEEP_MODELS:-llama-3.2-1b qwen3-1.7b qwen3-4b} \
    > "$out/sweep-b8.jsonl" 2> "$out/sweep-b8.txt"
  echo "sweep rc=$?"; cat "$out/sweep-b8.txt"
  grep -c '"status":"ok"' "$out/sweep-b8.jsonl" | sed 's/^/measured points: /'
  grep -c '"status":"wrong"' "$out/sweep-b8.jsonl" | sed 's/^/wrong results: /'
  grep '"status":"wrong"' "$out/sweep-b8.jsonl" | head -5
  echo "== batched decode (bench e2e, 128/64 x 1, 2, 4, 8)"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b}; do
    m=/tmp/ac-$preset
    [ -f $m/model.safetensors ] || $bin synth-model --preset $preset --out $m --seed 11 --quiet >/dev/null
    for cfg in batched_mma=1 batched_mma=0; do
      AGENTCOMPILE_FAST_CONFIG=$cfg timeout 200 $bin bench e2e --backend cuda --cuda-route fast --model $m \
        --workloads 128/64,128/64x2,128/64x4,128/64x8 --repeats 2 --quiet --json-out "$out/batched-$preset-$cfg.json" \
        --md-out /tmp/batched.md >/dev/null 2>"$out/batched-$preset-$cfg.err" || { echo "bench e2e $preset $cfg FAILED"; tail -3 "$out/batched-$preset-$cfg.err"; }
      echo "-- $preset $cfg"; grep -E "^\|" /tmp/batched.md | cut -c1-220
    done
  done
  date -u
} 2>&1 | tee "$out/mma_check.log"
# The device returns at most 8 files: the JSONL and the per-run reports travel in one archive.
tar czf "$out/mma-check.tgz" -C "$out" --exclude mma-check.tgz . && find "$out" -maxdepth 1 -type f \
  ! -name mma-check.tgz ! -name mma_check.log ! -name sweep-b8.txt -delete
