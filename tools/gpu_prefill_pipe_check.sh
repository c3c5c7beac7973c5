#!/usr/bin/env bash
# On the GPU machine: the prompt's attention and rope work that had not run on a GPU.
# 1. GPU tests: attn_prefill.flash and attn_prefill.pipe against double precision on ragged steps
#    (Steps/CudaPrefillFlash.*), both through the fast path against the CPU reference
#    (Presets/CudaPrefillFlashPreset.*), qkv_post from the rope tables bit for bit
#    (CudaFastOps.QkvPost*), swiglu.w16 by 16-byte groups (CudaOps.PrefillPasses*) and the
#    fast path on the presets (Presets/CudaFastPreset.*).
# 2. Time to first token with prefill_flash=1 and =2 against HF eager (tools/gpu_prefill_bench.sh).
# 3. The prompt profile with the faster of the two (tools/gpu_prefill_profile.sh).
# Needs build-device/ carried.
#   [MODELS="llama-3.2-1b qwen3-1.7b"] tools/gpu_prefill_pipe_check.sh -> $OUT/pipe_check.log and the scripts' files
set -uo pipefail
source tools/gpu_common.sh
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  gpu_tests 'Steps/CudaPrefillFlash.*:Presets/CudaPrefillFlashPreset.*:CudaFastOps.QkvPost*:CudaOps.PrefillPasses*:Presets/CudaFastPreset.*'
  CONFIGS="prefill_flash=1 prefill_flash=2" REPEATS=3 timeout 330 tools/gpu_prefill_bench.sh 2>&1 | grep -E "^==|cuda fast"
  AGENTCOMPILE_FAST_CONFIG=prefill_flash=${PROFILE_FLASH:-2} OUT=$out/prof timeout 150 tools/gpu_prefill_profile.sh 2>&1 \
    | grep -E "==|profile: [0-9]+ prompt|gemm|attention|swiglu|cast|rms_norm|qkv_post"
  date -u
} 2>&1 | tee "$out/pipe_check.log"
