#!/usr/bin/env bash
# Session 13, run 1: decode_layers.persistent's first GPU run: a smoke decode (hang check), the GPU
# tests, then W2 decode of the chain and the persistent kernel, interleaved.
. tools/gpu_common.sh
wd() {  # w2_decode with a time limit (a deadlocked persistent kernel must not eat the lease)
  local m=/tmp/ac-$1
  [ -f $m/model.safetensors ] || $bin synth-model --preset $1 --out $m --seed 11 --quiet >/dev/null
  AGENTCOMPILE_FAST_CONFIG=$3 timeout ${4:-120} $bin generate $m --prompt-tokens $w2_prompt --max-tokens 128 --ignore-eos --backend cuda \
    --cuda-route fast --json > "$out/runs/$1-$2.json" 2> "$out/runs/$1-$2.err" || { echo "$1 $2 FAILED rc=$?: $(tail -1 "$out/runs/$1-$2.err")"; return; }
  python3 - "$out/runs/$1-$2.json" "$1" "$2" <<'PY'
import json, sys, zlib
g = json.load(open(sys.argv[1])); t = g["timings"]
print(f"{sys.argv[2]:14s} {sys.argv[3]:26s} decode {t['decode_ms_per_token']:.4f} ms/token  tokens crc {zlib.crc32(str(g['tokens']).encode()):08x} {g['tokens'][:6]}")
PY
}
{
  date -u; cat build-device/COMMIT
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
  wd tiny-qwen3 smoke-default "" 60
  wd tiny-qwen3 smoke-persistent "persistent=1" 30
  wd qwen3-1.7b smoke-persistent "persistent=1" 60
  gpu_tests "*CudaFastPreset*:*FastPersistent*:*KernelJit.Persistent*"
  cp $out/runs/tests.txt $out/tests-run1.txt
  for r in 1 2; do
    for preset in llama-3.2-1b qwen3-1.7b qwen3-4b; do
      wd $preset default-$r ""
      wd $preset persistent-$r "persistent=1"
      [ $r = 1 ] && wd $preset persistent-s4 "persistent=1,persistent_splits=4"
      [ $r = 1 ] && wd $preset persistent-st6-24k "persistent=1,persistent_stages=6,persistent_stage_kb=24"
    done
  done
  date -u
} 2>&1 | tee $out/run1.log
tar czf $out/runs1.tgz -C $out runs
