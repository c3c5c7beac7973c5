#!/usr/bin/env bash
# Session 31, third call (build with per-kernel-carveout.diff): the split the driver picks for each
# decode kernel of Qwen3-1.7B's plan under one carveout for all (Nsight Compute), then W2 with one
# kernel's carveout changed at a time (the others at the plan's 40), then a few combinations.
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
for c in 30 34 44 46 50 56 60 70; do ncu_map "all=$c" "$Q=$c;$A=$c;$O=$c;$G=$c;$D=$c"; done
run base ""
for k in Q A O G D; do
  for c in 30 34 36 38 42 44 46 50 56 60 70; do run "$k=$c" "${!k}=$c"; done
  run base ""
done
for spec in "$D=42" "$D=42;$A=50" "$D=42;$A=60" "$D=42;$A=70" "$Q=38;$G=38" "$Q=38;$G=38;$O=30" "$Q=38;$G=38;$O=34" \
            "$Q=38;$G=38;$O=25" "$Q=38" "$A=60" "$D=42;$A=60;$O=60" ; do run "[$spec]" "$spec"; done
run base ""
ncu_map "D42 A60" "$D=42;$A=60"
ncu_map "Q38 G38 O30" "$Q=38;$G=38;$O=30"
ncu_map "Q38 G38 O25" "$Q=38;$G=38;$O=25"
} 2>&1 | tee $out/run3.log
rm -rf $out/runs
