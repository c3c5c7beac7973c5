#!/usr/bin/env bash
# Session 31, fourth call (build with per-kernel-carveout.diff): the split the driver picks for each
# decode kernel of Qwen3-1.7B's plan under one carveout for all (Nsight Compute), smaller splits for the kernels
# that were fastest at 100 KiB (attention, down; QKV indifferent), the others at the plan's 40.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
p="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py bench/results/2026-12-02-carveout-first/plans/plan-qwen3-1.7b/plan.json),smem_carveout=40"
m=/tmp/ac-qwen3-1.7b; [ -f $m/model.safetensors ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --quiet >/dev/null
Q=unroll4__splitk1__batch1__epi0; A=cluster8; O=unroll4__splitk2__batch1__epi1; G=epi2; D=unroll2__splitk4__batch1__epi1
ncu_map() {  # LABEL SPEC: the chosen split per decode kernel
  AC_EXP_CARVEOUT="$2" AGENTCOMPILE_FAST_CONFIG="$p" timeout 200 ncu --clock-control none -k regex:"gemv__|attn_decode__cluster" \
    --launch-count 5 --section LaunchStats --section Occupancy $bin generate $m --prompt-tokens 1,2,3,4,5,6,7,8 --max-tokens 2 \
    --ignore-eos --backend cuda --cuda-route fast > /tmp/ncu.txt 2>&1
  echo "== $1 [$2] $(grep -E '^  [a-z_]+__|Shared Memory Configuration Size' /tmp/ncu.txt | awk '/^  [a-z]/{n=$1; next} {sub(/__sm90.*/,"",n); printf "%s=%s ", substr(n, length(n)-30), $NF}')"
}
run() { export AC_EXP_CARVEOUT="$2"; w2_decode qwen3-1.7b "$1" "$p"; unset AC_EXP_CARVEOUT; }
{
run base ""
for k in A D Q; do for c in 8 12 16 20 25; do run "$k=$c" "${!k}=$c"; done; done
for spec in "$A=20;$D=20" "$A=20;$D=20;$Q=20" "$A=12;$D=20" "$A=25;$D=25;$Q=25"; do run "[$spec]" "$spec"; done
run base ""
ncu_map "A20 D20 Q20" "$A=20;$D=20;$Q=20"
ncu_map "A12 D12 Q12" "$A=12;$D=12;$Q=12"
ncu_map "A25 D25 Q25" "$A=25;$D=25;$Q=25"
} 2>&1 | tee $out/run4.log
rm -rf $out/runs
