#!/usr/bin/env bash
# Session 22: the compiled plans' shared-memory carveout outside batch-1 W2, where the compile
# measured it: W3 (2048-token prompt) and W5 (batch 8) with each plan as compiled and with its
# smem_carveout removed, interleaved, one token checked (--validate-tokens 1: timing, not the semantic check).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
bin=build-device/agentcompile
plans=bench/results/2026-12-02-carveout-first/plans
{
  date -u; echo "engine $(cat build-device/COMMIT)"
  for m in ${PRESETS:-qwen3-1.7b qwen3-4b}; do
    [ -f /tmp/ac-$m/model.safetensors ] || $bin synth-model --preset $m --out /tmp/ac-$m --seed 11 --quiet >/dev/null
    for v in plan nocarve; do
      mkdir -p /tmp/p-$m-$v
      python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]
if sys.argv[3]=='nocarve': p['cuda_fast'].pop('smem_carveout', None)
json.dump(p, open(sys.argv[2],'w'))" $plans/plan-$m/plan.json /tmp/p-$m-$v/plan.json $v
    done
    echo "$m: carveout $(python3 -c "import json; print(json.load(open('$plans/plan-$m/plan.json'))['cuda_fast'].get('smem_carveout'))")"
    for round in 1 2; do
      for v in plan nocarve; do
        timeout 100 $bin bench e2e --backend cuda --model /tmp/ac-$m --plan /tmp/p-$m-$v --workloads W3,W5 --repeats 2 \
          --validate-tokens 1 --json-out $out/$m-$v-$round.json --quiet > /dev/null 2> $out/$m-$v-$round.err || echo "$m $v FAILED: $(tail -1 $out/$m-$v-$round.err)"
        python3 - $out/$m-$v-$round.json $m $v $round <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for x in r["results"]:
    print(f"{sys.argv[2]:12s} {sys.argv[3]:8s} #{sys.argv[4]} {x['workload']} batch {x['batch']}: decode {x['decode_ms_per_token']:.4f} ms/token, {x['tokens_per_s']:.1f} tok/s")
PY
      done
    done
  done
  date -u
} 2>&1 | tee "$out/run.log"
