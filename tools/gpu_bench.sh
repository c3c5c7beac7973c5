#!/usr/bin/env bash
# The benchmark suite on the GPU machine (docs/bench.md), in two parts that each fit one
# 10-minute device call. Needs build-device/agentcompile (built by the lead; carry build-device/).
#   part 1 (~8 min): synthesise the presets; bench kernels and bench module; the HF eager peer
#           (W1-W5 + its float32 reference, ~1.5 min per model); bench e2e against it.
#   part 2 (~7 min): the compiled peer (W2; compiles of ~35, ~160 and ~80 s); bench e2e again with
#           every peer record; the chart.
# Peer records and models stay in $AC_BENCH_WORK (/tmp/ac-bench) while the machine is warm; on a
# fresh machine give part 2 part 1's records with PEERS_IN=<folder in the working tree>.
# Environment: PRESETS, WORKLOADS (default W1,W2,W3,W4,W5; e.g. add 128/128x2,128/128x4 for batch
# sizes), COMPILED_WORKLOADS (W2), TIE_EPSILON (0.1), AGENTCOMPILE_COMMIT (else build-device/COMMIT).
#   tools/gpu_bench.sh 1   -> $OUT/bench-part1.tgz ({kernels,module,e2e}.{json,md}, peers/*.peer.json, bench.log)
#   tools/gpu_bench.sh 2   -> $OUT/bench-part2.tgz (e2e.{json,md}, e2e-W2.{png,svg}, peers/*.peer.json, bench.log)
# (and bench.log and the .md tables beside the archive)
set -uo pipefail
part=${1:-}
case "$part" in 1|2) ;; *) echo "usage: tools/gpu_bench.sh 1|2" >&2; exit 2;; esac
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=${AGENTCOMPILE_KERNEL_CACHE:-/tmp/ac-kernel-cache}
# The device returns at most 8 files: everything is written to $res and packed into
# $OUT/bench-part<N>.tgz, with bench.log and the markdown tables beside it.
res=/tmp/ac-bench-out-$part; rm -rf "$res"
dest=${OUT:-/tmp/out}
out=$res
work=${AC_BENCH_WORK:-/tmp/ac-bench}
mkdir -p "$out/peers" "$work/models" "$work/peers"
bin=build-device/agentcompile
[ -x "$bin" ] || { echo "error: $bin: not built (the lead builds it for the GPU machine)" >&2; exit 2; }
# The binary finds its kernel templates under the checkout it was built from.
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
export AGENTCOMPILE_COMMIT=${AGENTCOMPILE_COMMIT:-$(cat build-device/COMMIT 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
presets=${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}
workloads=${WORKLOADS:-W1,W2,W3,W4,W5}
[ -n "${PEERS_IN:-}" ] && cp -n "$PEERS_IN"/*.peer.json "$work/peers/" 2>/dev/null

model_list() { local s=""; for m in $presets; do s="$s${s:+,}$work/models/$m"; done; echo "$s"; }

hf_peers() {
  for m in $presets; do
    f=$work/peers/hf-eager.$m.peer.json
    [ -f "$f" ] || timeout 300 python3 bench/peers/hf_eager.py --model "$work/models/$m" --workloads "$workloads" --out "$f" \
      || echo "hf-eager $m FAILED"
  done
}
compiled_peers() {
  for m in "$@"; do
    f=$work/peers/torch-compiled.$m.peer.json
    [ -f "$f" ] || timeout 280 python3 bench/peers/torch_compiled.py --model "$work/models/$m" --workloads "${COMPILED_WORKLOADS:-W2}" --out "$f" \
      || echo "torch-compiled $m FAILED"
  done
}
e2e() {
  local peers=()
  for f in "$work"/peers/*.peer.json; do [ -f "$f" ] && peers+=(--peer "$f"); done
  $bin bench e2e --backend cuda --cuda-route fast --model "$(model_list)" --workloads "$workloads" --repeats 3 --tie-epsilon "${TIE_EPSILON:-0.1}" \
    "${peers[@]}" --json-out "$out/e2e.json" --md-out "$out/e2e.md"
  echo "bench e2e exit $?"
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  echo "engine commit $AGENTCOMPILE_COMMIT; part $part"
  for m in $presets; do
    [ -f "$work/models/$m/model.safetensors" ] || $bin synth-model --preset "$m" --out "$work/models/$m" --seed 11 --quiet
  done
  if [ "$part" = 1 ]; then
    echo "== bench kernels"
    $bin bench kernels --backend cuda --model "$(model_list)" --batch 1,8 --json-out "$out/kernels.json" --md-out "$out/kernels.md"
    echo "== bench module"
    $bin bench module --backend cuda --model "$(model_list)" --json-out "$out/module.json" --md-out "$out/module.md"
    echo "== peers: hf-eager"
    hf_peers
  else
    echo "== peers: torch-compiled"
    compiled_peers $presets
    for m in $presets; do  # no time to re-run them here: the rows of a model without one do not count
      [ -f "$work/peers/hf-eager.$m.peer.json" ] || echo "no hf-eager record for $m (fresh machine? give PEERS_IN)"
    done
  fi
  echo "== bench e2e"
  e2e
  cp "$work"/peers/*.peer.json "$out/peers/" 2>/dev/null
  if [ "$part" = 2 ]; then
    python3 bench/peers/plot.py "$out/e2e.json" --workload W2 --out "$out/e2e-W2.svg" && echo "chart: e2e-W2.svg"
    python3 bench/peers/plot.py "$out/e2e.json" --workload W2 --out "$out/e2e-W2.png" && echo "chart: e2e-W2.png"
  fi
  date -u
} 2>&1 | tee "$out/bench.log"
mkdir -p "$dest"
tar czf "$dest/bench-part$part.tgz" -C "$res" .
cp "$res"/bench.log "$res"/*.md "$dest/" 2>/dev/null
ls -la "$dest"
