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
#           prompt's TFLOP/s against the GEMM rate). With PLANS=<folder> (plan-<preset>/plan.json
#           each, e.g. $AC_BENCH_WORK after part "plans", or a committed results folder: kernel
#           binaries dropped, compiled at load), each preset that has a plan runs it, one bench e2e
#           per preset (--plan takes one model) -> $OUT/e2e-<preset>.{json,md}.
#   part plans: `compile --backend cuda` of each preset (BUDGET s, BUDGET_4B for qwen3-4b) into
#           $AC_BENCH_WORK/plan-<preset> -> $OUT/plans/plan-<preset>/ (run between parts 1 and 2,
#           then part 2 with PLANS=$AC_BENCH_WORK).
# Needs build-device/ carried.
#   [PRESETS="llama-3.2-1b qwen3-1.7b qwen3-4b"] tools/gpu_ttft_bench.sh 1|plans|2 -> $OUT/ttft-part<N>.log, part 2: $OUT/e2e*.{json,md}, $OUT/peers/
set -uo pipefail
part=${1:-}
case "$part" in 1|2|plans) ;; *) echo "usage: tools/gpu_ttft_bench.sh 1|plans|2" >&2; exit 2;; esac
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
  elif [ "$part" = plans ]; then
    for m in $presets; do
      budget=${BUDGET:-120}; [ "$m" = qwen3-4b ] && budget=${BUDGET_4B:-220}
      start=$(date +%s)
      $bin compile "$work/models/$m" --out "$work/plan-$m" --backend cuda --budget "$budget" --db /tmp/ac-tune.db \
        > "$out/compile-$m.log" 2>&1
      echo "== $m: compile --backend cuda --budget $budget: exit $? in $(( $(date +%s) - start )) s"
      mkdir -p "$out/plans/plan-$m" && cp "$work/plan-$m"/plan.json "$work/plan-$m"/report.md "$out/plans/plan-$m/" 2>/dev/null
      grep -E "^\| [a-z_]+ \| prefill" "$work/plan-$m/report.md" | cut -d'|' -f2,3,6,7,8
    done
  else
    [ -n "${PEERS_IN:-}" ] && cp -n "$PEERS_IN"/*.peer.json "$work/peers/" 2>/dev/null
    for m in $presets; do
      f=$work/peers/torch-compiled.$m.peer.json
      [ -f "$f" ] || timeout 200 python3 bench/peers/torch_compiled.py --model "$work/models/$m" --workloads "$wl" --repeats 3 --out "$f" 2>&1 \
        | tail -3 || echo "torch-compiled $m FAILED"
    done
    peers=() models=()
    for f in "$work"/peers/*.peer.json; do [ -f "$f" ] && peers+=(--peer "$f"); done
    for m in $presets; do
      if [ -n "${PLANS:-}" ] && [ -f "$PLANS/plan-$m/plan.json" ]; then
        mkdir -p "$work/run-plan-$m"
        python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]; json.dump(p, open(sys.argv[2],'w'))" \
          "$PLANS/plan-$m/plan.json" "$work/run-plan-$m/plan.json"
        timeout 240 $bin bench e2e --backend cuda --model "$work/models/$m" --plan "$work/run-plan-$m" --workloads "$wl" \
          --repeats 3 "${peers[@]}" --json-out "$out/e2e-$m.json" --md-out "$out/e2e-$m.md" --quiet
        echo "bench e2e --plan ($m) exit $?"
      else
        models+=("$work/models/$m")
      fi
    done
    if [ ${#models[@]} -gt 0 ]; then
      timeout 240 $bin bench e2e --backend cuda --model "${models[@]}" --workloads "$wl" --repeats 3 "${peers[@]}" \
        --json-out "$out/e2e.json" --md-out "$out/e2e.md" --quiet
      echo "bench e2e exit $?"
    fi
    cp "$work"/peers/*.peer.json "$out/peers/" 2>/dev/null
  fi
  date -u
} 2>&1 | tee "$out/ttft-part$part.log"
