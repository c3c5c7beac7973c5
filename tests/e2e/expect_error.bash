# Shared by end-to-end scripts (sourced after they define `fail` and `tmp`):
# expect_error WANT [--] COMMAND...: COMMAND exits 2, writes exactly one stderr line matching
# "^error: .*WANT" (WANT a basic regular expression) and nothing to stdout. Its stderr stays in
# $tmp/err and its stdout in $tmp/out for further checks.
expect_error() {
  local want=$1; shift
  if [ "${1:-}" = "--" ]; then shift; fi
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "$* exited $rc, expected 2 ($(cat "$tmp/err"))"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: stderr is not one line: $(cat "$tmp/err")"
  grep -q -- "^error: .*$want" "$tmp/err" || fail "$*: stderr lacks '$want': $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$*: wrote to stdout on error"
}
