#!/usr/bin/env bash
# On the GPU machine: compile each preset for the CUDA backend (the search over the fast path's
# GEMV points and attention parameters, checked end to end), then decode W2 with the plan and
# with the default parameters, and the search-efficiency figures for the CUDA backend
# (llama-3.2-1b only, heuristic vs none advisor, fresh DBs, EFF_BUDGET s each: enough for the
# whole space with the parallel NVRTC builds). One preset takes about 2-3 minutes (H200,
# llama-3.2-1b: a compile explored all 193 candidates in 35 s of a 60 s budget; each
# search-efficiency compile took 27 s).
# Binaries carried in build-device/ (see tools/gpu_fast_check.sh; AC_BIN overrides). GTEST_FILTER
# runs those GPU tests first; SKIP_EFF=1 leaves out the search-efficiency part; WEIGHTS=fp8-block
# (or fp8-channel) compiles the presets synthesised with those weights instead.
#   BUDGET=90 PRESETS="llama-3.2-1b" tools/gpu_compile_check.sh -> $OUT/compile-<preset>/, $OUT/compile_check.log
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
bin=${AC_BIN:-build-device/agentcompile}
db=/tmp/ac-tune.db
p=$(python3 -c "import random; random.seed(1); print(','.join(str(random.randrange(3, 120000)) for _ in range(128)))")
decode_ms() { python3 -c "import json,sys; print(json.load(sys.stdin)['timings']['decode_ms_per_token'])"; }
{
  date -u; echo "engine $(cat build-device/COMMIT 2>/dev/null || echo unknown)"
  if [ -n "${GTEST_FILTER:-}" ]; then
    echo "== GPU tests ($GTEST_FILTER)"
    timeout 300 build-device/agentcompile_tests --gtest_filter="$GTEST_FILTER" 2>&1 \
      | grep -E "FAILED|Failure|Expected|Which|actual|exception|^\[ (attn|compile) \]|^\[  PASSED|tests ran" | head -40
  fi
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    m=/tmp/ac-$preset${WEIGHTS:+-$WEIGHTS}
    [ -f $m/model.safetensors ] || $bin synth-model --preset $preset --out $m --seed 11 ${WEIGHTS:+--weights $WEIGHTS} --quiet >/dev/null
    echo "== $preset ${WEIGHTS:-}: compile --backend cuda --budget ${BUDGET:-90}"
    start=$(date +%s)
    timeout $(( ${BUDGET:-90} + 90 )) $bin compile $m --out /tmp/plan-$preset --backend cuda --budget ${BUDGET:-90} --db $db \
      --json > "$out/compile-$preset.json" 2> "$out/compile-$preset.err"
    echo "compile exit $? in $(( $(date +%s) - start )) s"; tail -12 "$out/compile-$preset.err"
    mkdir -p "$out/compile-$preset" && cp /tmp/plan-$preset/*.json /tmp/plan-$preset/*.md "$out/compile-$preset/" 2>/dev/null
    for run in plan default; do
      args=(--backend cuda --cuda-route fast); [ $run = plan ] && args=(--plan /tmp/plan-$preset)
      ms=$($bin generate $m --prompt-tokens $p --max-tokens 128 --ignore-eos "${args[@]}" --json | decode_ms) || ms=FAILED
      echo "$preset W2 decode with the $run config: $ms ms/token"
    done
  done
  [ "${SKIP_EFF:-0}" = 1 ] || {
  echo "== search efficiency, CUDA backend (llama-3.2-1b, budget ${EFF_BUDGET:-150} s per advisor)"
  start=$(date +%s)
  m=/tmp/ac-llama-3.2-1b
  [ -f $m/model.safetensors ] || $bin synth-model --preset llama-3.2-1b --out $m --seed 11 --quiet >/dev/null
  MODELS=$m BUDGET=${EFF_BUDGET:-150} timeout ${EFF_TIMEOUT:-240} tools/search_efficiency.sh "$bin" "$out/search-efficiency-cuda" cuda 2>&1 | tail -12
  echo "search efficiency exit ${PIPESTATUS[0]} in $(( $(date +%s) - start )) s"
  }
  date -u
} 2>&1 | tee "$out/compile_check.log"
