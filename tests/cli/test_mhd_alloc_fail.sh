# hearth serve (brown-llama-8m) with libmicrohttpd's own allocation N failing
# (tests/fault/mhd_alloc_fail.c through LD_PRELOAD fails only allocations made from
# libmicrohttpd's code: its daemon, connections, header parsing, responses), for a sample
# of the N of a start, four requests and a stop (HEARTH_FAULT_FULL=1: every N), then the
# same for the parent of `serve --isolate`.
# Each run either exits 1 at once saying what could not start and why, or answers each
# request whole (200 with its Content-Type, a whole body or stream), with the 503 in the
# API's shape, or by closing the connection; then answers two more requests normally, stops
# with exit 0 on SIGTERM, and leaves no block libmicrohttpd allocated live at exit.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
use_shim libmhd_alloc_fail

# req PORT OUT KIND: one request's "STATUS CONTENT_TYPE" (000: no reply), its body in OUT
req() {
  local url=http://127.0.0.1:$1 body='{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4'
  case $3 in
    health) curl -s -m 20 -o "$2" -w '%{http_code} %{content_type}' "$url/health" ;;
    chat) curl -s -m 60 -o "$2" -w '%{http_code} %{content_type}' "$url/v1/chat/completions" \
      -H 'Content-Type: application/json' -d "$body}" ;;
    stream) curl -s -N -m 60 -o "$2" -w '%{http_code} %{content_type}' \
      "$url/v1/chat/completions" -H 'Content-Type: application/json' -d "$body, \"stream\": true}" ;;
    messages) curl -s -N -m 60 -o "$2" -w '%{http_code} %{content_type}' "$url/v1/messages" \
      -H 'Content-Type: application/json' -H 'anthropic-version: 2023-06-01' \
      -d "${body/\"max_tokens\": 4/\"max_tokens\": 4, \"model\": \"m\"}, \"stream\": true}" ;;
  esac
}
# whole KIND "STATUS TYPE" OUT: a reply that is complete, an error in the API's shape, or none
whole() {
  local kind=$1 st=${2%% *} type=${2#* } out=$3
  case $st in
    000) return 0 ;;
    503) grep -q '"error"' "$out" && return 0 ;;
    200) case $kind in
        health) [ "$type" = application/json ] && grep -q '"status"' "$out" && return 0 ;;
        chat) [ "$type" = application/json ] && grep -q '"finish_reason":"length"' "$out" && return 0 ;;
        stream) [ "$type" = text/event-stream ] && grep -q '^data: \[DONE\]' "$out" && return 0 ;;
        messages) [ "$type" = text/event-stream ] && grep -q '^event: message_stop' "$out" && return 0 ;;
      esac ;;
  esac
  echo "$kind: $2: $(head -c 300 "$out")"
  return 1
}
# requests PORT N [first]: four requests that may meet the failure, then (without "first")
# two after it that may not
requests() {
  local k got
  for k in health chat stream messages; do
    got=$(req "$1" "$T/out.$2.$k" $k)
    whole $k "$got" "$T/out.$2.$k" || return 1
  done
  [ -n "$3" ] && return 0
  for k in health chat; do
    got=$(req "$1" "$T/out.$2.$k" $k)
    [ "${got%% *}" = 200 ] && whole $k "$got" "$T/out.$2.$k" || { echo "after: $k $got"; return 1; }
  done
}

# one_run N [--isolate]: serve with libmicrohttpd's allocation N failing (-1: none, the
# four requests only: the count of the allocations to sweep)
one_run() {
  local mode=${2:-} name=$1${2:+_isolate} log=$T/serve$2.$1.log first=""
  [ "$1" = -1 ] && first=1
  HEARTH_FAULT_MHD_ALLOC=$1 LD_PRELOAD=$SHIM "$H" serve --model "$B" --port 0 --threads 2 \
    --kv-memory 64 $mode 2>"$log" &
  local pid=$! port
  for _ in $(seq 600); do
    grep -qs "ready on" "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  port=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$log")
  if [ -z "$port" ]; then
    fails_clearly "alloc_${name}_fails_clearly" "$pid" \
      "cannot listen on .*: Cannot allocate memory" "$log"
    return
  fi
  expect_rc "alloc_${name}_answers" 0 "" requests "$port" "$name" $first
  kill -TERM "$pid"
  timeout 60 tail --pid="$pid" -f /dev/null
  wait "$pid"
  expect_rc "alloc_${name}_stops" 0 "mhd_alloc_fail: [1-9][0-9]* allocations, [01] failed" \
    sh -c "test $? = 0 && cat $log"
  expect_rc "alloc_${name}_leaks_nothing" 1 "" grep -E "mhd_alloc_fail: .* [1-9][0-9]* live" "$log"
}

for mode in "" --isolate; do
  one_run -1 $mode
  # the last report is the process's own (an --isolate engine child's comes before)
  total=$(sed -n 's/^mhd_alloc_fail: \([0-9]*\) allocations.*/\1/p' "$T/serve$mode.-1.log" | tail -1)
  expect_rc "allocations_counted${mode:+_isolate}" 0 "" test "${total:-0}" -gt 20
  # the first four N (the daemon's start), then every 24th: --isolate 12 past the direct
  # server's and the ASan build 6 past the release one's, so that the four cover every
  # sixth N between them (CI's time); HEARTH_FAULT_FULL=1: every N
  offset=0
  [ -z "${HEARTH_ASAN:-}" ] || offset=6
  [ -z "$mode" ] || offset=$((offset + 12))
  n=0
  while [ "$n" -lt "${total:-0}" ]; do
    one_run "$n" $mode
    n=$((n + 1))
    if [ "$n" -ge 4 ] && [ -z "${HEARTH_FAULT_FULL:-}" ]; then
      while [ $((n % 24)) != "$offset" ]; do n=$((n + 1)); done
    fi
  done
done
summary
