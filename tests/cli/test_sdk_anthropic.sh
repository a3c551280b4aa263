# The official @anthropic-ai/sdk, pinned at 1.15.0, against `hearth serve` on the real engine
# with qwen3-tools-20m (a small trained tool-calling Qwen3 with the real tokenizer and
# template): Claude Code's request shapes, tool round trips, thinking, count_tokens and
# errors (tests/server/sdk_anthropic.cjs); then no sequence or KV block left in use.
. "$(dirname "$0")/lib.sh"
SDK=1.15.0
M=$S/fixtures/models/qwen3-tools-20m
pkg=.cache/npm/node_modules/@anthropic-ai/sdk/package.json
if ! grep -q "\"version\": \"$SDK\"" "$pkg" 2>/dev/null &&
   ! npm install --prefix .cache/npm "@anthropic-ai/sdk@$SDK" --no-audit --no-fund >/dev/null 2>&1; then
  fail npm_install "npm install --prefix .cache/npm @anthropic-ai/sdk@$SDK failed"
  summary; exit
fi
"$H" serve --model "$M" --port 0 --threads 2 --kv-memory 64 --api-key sdk-key 2>"$T/serve.log" &
PID=$!
for _ in $(seq 100); do grep -q "ready on" "$T/serve.log" && break; sleep 0.1; done
PORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$T/serve.log")
expect_rc serve_ready 0 "" test -n "$PORT"
node tests/server/sdk_anthropic.cjs "$PORT" sdk-key > "$T/sdk.out" 2>&1
while read -r line; do
  case "$line" in ok\ *) pass "${line#ok }";; FAIL\ *) fail "${line#FAIL }" "";; *) fail sdk_script "$line";; esac
done < "$T/sdk.out"
stats=""
for _ in $(seq 50); do
  stats=$(curl -s -H "x-api-key: sdk-key" "http://127.0.0.1:$PORT/stats")
  echo "$stats" | grep -q '"active":0,"queued":0,"kv_blocks_total":[0-9]*,"kv_blocks_used":0' && break
  sleep 0.1
done
expect_rc nothing_leaked 0 "" grep -q '"kv_blocks_used":0' <<< "$stats"
kill -INT $PID; wait $PID; rc=$?
expect_rc serve_clean_exit 0 "" test "$rc" = 0
expect_rc serve_no_sanitizer 1 "" grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$T/serve.log"
summary
