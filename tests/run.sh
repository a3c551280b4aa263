#!/usr/bin/env bash
# Runs every test: the unit/golden executables in BUILD/tests and the CLI scripts in
# tests/cli/test_*.sh (each prints the harness's "ok"/"FAIL" lines and "# N passed, M failed").
# Ends with the total line "N passed, N failed". Run from the repository root.
# HEARTH_ONLY="test_a test_b ...": only the tests of those names (tests/run_tsan.sh).
set -uo pipefail
BUILD=${1:-build}
export HEARTH_BIN="$PWD/$BUILD/hearth"
export HEARTH_SHARED="${HEARTH_SHARED:-$(cd .. && pwd)/shared}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
passed=0; failed=0
log=$(mktemp)
only=" ${HEARTH_ONLY:-} "
run_one() {
  local name=$1; shift
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
  local start=$(date +%s)
  "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^(ok|FAIL|     )' "$log" | sed "s|^|[$name] |" | grep -v '^\[.*\] ok ' || true
  local p f
  p=$(grep -E '^# [0-9]+ passed' "$log" | tail -1 | awk '{print $2}')
  f=$(grep -E '^# [0-9]+ passed' "$log" | tail -1 | awk '{print $4}')
  if [ -z "$p" ]; then
    echo "[$name] FAIL: no summary (exit $rc); last output:"; tail -20 "$log" | sed 's/^/    /'
    p=0; f=1
  elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
    echo "[$name] FAIL: exit $rc"; tail -20 "$log" | sed 's/^/    /'
    f=1
  fi
  echo "[$name] $p passed, $f failed ($(( $(date +%s) - start )) s)"
  passed=$((passed + p)); failed=$((failed + f))
}
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  run_one "$(basename "$t")" "$t"
done
for s in tests/cli/test_*.sh; do
  [ -f "$s" ] || continue
  run_one "$(basename "$s" .sh)" bash "$s"
done
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
