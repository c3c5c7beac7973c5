#!/usr/bin/env bash
# On the GPU machine: the prompt's attention path (qkv_post.rows, then attn_prefill.pipe writing
# the output projection's 16-bit input).
# 1. GPU tests: attn_prefill.pipe against double precision on ragged steps, its 16-bit output bit
#    for bit (Steps/CudaPrefillFlash.*), the fast path's prefill against the CPU reference
#    (Presets/CudaPrefillFlashPreset.*, Presets/CudaFastPreset.*), qkv_post.rows against
#    qkv_post.fused (CudaFastOps.QkvPost*), the prefill passes (CudaOps.PrefillPasses*) and FP8.
# 2. The prompt profile of both models (tools/gpu_prefill_profile.sh).
# 3. W3's time to first token at attn_prefill.pipe's (BLOCK, BK) points (SWEEP=0 leaves it out).
# Needs build-device/ carried.
#   [MODELS="llama-3.2-1b qwen3-1.7b"] tools/gpu_prefill_pipe_check.sh -> $OUT/pipe_check.log and the scripts' files
set -uo pipefail
source tools/gpu_common.sh
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  gpu_tests 'Steps/CudaPrefillFlash.*:Presets/CudaPrefillFlashPreset.*:CudaFastOps.QkvPost*:CudaOps.PrefillPasses*:Presets/CudaFastPreset.*:*CudaFastFp8*'
  OUT=$out/prof timeout 150 tools/gpu_prefill_profile.sh 2>&1 \
    | grep -E "==|profile: [0-9]+ prompt|gemm|attention|swiglu|cast|rms_norm|qkv_post|\| "
  if [ "${SWEEP:-1}" = 1 ]; then
    echo "== W3 TTFT at attn_prefill.pipe's points (BLOCK:BK)"
    for m in ${MODELS:-llama-3.2-1b qwen3-1.7b}; do
      for pt in 128:64 256:64 64:64 128:32 256:32; do
        AGENTCOMPILE_FAST_CONFIG=prefill_flash_block=${pt%:*},prefill_flash_bk=${pt#*:} timeout 60 $bin bench e2e --model /tmp/ac-$m \
          --backend cuda --workloads W3 --repeats 3 --validate-tokens 1 --reference peer --quiet 2>/dev/null \
          | grep -E "^\| ac-" | awk -F'|' -v pt=$pt -v m=$m '{print m, pt, "TTFT", $7, "ms"}'
      done
    done
  fi
  date -u
} 2>&1 | tee "$out/pipe_check.log"
