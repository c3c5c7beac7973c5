#!/usr/bin/env bash
# Session 31, second call: Nsight Compute's launch statistics of the decode chain's kernels (the
# first call's filter caught prefill's attention), the GPU tests, and the timelines at 38 and 40
# as one archive (a call brings back at most 8 files).
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
gpu_tests "*CudaDecodeAttention*:*CudaFastOps*" > $out/tests.log 2>&1
p="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json)"
m=/tmp/ac-qwen3-1.7b; [ -f $m/model.safetensors ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --quiet >/dev/null
for c in 38 40 42; do
  AGENTCOMPILE_FAST_CONFIG="$p,smem_carveout=$c" timeout 200 ncu --clock-control none -k regex:"gemv__|attn_decode__cluster|argmax" \
    --launch-count 8 --section LaunchStats --section Occupancy $bin generate $m --prompt-tokens 1,2,3,4,5,6,7,8 --max-tokens 2 \
    --ignore-eos --backend cuda --cuda-route fast >> $out/ncu-decode-qwen3-1.7b.txt 2>&1
  echo "== carveout $c rc=$?" >> $out/ncu-decode-qwen3-1.7b.txt
done
mkdir -p /tmp/tl
for c in 38 40; do
  OUT=/tmp/tl/tl-$c FAST_CONFIG="$p,smem_carveout=$c" PRESETS=qwen3-1.7b tools/gpu_timeline.sh > /dev/null 2>&1
done
tar czf $out/timelines.tgz -C /tmp/tl .
rm -rf $out/runs
