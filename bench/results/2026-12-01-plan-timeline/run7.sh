#!/usr/bin/env bash
# Session 17 run 7: the developer timeline of one W2 decode step (step 64) with the standing plans
# of Llama-3.2-1B and Qwen3-1.7B (run6's stripped plan folders on the same machine).
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "$(cat build-device/COMMIT)"
  for m in llama-3.2-1b qwen3-1.7b; do
    for mode in plain timeline; do
      tl=(); [ $mode = timeline ] && tl=(env AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/timeline-$m.csv)
      "${tl[@]}" $bin generate /tmp/ac-bench/models/$m --plan /tmp/ac-bench/plan-$m --prompt-tokens $w2_prompt --max-tokens 128 \
        --ignore-eos --backend cuda --json > $out/runs/$m-$mode.json 2> $out/runs/$m-$mode.err || { echo "$m $mode FAILED: $(tail -2 $out/runs/$m-$mode.err)"; continue; }
      python3 -c "import json,sys; g=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], g['timings']['decode_ms_per_token'])" $out/runs/$m-$mode.json $m $mode
    done
    [ -f $out/timeline-$m.csv ] || continue
    python3 tools/timeline_summary.py $out/timeline-$m.csv
    python3 tools/timeline_summary.py $out/timeline-$m.csv --layers $m
    python3 tools/timeline_summary.py $out/timeline-$m.csv --marks attn_decode
    python3 tools/timeline_summary.py $out/timeline-$m.csv --marks gemv
    gzip -f $out/timeline-$m.csv
  done
  date -u
} 2>&1 | tee -a "$out/run7.log"
rm -rf $out/runs
