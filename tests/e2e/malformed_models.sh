#!/usr/bin/env bash
# Drives `agentcompile inspect` over the malformed-model corpus (tests/fixtures/malformed, made by
# tools/make_malformed_corpus.py) plus a few cases that cannot be committed (FIFOs, device files,
# oversized files). Every malformed folder must give exit code 2 and exactly one stderr line,
# "error: ...", naming the file and containing the case's substrings; no crash (exit >= 128), no
# sanitizer report, no hang, nothing written into the folder or the working directory.
# The "ok" cases must load (exit 0), so each error is known to come from its one defect.
set -uo pipefail

AC_BIN=${AC_BIN:-build/agentcompile}
AC_SRC=${AC_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
CORPUS="$AC_SRC/tests/fixtures/malformed"
TIMEOUT_S=${MALFORMED_TIMEOUT_S:-20}

[ -x "$AC_BIN" ] || { echo "malformed_models: no binary at $AC_BIN" >&2; exit 1; }
AC_BIN=$(realpath "$AC_BIN")
[ -f "$CORPUS/cases.tsv" ] || { echo "malformed_models: no corpus at $CORPUS" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
JOBS=${MALFORMED_JOBS:-$(nproc)}
mkdir -p "$work/results"

# Each case runs in the background and leaves one result file: PASS, or FAIL with the reason.
fail() {
  echo "FAIL $1: $2" >"$work/results/$1"
}
pass() {
  echo PASS >"$work/results/$1"
}

# A fingerprint of a folder's entries (name, type, size, inode, mtime in ns), to prove nothing was
# written: any write or replacement changes the size, inode or mtime.
fingerprint() {
  [ -e "$1" ] || { echo absent; return; }
  find "$1" -printf '%p %y %s %i %T@\n' | LC_ALL=C sort
}

# run_case NAME DIR EXPECT FILE NEEDLE...: EXPECT is ok or error; FILE is the path (relative to DIR,
# "." for the folder itself) the message must name.
run_case() {
  local name=$1 dir=$2 expect=$3 file=$4
  shift 4
  local cwd="$work/cwd-$name" out="$work/$name.out" errf="$work/$name.err"
  mkdir -p "$cwd"
  local before after
  before=$(fingerprint "$dir")
  (cd "$cwd" && timeout -k 5 "$TIMEOUT_S" "$AC_BIN" inspect "$dir" --json >"$out" 2>"$errf")
  local rc=$?
  after=$(fingerprint "$dir")
  local err lines
  err=$(cat "$errf")
  lines=$(wc -l <"$errf")

  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "$name" "timed out after ${TIMEOUT_S}s"; return; fi
  if [ "$rc" -ge 128 ]; then fail "$name" "crashed (exit $rc): $err"; return; fi
  if grep -qE 'Sanitizer|runtime error:|terminate called' "$errf"; then fail "$name" "sanitizer/abort report: $err"; return; fi
  if [ "$before" != "$after" ]; then fail "$name" "the model folder changed"; return; fi
  if [ -n "$(ls -A "$cwd")" ]; then fail "$name" "files written to the working directory: $(ls -A "$cwd")"; return; fi

  if [ "$expect" = ok ]; then
    if [ "$rc" -ne 0 ]; then fail "$name" "expected to load, got exit $rc: $err"; return; fi
    if ! grep -q '"parameters"' "$out"; then fail "$name" "no parameters in the JSON output"; return; fi
    pass "$name"
    return
  fi
  if [ "$rc" -ne 2 ]; then fail "$name" "expected exit 2, got $rc: $err"; return; fi
  if [ -s "$out" ]; then fail "$name" "wrote to stdout: $(head -c 200 "$out")"; return; fi
  if [ "$lines" -ne 1 ] || [ "$(tail -c 1 "$errf" | od -An -c | tr -d ' ')" != '\n' ]; then
    fail "$name" "expected exactly one stderr line, got: $err"
    return
  fi
  case "$err" in
    "error: "*) ;;
    *) fail "$name" "stderr does not start with 'error: ': $err"; return ;;
  esac
  local named="$dir"
  [ "$file" = . ] || named="$dir/$file"
  if [[ "$err" != *"$named"* ]]; then fail "$name" "message does not name $named: $err"; return; fi
  local needle
  for needle in "$@"; do
    if [[ "$err" != *"$needle"* ]]; then fail "$name" "message lacks \"$needle\": $err"; return; fi
  done
  pass "$name"
}

