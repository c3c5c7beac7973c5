#!/usr/bin/env bash
# On the GPU machine: time to first token and decode with the fast path's two prompt attentions
# (the decode attention once per prompt row, prefill_flash=0; attn_prefill.pipe, prefill_flash=1)
# against HF eager on the same synthetic models (real shapes, bf16, seed 11) in the same run:
# bench e2e (warm-up, then REPEATS runs) with the eager peer's record for the semantic check.
# Needs build-device/ carried.
# CONFIGS: the fast-path overrides compared (default "prefill_flash=0 prefill_flash=1"; e.g.
# "prefill_w16=0 prefill_w16=1" for the prefill GEMMs' 16-bit inputs).
#   [MODELS="llama-3.2-1b qwen3-1.7b"] [WORKLOADS=W1,W2,W3] [REPEATS=3] [CONFIGS=...] tools/gpu_prefill_bench.sh
#     -> $OUT/peer-hf-eager-MODEL.json, $OUT/e2e-KNOBVALUE.{json,md} (prefill_flash0, ...), $OUT/prefill_bench.log
set -uo pipefail
source tools/gpu_common.sh
log=$out/prefill_bench.log
wl=${WORKLOADS:-W1,W2,W3}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  models=() peers=()
  for m in ${MODELS:-llama-3.2-1b qwen3-1.7b}; do
    d=/tmp/ac-$m
    [ -f "$d/config.json" ] || $bin synth-model --preset $m --out $d --seed 11 --quiet
    timeout 240 python3 bench/peers/hf_eager.py --model $d --workloads $wl --repeats ${REPEATS:-3} \
      --out "$out/peer-hf-eager-$m.json" 2>&1 | tail -2
    models+=("$d"); peers+=(--peer "$out/peer-hf-eager-$m.json")
  done
  for cfg in ${CONFIGS:-prefill_flash=0 prefill_flash=1}; do
    echo "== ours, $cfg"
    AGENTCOMPILE_FAST_CONFIG=$cfg timeout 200 $bin bench e2e --model "${models[@]}" --backend cuda --workloads $wl \
      --repeats ${REPEATS:-3} "${peers[@]}" --json-out "$out/e2e-${cfg//=/}.json" --md-out "$out/e2e-${cfg//=/}.md" --quiet 2>&1 | tail -30
  done
  date -u
} 2>&1 | tee "$log"
