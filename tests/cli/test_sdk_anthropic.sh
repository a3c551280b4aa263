# The official @anthropic-ai/sdk, pinned at 1.15.0, against `hearth serve` on the real engine
# with qwen3-tools-20m (a small trained tool-calling Qwen3 with the real tokenizer and
# template): Claude Code's request shapes, tool round trips, thinking, count_tokens and
# errors (tests/server/sdk_anthropic.cjs); then no sequence or KV block left in use.
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models/qwen3-tools-20m
serve_start "$T/serve.log" serve --model "$M" --port 0 --threads 2 --kv-memory 64 --api-key sdk-key
expect_rc serve_ready 0 "" test -n "$PORT"
bash tests/server/sdk_npm.sh tests/server/sdk_anthropic.cjs "$PORT" sdk-key > "$T/sdk.out" 2>&1
report sdk_script "$T/sdk.out"
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
