#!/usr/bin/env bash
# On the GPU machine, one call (about 8 minutes): gemm.wgmma's TMA producer (LOAD 1), its
# one-stage-in-flight consumers (PIPE 1), BN 256, row-tile pairs sharing B by multicast (CLUSTER 2),
# the SwiGLU epilogue (EPI 3) and gemm.mma, none timed before.
#   1. GPU tests: every point of gemm.wgmma and of gemm.mma (the sm_80 family) against double
#      precision, SwiGLU in the epilogue (EPI 3) among them (CudaGemmWgmma, CudaGemmMma), the
#      prompt's projections on either against cuBLAS and the CPU reference (OwnGemmProjections, one
#      plan's routes per projection among them), the search's evaluator over every point (CudaPrefillGemm);
#   2. every point of both against cuBLAS on the target models' 2048-row prompt GEMMs (kernel_sweep
#      SWEEP_FAMILY=gemm), summarised per family, PIPE and LOAD (best point's share of cuBLAS's speed);
#   3. W3 time to first token with the prompt's projections on the sweep's fastest point, gate/up
#      fused with SwiGLU and not, each against the defaults (cuBLAS), interleaved.
# Needs build-device/ carried. The space doubled with BN 256 and CLUSTER 2: where one device call
# (10 minutes) may not hold all three parts, SKIP_TESTS=1 runs parts 2-3 alone (a second call).
# SKIP_AB=1 leaves part 3 out.
#   [SKIP_TESTS=1] [SKIP_AB=1] [GEMM_MODELS="qwen3-1.7b llama-3.2-1b"] tools/gpu_wgmma.sh -> $OUT/wgmma.log, $OUT/gemm_sweep.jsonl, $OUT/runs/
set -uo pipefail
source tools/gpu_common.sh
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  if [ -z "${SKIP_TESTS:-}" ]; then
    TEST_TIMEOUT=240 gpu_tests 'CudaGemmWgmma.*:CudaGemmMma.*:Presets/CudaPrefillFlashPreset.OwnGemmProjections*:CudaPrefillGemm.*'
    cp "$out/runs/tests.txt" "$out/gpu_tests.txt"
  fi
  echo "== gemm.wgmma against cuBLAS, 2048-row prompt GEMMs"
  SWEEP_FAMILY=gemm timeout ${SWEEP_TIMEOUT:-240} build-device/kernel_sweep ${GEMM_MODELS:-qwen3-1.7b llama-3.2-1b} > "$out/gemm_sweep.jsonl" 2> "$out/runs/gemm_sweep.err"
  echo "kernel_sweep exit $?"; grep -A20 "prompt GEMMs at" "$out/runs/gemm_sweep.err"
  best=$(python3 - "$out/gemm_sweep.jsonl" <<'PY'
import collections, json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
# Each point's share of cuBLAS's speed per GEMM (the EPI differs by GEMM: a point is its family, BN,
# STAGES, and gemm.wgmma's PIPE and LOAD); per family, PIPE and LOAD the best share per GEMM, and
# the point with the best geometric mean over the GEMMs for the A/B.
def geo(m):
    g = 1.0
    for v in m.values(): g *= v
    return g ** (1.0 / len(m))
point = collections.defaultdict(dict)
for r in rows:
    if r.get("status") != "ok": continue
    fam = r["variant"].split("__")[1]
    v = {k: int(x) for k, x in re.findall(r"__(bn|stages|pipe|load|cluster|sched)(\d+)", r["variant"])}
    point[(fam, v.get("pipe", -1), v.get("load", -1), v.get("cluster", 1), v.get("sched", 0), v["bn"], v["stages"])][(r["model"], r["gemm"])] = r["vs_cublas"]
print(f"points wrong against cuBLAS: {sum(1 for r in rows if r.get('status') == 'wrong')}", file=sys.stderr)
gemms = set(k for m in point.values() for k in m)
for fpl in sorted(set(k[:5] for k in point)):
    m = {g: max(point[k].get(g, 0.0) for k in point if k[:5] == fpl) for g in sorted(gemms)}
    label = f"gemm.{fpl[0]}" + (f" PIPE {fpl[1]} LOAD {fpl[2]} CLUSTER {fpl[3]} SCHED {fpl[4]}" if fpl[1] >= 0 else "")
    print(f"{label}: best point per GEMM " + ", ".join(f"{g[0]} {g[1]} {v:.2f}x" for g, v in m.items()) + f"; geometric mean {geo(m):.2f}x cuBLAS", file=sys.stderr)
full = {k: m for k, m in point.items() if len(m) == len(gemms)}
if full:
    k = max(full, key=lambda k: geo(full[k]))
    print(f"best point: gemm.{k[0]} BN {k[5]} STAGES {k[6]} PIPE {k[1]} LOAD {k[2]} CLUSTER {k[3]} SCHED {k[4]}, {geo(full[k]):.2f}x cuBLAS (geometric mean)", file=sys.stderr)
    if k[0] == "wgmma":
        print(f"prefill_wgmma=1,prefill_wgmma_pipe={k[1]},prefill_wgmma_load={k[2]},prefill_wgmma_cluster={k[3]},prefill_wgmma_sched={k[4]},prefill_wgmma_bn={k[5]},prefill_wgmma_stages={k[6]}")
    else:
        print(f"prefill_mma=1,prefill_mma_bn={k[5]},prefill_mma_stages={k[6]}")
PY
)
  echo "fastest point: '$best'"
  if [ -n "$best" ] && [ -z "${SKIP_AB:-}" ]; then
    for cfg in "$best" "$best,prefill_swiglu_epilogue=0"; do
      echo "== W3 TTFT: $cfg (the A/B's old side) against the defaults"
      OLD_BIN=$bin AB_CONFIG="$cfg" SKIP_PEERS=1 PRESETS="${PRESETS:-llama-3.2-1b qwen3-1.7b}" timeout 120 tools/gpu_ttft_bench.sh 1 | grep "A/B"
    done
  fi
  date -u
} 2>&1 | tee "$out/wgmma.log"
