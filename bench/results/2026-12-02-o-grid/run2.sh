#!/usr/bin/env bash
# Session 22 run 2: Qwen3-1.7B's other regions in the chain under carveout 40 and the output
# projection at 256:2:2:2 (run 1's best), one region at a time over a wider set of points than the
# compile's step tuning tries (its three fastest alone), and carveouts 25 / 60 with that O point.
# Interleaved, ROUNDS rounds; the base is timed three times per round.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-01-w2-measured-ceilings/plans
base="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-qwen3-1.7b/plan.json),smem_carveout=40,o=256:2:2:2"
vs="qkv=256:2:4:1 qkv=256:1:4:1 qkv=128:1:4:1 qkv=256:1:2:1 qkv=128:4:2:1 qkv=256:4:2:1 qkv=128:2:2:1
gate_up=256:1:4:1 gate_up=256:1:2:1 gate_up=128:1:2:1 gate_up=128:2:2:1 gate_up=256:2:2:1 gate_up=128:2:1:1 gate_up=256:4:1:1 gate_up=128:4:1:1
down=256:2:4:2 down=256:2:4:4 down=256:2:2:2 down=128:2:4:2 down=256:2:2:8 down=128:2:2:4 down=256:4:2:4 down=256:1:4:4 down=256:2:1:8 down=128:2:4:4
smem_carveout=25 smem_carveout=60"
{
  date -u; echo "engine $(cat build-device/COMMIT)"; echo "base: $base"
  for round in $(seq 1 ${ROUNDS:-2}); do
    i=0
    w2_decode qwen3-1.7b "base#$round.a" "$base"
    for v in $vs; do
      w2_decode qwen3-1.7b "$v#$round" "$base,$v"
      i=$((i+1)); [ $i = 14 ] && w2_decode qwen3-1.7b "base#$round.b" "$base"
    done
    w2_decode qwen3-1.7b "base#$round.c" "$base"
  done
  date -u
} 2>&1 | tee -a "$out/run2.log"
rm -rf "$out/runs"
