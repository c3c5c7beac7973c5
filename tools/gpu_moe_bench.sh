#!/usr/bin/env bash
# On the GPU machine: Qwen3-30B-A3B (real shapes, bf16, about 61 GB) decoding, ours against the
# compiled PyTorch peer, neither from a weight file (the disk holds 64 GiB): ours with
# `bench e2e --in-memory` (the preset made in host memory, then uploaded), the peer built on the
# GPU from the config alone (`torch_compiled.py --from-config`, random weights: timings only). One
# after the other: each needs the GPU's memory for the weights. The semantic check runs against
# the CPU reference backend on the same in-memory weights (--reference cpu). Needs build-device/
# carried; writes $OUT/moe30b.{json,md}, the peer record and a log.
#   [WORKLOADS=W2] [REPEATS=3] tools/gpu_moe_bench.sh
set -uo pipefail
source tools/gpu_common.sh
log=$out/moe_bench.log
workloads=${WORKLOADS:-W2}
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "build-device: $(cat build-device/COMMIT)"; free -g | head -2
  cfg=/tmp/ac-qwen3-30b-a3b-config
  $bin synth-model --preset qwen3-30b-a3b --config-only --out $cfg --quiet
  echo "== peer: torch-compiled from config (random weights)"
  timeout 590 python3 bench/peers/torch_compiled.py --model $cfg --from-config --name qwen3-30b-a3b \
    --workloads "$workloads" --repeats "${REPEATS:-3}" --out "$out/peer-torch-compiled-30b.json" 2>&1 | tail -5
  echo "== ours: bench e2e --in-memory (library route: the fast path does not run mixture-of-experts layers)"
  timeout 590 $bin bench e2e --model qwen3-30b-a3b --in-memory --backend cuda --cuda-route auto --workloads "$workloads" \
    --repeats "${REPEATS:-3}" --reference cpu --peer "$out/peer-torch-compiled-30b.json" \
    --json-out "$out/moe30b.json" --md-out "$out/moe30b.md" 2>&1 | tail -20
} 2>&1 | tee "$log"
