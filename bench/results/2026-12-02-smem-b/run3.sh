#!/usr/bin/env bash
# Session 23 run 3 (a build with exp.diff): register bounds (AC_EXP_MINB, __launch_bounds__'s
# second argument) on Qwen3-1.7B's plan points — QKV 128:2:4:1 124 -> 91 registers (bound 5,
# no spill under nvcc), the output projection 256:2:4:2 118 -> 80 (bound 3, 48 B spilled), gate/up
# 128:1:4:1 96 -> 80 (bound 6, 56 B spilled) — so each kernel's blocks find room beside the kernel
# before them sooner. W2 interleaved, same tokens expected.
set -uo pipefail
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
ov() { python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$1/plan.json; }
qkv=block128__rows2__unroll4__splitk1__batch1__epi0
o=block256__rows2__unroll4__splitk2__batch1__epi1
gu=block128__rows1__unroll4__splitk1__batch1__epi2
ol=block128__rows2__unroll4__splitk2__batch1__epi1  # Llama-3.2-1B's output projection: 118 -> 96 (bound 5)
{
  date -u; echo "engine $(cat build-device/COMMIT) + exp.diff"
  b="$(ov qwen3-1.7b),smem_carveout=40"; bl="$(ov llama-3.2-1b),smem_carveout=25"
  for round in $(seq 1 ${ROUNDS:-3}); do
    AC_EXP_MINB= w2_decode qwen3-1.7b "plan#$round" "$b"
    AC_EXP_MINB="$qkv=5" w2_decode qwen3-1.7b "qkv-mb5#$round" "$b"
    AC_EXP_MINB="$o=3" w2_decode qwen3-1.7b "o-mb3#$round" "$b"
    AC_EXP_MINB="$qkv=5;$o=3" w2_decode qwen3-1.7b "qkv-mb5+o-mb3#$round" "$b"
    AC_EXP_MINB="$gu=6" w2_decode qwen3-1.7b "gu-mb6#$round" "$b"
    AC_EXP_MINB="$qkv=5;$o=3;$gu=6" w2_decode qwen3-1.7b "all-mb#$round" "$b"
    AC_EXP_MINB= w2_decode llama-3.2-1b "plan#$round" "$bl"
    AC_EXP_MINB="$ol=5" w2_decode llama-3.2-1b "o-mb5#$round" "$bl"
  done
  date -u
} 2>&1 | tee -a "$out/run3.log"
rm -rf "$out/runs"
