#!/usr/bin/env bash
# Runs every libFuzzer binary BUILD_DIR/fuzz/fuzz_* for FUZZ_SECONDS (default 20) each,
# with a fresh corpus folder under a temp dir, seeded by BUILD_DIR/fuzz/seed_X when fuzz_X has one
# (tests/fuzz/seed_X.c writes small valid inputs). Exits nonzero if any fuzzer finds a crash,
# a leak or a sanitizer error (UBSan's reports, which do not stop the run, included). Run from the repository root (make fuzz does).
set -uo pipefail
BUILD=${1:-build-fuzz}
SECS=${FUZZ_SECONDS:-20}
bash scripts/fetch-tokenizers.sh >/dev/null || { echo "fuzz: fetching tokenizers failed" >&2; exit 1; }
export HEARTH_TOKENIZERS="$PWD/.cache/tokenizers"
export HEARTH_SHARED="${HEARTH_SHARED:-$(cd .. && pwd)/shared}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
found=0
for f in "$BUILD"/fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  found=1
  name=$(basename "$f")
  mkdir -p "$work/$name/corpus" "$work/$name/artifacts"
  seed="$BUILD/fuzz/seed_${name#fuzz_}"
  if [ -x "$seed" ] && ! "$seed" "$work/$name/corpus"; then
    echo "FAIL $name: $seed could not write the seed corpus"; failed=1; continue
  fi
  echo "== $name (${SECS} s)"
  if "$f" -max_total_time="$SECS" -rss_limit_mb=4096 -artifact_prefix="$work/$name/artifacts/" \
       "$work/$name/corpus" >"$work/$name/log" 2>&1; then
    if grep -q "runtime error:" "$work/$name/log"; then # UBSan reports and goes on
      echo "FAIL $name: undefined behaviour"; grep -m3 -A3 "runtime error:" "$work/$name/log"
      failed=1
    else
      grep -E '^(#[0-9]+\s+DONE|Done)' "$work/$name/log" | tail -1
    fi
  else
    echo "FAIL $name:"; tail -40 "$work/$name/log"
    failed=1
  fi
done
[ "$found" = 1 ] || { echo "fuzz: no fuzz_* binaries in $BUILD/fuzz" >&2; exit 1; }
exit $failed
