#!/usr/bin/env bash
# On the GPU machine (device run), from the repo root, with the stripped binary carried in
# build-device/: makes the HF fixtures and checks synth-model folders against HF transformers.
#   tools/gpu_references.sh            -> $OUT/hf_fixtures.tar.gz, $OUT/synth_check.json, $OUT/log.txt
set -euo pipefail
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-/tmp/out}
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  python3 tools/make_hf_fixtures.py --out "$out/hf_fixtures.tar.gz"
  python3 tools/check_synth_hf.py --bin build-device/agentcompile --out "$out/synth_check.json" ${SYNTH_PRESETS:+--presets $SYNTH_PRESETS}
} 2>&1 | tee "$out/log.txt"
