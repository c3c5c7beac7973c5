#!/usr/bin/env bash
# On the GPU machine: Qwen3-30B-A3B (real shapes, bf16, about 61 GB) decoding, ours against the
# compiled PyTorch peer, neither from a weight file (the disk holds 64 GiB): ours with
# `bench e2e --in-memory` (the preset made in host memory, then uploaded), the peer built on the
# GPU from the config alone (`torch_compiled.py --from-config`, random weights: timings only). One
# after the other: each needs the GPU's memory for the weights. The semantic check runs against
# the CPU reference backend on the same in-memory weights (--reference cpu). Needs build-device/
# carried; writes $OUT/moe30b.{json,md}, the peer record and a log. Each part fits one device call:
# part 1 the peer (its record comes back in $OUT), part 2 ours (PEER_IN=the record's folder in the
# working tree, when the machine was not kept warm). ROUTE: ours's --cuda-route (default fast: the
# expert GEMVs). REFERENCE=cpu|peer (cpu). CONFIGS='a=1;b=2': part 2 runs ours once per override
# (files moe30b.json, moe30b-1.json, ...); PROFILE=1 prints each run's kernel profile too (its decode
# steps then run eagerly, with an event between kernels: that ms/token is not the CUDA graph's).
#   [WORKLOADS=W2] [REPEATS=3] [ROUTE=fast] [CONFIGS=...] [PROFILE=1] tools/gpu_moe_bench.sh 1|2
set -uo pipefail
part=${1:-}
case "$part" in 1|2) ;; *) echo "usage: tools/gpu_moe_bench.sh 1|2" >&2; exit 2;; esac
source tools/gpu_common.sh
log=$out/moe_bench-part$part.log
peer=/tmp/peer-torch-compiled-30b.json
[ -n "${PEER_IN:-}" ] && cp -n "$PEER_IN/peer-torch-compiled-30b.json" "$peer" 2>/dev/null
workloads=${WORKLOADS:-W2}
# CONFIGS: overrides for part 2, separated by ';' (each one run of ours; "" or unset: the defaults).
IFS=';' read -r -a CONFIGS <<< "${CONFIGS:-}"; [ ${#CONFIGS[@]} -eq 0 ] && CONFIGS=("")
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "build-device: $(cat build-device/COMMIT)"; free -g | head -2
  cfg=/tmp/ac-qwen3-30b-a3b-config
  $bin synth-model --preset qwen3-30b-a3b --config-only --out $cfg --quiet
  if [ "$part" = 1 ]; then
    echo "== peer: torch-compiled from config (random weights)"
    timeout 560 python3 bench/peers/torch_compiled.py --model $cfg --from-config --name qwen3-30b-a3b \
      --workloads "$workloads" --repeats "${REPEATS:-3}" --out "$peer" 2>&1 | tail -5
    cp "$peer" "$out/" 2>/dev/null
  else
    peers=(); [ -f "$peer" ] && peers=(--peer "$peer")
    i=0
    for cfg in "${CONFIGS[@]:-}"; do  # one run per override ("" the defaults), files suffixed by its index
      echo "== ours: bench e2e --in-memory, --cuda-route ${ROUTE:-fast}, override '${cfg}'${PROFILE:+, profiled}"
      sfx=""; [ $i -gt 0 ] && sfx=-$i
      env AGENTCOMPILE_FAST_CONFIG=$cfg ${PROFILE:+AGENTCOMPILE_PROFILE=1} timeout $(( 560 / ${#CONFIGS[@]} )) $bin bench e2e \
        --model qwen3-30b-a3b --in-memory --backend cuda --cuda-route ${ROUTE:-fast} --workloads "$workloads" \
        --repeats "${REPEATS:-3}" --reference ${REFERENCE:-cpu} "${peers[@]}" --json-out "$out/moe30b$sfx.json" \
        --md-out "$out/moe30b$sfx.md" 2>&1 | tail -50
      i=$((i + 1))
    done
  fi
} 2>&1 | tee "$log"
