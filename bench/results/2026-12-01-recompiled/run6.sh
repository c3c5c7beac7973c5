#!/usr/bin/env bash
# Session 16 run 6: gemv.cuh's staging loops behind one helper (gemv_each_x4): GEMV tests, then W2
# with the committed plans (bench/results/2026-12-01-stage-x-vector/plans-new) and on the fast
# route's defaults, head build against this one, interleaved.
set -uo pipefail
. tools/gpu_common.sh
w2_plan() {  # w2_plan PRESET LABEL: as w2_decode, with the committed plan (kernel list stripped)
  local m=/tmp/ac-$1 pl=/tmp/plan-$1
  [ -f $m/model.safetensors ] || build-device/agentcompile synth-model --preset $1 --out $m --seed 11 --quiet >/dev/null
  mkdir -p $pl; python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]; json.dump(p, open(sys.argv[2],'w'))" \
    bench/results/2026-12-01-stage-x-vector/plans-new/plan-$1/plan.json $pl/plan.json
  $bin generate $m --plan $pl --prompt-tokens $w2_prompt --max-tokens 128 --ignore-eos --json > "$out/runs/$1-$2.json" 2> "$out/runs/$1-$2.err" || { echo "$1 $2 FAILED: $(tail -1 "$out/runs/$1-$2.err")"; return; }
  python3 - "$out/runs/$1-$2.json" "$1" "$2" <<'PY'
import json, sys, zlib
g = json.load(open(sys.argv[1])); t = g["timings"]
print(f"{sys.argv[2]:14s} {sys.argv[3]:26s} decode {t['decode_ms_per_token']:.4f} ms/token  tokens crc {zlib.crc32(str(g['tokens']).encode()):08x}")
PY
}
{
  date -u; echo "build-device: $(cat build-device/COMMIT)  head: $(cat build-device-head/COMMIT)"
  gpu_tests "*CudaGemv*:*FastDecodeGemv*:*CudaFastPreset*"
  for preset in qwen3-1.7b llama-3.2-1b qwen3-4b; do
    for round in 1 2; do
      for b in build-device-head build-device; do bin=$b/agentcompile; w2_plan $preset "plan-${b#build-device}-$round"; done
      for b in build-device-head build-device; do bin=$b/agentcompile; w2_decode $preset "fast-${b#build-device}-$round" ""; done
    done
  done
  date -u
} 2>&1 | tee -a "$out/run6.log"
rm -rf $out/runs
