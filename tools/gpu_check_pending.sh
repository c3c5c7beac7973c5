#!/usr/bin/env bash
# On the GPU machine: the first GPU run of the prompt, MoE and FP8 code written without one, in
# two calls of under ten minutes each. Needs build-device/ carried (tools/build_device.sh).
#   part 1: the GPU tests still pending (gemm.wgmma at both PIPEs against double precision, the
#           grouped MoE prompt's 16-bit outputs, the prompt projections on gemm.wgmma, the compile's
#           region count); gemm.wgmma against cuBLAS on the
#           target models' prompt GEMMs (kernel_sweep SWEEP_FAMILY=gemm); W3 time to first token with
#           prefill_wgmma=1 and with prefill_flash_in_order=1 (the old block order), each against the
#           defaults, interleaved.
#   part 2: Qwen3-30B-A3B's first 8 layers, W2 with moe_prefill_grouped=1 against the defaults
#           (the prompt's time, profiled); gemv.mma_fp8's points at batch 8 (kernel_sweep
#           SWEEP_FAMILY=fp8_mma SWEEP_BATCH=8) on Qwen3-1.7B's shapes.
#   short: one call for a short lease: the pending GPU tests (the FP8 batch-8 plan, the grouped
#           MoE prompt, the router's ILP, the compile's region count); Qwen3-30B-A3B's first 8
#           layers with moe_router_ilp=2, 1 and moe_prefill_grouped=1 against the defaults once; the
#           timeline of one of its decode steps (tools/gpu_timeline.sh: per-kernel times inside
#           the CUDA graph, where the profile's per-kernel events run the step eagerly).
#   moe:   the MoE kernels' GPU tests; Qwen3-30B-A3B's first 8 layers under $MOE_CONFIGS (';'-separated
#           overrides, the defaults first), $ROUNDS rounds interleaved; the timeline of one decode step
#           with the fastest; then the whole model (tools/gpu_moe_bench.sh 2, W2) with the defaults and
#           the fastest, against the H100 peer record of bench/results/2026-12-06-moe30b-fast on an
#           H100 (no peer elsewhere).
#   tools/gpu_check_pending.sh 1|2|short|moe -> $OUT/pending-<part>.log, $OUT/gemm_sweep.jsonl or fp8_mma_sweep.jsonl, $OUT/runs/
set -uo pipefail
part=${1:-}
case "$part" in 1|2|short|moe) ;; *) echo "usage: tools/gpu_check_pending.sh 1|2|short|moe" >&2; exit 2;; esac
source tools/gpu_common.sh
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  if [ "$part" = short ]; then
    TEST_TIMEOUT=200 gpu_tests 'Models/CudaFastFp8.MatchesTheQuantizedReference/1:CudaFastMoe.*:CudaMoeRouter.*:CudaCompile.*'
    cp "$out/runs/tests.txt" "$out/gpu_tests.txt"
    echo "== Qwen3-30B-A3B, 8 layers: the router's loads in flight, the grouped prompt"
    CONFIGS=';moe_router_ilp=2;moe_router_ilp=1;moe_prefill_grouped=1' ROUNDS=1 timeout 150 tools/gpu_moe_ab.sh |
      grep -E "decode .* ms/token|FAILED|moe_(router|gemm|gather|combine)"
    echo "== Qwen3-30B-A3B, 8 layers: one decode step's timeline"
    PRESETS=qwen3-30b-a3b-8l timeout 150 tools/gpu_timeline.sh > /dev/null 2>&1
    grep -E "decode|ms/token" "$out/timeline.log" | head -4; python3 tools/timeline_summary.py "$out/timeline-qwen3-30b-a3b-8l.csv" | head -40
  elif [ "$part" = moe ]; then
    TEST_TIMEOUT=150 gpu_tests 'CudaMoeGemv.*:CudaMoeRouter.*:CudaFastMoe.*'
    cp "$out/runs/tests.txt" "$out/gpu_tests.txt"
    echo "== Qwen3-30B-A3B, 8 layers: $MOE_CONFIGS"
    CONFIGS="$MOE_CONFIGS" ROUNDS=${ROUNDS:-2} PROFILE=0 timeout 200 tools/gpu_moe_ab.sh > /dev/null 2>&1
    grep -E "decode .* ms/token|FAILED|^  moe_" "$out/moe_ab.log"
    # the fastest override by its mean ms/token over the rounds (the defaults: "")
    best=$(python3 - "$out/moe_ab.log" <<'PY'
import re, sys, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"\S+\s+r\d+-(\S+)\s+decode ([0-9.]+) ms/token", line)
    if m: t[m.group(1)].append(float(m.group(2)))
