#!/usr/bin/env bash
# On the GPU machine: FP8 decode (W8A16, fp8-block synthetic presets, the fast path) against the
# compiled PyTorch peer in the same run. The peer runs the bf16 folder of the same preset and seed
# (what a PyTorch user serves; it has no W8A16 decode path here), its record named after the FP8
# folder (--name) so that bench e2e puts it beside ours; the parameter counts agree (the FP8
# folder's weights are the same tensors, stored as e4m3 codes and scales). Our semantic check runs
# against the CPU reference of the same quantized weights (exact W8A16 semantics), not the peer.
# Both parts in one device call when it fits (about 6 minutes for the two default presets), else
# part 1 then part 2 on the warm machine (or PEERS_IN=<folder with part 1's records>).
#   part 1: synthesise each preset in bf16 and fp8-block; the peer's W2 records -> $OUT/peers/
#   part 2: bench e2e of the fp8-block folders (W2, 3 repeats, 8 tokens checked) with the records
#           -> $OUT/fp8-peer.{json,md}
#   [PRESETS="llama-3.2-1b qwen3-1.7b"] tools/gpu_fp8_peer.sh 1|2|both -> $OUT/fp8-peer-part<N>.log
set -uo pipefail
part=${1:-}
case "$part" in 1|2|both) ;; *) echo "usage: tools/gpu_fp8_peer.sh 1|2|both" >&2; exit 2;; esac
source tools/gpu_common.sh
work=${AC_BENCH_WORK:-/tmp/ac-fp8-peer}
mkdir -p "$work/models" "$work/peers" "$out/peers"
presets=${PRESETS:-llama-3.2-1b qwen3-1.7b}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT); part $part"
  for m in $presets; do
    [ -f "$work/models/$m/model.safetensors" ] || $bin synth-model --preset $m --out "$work/models/$m" --seed 11 --quiet
    [ -f "$work/models/$m-fp8-block/model.safetensors" ] ||
      $bin synth-model --preset $m --out "$work/models/$m-fp8-block" --seed 11 --weights fp8-block --quiet
  done
  if [ "$part" != 2 ]; then
    for m in $presets; do
      f=$work/peers/torch-compiled.$m-fp8-block.peer.json
      [ -f "$f" ] || timeout 240 python3 bench/peers/torch_compiled.py --model "$work/models/$m" --name "$m-fp8-block" \
        --workloads W2 --repeats 3 --out "$f" 2>&1 | tail -2 || echo "torch-compiled $m FAILED"
    done
    cp "$work"/peers/*.peer.json "$out/peers/" 2>/dev/null
  fi
  if [ "$part" != 1 ]; then
    [ -n "${PEERS_IN:-}" ] && cp -n "$PEERS_IN"/*.peer.json "$work/peers/" 2>/dev/null
    peers=() models=()
    for f in "$work"/peers/torch-compiled.*-fp8-block.peer.json; do [ -f "$f" ] && peers+=(--peer "$f"); done
    for m in $presets; do models+=("$work/models/$m-fp8-block"); done
    timeout 300 $bin bench e2e --backend cuda --cuda-route fast --model "${models[@]}" --workloads W2 --repeats 3 \
      --reference cpu --validate-tokens 8 "${peers[@]}" --json-out "$out/fp8-peer.json" --md-out "$out/fp8-peer.md" --quiet
    echo "bench e2e exit $?"
    grep -E "^\| " "$out/fp8-peer.md" | head -12
  fi
  date -u
} 2>&1 | tee "$out/fp8-peer-part$part.log"
