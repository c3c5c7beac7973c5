#!/usr/bin/env bash
# synth-model --out and compile --out replace only a folder the same command wrote. Anything else
# (a folder with other files, a file, a link, the current folder or one holding it, the root, a
# downloaded model, a folder of the other command) is refused with one line, exit 2, untouched.
set -euo pipefail
bin=${AC_BIN:?}
src=${AC_SRC:?}
fx=$src/tests/fixtures/hf/qwen3_mha_untied_5x
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/expect_error.bash"
synth() { "$bin" synth-model --preset tiny-qwen3 --seed 1 --quiet --out "$@"; }

# Its own folder is replaced whole, leaving nothing beside it.
mkdir "$tmp/w"
synth "$tmp/w/m" >/dev/null
synth "$tmp/w/m" >/dev/null
[ -f "$tmp/w/m/.agentcompile-folder.json" ] && [ -f "$tmp/w/m/model.safetensors" ] || fail "model folder incomplete"
[ "$(ls -A "$tmp/w")" = m ] || fail "left beside the folder: $(ls -A "$tmp/w")"

# A folder holding anything else, or its own folder with a file added, is refused and kept.
mkdir "$tmp/mine" && echo keep >"$tmp/mine/notes.txt"
expect_error "--out $tmp/mine: exists and is not a synth-model folder" synth "$tmp/mine"
echo keep >"$tmp/w/m/notes.txt"
expect_error "holds notes.txt, which agentcompile synth-model did not write" synth "$tmp/w/m"
[ "$(cat "$tmp/mine/notes.txt")$(cat "$tmp/w/m/notes.txt")" = keepkeep ] || fail "a user file was touched"
rm "$tmp/w/m/notes.txt"
cp -r "$fx" "$tmp/hf"
expect_error "not a synth-model folder" synth "$tmp/hf"
diff -r "$fx" "$tmp/hf" >/dev/null || fail "the downloaded model folder was touched"

# A file, a link, the root, the current folder and the folders holding it.
echo keep >"$tmp/file"
expect_error "exists and is not a folder" synth "$tmp/file"
ln -s "$tmp/w/m" "$tmp/link"
expect_error "symbolic link" synth "$tmp/link"
expect_error "root folder" synth /
(cd "$tmp/w/m" && expect_error "current folder" synth .)
(cd "$tmp/w/m" && expect_error "current folder or holds it" synth ..)
(cd "$tmp/w/m" && expect_error "current folder or holds it" synth ../../w)
[ -f "$tmp/w/m/model.safetensors" ] && [ "$(cat "$tmp/file")" = keep ] || fail "a refused target was touched"

# compile --out: a synthesised model is not a plan folder, and a plan folder is not a model.
expect_error "it is a synth-model folder" "$bin" compile "$fx" --out "$tmp/w/m" --backend cpu
# Each compile its own DB: a second compile into one DB meets the regression check, which a loaded
# machine can trip; replacing the folder is what is tested here.
"$bin" compile "$fx" --out "$tmp/plan" --backend cpu --db "$tmp/t1.db" --budget 3 >/dev/null 2>"$tmp/c1.err" ||
  fail "compile: $(cat "$tmp/c1.err")"
expect_error "it is a plan folder" synth "$tmp/plan"
"$bin" compile "$fx" --out "$tmp/plan" --backend cpu --db "$tmp/t2.db" --budget 3 >/dev/null 2>"$tmp/c2.err" ||
  fail "compile into its own plan folder: $(cat "$tmp/c2.err")"
[ -f "$tmp/plan/plan.json" ] || fail "a plan folder was not replaced"
echo "out folders: ok"