best = min(t, key=lambda k: sum(t[k]) / len(t[k]))
print("" if best == "defaults" else best)
PY
)
    echo "fastest: '${best}'"
    echo "== Qwen3-30B-A3B, 8 layers: one decode step's timeline with '${best}'"
    FAST_CONFIG=$best PRESETS=qwen3-30b-a3b-8l timeout 100 tools/gpu_timeline.sh > /dev/null 2>&1
    grep -E "ms/token" "$out/timeline.log" | tail -2; python3 tools/timeline_summary.py "$out/timeline-qwen3-30b-a3b-8l.csv" | head -14
    echo "== Qwen3-30B-A3B, all 48 layers: the defaults and '${best}'"
    rm -rf /tmp/ac-qwen3-30b-a3b-8l  # host memory for the whole model
    peer_in=""; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 && peer_in=bench/results/2026-12-06-moe30b-fast
    PEER_IN=$peer_in CONFIGS="${best:+;$best}" timeout 330 tools/gpu_moe_bench.sh 2 > /dev/null 2>&1  # not profiled: CUDA graphs
    grep -E "^== ours|bench e2e:|^\| qwen3-30b-a3b|ceilings" "$out/moe_bench-part2.log"
  elif [ "$part" = 1 ]; then
    TEST_TIMEOUT=${TEST_TIMEOUT:-200} gpu_tests 'CudaGemmWgmma.*:CudaFastMoe.*:Presets/CudaPrefillFlashPreset.*:CudaCompile.*:Models/CudaFastFp8.MatchesTheQuantizedReference/0:Models/CudaFastFp8.MatchesTheQuantizedReference/1:Models/CudaFastFp8.MatchesTheQuantizedReference/2'
    echo "== gemm.wgmma (both PIPEs) against cuBLAS, 2048-row prompt GEMMs"
    SWEEP_FAMILY=gemm timeout 150 build-device/kernel_sweep ${GEMM_MODELS:-qwen3-1.7b llama-3.2-1b} > "$out/gemm_sweep.jsonl" 2> "$out/runs/gemm_sweep.err"
    echo "kernel_sweep exit $?"; grep -A20 "prompt GEMMs at" "$out/runs/gemm_sweep.err"
    for cfg in prefill_wgmma=1 prefill_flash_in_order=1; do
      echo "== W3 TTFT: $cfg (the A/B's old side) against the defaults"
      OLD_BIN=$bin AB_CONFIG=$cfg SKIP_PEERS=1 PRESETS="${PRESETS:-llama-3.2-1b qwen3-1.7b}" timeout 200 tools/gpu_ttft_bench.sh 1 | grep "A/B"
    done
  else
    echo "== Qwen3-30B-A3B, 8 layers: the grouped prompt"
    CONFIGS=';moe_prefill_grouped=1' ROUNDS=${ROUNDS:-2} timeout 200 tools/gpu_moe_ab.sh |
      grep -E "decode .* ms/token|FAILED|moe_(router|gate_up|down|gemm|gather|combine)"
    echo "== gemv.mma_fp8 points at batch 8"
    SWEEP_FAMILY=fp8_mma SWEEP_BATCH=8 timeout 200 build-device/kernel_sweep qwen3-1.7b > "$out/fp8_mma_sweep.jsonl" 2> "$out/runs/fp8_mma_sweep.err"
    echo "kernel_sweep exit $?"; tail -6 "$out/runs/fp8_mma_sweep.err"
  fi
  date -u
} 2>&1 | tee "$out/pending-$part.log"
