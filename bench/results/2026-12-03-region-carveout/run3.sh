#!/usr/bin/env bash
# Session 32 run 3 (GPU machine): around run 2's compiled Qwen3-1.7B plan (session 22's points with
# down 256:4:1:8 under its own carveout 25 and the output projection under its own 60), as an
# override: other carveouts per region (other splits than the compile's 25 / 40 / 60 give) and
# the K-split-8 down point of 128 threads; three interleaved rounds.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
plan=bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plan),smem_carveout=40,down=256:4:1:8,carveout.down=25,carveout.o=60"
for r in 1 2 3; do
  w2_decode qwen3-1.7b new-$r "$b"
  for v in o=80 o=100 down=12 down=18 lm_head=60 lm_head=80 qkv=70 gate_up=80 attention=20; do
    w2_decode qwen3-1.7b c.$v-$r "$b,carveout.$v"
  done
  w2_decode qwen3-1.7b down128-$r "$b,down=128:4:1:8"
done 2>&1 | tee $out/run3.log
rm -rf $out/runs
