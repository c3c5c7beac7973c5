#!/usr/bin/env bash
# On the GPU machine: whole requests (time to first token, decode, request latency) of W1-W3 on
# the fast path against both peers measured in the same lease: HF eager (with its float32
# reference for the semantic check) and the compiled PyTorch peer (bench/peers/torch_compiled.py:
# its prompt runs eagerly on a StaticCache, its decode steps compiled). Two parts, each one
# device call, with the models and records kept in $AC_BENCH_WORK (/tmp/ac-bench) between them
# (run part 2 right after part 1, while the machine is warm; on a fresh one give part 2 part 1's
# records with PEERS_IN=<folder in the working tree>).
#   part 1: synthesise the presets; GPU tests matching $GTEST; with OLD_BIN=path, W3's TTFT of that
#           binary and of build-device's, interleaved (an A/B of the engine change under test;
#           OLD_BIN=build-device/agentcompile with AB_CONFIG=<override> compares the override
#           against the defaults instead, e.g. AB_CONFIG=prefill_flash_bk=32); the HF eager
#           records (SKIP_PEERS=1 leaves them out).
#   part 2: the compiled peer's records, then bench e2e against both (its markdown prints the
#           prompt's TFLOP/s against the GEMM rate).
# Needs build-device/ carried.
#   [PRESETS="llama-3.2-1b qwen3-1.7b qwen3-4b"] tools/gpu_ttft_bench.sh 1|2 -> $OUT/ttft-part<N>.log, part 2: $OUT/e2e.{json,md}, $OUT/peers/
set -uo pipefail
part=${1:-}
case "$part" in 1|2) ;; *) echo "usage: tools/gpu_ttft_bench.sh 1|2" >&2; exit 2;; esac
source tools/gpu_common.sh
work=${AC_BENCH_WORK:-/tmp/ac-bench}
mkdir -p "$work/models" "$work/peers" "$out/peers"
presets=${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}
wl=${WORKLOADS:-W1,W2,W3}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT); part $part"
  for m in $presets; do
    [ -f "$work/models/$m/model.safetensors" ] || $bin synth-model --preset $m --out "$work/models/$m" --seed 11 --quiet
  done
  if [ "$part" = 1 ]; then
    [ -n "${GTEST:-}" ] && gpu_tests "$GTEST"
    if [ -n "${OLD_BIN:-}" ]; then
      for side in old new old new; do  # interleaved, two rounds
        b=$bin cfg=""; [ $side = old ] && b=$OLD_BIN cfg=${AB_CONFIG:-}
        for m in $presets; do
          AGENTCOMPILE_FAST_CONFIG=$cfg timeout 60 $b bench e2e --backend cuda --model "$work/models/$m" --workloads W3 --repeats 3 --validate-tokens 1 \
            --reference peer --quiet 2>/dev/null | grep -E "^\| ac-|^\| $m" | awk -F'|' -v s="$side $b $cfg" -v m=$m '{print "A/B", s, m, "W3 TTFT", $7, "ms"}'
        done
      done
    fi
    for m in $presets; do
      [ "${SKIP_PEERS:-0}" = 1 ] && break  # the A/B alone
      f=$work/peers/hf-eager.$m.peer.json
      [ -f "$f" ] || timeout 200 python3 bench/peers/hf_eager.py --model "$work/models/$m" --workloads "$wl" --repeats 3 --out "$f" 2>&1 \
        | tail -3 || echo "hf-eager $m FAILED"
    done
    cp "$work"/peers/*.peer.json "$out/peers/" 2>/dev/null
  else
    [ -n "${PEERS_IN:-}" ] && cp -n "$PEERS_IN"/*.peer.json "$work/peers/" 2>/dev/null
    for m in $presets; do
      f=$work/peers/torch-compiled.$m.peer.json
      [ -f "$f" ] || timeout 200 python3 bench/peers/torch_compiled.py --model "$work/models/$m" --workloads "$wl" --repeats 3 --out "$f" 2>&1 \
        | tail -3 || echo "torch-compiled $m FAILED"
    done
    peers=() models=()
    for f in "$work"/peers/*.peer.json; do [ -f "$f" ] && peers+=(--peer "$f"); done
    for m in $presets; do models+=("$work/models/$m"); done
    timeout 240 $bin bench e2e --backend cuda --model "${models[@]}" --workloads "$wl" --repeats 3 "${peers[@]}" \
      --json-out "$out/e2e.json" --md-out "$out/e2e.md" --quiet
    echo "bench e2e exit $?"
    cp "$work"/peers/*.peer.json "$out/peers/" 2>/dev/null
  fi
  date -u
} 2>&1 | tee "$out/ttft-part$part.log"
