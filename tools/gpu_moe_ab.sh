#!/usr/bin/env bash
# On the GPU machine: an A/B of fast-path overrides on Qwen3-30B-A3B's layer shapes, quickly: the
# preset cut to its first LAYERS layers (synth-model --layers; 8 layers are 11 GB of bf16 on disk,
# where the whole model's 61 GB can only be made in memory), W2 decode (128-token prompt, 128
# greedy tokens) once per override and round, interleaved, each profiled kernel by kernel
# (AGENTCOMPILE_PROFILE=1; PROFILE=0: not profiled). A profiled decode step runs eagerly, with an
# event between kernels, so its ms/token is not the CUDA graph's: launch-overlap changes (PDL) need
# PROFILE=0 (and tools/gpu_timeline.sh for the kernels' times inside the graph). Per-layer kernels (router, expert GEMVs, attention, projections) time
# as in the whole model; what the whole step gains is the per-layer gain times 48 layers. The
# prompt's ms is a first request's (with cuBLAS's loading): compare configs of one run only.
# Needs build-device/ carried.
#   [LAYERS=8] [ROUNDS=2] [PROFILE=0] CONFIGS='a=1;b=2' tools/gpu_moe_ab.sh -> $OUT/moe_ab.log (runs/ per run)
set -uo pipefail
source tools/gpu_common.sh
IFS=';' read -r -a CONFIGS <<< "${CONFIGS:-}"; [ ${#CONFIGS[@]} -eq 0 ] && CONFIGS=("")
layers=${LAYERS:-8}
name=qwen3-30b-a3b-${layers}l
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  [ -f /tmp/ac-$name/model.safetensors ] || $bin synth-model --preset qwen3-30b-a3b --layers "$layers" --out /tmp/ac-$name --seed 11 --quiet
  for r in $(seq "${ROUNDS:-2}"); do
    for cfg in "${CONFIGS[@]}"; do
      label="r$r-${cfg:-defaults}"
      if [ "${PROFILE:-1}" = 1 ]; then AGENTCOMPILE_PROFILE=1 w2_decode $name "$label" "$cfg"; else w2_decode $name "$label" "$cfg"; fi
      awk '/^profile: .*decode steps/{on=1; print; next} /^profile:/{on=0} on' "$out/runs/$name-$label.err"  # the decode steps' kernels
    done
  done
  date -u
} 2>&1 | tee "$out/moe_ab.log"
