# The Responses API (and chat.completions tool round trips) through the official openai npm
# package against `hearth serve` on qwen3-tools-20m, a small trained tool-calling Qwen3
# with the real tokenizer and template (tests/server/sdk_responses.cjs): string and item
# input, streams, tool call -> function_call_output -> answer, two calls in one turn,
# previous_response_id, retrieve / delete, errors as SDK exceptions; then a clean exit.
. "$(dirname "$0")/lib.sh"
Q=$S/fixtures/models/qwen3-tools-20m
"$H" serve --model "$Q" --port 0 --threads 2 2>"$T/serve.log" &
PID=$!
for _ in $(seq 100); do grep -q "ready on" "$T/serve.log" && break; sleep 0.1; done
PORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$T/serve.log")
expect_rc responses_serve_ready 0 "" test -n "$PORT"
bash tests/server/sdk_npm.sh tests/server/sdk_responses.cjs "$PORT" > "$T/sdk.out" 2>&1
while read -r line; do
  case "$line" in ok\ *) pass "${line#ok }";; FAIL\ *) fail "${line#FAIL }" "";; *) fail sdk_script "$line";; esac
done < "$T/sdk.out"
kill -INT $PID; wait $PID; rc=$?
expect_rc responses_serve_clean_exit 0 "" test "$rc" = 0
expect_rc responses_serve_no_sanitizer 1 "" grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$T/serve.log"
summary
