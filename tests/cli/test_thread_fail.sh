# hearth serve (brown-llama-8m) with its thread start number N failing, for every N of a
# start, three GET /health, three JSON-mode chat requests and a stop
# (tests/fault/thread_fail.c through LD_PRELOAD counts hearth's starts, all through
# hr_thread_start, and libmicrohttpd's): each run either exits 1 at once saying which
# thread could not start and why, or serves (a signal watcher that did not start is a
# warning; a connection whose thread libmicrohttpd could not start is closed, and the next
# one is answered; the grammar mask thread, started by the first constrained request, not
# starting is that request's 503, and the next one starts it) and stops with exit 0 on
# SIGTERM. Then the same for the parent of `serve --isolate` (its listener, supervisor,
# connections and stop; its engine child fails nothing). Never a crash, a hang or a
# sanitizer report.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
use_shim libthread_fail

# health PORT: GET /health's status (000: no reply)
health() { curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health"; }
# chat PORT OUT: a JSON-mode chat completion's status, its body into OUT
chat() {
  curl -s -m 60 -o "$2" -w '%{http_code}' "http://127.0.0.1:$1/v1/chat/completions" \
    -H 'Content-Type: application/json' -d '{"messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 4, "response_format": {"type": "json_object"}}'
}
# answered N STATUS...: the three /health and three chats of run N all 200 but at most one:
# 000 (its connection's thread did not start) or a chat's 503 naming the grammar mask thread
answered() {
  local n=$1 i=0 bad=0 st
  shift
  for st in "$@"; do
    i=$((i + 1))
    [ "$st" = 200 ] && continue
    bad=$((bad + 1))
    [ "$st" = 000 ] && continue
    [ "$st" = 503 ] && [ $i -gt 3 ] && grep -q "cannot start the grammar mask thread" \
      "$T/chat.$n.$((i - 3))" && continue
    echo "status $st of request $i"
    return 1
  done
  [ $bad -le 1 ] || { echo "$bad requests not answered: $*"; return 1; }
}

# one_run N [--isolate]: serve with start N failing; sets SERVED (1: it got ready)
one_run() {
  local n mode=${2:-} log=$T/serve$2.$1.log
  n=$1${mode:+_isolate}
  HEARTH_FAULT_THREAD=$1 LD_PRELOAD=$SHIM "$H" serve --model "$B" --port 0 --threads 2 \
    --kv-memory 64 $mode 2>"$log" &
  local pid=$!
  for _ in $(seq 600); do
    grep -qs "ready on" "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  local port
  port=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$log")
  SERVED=0
  if [ -z "$port" ]; then
    fails_clearly "start_${n}_fails_clearly" "$pid" \
      "cannot (start the .* thread|listen on .*): Resource" "$log"
    return
  fi
  SERVED=1
  local got="" i
  for _ in 1 2 3; do got="$got $(health "$port")"; done
  for i in 1 2 3; do got="$got $(chat "$port" "$T/chat.$n.$i")"; done
  expect_rc "start_${n}_answers" 0 "" answered "$n" $got
  kill -TERM "$pid"
  timeout 60 tail --pid="$pid" -f /dev/null
  wait "$pid"
  expect_rc "start_${n}_stops" 0 "" sh -c "test $? = 0 && cat $log"
}

# N from 0 past the last start (the load's signal watcher, the pool's worker, the engine,
# the request deadline thread, libmicrohttpd's listener, the requests' connections, the
# grammar mask thread, the stop's watcher): the last runs fail nothing
n=0
while [ "$n" -lt 16 ]; do
  one_run "$n"
  n=$((n + 1))
done
expect_rc last_run_served 0 "" test "$SERVED" = 1
n=0
while [ "$n" -lt 12 ]; do
  one_run "$n" --isolate
  n=$((n + 1))
done
expect_rc last_isolate_run_served 0 "" test "$SERVED" = 1
expect_rc isolate_supervisor_reached 0 "" grep -qs "cannot start the isolate supervisor thread" \
  $T/serve--isolate.*.log
for w in "signal watch thread.*while loading" "signal watch thread.*while stopping"; do
  expect_rc "warned_${w%% *}_$(echo "$w" | awk '{print $NF}')" 0 "" grep -qE "cannot start the $w" $T/serve.*.log
done
expect_rc mask_thread_reached 0 "" grep -qs "cannot start the grammar mask thread" $T/chat.*
summary
