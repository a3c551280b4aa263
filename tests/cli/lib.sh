# Shared helpers for the CLI test scripts (source it). Each check prints "ok NAME" or
# "FAIL NAME: why"; `summary` prints the "# N passed, M failed" line tests/run.sh reads.
H=${HEARTH_BIN:-build/hearth}
S=${HEARTH_SHARED:-../shared}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
_p=0; _f=0
pass() { echo "ok $1"; _p=$((_p + 1)); }
fail() { echo "FAIL $1: $2"; _f=$((_f + 1)); }
# expect_rc NAME RC PATTERN cmd...: runs cmd, wants exit code RC and PATTERN (grep -E) in
# its stderr+stdout (empty PATTERN: anything).
expect_rc() {
  local name=$1 rc=$2 pat=$3; shift 3
  local out got
  out=$("$@" 2>&1); got=$?
  if [ "$got" != "$rc" ]; then fail "$name" "exit $got, wanted $rc: $(echo "$out" | tail -3)"; return; fi
  if [ -n "$pat" ] && ! echo "$out" | grep -qE -- "$pat"; then
    fail "$name" "output lacks /$pat/: $(echo "$out" | tail -3)"; return
  fi
  if echo "$out" | grep -qE "AddressSanitizer|runtime error:|LeakSanitizer|ThreadSanitizer"; then
    fail "$name" "sanitizer report: $(echo "$out" | grep -E 'Sanitizer|runtime error' | head -2)"; return
  fi
  pass "$name"
}
summary() { echo "# $_p passed, $_f failed"; [ "$_f" = 0 ]; }
# report NAME FILE: turns a client script's "ok X" / "FAIL X: why" lines in FILE into
# checks; any other line is a failure of NAME (a crash, a traceback).
report() {
  local name=$1 file=$2 line
  while read -r line; do
    case "$line" in ok\ *) pass "${line#ok }";; FAIL\ *) fail "${line#FAIL }" "";; *) fail "$name" "$line";; esac
  done < "$file"
}
# serve_start LOG ARGS...: runs "$H" ARGS... (a serve command with --port 0) in the
# background with stderr in LOG, waits until it is ready; sets PID and PORT (empty when it
# never got ready).
serve_start() {
  local log=$1; shift
  "$H" "$@" 2>"$log" &
  PID=$!
  for _ in $(seq 100); do grep -q "ready on" "$log" && break; sleep 0.1; done
  PORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$log")
}
# fails_clearly NAME PID PATTERN LOG: the server PID (never ready) exits 1 within 30 s with
# PATTERN (grep -E) in its log LOG.
fails_clearly() {
  timeout 30 tail --pid="$2" -f /dev/null
  wait "$2"
  expect_rc "$1" 0 "$3" sh -c "test $? = 1 && cat $4"
}
# use_shim LIB: SHIM is BUILD/tests/LIB.so (an LD_PRELOAD fault shim, tests/fault/), checked
# to be built; ASan is told the shim may come before its runtime in the library list.
use_shim() {
  SHIM=$(cd "$(dirname "$H")" && pwd)/tests/$1.so
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
  expect_rc shim_built 0 "" test -f "$SHIM"
}
