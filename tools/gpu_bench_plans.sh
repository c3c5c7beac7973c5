#!/usr/bin/env bash
# On the GPU machine: the suite's end-to-end tier with compiled plans — for each preset, compile
# it for the CUDA backend (the search, the end-to-end check and the decode-step tuning; BUDGET s,
# BUDGET_4B=220 for qwen3-4b, whose CPU reference side alone takes 50-70 s cold: at 150 the
# decode-step stages ran out, bench/results/2026-12-02-carveout-first/), then `bench e2e --plan` of that
# model against the peer records given in PEERS_IN (a folder in the working tree, e.g. an earlier
# suite's peers/: the peers are not re-measured here). Needs build-device/ (carried).
# PLANS_IN=<folder>: use the plans in <folder>/plan-<m>/plan.json (an earlier run's, committed)
# instead of compiling (their kernel binaries are not shipped: compiled at load). COMPILED_PEER=1:
# measure the compiled-PyTorch peer (W2) in this run first and use it instead of PEERS_IN's.
# COMPILE_EXTRA: more compile flags (e.g. --seed-plan DIR).
#   PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh -> $OUT/bench-plans.tgz
#   (per model: e2e-<m>.{json,md}, plan-<m>/{plan.json,report.json,report.md}; bench.log)
set -uo pipefail
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=${AGENTCOMPILE_KERNEL_CACHE:-/tmp/ac-kernel-cache}
res=/tmp/ac-bench-plans; rm -rf "$res"; mkdir -p "$res"
dest=${OUT:-/tmp/out}
work=${AC_BENCH_WORK:-/tmp/ac-bench}; mkdir -p "$work/models"
bin=${BIN:-build-device/agentcompile}  # BIN: another build's binary (e.g. build-device-head/agentcompile)
[ -x "$bin" ] || { echo "error: $bin: not built" >&2; exit 2; }
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
export AGENTCOMPILE_COMMIT=${AGENTCOMPILE_COMMIT:-$(cat "$(dirname "$bin")"/COMMIT 2>/dev/null || echo unknown)}
[ -n "${PEERS_IN:-}" ] || { echo "error: PEERS_IN (peer records) is required" >&2; exit 2; }
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  echo "engine commit $AGENTCOMPILE_COMMIT; peers from $PEERS_IN"
  for m in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    [ -f "$work/models/$m/model.safetensors" ] || $bin synth-model --preset "$m" --out "$work/models/$m" --seed 11 --quiet
    if [ -n "${PLANS_IN:-}" ]; then
      echo "== $m: the plan from $PLANS_IN/plan-$m"
      mkdir -p "$work/plan-$m"
      python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]; json.dump(p, open(sys.argv[2],'w'))" \
        "$PLANS_IN/plan-$m/plan.json" "$work/plan-$m/plan.json"
    else
      budget=${BUDGET:-100}; [ "$m" = qwen3-4b ] && budget=${BUDGET_4B:-220}
      echo "== $m: compile --backend cuda --budget $budget"
      start=$(date +%s)
      $bin compile "$work/models/$m" --out "$work/plan-$m" --backend cuda --budget "$budget" --db /tmp/ac-tune.db ${COMPILE_EXTRA:-} \
        > "$res/compile-$m.log" 2>&1
      echo "compile exit $? in $(( $(date +%s) - start )) s"
      mkdir -p "$res/plan-$m" && cp "$work/plan-$m"/*.json "$work/plan-$m"/*.md "$res/plan-$m/" 2>/dev/null
      sed -n '/## Decode-step tuning/,/^| pass/p' "$work/plan-$m/report.md" | head -8
      grep "seed plan's choices" "$work/plan-$m/report.md" || true
    fi
    peers=()
    if [ "${COMPILED_PEER:-0}" = 1 ]; then
      f=$res/peers/torch-compiled.$m.peer.json; mkdir -p "$res/peers"
      echo "== $m: torch-compiled peer (W2), measured now"
      timeout 280 python3 bench/peers/torch_compiled.py --model "$work/models/$m" --workloads W2 --out "$f" || echo "torch-compiled $m FAILED"
      [ -f "$f" ] && peers+=(--peer "$f")
    fi
    for f in "$PEERS_IN"/*."$m".peer.json; do
      [ -f "$f" ] || continue
      [ "${COMPILED_PEER:-0}" = 1 ] && [[ $(basename "$f") == torch-compiled.* ]] && continue
      peers+=(--peer "$f")
    done
    echo "== $m: bench e2e --plan"
    $bin bench e2e --backend cuda --model "$work/models/$m" --plan "$work/plan-$m" --workloads "${WORKLOADS:-W1,W2,W3,W4,W5}" \
      --repeats 3 --tie-epsilon "${TIE_EPSILON:-0.1}" "${peers[@]}" --json-out "$res/e2e-$m.json" --md-out "$res/e2e-$m.md" --quiet \
      > /dev/null
    echo "bench e2e exit $?"
  done
  date -u
} 2>&1 | tee "$res/bench.log"
mkdir -p "$dest"
tar czf "$dest/bench-plans.tgz" -C "$res" .
cp "$res"/bench.log "$dest/"