# Runs a case in the background, keeping at most JOBS running (each start loads the binary).
spawn() {
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  run_case "$@" </dev/null &
}

# ---- the committed corpus
count=0
while IFS=$'\t' read -r -a row; do
  [ "${#row[@]}" -eq 0 ] && continue
  [[ "${row[0]}" == \#* ]] && continue
  spawn "${row[0]}" "$CORPUS/${row[0]}" "${row[1]}" "${row[2]}" "${row[@]:3}"
  count=$((count + 1))
done <"$CORPUS/cases.tsv"
[ "$count" -ge 100 ] || fail corpus "only $count cases read from cases.tsv"
wait

# ---- cases that cannot live in git: made here from the valid base folder
base="$CORPUS/ok_base"
mk() {  # mk NAME: a fresh copy of the base folder
  rm -rf "$work/$1"
  cp -r "$base" "$work/$1"
  echo "$work/$1"
}
d=$(mk fifo_config); rm "$d/config.json"; mkfifo "$d/config.json"
spawn fifo_config "$d" error config.json "not a regular file"
d=$(mk fifo_weights); rm "$d/model.safetensors"; mkfifo "$d/model.safetensors"
spawn fifo_weights "$d" error model.safetensors "not a regular file"
d=$(mk fifo_generation); rm "$d/generation_config.json"; mkfifo "$d/generation_config.json"
spawn fifo_generation "$d" error generation_config.json "not a regular file"
d=$(mk fifo_index); mkfifo "$d/model.safetensors.index.json"
spawn fifo_index "$d" error model.safetensors.index.json "not a regular file"
d=$(mk config_dev_zero); rm "$d/config.json"; ln -s /dev/zero "$d/config.json"
spawn config_dev_zero "$d" error config.json "not a regular file"
d=$(mk weights_dev_zero); rm "$d/model.safetensors"; ln -s /dev/zero "$d/model.safetensors"
spawn weights_dev_zero "$d" error model.safetensors "not a regular file"
d=$(mk config_dangling_link); rm "$d/config.json"; ln -s "$work/nowhere.json" "$d/config.json"
spawn config_dangling_link "$d" error config.json missing
d=$(mk config_oversized); truncate -s $((64 << 20)) "$d/config.json"
spawn config_oversized "$d" error config.json "bytes, more than"
d=$(mk index_oversized); truncate -s $((65 << 20)) "$d/model.safetensors.index.json"
spawn index_oversized "$d" error model.safetensors.index.json "bytes, more than"
# A sparse 1 GiB file whose header claims all of it: the 100 MB limit must fire before any read.
d=$(mk weights_sparse_huge_header); truncate -s $((1 << 30)) "$d/model.safetensors"
printf '\x00\xf0\xff\x3f\x00\x00\x00\x00' | dd of="$d/model.safetensors" conv=notrunc status=none
spawn weights_sparse_huge_header "$d" error model.safetensors "100 MB"
# A header just under the limit, '{' then zeros: invalid JSON, found without reading it all.
d=$(mk weights_large_blank_header); truncate -s $((8 + 99000000)) "$d/model.safetensors"
printf '\xc0\x9e\xe6\x05\x00\x00\x00\x00{' | dd of="$d/model.safetensors" conv=notrunc status=none
spawn weights_large_blank_header "$d" error model.safetensors "invalid JSON"
spawn missing_folder "$work/does-not-exist" error . "not a model folder"
echo "{}" >"$work/a_file"
spawn model_is_a_file "$work/a_file" error . "not a model folder"

wait
passed=$(grep -l '^PASS$' "$work"/results/* | wc -l)
failures=$(grep -L '^PASS$' "$work"/results/* | wc -l)
grep -h '^FAIL' "$work"/results/* >&2
echo "malformed_models: $passed passed, $failures failed"
[ "$failures" -eq 0 ] && [ "$passed" -ge 100 ]
