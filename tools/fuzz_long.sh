#!/usr/bin/env bash
# Long fuzzing outside CI: each target in $TARGETS runs $WORKERS independent libFuzzer processes
# (different seeds, a shared work corpus) for $SECONDS_EACH seconds, all at once. The binaries come
# from a fuzz build folder ($FUZZ_BIN, default build-fuzz/fuzz: scripts/fuzz-smoke.sh builds it);
# they link their libraries statically, so the folder can be carried to a machine with more cores.
# Findings (crash-*, leak-*, timeout-*, oom-*) and one log per process go to $OUT (default
# /tmp/fuzz-long); the last line per target sums the inputs run.
#   TARGETS="fuzz_tokenizer fuzz_plan" WORKERS=2 SECONDS_EACH=900 tools/fuzz_long.sh
set -uo pipefail
bin=${FUZZ_BIN:-build-fuzz/fuzz}
out=${OUT:-/tmp/fuzz-long}
secs=${SECONDS_EACH:-600}
workers=${WORKERS:-1}
targets=(${TARGETS:-fuzz_tokenizer fuzz_plan fuzz_tuning_db fuzz_advisor_reply})
declare -A corpus=([fuzz_safetensors]=safetensors [fuzz_config]=config [fuzz_shard_index]=shard_index [fuzz_model]=model [fuzz_plan]=plan [fuzz_tuning_db]=tuning_db [fuzz_advisor_reply]=advisor_reply [fuzz_tokenizer]=tokenizer)
declare -A dict=([fuzz_safetensors]=safetensors [fuzz_config]=config [fuzz_shard_index]=config [fuzz_model]=config [fuzz_plan]=plan [fuzz_tuning_db]=tuning_db [fuzz_advisor_reply]=advisor_reply [fuzz_tokenizer]=tokenizer)
mkdir -p "$out/artifacts"
work=$(mktemp -d /tmp/fuzz-long.XXXXXX)
pids=()
for t in "${targets[@]}"; do
  [ -x "$bin/$t" ] || { echo "fuzz_long: $bin/$t: not built" >&2; exit 2; }
  mkdir -p "$work/corpus-$t" "$work/tmp-$t"
  for w in $(seq 1 "$workers"); do
    TMPDIR="$work/tmp-$t" "$bin/$t" "$work/corpus-$t" "fuzz/corpus/${corpus[$t]}" -dict="fuzz/dict/${dict[$t]}.dict" \
      -seed=$((1000 * w + ${#t})) -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$out/artifacts/$t-w$w-" -print_final_stats=1 >"$out/$t-w$w.log" 2>&1 &
    pids+=($!)
  done
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
for t in "${targets[@]}"; do
  runs=0
  for w in $(seq 1 "$workers"); do
    r=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t-w$w.log")
    runs=$((runs + ${r:-0}))
  done
  cov=$(grep -ho 'cov: [0-9]*' "$out/$t"-w*.log | sort -t' ' -k2 -n | tail -1)
  echo "fuzz_long: $t: $workers x ${secs}s, $runs inputs, ${cov:-cov: ?}, corpus $(ls "$work/corpus-$t" | wc -l), findings $(ls "$out/artifacts" | grep -c "^$t-")"
done
rm -rf "$work"
exit "$status"
