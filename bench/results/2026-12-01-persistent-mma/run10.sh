#!/usr/bin/env bash
# Session 14, run 10: consumers without a block barrier per tile (last warp finishes a tile); the
# persistent kernel against the chain, and a sweep of its stage size / stages / splits.
. tools/gpu_common.sh
wd() {
  local m=/tmp/ac-$1
  [ -f $m/model.safetensors ] || $bin synth-model --preset $1 --out $m --seed 11 --quiet >/dev/null
  AGENTCOMPILE_FAST_CONFIG=$3 timeout ${4:-120} $bin generate $m --prompt-tokens $w2_prompt --max-tokens 128 --ignore-eos --backend cuda \
    --cuda-route fast --json > "$out/runs/$1-$2.json" 2> "$out/runs/$1-$2.err" || { echo "$1 $2 FAILED rc=$?: $(tail -1 "$out/runs/$1-$2.err")"; return; }
  python3 - "$out/runs/$1-$2.json" "$1" "$2" <<'PY'
import json, sys, zlib
g = json.load(open(sys.argv[1])); t = g["timings"]
print(f"{sys.argv[2]:14s} {sys.argv[3]:34s} decode {t['decode_ms_per_token']:.4f} ms/token  tokens crc {zlib.crc32(str(g['tokens']).encode()):08x} {g['tokens'][:6]}")
PY
}
{
  date -u; cat build-device/COMMIT
  wd tiny-qwen3 smoke-persistent "persistent=1" 30
  gpu_tests "*CudaFastPreset*:*FastPersistent*:*KernelJit*:*CudaFixture*"
  for r in 1 2; do
    for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
      wd $preset default-$r ""
      wd $preset persistent-$r "persistent=1"
      if [ $r = 1 ]; then
        wd $preset splits16 "persistent=1,persistent_splits=16"
        wd $preset 16kx8 "persistent=1,persistent_stage_kb=16,persistent_stages=8"
        wd $preset 24kx6 "persistent=1,persistent_stage_kb=24,persistent_stages=6"
        wd $preset 48kx4 "persistent=1,persistent_stage_kb=48,persistent_stages=4"
      fi
    done
  done
  date -u
  for preset in qwen3-1.7b; do
    for cfg in "persistent=1"; do
      rm -f $out/tl.csv
      AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl.csv wd $preset "timeline-$cfg" "$cfg"
      python3 scratch/pl_marks.py $out/tl.csv
    done
  done
  date -u
} 2>&1 | tee $out/run10.log
tar czf $out/runs10.tgz -C $out runs && rm -rf $out/runs $out/tl.csv
