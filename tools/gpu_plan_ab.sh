#!/usr/bin/env bash
# On the GPU machine: W2 decode (128-token prompt, 128 greedy tokens) of each preset with its
# compiled plan (/tmp/plan-<preset>, from tools/gpu_compile_check.sh) and with the engine's
# defaults, interleaved ROUNDS times (default 2), so a plan's gain is read against the spread.
#   PRESETS="llama-3.2-1b qwen3-1.7b" tools/gpu_plan_ab.sh -> $OUT/plan_ab.log (appended)
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
bin=${AC_BIN:-build-device/agentcompile}
p=$(python3 -c "import random; random.seed(1); print(','.join(str(random.randrange(3, 120000)) for _ in range(128)))")
{
  date -u; echo "engine $(cat build-device/COMMIT 2>/dev/null || echo unknown)"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    m=/tmp/ac-$preset
    [ -d /tmp/plan-$preset ] || { echo "$preset: no plan at /tmp/plan-$preset"; continue; }
    for round in $(seq 1 ${ROUNDS:-2}); do
      for run in plan default; do
        args=(--backend cuda --cuda-route fast); [ $run = plan ] && args=(--plan /tmp/plan-$preset)
        $bin generate $m --prompt-tokens $p --max-tokens 128 --ignore-eos "${args[@]}" --json > /tmp/pab.json 2>/tmp/pab.err \
          && python3 - "$preset" "$run#$round" <<'PY' || echo "$preset $run#$round FAILED: $(tail -1 /tmp/pab.err)"
import json, sys, zlib
g = json.load(open("/tmp/pab.json")); t = g["timings"]
print(f"{sys.argv[1]:14s} {sys.argv[2]:10s} decode {t['decode_ms_per_token']:.4f} ms/token  tokens crc {zlib.crc32(str(g['tokens']).encode()):08x}")
PY
      done
    done
  done
  date -u
} 2>&1 | tee -a "$out/plan_ab.log"
