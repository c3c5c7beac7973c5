#!/usr/bin/env bash
# compile --db through the binary: what it may point at (a regular file or a link to one; a
# device, a FIFO, a folder or a dangling link is refused with one line, exit 2, and nothing is
# created beside it), and a database another process holds locked for the whole compile: the
# plan is still written (exit 0), and stderr and the report say the measurements were not stored.
set -euo pipefail
bin=${AC_BIN:?}
src=${AC_SRC:?}
fx=$src/tests/fixtures/hf/qwen3_mha_untied_5x
other=$src/tests/fixtures/hf/llama_gqa2_tied_llama3
tmp=$(mktemp -d)
holder=
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_error() {
  local want=$1; shift
  set +e; timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "$* exited $rc, expected 2 ($(cat "$tmp/err"))"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: stderr is not one line: $(cat "$tmp/err")"
  grep -q "^error: --db .*$want" "$tmp/err" || fail "$*: stderr lacks '$want': $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$*: wrote to stdout on error"
}

# ---- refused paths
ln -s /dev/zero "$tmp/zero.db"
expect_error "a character device, not a database file" "$bin" compile "$fx" --out "$tmp/p" --db "$tmp/zero.db" --backend cpu
[ ! -e /dev/zero-journal ] && [ ! -e /dev/zero-wal ] || fail "a journal was created beside /dev/zero"
mkfifo "$tmp/fifo.db"
expect_error "a FIFO" "$bin" compile "$fx" --out "$tmp/p" --db "$tmp/fifo.db" --backend cpu
ln -s "$tmp/none.db" "$tmp/dangling.db"
expect_error "symbolic link to nothing" "$bin" compile "$fx" --out "$tmp/p" --db "$tmp/dangling.db" --backend cpu
[ ! -e "$tmp/none.db" ] || fail "the dangling link's target was created"
[ ! -e "$tmp/p" ] || fail "a refused --db left a plan folder"

# Holds $1 locked from another process until $2.done appears ($2 appears once it holds it):
# "write" as a writer in WAL mode (readers go on), "all" with an exclusive lock (readers wait too).
hold_lock() {
  python3 - "$1" "$2" "$3" <<'PY' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[3] == "all":
    c.execute("PRAGMA locking_mode=EXCLUSIVE")
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[2] + ".done"):
    time.sleep(0.05)
PY
  holder=$!
  for _ in $(seq 400); do [ -e "$2" ] && return 0; sleep 0.05; done
  fail "the lock holder did not start"
}
release_lock() {
  touch "$1.done"
  wait "$holder"
  holder=
}
# A compile against a locked database: exit 0, the plan written, stderr, report.md and report.json
# say the measurements were not stored.
compile_locked() {
  local model=$1 out=$2
  set +e
  "$bin" compile "$model" --out "$out" --db "$tmp/t.db" --db-wait 0.3 --backend cpu --budget 3 --advisor none \
    >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  set -e
  [ $rc -eq 0 ] || fail "compile with a locked --db exited $rc: $(tail -3 "$tmp/err")"
  [ -f "$out/plan.json" ] && [ -f "$out/report.json" ] || fail "no plan folder"
  grep -q "^warning: tuning db .*were not stored in the tuning database: the database is locked" "$tmp/err" ||
    fail "stderr does not say the measurements were not stored: $(cat "$tmp/err")"
  grep -q "were not stored" "$out/report.md" || fail "report.md does not say it"
  python3 - "$out/report.json" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))["db"]
assert db["stored"] is False and db["not_stored"] > 0, db
assert "locked" in db["note"], db
PY
}

# ---- a database another process holds locked, as the whole compile runs
# readers and writers wait: a fresh file held exclusively; nothing can be read, all is measured
hold_lock "$tmp/t.db" "$tmp/lock1" all
compile_locked "$fx" "$tmp/plan"
release_lock "$tmp/lock1"
python3 -c "import json; d=json.load(open('$tmp/plan/report.json'))['db']; assert d['records_here'] is None and d['reads_failed'] > 0, d"
# unlocked, the next compile stores everything it measures
"$bin" compile "$fx" --out "$tmp/plan" --db "$tmp/t.db" --backend cpu --budget 3 --advisor none --json >"$tmp/out.json" 2>"$tmp/err"
python3 -c "import json; d=json.load(open('$tmp/out.json'))['db']; assert d['stored'] and d['records_here'] > 0, d"
! grep -q "^warning: tuning db" "$tmp/err" || fail "a warning with an unlocked database: $(cat "$tmp/err")"
# writers wait, readers go on (another compile writing for a long time): what is there is reused
hold_lock "$tmp/t.db" "$tmp/lock2" write
compile_locked "$other" "$tmp/plan2"
release_lock "$tmp/lock2"
python3 -c "import json; d=json.load(open('$tmp/plan2/report.json'))['db']; assert d['reads_failed'] == 0 and d['records_here'] > 0, d"
echo "compile_db e2e: ok"
