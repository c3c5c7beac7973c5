#!/usr/bin/env bash
# On the GPU machine: FP8 weights at batch 2-8 on the tensor cores (gemv.mma_fp8, the override
# fp8_batched_mma=1) against gemv.fp8 (the default). The GPU tests first (CudaGemvFp8's Mma cases
# against the CPU reference on the dequantized weights, with gemv.fp8's and gemv.mma's cases beside
# them, since gemv.mma's end moved into mma_finish), then W5 (batch 8, fast route) of each model's
# fp8-block synthetic folder through bench e2e with each setting, ROUNDS rounds interleaved; the
# floor counts the weights as stored, the semantic check is against the CPU reference of the same
# quantized weights. Needs build-device/ carried.
#   [MODELS="qwen3-1.7b llama-3.2-1b"] [ROUNDS=2] tools/gpu_fp8_batch.sh
#     -> $OUT/fp8_batch.log, $OUT/w5-<model>-<mma0|mma1>-<round>.{json,md}
set -uo pipefail
source tools/gpu_common.sh
log=$out/fp8_batch.log
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  [ -n "${SKIP_TESTS:-}" ] || gpu_tests '*CudaGemvFp8*:Mma/CudaGemv.*'
  for m in ${MODELS:-qwen3-1.7b llama-3.2-1b}; do
    dir=/tmp/ac-$m-fp8-block
    [ -f "$dir/model.safetensors" ] || $bin synth-model --preset "$m" --out "$dir" --seed 11 --weights fp8-block --quiet >/dev/null
    for r in $(seq "${ROUNDS:-2}"); do
      for v in 0 1; do
        AGENTCOMPILE_FAST_CONFIG=fp8_batched_mma=$v timeout 300 $bin bench e2e --model "$dir" --backend cuda --cuda-route fast \
          --workloads W5 --repeats 3 --validate-tokens 8 --json-out "$out/w5-$m-mma$v-$r.json" --md-out "$out/w5-$m-mma$v-$r.md" \
          --quiet 2>"$out/runs/w5.err" >/dev/null
        echo "$m fp8_batched_mma=$v round $r: exit $? $(tail -1 "$out/runs/w5.err")"
        e2e_rows "$out/w5-$m-mma$v-$r.json"
      done
    done
  done
  date -u
} 2>&1 | tee "$log"
