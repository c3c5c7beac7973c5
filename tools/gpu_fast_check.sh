#!/usr/bin/env bash
# On the GPU machine: every GPU test (fast-path kernels included), then decode speed of the fast
# path vs the library route on the three target shapes (W2: 128-token prompt, 128 new tokens,
# batch 1, greedy), against the weight-streaming floor at the copy bandwidth measured in the
# same run. Binaries carried in build-device/ (built from a checkout at $AC_BUILD_ROOT).
#   tools/gpu_fast_check.sh  -> $OUT/fast_check.log, $OUT/decode.json
set -uo pipefail
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
bin=build-device/agentcompile
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  if [ "${SKIP_TESTS:-0}" != 1 ]; then
    echo "== GPU tests"
    AGENTCOMPILE_GPU_LARGE=1 build-device/agentcompile_tests --gtest_filter="${GTEST_FILTER:-*Cuda*}" 2>&1 \
      | grep -E "^\[  |^\[ (fast|fixture|qwen)|FAILED|Failure|Expected|Which|actual|error|exception" | grep -v "^\[       OK" | head -80
    AGENTCOMPILE_GPU_LARGE=1 build-device/agentcompile_tests --gtest_filter="${GTEST_FILTER:-*Cuda*}" 2>&1 | tail -3
  fi
  echo "== copy bandwidth in TB/s (torch, 4 GiB device-to-device, read + write counted)"
  python3 - <<'PY' | tee "$out/copy_bw.txt"
import torch
a = torch.randn(1 << 30, device="cuda"); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ts = []
for _ in range(10):
    s.record(); b.copy_(a); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
ts.sort(); ms = ts[len(ts) // 2]
print(f"{2 * a.numel() * 4 / ms / 1e9:.3f}")  # TB/s
PY
  bw=$(tail -1 "$out/copy_bw.txt")
  echo "== decode, W2 (prompt 128, 128 new tokens, batch 1, greedy, bf16)"
  p=$(python3 -c "import random; random.seed(1); print(','.join(str(random.randrange(3, 120000)) for _ in range(128)))")
  echo "[" > "$out/decode.json"; first=1
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    m=/tmp/ac-$preset
    [ -f $m/model.safetensors ] || $bin synth-model --preset $preset --out $m --seed 11 --quiet >/dev/null
    bytes=$($bin inspect $m --json | python3 -c "import json,sys; print(json.load(sys.stdin)['bytes'])")
    for route in fast library; do
      $bin generate $m --prompt-tokens $p --max-tokens 128 --ignore-eos --backend cuda --cuda-route $route --json > /tmp/gen.json || { echo "$preset $route FAILED"; continue; }
      python3 - "$preset" "$route" "$bytes" "$bw" /tmp/gen.json "$first" >> "$out/decode.json" <<'PY'
import json, sys
preset, route, nbytes, bw, path, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6] == "1"
g = json.load(open(path)); t = g["timings"]
floor_ms = nbytes / (bw * 1e12) * 1e3  # bw in TB/s
row = {"model": preset, "route": route, "weight_bytes": nbytes, "copy_GBps": bw, "floor_ms": floor_ms,
       "decode_ms_per_token": t["decode_ms_per_token"], "prefill_ms": t["prefill_ms"],
       "pct_of_floor": 100 * floor_ms / t["decode_ms_per_token"], "achieved_GBps": nbytes / t["decode_ms_per_token"] / 1e6,
       "tokens": g["tokens"][:16]}
print(("" if first else ",") + json.dumps(row))
print(f"{preset:14s} {route:8s} decode {t['decode_ms_per_token']:7.3f} ms/token  floor {floor_ms:.3f}  "
      f"{row['pct_of_floor']:5.1f}% of floor  prefill {t['prefill_ms']:.1f} ms", file=sys.stderr)
PY
      first=0
    done
  done
  echo "]" >> "$out/decode.json"
  echo "== decode attention parameters (AGENTCOMPILE_FAST_CONFIG override; W2, ms/token)"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    for cfg in ${ATTN_CONFIGS:-attn_split=32 attn_split=64 attn_split=256 attn_block=512 attn_block=512,attn_split=64 attn_block=512,attn_split=256 pdl=0}; do
      ms=$(AGENTCOMPILE_FAST_CONFIG=$cfg $bin generate /tmp/ac-$preset --prompt-tokens $p --max-tokens 128 --ignore-eos --backend cuda --cuda-route fast --json \
           | python3 -c "import json,sys; print(json.load(sys.stdin)['timings']['decode_ms_per_token'])") || ms=FAILED
      echo "$preset $cfg $ms"
    done
  done
  echo "== per-kernel profile of the fast path (eager launches with events; 64 decode steps)"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    echo "-- $preset"
    AGENTCOMPILE_PROFILE=1 $bin generate /tmp/ac-$preset --prompt-tokens $p --max-tokens 64 --ignore-eos --backend cuda --cuda-route fast --json 2>&1 >/dev/null | grep -v "^$"
  done
} 2>&1 | tee "$out/fast_check.log"
