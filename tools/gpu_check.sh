#!/usr/bin/env bash
# On the GPU machine (device run), from the repo root, with stripped binaries carried in
# build-device/ (agentcompile, agentcompile_tests built from a checkout at $AC_BUILD_ROOT):
#   tools/gpu_check.sh   -> $OUT/gpu_check.log (+ $OUT/gpu_tests.xml)
# Runs every GPU test (op-by-op against the CPU reference, the HF fixtures on both linear routes,
# a synthetic Qwen3-1.7B generating 128 tokens) and the CLI on the GPU.
set -uo pipefail
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}
mkdir -p "$out"
# The test binary has the fixture path of the checkout it was built in compiled in.
root=${AC_BUILD_ROOT:-/tmp/lead}
[ -e "$root" ] || ln -s "$(pwd)" "$root"
bin=build-device/agentcompile
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  echo "== kernels --compile-all --arch sm_90 (NVRTC, cold cache)"
  $bin kernels --compile-all --arch sm_90 | tail -3
  echo "== GPU tests"
  AGENTCOMPILE_GPU_LARGE=1 build-device/agentcompile_tests --gtest_filter='*Cuda*' \
    --gtest_output=xml:"$out/gpu_tests.xml" 2>&1 | grep -E "^\[|fixture|qwen3|no GPU|Failure|Expected|actual|Which|error" 
  echo "== CLI: generate --backend cuda on a fixture, greedy vs the CPU backend"
  fx=tests/fixtures/hf/qwen3_mha_untied_5x
  $bin generate $fx --prompt-tokens 3,1,4,1,5,9,2,6 --max-tokens 24 --ignore-eos --backend cuda --json
  $bin generate $fx --prompt-tokens 3,1,4,1,5,9,2,6 --max-tokens 24 --ignore-eos --backend cpu --json
  $bin generate $fx --prompt-tokens 3,1,4 --max-tokens 16 --ignore-eos --backend auto --temperature 0.8 --top-p 0.9 --seed 3 --json
  echo "== CLI: synthetic qwen3-1.7b, 128 prompt tokens, 128 generated, cuda backend (reference kernels + cuBLAS, untuned)"
  m=/tmp/ac-qwen3-1.7b-e2e
  [ -f $m/model.safetensors ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --quiet
  p=$(python3 -c "import random; random.seed(1); print(','.join(str(random.randrange(150000)) for _ in range(128)))")
  $bin generate $m --prompt-tokens $p --max-tokens 128 --ignore-eos --backend cuda --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ('finish_reason','backend','timings')}), 'tokens', len(d['tokens']))"
} 2>&1 | tee "$out/gpu_check.log"
