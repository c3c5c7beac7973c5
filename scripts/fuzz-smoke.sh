#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each briefly on its seed corpus.
# Nothing to do until fuzz/ exists.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d fuzz ] || { echo "fuzz-smoke: no fuzz targets yet"; exit 0; }
