#!/usr/bin/env bash
# Builds the binaries the GPU machine runs (carried as build-device/): from a snapshot of HEAD
# (git archive, so half-edited files in the working tree never leak in) plus, optionally, the
# working-tree files listed in $EXTRA_FILES (one path per line), in a private build folder that
# persists between calls ($AC_BUILD_ROOT, default /tmp/lead: the fixture paths compiled into the
# test binary point there, and the GPU scripts link that path to their checkout). Third-party
# libraries are linked statically (CMakeLists.txt). Writes build-device/COMMIT at snapshot time.
#   tools/build_device.sh            -> build-device/{agentcompile,agentcompile_tests,kernel_sweep,COMMIT}
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=${AC_BUILD_ROOT:-/tmp/lead}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cd "$src"
git archive HEAD | tar -x -C "$stage"
commit=$(git rev-parse --short=12 HEAD)
if [ -n "${EXTRA_FILES:-}" ] && [ -s "$EXTRA_FILES" ]; then
  while read -r f; do [ -n "$f" ] && { mkdir -p "$stage/$(dirname "$f")"; cp -p "$f" "$stage/$f"; }; done < "$EXTRA_FILES"
  commit="$commit+local"
fi
mkdir -p "$root"
# --checksum keeps the timestamps of unchanged files, so the build stays incremental.
rsync -rlpD --checksum --delete --exclude '/build*' --exclude '/.deps' "$stage/" "$root/"
ln -sfn "$src/.deps" "$root/.deps"
[ -f "$root/build/CMakeCache.txt" ] || cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j "$(nproc)" --target agentcompile agentcompile_tests kernel_sweep
mkdir -p "$src/build-device"
for b in agentcompile tests/agentcompile_tests kernel_sweep; do strip -o "$src/build-device/$(basename "$b")" "$root/build/$b"; done
echo "$commit" > "$src/build-device/COMMIT"
echo "build-device/ built from $commit"
ls -la "$src/build-device"
