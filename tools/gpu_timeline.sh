#!/usr/bin/env bash
# On the GPU machine: the developer timeline of one W2 decode step per preset (decode step
# $AGENTCOMPILE_TIMELINE_STEP, default 64, of 128 greedy tokens after the W2 prompt), with the
# instrumented and the plain decode speed beside it (the instrumentation costs an atomic and a
# barrier per block), then tools/timeline_summary.py of each, its kernels' stage marks and where
# their blocks started against the kernel before (--residency).
# FAST_CONFIG: an override for both; BIN: the binary (default build-device/agentcompile); PLANS_IN:
# compiled plans to run instead of the defaults (tools/gpu_common.sh's w2_decode).
#   tools/gpu_timeline.sh -> $OUT/timeline.log, $OUT/timeline-<preset>.csv
set -uo pipefail
. tools/gpu_common.sh
bin=${BIN:-$bin}  # BIN: another build's binary (e.g. build-device-head/agentcompile)
{
  date -u
  echo "$bin: $(cat "$(dirname "$bin")/COMMIT"); prompt ${PROMPT_LEN:-128} tokens; step ${AGENTCOMPILE_TIMELINE_STEP:-64}"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    w2_decode $preset plain "${FAST_CONFIG:-}"
    AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/timeline-$preset.csv \
      w2_decode $preset timeline "${FAST_CONFIG:-}"
    [ -f "$out/timeline-$preset.csv" ] && python3 tools/timeline_summary.py "$out/timeline-$preset.csv" &&
      python3 tools/timeline_summary.py "$out/timeline-$preset.csv" --marks attn_decode &&
      python3 tools/timeline_summary.py "$out/timeline-$preset.csv" --marks gemv &&
      python3 tools/timeline_summary.py "$out/timeline-$preset.csv" --residency gemv &&
      python3 tools/timeline_summary.py "$out/timeline-$preset.csv" --residency attn_decode
  done
  date -u
} 2>&1 | tee -a "$out/timeline.log"
for preset in ${PRESETS:-qwen3-1.7b}; do  # every launch of the step, for the presets asked for (default Qwen3-1.7B's)
  [ -f "$out/timeline-$preset.csv" ] && python3 tools/timeline_summary.py "$out/timeline-$preset.csv" --per-launch > "$out/timeline-$preset-launches.txt" 2>&1
done
rm -rf "$out/runs"
