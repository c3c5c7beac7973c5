#!/usr/bin/env bash
# On the GPU machine: where a long prompt's time goes on the fast path. bench e2e workload 2048/8
# (a 2048-token prompt, 8 greedy tokens) with AGENTCOMPILE_PROFILE=1, so every prompt step runs
# launch by launch with events between its kernels; the executor prints each kind's time per
# prompt step (GEMMs with their TFLOP/s, the others with the GB/s of the bytes they must move) and
# the bench's TTFT beside it. The executor leaves out its first prompt step (the warm-up, which
# loads cuBLAS's kernels for the GEMMs' shapes); modules load eagerly as well.
# Needs build-device/ carried.
#   [MODELS="llama-3.2-1b qwen3-1.7b"] [WEIGHTS=fp8-block] tools/gpu_prefill_profile.sh -> $OUT/prefill_profile.log
set -uo pipefail
source tools/gpu_common.sh
log=$out/prefill_profile.log
{
  date -u; nvidia-smi --query-gpu=name --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  for preset in ${MODELS:-llama-3.2-1b qwen3-1.7b}; do
    m=/tmp/ac-$preset${WEIGHTS:+-$WEIGHTS}
    [ -f $m/model.safetensors ] || $bin synth-model --preset $preset --out $m --seed 11 ${WEIGHTS:+--weights $WEIGHTS} --quiet >/dev/null
    echo "== $preset ${WEIGHTS:-bf16}: 2048/8, profiled"
    CUDA_MODULE_LOADING=EAGER AGENTCOMPILE_PROFILE=1 timeout 200 $bin bench e2e --model $m --backend cuda --workloads 2048/8 \
      --repeats 3 --validate-tokens 1 --reference peer --quiet 2>&1 | grep -E "^profile|^  [a-z_]|^\|" | head -60
  done
  date -u
} 2>&1 | tee "$log"
