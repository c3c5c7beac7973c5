#!/usr/bin/env bash
# On the GPU machine: `compile` each preset for the CUDA backend (the search now covers a prompt
# step's attention and its four projection GEMMs), print the prompt step's routes (family, point,
# measured time against the fallback's), then W3's time to first token with the plan's prompt
# knobs against the defaults, interleaved (two rounds), both from this binary. Models go to
# $AC_BENCH_WORK/models (shared with tools/gpu_ttft_bench.sh). Needs build-device/ carried.
#   [BUDGET=120] [PRESETS="qwen3-1.7b llama-3.2-1b"] tools/gpu_prefill_search.sh -> $OUT/prefill_search.log, $OUT/plan-<preset>/
set -uo pipefail
source tools/gpu_common.sh
work=${AC_BENCH_WORK:-/tmp/ac-bench}
mkdir -p "$work/models"
presets=${PRESETS:-qwen3-1.7b llama-3.2-1b}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  for m in $presets; do
    [ -f "$work/models/$m/model.safetensors" ] || $bin synth-model --preset $m --out "$work/models/$m" --seed 11 --quiet
    echo "== $m: compile --backend cuda --budget ${BUDGET:-120}"
    start=$(date +%s)
    timeout $(( ${BUDGET:-120} + 120 )) $bin compile "$work/models/$m" --out /tmp/plan-$m --backend cuda --budget ${BUDGET:-120} \
      --db /tmp/ac-tune-$m.db --json > "$out/compile-$m.json" 2> "$out/compile-$m.err"
    echo "compile exit $? in $(( $(date +%s) - start )) s"; tail -4 "$out/compile-$m.err"
    mkdir -p "$out/plan-$m" && cp /tmp/plan-$m/*.json /tmp/plan-$m/*.md "$out/plan-$m/" 2>/dev/null
    cfg=$(python3 - /tmp/plan-$m/plan.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for r in p["routes"]:
    if r["phase"] == "prefill":
        t, f = r.get("time_us"), r.get("fallback_us")
        ratio = f"{f / t:.3f}x" if t and f else "-"
        print(f"# prefill {r['region']:10s} {r['family']:24s} {json.dumps(r.get('params', {})):34s} {t or 0:9.1f} us, fallback {f or 0:9.1f} us ({ratio})", file=sys.stderr)
fast = p.get("cuda_fast", {})
kv = [f"prefill_algo.{s}={v}" for s, v in fast.get("prefill_algo", {}).items()]
kv += [f"{k}={fast[k]}" for k in ("prefill_flash_block", "prefill_flash_bk", "prefill_flash_qs", "prefill_flash_pair") if k in fast]
print(",".join(kv))
PY
)
    echo "$m plan's prompt knobs: ${cfg:-none (the defaults)}"
    for side in default plan default plan; do
      c=""; [ $side = plan ] && c=$cfg
      AGENTCOMPILE_FAST_CONFIG=$c timeout 90 $bin bench e2e --backend cuda --model "$work/models/$m" --workloads W3 --repeats 3 \
        --validate-tokens 1 --reference peer --quiet 2>/dev/null | grep -E "^\| ac-|^\| $m" \
        | awk -F'|' -v s=$side -v m=$m '{print "A/B", s, m, "W3 TTFT", $7, "ms"}'
    done
  done
  date -u
} 2>&1 | tee "$out/prefill_search.log"
