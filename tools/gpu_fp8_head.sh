#!/usr/bin/env bash
# On the GPU machine: the FP8 lm_head variant (compile --lm-head fp8) against the 16-bit head, both
# with fp8-block projections. The GPU tests first (CudaFastFp8 with "+head": the argmax and the
# prompt's logit rows through gemv.fp8, against the CPU reference and the library route), then per
# model two short CUDA compiles of its bf16 synthetic folder (--weights fp8-block, with and without
# --lm-head fp8; the head region's gemv.fp8 points searched in the second) and W2 through bench e2e
# with each plan, ROUNDS rounds interleaved; the floor counts the weights as stored, the semantic
# check is against the CPU reference of the same quantized weights. Needs build-device/ carried.
#   [MODELS="llama-3.2-1b qwen3-1.7b"] [BUDGET=40] [ROUNDS=2] tools/gpu_fp8_head.sh
#     -> $OUT/fp8_head.log, $OUT/compile-<model>-<variant>.err, $OUT/w2-<model>-<variant>-<round>.{json,md}
set -uo pipefail
source tools/gpu_common.sh
log=$out/fp8_head.log
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  [ -n "${SKIP_TESTS:-}" ] || gpu_tests 'Models/CudaFastFp8*'
  grep -E "^\[ fp8 \]" "$out/runs/tests.txt" 2>/dev/null
  for m in ${MODELS:-llama-3.2-1b qwen3-1.7b}; do
    dir=/tmp/ac-$m
    [ -f "$dir/model.safetensors" ] || $bin synth-model --preset "$m" --out "$dir" --seed 11 --quiet >/dev/null
    for v in head16 head8; do
      flags=(--weights fp8-block)
      [ $v = head8 ] && flags+=(--lm-head fp8)
      rm -rf "/tmp/ac-plan-$m-$v"
      timeout 400 $bin compile "$dir" --out "/tmp/ac-plan-$m-$v" --db /tmp/ac-fp8-head.db --backend cuda \
        --budget "${BUDGET:-40}" --no-step-tuning "${flags[@]}" >/dev/null 2>"$out/compile-$m-$v.err"
      echo "$m $v: compile exit $? $(grep -E 'lm_head|head ' "$out/compile-$m-$v.err" | tail -1)"
    done
    for r in $(seq "${ROUNDS:-2}"); do
      for v in head16 head8; do
        timeout 300 $bin bench e2e --model "$dir" --plan "/tmp/ac-plan-$m-$v" --workloads W2 --repeats 3 --validate-tokens 8 \
          --json-out "$out/w2-$m-$v-$r.json" --md-out "$out/w2-$m-$v-$r.md" --quiet 2>"$out/runs/w2.err" >/dev/null
        echo "$m $v round $r: exit $? $(tail -1 "$out/runs/w2.err")"
        e2e_rows "$out/w2-$m-$v-$r.json"
      done
    done
  done
  date -u
} 2>&1 | tee "$log"
