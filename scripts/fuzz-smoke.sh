#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in build-fuzz, and runs each on
# its committed seed corpus (fuzz/corpus/<target>) for a bounded time: FUZZ_SECONDS in all
# (default 60), split evenly between the targets. Fails on any crash, sanitizer report, leak,
# slow input (over 10 s) or broken invariant; the failing input is kept in build-fuzz/artifacts/.
# Inputs found along the way go to build-fuzz/corpus/<target>/, never into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d fuzz ] || { echo "fuzz-smoke: no fuzz targets yet"; exit 0; }

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
command -v clang++ >/dev/null || { echo "fuzz-smoke: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

targets=(fuzz_safetensors fuzz_config fuzz_shard_index fuzz_model fuzz_plan fuzz_tuning_db fuzz_advisor_reply fuzz_tokenizer fuzz_jinja fuzz_openai_request)
declare -A corpus=([fuzz_safetensors]=safetensors [fuzz_config]=config [fuzz_shard_index]=shard_index [fuzz_model]=model [fuzz_plan]=plan [fuzz_tuning_db]=tuning_db [fuzz_advisor_reply]=advisor_reply [fuzz_tokenizer]=tokenizer [fuzz_jinja]=jinja [fuzz_openai_request]=openai_request)
declare -A dict=([fuzz_safetensors]=safetensors [fuzz_config]=config [fuzz_shard_index]=config [fuzz_model]=config [fuzz_plan]=plan [fuzz_tuning_db]=tuning_db [fuzz_advisor_reply]=advisor_reply [fuzz_tokenizer]=tokenizer [fuzz_jinja]=jinja [fuzz_openai_request]=openai_request)

t0=$(date +%s)
# Configure once (only the library sources the targets need get built); reconfigure if the
# folder was made with another compiler.
if ! grep -qs 'CMAKE_CXX_COMPILER:.*clang' "$BUILD/CMakeCache.txt"; then
  # Only a fuzz build folder (or an empty one) is wiped: FUZZ_BUILD may name any folder.
  if [ -e "$BUILD" ] && ! grep -qs '^AGENTCOMPILE_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt" && [ -n "$(ls -A "$BUILD" 2>/dev/null)" ]; then
    echo "fuzz-smoke: $BUILD exists and is not a fuzz build folder; refusing to replace it (set FUZZ_BUILD)" >&2
    exit 2
  fi
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Debug -DAGENTCOMPILE_FUZZ=ON \
    -DAGENTCOMPILE_TESTS=OFF >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log" >&2; exit 1; }
fi
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
t1=$(date +%s)

per=$((FUZZ_SECONDS / ${#targets[@]}))
[ "$per" -ge 1 ] || per=1
mkdir -p "$BUILD/artifacts"
status=0
for t in "${targets[@]}"; do
  work="$BUILD/corpus/${corpus[$t]}"
  log="$BUILD/$t.log"
  mkdir -p "$work" "$BUILD/tmp"
  # TMPDIR: fuzz_model writes its folders there; libFuzzer's exit skips their cleanup.
  if ! TMPDIR="$(pwd)/$BUILD/tmp" "$BUILD/fuzz/$t" "$work" "fuzz/corpus/${corpus[$t]}" -dict="fuzz/dict/${dict[$t]}.dict" \
      -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$BUILD/artifacts/$t-" \
      -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz-smoke: $t FAILED; the last lines of $log:" >&2
    tail -40 "$log" >&2
    status=1
    continue
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "fuzz-smoke: $t: ${runs:-?} inputs in ${per}s (${rate:-?}/s), ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) new + $(ls "fuzz/corpus/${corpus[$t]}" | wc -l) seeds"
done
rm -rf "$BUILD/tmp"
t2=$(date +%s)
echo "fuzz-smoke: build $((t1 - t0))s, fuzzing $((t2 - t1))s$([ "$status" -eq 0 ] && echo ", no findings")"
exit "$status"
