#!/usr/bin/env bash
# On the GPU machine: mlp.fused (a layer's MLP in one kernel) checked and measured. Its GPU tests
# against the CPU, then W2 decode (128-token prompt, 128 new tokens, greedy, batch 1) per preset
# with the gate_up + down GEMVs (default) and with mlp.fused at several points (MLP_POINTS,
# block:kc:rows:unroll:bps), default again at the end (drift); batch 2 (bench e2e 128/64x2) with
# and without it; then a cold and a warm CUDA compile of llama-3.2-1b with one tuning DB (the
# warm one should take less than half the time). Binaries carried in build-device/.
#   tools/gpu_mlp_check.sh -> $OUT/mlp_check.log, $OUT/mlp-check.tgz (per-run JSON, reports)
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "engine $(cat build-device/COMMIT 2>/dev/null || echo unknown)"
  [ "${SKIP_TESTS:-0}" = 1 ] || gpu_tests "${GTEST_FILTER:-*CudaMlp*:*FastMlp*}"
  echo "== W2 decode: gate_up + down GEMVs vs mlp.fused points"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    w2_decode $preset default ""
    for pt in ${MLP_POINTS:-256:16:1:2:2 256:16:2:2:2 256:16:1:4:3 256:32:2:2:1 256:32:2:2:2 512:32:2:2:1 512:16:1:4:1 128:16:2:2:4 256:64:2:2:1}; do
      w2_decode $preset "mlp=$pt" "mlp_fused_batch=1,mlp=$pt"
    done
    w2_decode $preset default-again ""
  done
  if [ "${SKIP_BATCH2:-0}" != 1 ]; then
    echo "== batch 2 (bench e2e 128/64x2), llama-3.2-1b and qwen3-1.7b"
    for preset in llama-3.2-1b qwen3-1.7b; do
      for cfg in "" "mlp_fused_batch=2,mlp=${BATCH2_POINT:-256:16:1:2:2}"; do
        AGENTCOMPILE_FAST_CONFIG=$cfg timeout 120 $bin bench e2e --backend cuda --cuda-route fast --model /tmp/ac-$preset \
          --workloads 128/64x2 --repeats 3 --quiet --json-out "$out/runs/b2-$preset-${cfg:+mlp}.json" --md-out /tmp/b2.md >/dev/null 2>&1 \
          && echo "$preset [${cfg:-default}] $(grep -E '^\| ac-' /tmp/b2.md | cut -d'|' -f7-9)" || echo "$preset b2 [$cfg] FAILED"
      done
    done
  fi
  if [ "${SKIP_NCU:-0}" != 1 ]; then
    echo "== ncu: kernel durations of one decode step (qwen3-1.7b, 8-token prompt; serialised, so no PDL overlap)"
    for cfg in "" "mlp_fused_batch=1,mlp=${NCU_POINT:-256:16:1:2:2}"; do
      AGENTCOMPILE_FAST_CONFIG=$cfg timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        $bin generate /tmp/ac-qwen3-1.7b --prompt-tokens 1,2,3,4,5,6,7,8 --max-tokens 2 --ignore-eos --backend cuda \
        --cuda-route fast > "$out/runs/ncu-${cfg:+mlp}.csv" 2>/dev/null
      python3 - "$out/runs/ncu-${cfg:+mlp}.csv" "${cfg:-default}" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, body = rows[0], rows[1:]
ki, vi, ui = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6}
ks = [(r[ki], float(r[vi].replace(",", "")) * scale.get(r[ui], 1.0)) for r in body]  # ns
# the decode step: from the last embedding gather (each step starts with one) to the end
first = max([i for i, (k, _) in enumerate(ks) if k.startswith("embed__")] or [0])
step = ks[first:]
tot = collections.defaultdict(lambda: [0, 0.0])
for k, v in step:
    t = tot[k.split("__")[0] + "__" + k.split("__")[1] if "__" in k else k]; t[0] += 1; t[1] += v / 1000
print(f"[{sys.argv[2]}] decode step: {len(step)} kernels, {sum(v for _, v in step) / 1000:.1f} us summed")
for k, (n, us) in sorted(tot.items(), key=lambda x: -x[1][1]):
    print(f"   {k:40s} {n:4d} launches {us:9.1f} us  ({us / n:.2f} us each)")
PY
    done
  fi
  if [ "${SKIP_COMPILE:-0}" != 1 ]; then
    echo "== CUDA compile of llama-3.2-1b, cold then warm (one tuning DB, budget ${BUDGET:-60} s)"
    rm -f /tmp/ac-mlp-tune.db*
    for run in cold warm; do
      start=$(date +%s.%N)
      timeout 200 $bin compile /tmp/ac-llama-3.2-1b --out /tmp/plan-$run --backend cuda --budget ${BUDGET:-60} --db /tmp/ac-mlp-tune.db \
        --json > "$out/runs/compile-$run.json" 2> "$out/runs/compile-$run.err"
      rc=$?
      echo "compile $run exit $rc in $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s"
      tail -4 "$out/runs/compile-$run.err"
      cp /tmp/plan-$run/report.md "$out/runs/compile-$run-report.md" 2>/dev/null
    done
    ms=$($bin generate /tmp/ac-llama-3.2-1b --prompt-tokens $w2_prompt --max-tokens 128 --ignore-eos --plan /tmp/plan-warm --json \
      | python3 -c "import json,sys; print(json.load(sys.stdin)['timings']['decode_ms_per_token'])") || ms=FAILED
    echo "W2 decode with the warm compile's plan: $ms ms/token"
  fi
  date -u
} 2>&1 | tee "$out/mlp_check.log"
tar czf "$out/mlp-check.tgz" -C "$out" runs && rm -rf "$out/runs"
