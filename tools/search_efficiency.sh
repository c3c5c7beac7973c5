#!/usr/bin/env bash
# Search efficiency of `compile`: per region, specialised candidates evaluated until one within 2%
# of the best, in the heuristic advisor's order, the space's own order (--advisor none) and a
# random order, the fallback left out (tools/search_efficiency_summary.py says why and how). Each
# model compiles twice (heuristic, none) from an empty tuning DB, so every candidate is measured
# (when the budget allows: BUDGET must cover the whole space).
# Writes OUT_DIR/summary.{json,md} and the compile reports (OUT_DIR/<model>-<advisor>.report.json.gz).
#   [MODELS="dir1 dir2"] [BUDGET=seconds] tools/search_efficiency.sh [BINARY] [OUT_DIR] [BACKEND]
# CPU (default): the fixtures plus two synthetic tiny models, budget 300 s; runs anywhere.
# CUDA: pass cuda on the GPU machine; default models are the synthetic presets
# tools/gpu_compile_check.sh makes (/tmp/ac-<preset>, made here the same way when missing),
# budget 150 s each.
set -euo pipefail
bin=${1:-build/agentcompile}
out=${2:-bench/results/$(date -u +%Y-%m-%d)-search-efficiency-${3:-cpu}}
backend=${3:-cpu}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs a command with its stderr kept; on failure says which command failed and shows the end of
# its stderr (under set -e a bare `cmd >/dev/null 2>&1` used to end the script without a word).
run() {
  local err="$tmp/stderr.$$" rc=0
  "$@" >/dev/null 2>"$err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "error: search_efficiency.sh: command failed (exit $rc): $*" >&2
    echo "--- last lines of its stderr:" >&2
    tail -20 "$err" >&2
    exit 1
  fi
}

if [ -n "${MODELS:-}" ]; then
  read -r -a models <<< "$MODELS"
elif [ "$backend" = cuda ]; then
  models=()
  for preset in llama-3.2-1b qwen3-1.7b qwen3-4b; do
    m=/tmp/ac-$preset
    [ -f "$m/model.safetensors" ] || run "$bin" synth-model --preset "$preset" --out "$m" --seed 11 --quiet
    models+=("$m")
  done
else
  run "$bin" synth-model --preset tiny-qwen3 --out "$tmp/tiny-qwen3" --seed 1
  run "$bin" synth-model --preset tiny-llama --out "$tmp/tiny-llama" --seed 2
  models=("$src/tests/fixtures/hf/qwen3_mha_untied_5x" "$src/tests/fixtures/hf/qwen2_gqa5_bias_f16"
          "$src/tests/fixtures/hf/llama_gqa5_f32_5x" "$tmp/tiny-qwen3" "$tmp/tiny-llama")
fi
budget=${BUDGET:-$([ "$backend" = cuda ] && echo 150 || echo 300)}
for m in "${models[@]}"; do
  [ -d "$m" ] || { echo "error: search_efficiency.sh: model folder $m does not exist" >&2; exit 1; }
  for adv in heuristic none; do
    name=$(basename "$m")-$adv
    start=$(date +%s)
    run "$bin" compile "$m" --out "$tmp/$name" --db "$tmp/$name.db" --backend "$backend" --advisor "$adv" \
      --budget "$budget"
    echo "$name: compiled in $(( $(date +%s) - start )) s (budget $budget s)" >&2
    cp "$tmp/$name/report.json" "$tmp/$name.report.json"
  done
done
mkdir -p "$out"
names=()
for m in "${models[@]}"; do
  names+=("$(basename "$m")")
  for adv in heuristic none; do gzip -9 -c "$tmp/$(basename "$m")-$adv.report.json" > "$out/$(basename "$m")-$adv.report.json.gz"; done
done
python3 "$src/tools/search_efficiency_summary.py" "$out/summary" "$backend" "$tmp" "${names[@]}"
