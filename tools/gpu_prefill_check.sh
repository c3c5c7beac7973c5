#!/usr/bin/env bash
# On the GPU machine: prefill time of the fast path's two prompt attentions, per prompt length and
# model (bf16 synthetic models with the real shapes): the decode attention run once per prompt row
# (prefill_flash=0) against attn_prefill.pipe at its block sizes. Each run is a fresh
# `generate --json` (prefill_ms: the prompt's step; 8 greedy tokens after it, whose checksum must be
# the same for every variant). Needs build-device/ carried.
#   [MODELS="llama-3.2-1b qwen3-1.7b qwen3-4b"] [LENS="32 128 2048"] [REPS=2] tools/gpu_prefill_check.sh
#     -> $OUT/prefill.jsonl (one record per run), $OUT/prefill.md (medians), $OUT/prefill.log
set -uo pipefail
source tools/gpu_common.sh
log=$out/prefill.log
cfgs=("prefill_flash=0" "prefill_flash=1,prefill_flash_block=128" "prefill_flash=1,prefill_flash_block=256")
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  for m in ${MODELS:-llama-3.2-1b qwen3-1.7b qwen3-4b}; do
    d=/tmp/ac-$m
    [ -f "$d/config.json" ] || $bin synth-model --preset $m --out $d --seed 11 --quiet
    for len in ${LENS:-32 128 2048}; do
      prompt=$(PROMPT_LEN=$len python3 -c "import os, random; random.seed(1); print(','.join(str(random.randrange(3, 120000)) for _ in range(int(os.environ['PROMPT_LEN']))))")
      for rep in $(seq ${REPS:-2}); do
        for cfg in "${cfgs[@]}"; do
          AGENTCOMPILE_FAST_CONFIG=$cfg timeout 120 $bin generate $d --prompt-tokens $prompt --max-tokens 8 --ignore-eos \
            --backend cuda --cuda-route fast --json 2> "$out/runs/p.err" | python3 -c "
import json, sys, zlib
d = json.load(sys.stdin); t = d['timings']
print(json.dumps({'model': sys.argv[1], 'prompt': int(sys.argv[2]), 'config': sys.argv[3], 'rep': int(sys.argv[4]),
                  'prefill_ms': t['prefill_ms'], 'decode_ms_per_token': t['decode_ms_per_token'],
                  'tokens_crc': '%08x' % zlib.crc32(str(d['tokens']).encode())}))" $m $len "$cfg" $rep >> "$out/prefill.jsonl" ||
            echo "$m $len $cfg FAILED: $(tail -1 "$out/runs/p.err")"
        done
      done
    done
    rm -rf $d
  done
  python3 - "$out/prefill.jsonl" > "$out/prefill.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted({(r['model'], r['prompt']) for r in rows}, key=lambda k: (k[0], k[1]))
cfgs = list(dict.fromkeys(r['config'] for r in rows))
print("| model | prompt | " + " | ".join(f"{c} (ms)" for c in cfgs) + " | tokens equal |")
print("|---|---|" + "---|" * len(cfgs) + "---|")
for m, p in keys:
    sel = [r for r in rows if r['model'] == m and r['prompt'] == p]
    med = [statistics.median([r['prefill_ms'] for r in sel if r['config'] == c] or [float('nan')]) for c in cfgs]
    same = len({r['tokens_crc'] for r in sel}) == 1
    print(f"| {m} | {p} | " + " | ".join(f"{x:.2f}" for x in med) + f" | {'yes' if same else 'NO'} |")
PY
  cat "$out/prefill.md"; date -u
} 2>&1 | tee "$log"
