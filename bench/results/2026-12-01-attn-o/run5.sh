#!/usr/bin/env bash
# Session 16 run 5: every GPU test on the final build; the stale-plan warning of generate --plan
# (a plan compiled by the previous engine, run by this one).
set -uo pipefail
. tools/gpu_common.sh
{
  date -u; echo "build-device: $(cat build-device/COMMIT)  head: $(cat build-device-head/COMMIT)"
  gpu_tests "*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*"
  grep -E "attention and output projection|persistent layers" $out/runs/tests.txt | head -4
  m=/tmp/ac-tiny-qwen3; build-device-head/agentcompile synth-model --preset tiny-qwen3 --out $m --seed 11 --quiet >/dev/null
  build-device-head/agentcompile compile $m --backend cuda --out /tmp/tq-plan --budget 25 --db /tmp/tq.db > $out/compile.log 2>&1; echo "head compile rc=$?"
  build-device/agentcompile generate $m --plan /tmp/tq-plan --prompt-tokens 1,2,3,4 --max-tokens 8 --ignore-eos > $out/gen.out 2> $out/gen.err; echo "generate rc=$?"
  cat $out/gen.err | head -5
  build-device-head/agentcompile generate $m --plan /tmp/tq-plan --prompt-tokens 1,2,3,4 --max-tokens 8 --ignore-eos > $out/gen-head.out 2> $out/gen-head.err; echo "head generate rc=$? (stderr lines: $(wc -l < $out/gen-head.err))"
  date -u
} 2>&1 | tee -a "$out/run5.log"
cp $out/runs/tests.txt $out/tests.txt; rm -rf $out/runs
