# Constrained decoding through `hearth serve` on qwen3-tools-20m with the official openai
# package and ajv (tests/server/structured.cjs): JSON schemas (some of the fixtures'), JSON
# object mode, guided choice / regex, GBNF, forced and strict tool calls, the Responses and
# Anthropic formats, streams, n > 1, refusals; then the agent frameworks' structured output and
# tool calls (tests/server/frameworks.cjs: the AI SDK, LangChain, the OpenAI Agents SDK); then a
# clean exit.
. "$(dirname "$0")/lib.sh"
Q=$S/fixtures/models/qwen3-tools-20m
serve_start "$T/serve.log" serve --model "$Q" --port 0 --threads 2
expect_rc structured_serve_ready 0 "" test -n "$PORT"
bash tests/server/sdk_npm.sh tests/server/structured.cjs "$PORT" "$S/fixtures/jsonschema" > "$T/out" 2>&1
report structured_script "$T/out"
bash tests/server/sdk_npm.sh tests/server/frameworks.cjs "$PORT" > "$T/fw" 2>&1
report frameworks_script "$T/fw"
kill -INT $PID; wait $PID; rc=$?
expect_rc structured_serve_clean_exit 0 "" test "$rc" = 0
expect_rc structured_serve_no_sanitizer 1 "" grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$T/serve.log"
summary
