# The Responses API (and chat.completions tool round trips) through the official openai npm
# package against `hearth serve` on qwen3-tools-20m, a small trained tool-calling Qwen3
# with the real tokenizer and template (tests/server/sdk_responses.cjs): string and item
# input, streams, tool call -> function_call_output -> answer, two calls in one turn,
# previous_response_id, retrieve / delete, errors as SDK exceptions; then a clean exit.
. "$(dirname "$0")/lib.sh"
Q=$S/fixtures/models/qwen3-tools-20m
serve_start "$T/serve.log" serve --model "$Q" --port 0 --threads 2
expect_rc responses_serve_ready 0 "" test -n "$PORT"
bash tests/server/sdk_npm.sh tests/server/sdk_responses.cjs "$PORT" > "$T/sdk.out" 2>&1
report sdk_script "$T/sdk.out"
kill -INT $PID; wait $PID; rc=$?
expect_rc responses_serve_clean_exit 0 "" test "$rc" = 0
expect_rc responses_serve_no_sanitizer 1 "" grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$T/serve.log"
summary
