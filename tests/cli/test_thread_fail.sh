# hearth serve (brown-llama-8m) with its thread start number N failing, for every N of a
# start, a request and a stop (tests/fault/thread_fail.c through LD_PRELOAD counts hearth's
# starts, all through hr_thread_start, and libmicrohttpd's): each run either exits 1 at
# once saying which thread could not start and why, or serves (a signal watcher that did
# not start is a warning; a connection whose thread libmicrohttpd could not start is
# closed, and the next one is answered) and stops with exit 0 on SIGTERM. Never a crash,
# a hang or a sanitizer report.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
SHIM=$(cd "$(dirname "$H")" && pwd)/tests/libthread_fail.so
# ASan wants its runtime first in the library list; the shim comes before it here
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
expect_rc shim_built 0 "" test -f "$SHIM"

# health PORT: GET /health's status (000: no reply)
health() { curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health"; }

# one_run N: serve with start N failing; sets SERVED (1: it got ready)
one_run() {
  local n=$1 log=$T/serve.$1.log
  HEARTH_FAULT_THREAD=$n LD_PRELOAD=$SHIM "$H" serve --model "$B" --port 0 --threads 2 \
    --kv-memory 64 2>"$log" &
  local pid=$!
  for _ in $(seq 600); do
    grep -q "ready on" "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  local port
  port=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$log")
  SERVED=0
  if [ -z "$port" ]; then
    timeout 30 tail --pid="$pid" -f /dev/null
    wait "$pid"
    expect_rc "start_${n}_fails_clearly" 0 "cannot (start the .* thread|listen on .*): Resource" \
      sh -c "test $? = 1 && cat $log"
    return
  fi
  SERVED=1
  local got=""
  for _ in 1 2 3; do got="$got $(health "$port")"; done
  # at most one of them closed unanswered (its connection's thread)
  expect_rc "start_${n}_answers" 0 "" sh -c "echo '$got' | grep -qE '^ (200 200 (200|000)|200 000 200|000 200 200)$'"
  kill -TERM "$pid"
  timeout 60 tail --pid="$pid" -f /dev/null
  wait "$pid"
  expect_rc "start_${n}_stops" 0 "" sh -c "test $? = 0 && cat $log"
}

# N from 0 past the last start (the load's signal watcher, the pool's worker, the engine,
# the request deadline thread, libmicrohttpd's listener, the requests' connections, the
# stop's watcher): the last runs fail nothing
n=0
while [ "$n" -lt 12 ]; do
  one_run "$n"
  n=$((n + 1))
done
expect_rc last_run_served 0 "" test "$SERVED" = 1
for w in "signal watch thread.*while loading" "signal watch thread.*while stopping"; do
  expect_rc "warned_${w%% *}_$(echo "$w" | awk '{print $NF}')" 0 "" grep -qE "cannot start the $w" $T/serve.*.log
done
summary
