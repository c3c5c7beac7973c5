#!/usr/bin/env bash
# On the GPU machine: the model and weight-format checks only a machine with torch, transformers
# and a GPU can make. Needs build-device/ carried (and .deps/gputok for the serve check).
#   0. the GPU tests of the generic route, the prefill flash attention, gemv.fp8 and the ops (the
#      16-bit GEMV tests again: gemv.fp8 shares their template)
#   1. HF fixtures of the mixture-of-experts architectures and of both FP8 checkpoint formats
#      (tools/make_hf_moe_fixtures.py, tools/make_hf_fp8_fixtures.py) -> $OUT/hf_*_fixtures.tar.gz
#   2. synth-model's MoE and FP8 folders loaded by transformers (tools/check_synth_hf.py)
#   3. FP8 and MoE models on the CUDA backend: greedy tokens against the CPU backend's, and compile
#   4. a fast-path compile with the decode-step tuning, and serve on CUDA (tools/gpu_serve_check.sh)
#   [STAGES=tests,prefill,fixtures,synth,backends,fast,serve] tools/gpu_models_check.sh
#     -> $OUT/models_check.log and the files above (STAGES picks some, so that each call fits a lease's
#        ten-minute limit: e.g. STAGES=tests,backends,fast then STAGES=prefill,fixtures,synth,serve)
set -uo pipefail
source tools/gpu_common.sh
stages=,${STAGES:-tests,prefill,fixtures,synth,backends,fast,serve},
want() { [[ $stages == *,$1,* ]]; }
log=$out/models_check.log
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "build-device: $(cat build-device/COMMIT)"
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  want tests && gpu_tests '*PrefillFlash*:*CudaMoe*:*CudaAttention.*:*CudaGenericRoute*:*CudaFixture.*:CudaOps*:*CudaLinear*:*CudaGemvFp8*:*CudaGemv.*:CudaFastOps*'
  if want prefill; then
  echo "== prefill of 2048 tokens (W3's prompt), decode attention per row (prefill_flash=0) vs attn_prefill.pipe (the default)"
  m=/tmp/ac-qwen3-1.7b
  [ -f "$m/model.safetensors" ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --quiet
  p2048=$(python3 -c "import random; random.seed(1); print(','.join(str(random.randrange(3, 120000)) for _ in range(2048)))")
  for cfg in prefill_flash=0 "" prefill_flash_bk=32 prefill_flash_block=256; do
    for rep in 1 2; do
      AGENTCOMPILE_FAST_CONFIG=$cfg $bin generate $m --prompt-tokens $p2048 --max-tokens 16 --ignore-eos --backend cuda \
        --cuda-route fast --json 2> "$out/runs/w3.err" | python3 -c "
import json, sys, zlib; d = json.load(sys.stdin); t = d['timings']
print(f\"{sys.argv[1] or 'default':44s} prefill {t['prefill_ms']:.2f} ms, decode {t['decode_ms_per_token']:.4f} ms/token, tokens crc {zlib.crc32(str(d['tokens']).encode()):08x}\")" "$cfg" ||
        echo "$cfg FAILED: $(tail -1 "$out/runs/w3.err")"
    done
  done
  fi
  if want fixtures; then
  echo "== HF fixtures: mixture of experts"
  timeout 240 python3 tools/make_hf_moe_fixtures.py --out "$out/hf_moe_fixtures.tar.gz" 2>&1 | tail -8
  echo "== HF fixtures: FP8"
  timeout 240 python3 tools/make_hf_fp8_fixtures.py --out "$out/hf_fp8_fixtures.tar.gz" 2>&1 | tail -12
  fi
  if want synth; then
  echo "== synth-model folders in transformers"
  timeout 300 python3 tools/check_synth_hf.py --bin "$bin" --out "$out/synth_check.json" \
    --presets tiny-qwen3-moe,tiny-mixtral,tiny-qwen3:fp8-block,tiny-qwen3:fp8-channel 2>&1 | tail -20
  fi
  if want backends; then
  echo "== FP8 and MoE on the CUDA backend (greedy against the CPU backend)"
  for spec in tiny-qwen3:fp8-block tiny-qwen3:fp8-channel tiny-llama:fp8-block tiny-qwen3-moe: tiny-mixtral: tiny-qwen3-moe:fp8-block; do
    p=${spec%%:*} w=${spec#*:} m=/tmp/ac-$p-${w:-bf16}
    [ -f "$m/config.json" ] || $bin synth-model --preset "$p" --out "$m" --seed 7 ${w:+--weights $w} --quiet
    for be in cpu cuda; do
      $bin generate "$m" --prompt-tokens 3,1,4,1,5,9,2,6 --max-tokens 24 --ignore-eos --backend $be --json \
        > "$out/runs/gen-$p-$w-$be.json" 2> "$out/runs/gen-$p-$w-$be.err"
      echo "$spec $be exit $? $(tail -1 "$out/runs/gen-$p-$w-$be.err")"
    done
    python3 - "$out/runs/gen-$p-$w-cpu.json" "$out/runs/gen-$p-$w-cuda.json" "$spec" <<'PY'
import json, sys
try:
    a, b = (json.load(open(f)) for f in sys.argv[1:3])
except Exception as e:
    print(f"{sys.argv[3]}: no comparison ({e})"); sys.exit()
n = next((i for i, (x, y) in enumerate(zip(a["tokens"], b["tokens"])) if x != y), len(a["tokens"]))
print(f"{sys.argv[3]}: cpu {a['tokens'][:8]} cuda {b['tokens'][:8]} agree on {n} of {len(a['tokens'])}")
PY
    $bin compile "$m" --backend cuda --out "/tmp/ac-plan-$p-${w:-bf16}" --budget 10 > "$out/runs/compile-$p-$w.log" 2>&1
    echo "$spec compile --backend cuda exit $?: $(tail -1 "$out/runs/compile-$p-$w.log")"
  done
  echo "== FP8 qwen3-1.7b (real shapes) on CUDA: W2 decode"
  m=/tmp/ac-qwen3-1.7b-fp8
  [ -f "$m/config.json" ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --weights fp8-block --quiet
  $bin generate $m --prompt-tokens $w2_prompt --max-tokens 64 --ignore-eos --backend cuda --json 2> "$out/runs/fp8-1.7b.err" |
    python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps(d['timings']), d['tokens'][:8])" || tail -2 "$out/runs/fp8-1.7b.err"
  rm -rf $m
  fi
  if want fast; then
  echo "== a fast-path compile of tiny-qwen3 with the decode-step tuning"
  $bin synth-model --preset tiny-qwen3 --out /tmp/ac-tq --seed 7 --quiet
  timeout 90 $bin compile /tmp/ac-tq --backend cuda --out /tmp/ac-tq-plan --budget 30 > "$out/runs/compile-tq.log" 2>&1
  echo "exit $?: $(tail -2 "$out/runs/compile-tq.log")"
  fi
  if want serve; then
  echo "== serve on CUDA"
  [ -f .deps/gputok/tokenizer.json ] || gunzip -k .deps/gputok/tokenizer.json.gz
  TOKENIZER=.deps/gputok timeout 200 tools/gpu_serve_check.sh > /dev/null 2>&1; cat "$out/serve.log" | tail -25
  fi
  date -u
} 2>&1 | tee "$log"
