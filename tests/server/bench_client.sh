# `hearth bench-serve` against the fake-engine server of tests/unit/test_server_http.c.
# Usage: bench_client.sh PORT API_KEY (run from the repository root; HEARTH_BIN set).
. "$(dirname "$0")/../cli/lib.sh"
U="http://127.0.0.1:$1"
expect_rc bench_run 0 'requests: +24 ok, 0 errors, concurrency 6' \
  "$H" bench-serve --url "$U" --api-key "$2" --concurrency 6 --requests 24 --prompt-tokens 40 --max-tokens 5 --shared-prefix 20
out=$("$H" bench-serve --url "$U/v1/" --api-key "$2" --concurrency 2 --requests 4 --prompt-tokens 8 --max-tokens 3 2>&1)
for pat in 'tokens: +12 output \(3\.0 per request\)' 'throughput: +[0-9.]+ output tok/s' \
           'TTFT ms: +p50 [0-9.]+ +p95 [0-9.]+ +p99 [0-9.]+ +mean' 'ITL ms: +p50' 'latency ms: +p50'; do
  if echo "$out" | grep -qE "$pat"; then pass "bench_report /$pat/"; else fail "bench_report" "no /$pat/ in: $out"; fi
done
expect_rc bench_bad_key 1 'HTTP 401' "$H" bench-serve --url "$U" --api-key nope --requests 2 --max-tokens 2
expect_rc bench_no_server 1 'cannot connect' "$H" bench-serve --url http://127.0.0.1:1 --requests 1
expect_rc bench_https 2 'only http://' "$H" bench-serve --url https://x
expect_rc bench_no_url 2 'exactly one of --url and --engine' "$H" bench-serve
expect_rc bench_bad_prefix 2 '--shared-prefix must be' "$H" bench-serve --url "$U" --prompt-tokens 4 --shared-prefix 5
summary
