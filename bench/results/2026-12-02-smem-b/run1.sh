#!/usr/bin/env bash
# Session 23 run 1 (needs a build with exp.diff: AC_EXP_MINB="NAME_PART=m;..." bounds the variants
# whose name holds NAME_PART to m resident blocks per SM; AC_EXP_DEFINE="NAME_PART=MACRO;..."
# defines MACRO in them). Two questions, W2 interleaved, same tokens expected:
#  a) session 22's prepared one: the output projection at 256:2:2:2 with registers left for
#     gate/up's blocks beside the attention (bounded to 4 / 3 blocks per SM);
#  b) a GEMV's second load buffer by cp.async into shared memory before the wait
#     (AC_EXP_SMEM_B), so a block's whole slice is in flight with the registers of one buffer,
#     under carveouts large enough for the extra shared memory.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
ov() { python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$1/plan.json; }
gu17=block128__rows1__unroll4__splitk1__batch1__epi2   # Qwen3-1.7B's gate/up point
gu256=block256__rows1__unroll2__splitk1__batch1__epi2  # Llama-3.2-1B's and Qwen3-4B's
dn17=block256__rows2__unroll2__splitk4__batch1__epi1
qkv17=block128__rows2__unroll4__splitk1__batch1__epi0
o2=block256__rows2__unroll2__splitk2__batch1__epi1
run() {  # preset label override minb define
  AC_EXP_MINB="$4" AC_EXP_DEFINE="$5" w2_decode "$1" "$2" "$3"
}
{
  date -u; echo "engine $(cat build-device/COMMIT) + exp.diff"
  b17="$(ov qwen3-1.7b),smem_carveout=40"; bl="$(ov llama-3.2-1b),smem_carveout=25"; b4="$(ov qwen3-4b),smem_carveout=25"
  echo "qwen3-1.7b base: $b17"; echo "llama-3.2-1b base: $bl"; echo "qwen3-4b base: $b4"
  for round in $(seq 1 ${ROUNDS:-2}); do
    run qwen3-1.7b "plan#$round" "$b17" "" ""
    run qwen3-1.7b "o256:2:2:2#$round" "$b17,o=256:2:2:2" "" ""
    run qwen3-1.7b "o256:2:2:2-minb4#$round" "$b17,o=256:2:2:2" "$o2=4" ""
    run qwen3-1.7b "o256:2:2:2-minb3#$round" "$b17,o=256:2:2:2" "$o2=3" ""
    for c in 40 60 75; do
      run qwen3-1.7b "gu-smemb-c$c#$round" "$b17,smem_carveout=$c" "$gu17=5" "$gu17=AC_EXP_SMEM_B"
    done
    run qwen3-1.7b "plan-c60#$round" "$b17,smem_carveout=60" "" ""
    run qwen3-1.7b "down-smemb-c60#$round" "$b17,smem_carveout=60" "$dn17=4" "$dn17=AC_EXP_SMEM_B"
    run qwen3-1.7b "qkv-smemb-c60#$round" "$b17,smem_carveout=60" "" "$qkv17=AC_EXP_SMEM_B"
    run qwen3-1.7b "all3-smemb-c60#$round" "$b17,smem_carveout=60" "$gu17=5;$dn17=4" "$gu17=AC_EXP_SMEM_B;$dn17=AC_EXP_SMEM_B;$qkv17=AC_EXP_SMEM_B"
    run llama-3.2-1b "plan#$round" "$bl" "" ""
    run llama-3.2-1b "gu-smemb-mb4#$round" "$bl" "$gu256=4" "$gu256=AC_EXP_SMEM_B"
    run llama-3.2-1b "gu-smemb-mb4-c60#$round" "$bl,smem_carveout=60" "$gu256=4" "$gu256=AC_EXP_SMEM_B"
    run qwen3-4b "plan#$round" "$b4" "" ""
    run qwen3-4b "gu-smemb-mb4#$round" "$b4" "$gu256=4" "$gu256=AC_EXP_SMEM_B"
    run qwen3-4b "gu-smemb-mb4-c60#$round" "$b4,smem_carveout=60" "$gu256=4" "$gu256=AC_EXP_SMEM_B"
  done
  date -u
} 2>&1 | tee -a "$out/run1.log"
rm -rf "$out/runs"
