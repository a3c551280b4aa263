# hearth serve with fork, pipe2 and accept failing (tests/fault/proc_fail.c through
# LD_PRELOAD). The --isolate supervisor, when fork or pipe2 fails at the start or at a
# respawn (EAGAIN, ENOMEM, EMFILE): says why in the log and /health, retries with its
# backoff (0.5 s doubling), and after five failures in a row /health says failed, never a
# busy loop; the requests meanwhile get a 503 naming the reason, and the child that starts
# at last serves. A pipe2 failure at setup exits 1 saying so. accept failing with EMFILE
# (direct and --isolate): a warning, and retries from 10 ms doubling to 1 s apart instead of
# libmicrohttpd's spin (a core at 100% while no connection is open); the connection is
# answered once accept works again. Every run stops with exit 0 on SIGTERM.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
use_shim libproc_fail

# run_serve LOG MODE VAR=VALUE...: serve (MODE: --isolate or "") under the shim with those
# faults; sets PID and PORT (once listening)
run_serve() {
  local log=$1 mode=$2
  shift 2
  env "$@" LD_PRELOAD="$SHIM" "$H" serve --model "$B" --port 0 --threads 2 --kv-memory 64 \
    $mode 2>"$log" &
  PID=$!
  for _ in $(seq 100); do
    grep -qsE "listening on|ready on" "$log" && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  PORT=$(sed -n 's#.*\(listening\|ready\) on http://[^:]*:\([0-9]*\).*#\2#p' "$log" | head -1)
}
# wait_for LOG PATTERN [TENTHS]: PATTERN (grep -E) shows up in LOG within TENTHS / 10 s
wait_for() {
  for _ in $(seq "${3:-300}"); do
    grep -qsE "$2" "$1" && return 0
    sleep 0.1
  done
  echo "no /$2/ in $(tail -3 "$1")"
  return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# get PATH OUT [SECONDS]: the status of GET PATH (000: no reply), the body into OUT
get() { curl -s -m "${3:-20}" -o "$2" -w '%{http_code}' "http://127.0.0.1:$PORT$1"; }
chat() {
  curl -s -m 60 -o "$1" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/chat/completions" \
    -H 'Content-Type: application/json' \
    -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}'
}
# stops NAME LOG: SIGTERM ends the server with exit 0 (and the runtime directory removed)
stops() {
  kill -TERM "$PID"
  timeout 60 tail --pid="$PID" -f /dev/null
  wait "$PID"
  local rc=$? dir
  dir=$(sed -n 's|.*(runtime dir \(.*\))$|\1|p' "$2")
  expect_rc "$1_stops" 0 "" sh -c "test $rc = 0 && test ! -e '${dir:-/nonexistent}' && cat $2"
}

# fork fails at the start twice (EAGAIN): 503s naming it, then the third try serves
run_serve "$T/fork_start.log" --isolate HEARTH_FAULT_FORK=0:2
expect_rc fork_start_backs_off 0 "" wait_for "$T/fork_start.log" \
  "cannot start the engine child: fork: Resource temporarily unavailable; next try in 1.0 s"
expect_rc fork_start_health_503 0 "" test "$(get /health "$T/h1")" = 503
expect_rc fork_start_health_says 0 '"reason":"cannot start the engine child: fork' cat "$T/h1"
expect_rc fork_start_chat_503 0 "" test "$(chat "$T/c1")" = 503
expect_rc fork_start_chat_says 0 "not ready .*fork: Resource temporarily unavailable" cat "$T/c1"
expect_rc fork_start_ready 0 "" wait_for "$T/fork_start.log" "ready on"
expect_rc fork_start_serves 0 "" test "$(chat "$T/c2")" = 200
stops fork_start "$T/fork_start.log"

# fork always fails (ENOMEM): five tries in 7.5 s, then failed; no busy loop
run_serve "$T/fork_loop.log" --isolate HEARTH_FAULT_FORK=0:1000000:12
t0=$(cpu_ticks "$PID")
expect_rc fork_loop_fails 0 "" wait_for "$T/fork_loop.log" \
  "fork: Cannot allocate memory; next try in 8.0 s; /health says failed" 150
expect_rc fork_loop_health 0 '"state":"failed"' sh -c "test \$(curl -s -o $T/h2 \
  -w '%{http_code}' http://127.0.0.1:$PORT/health) = 503 && cat $T/h2"
expect_rc fork_loop_chat 0 "keeps failing" sh -c "test \"\$(curl -s -o $T/c3 -w '%{http_code}' \
  -d '{}' -H 'Content-Type: application/json' http://127.0.0.1:$PORT/v1/chat/completions)\" \
  = 503 && cat $T/c3"
ticks=$(($(cpu_ticks "$PID") - t0))
echo "# fork loop: parent CPU $ticks ticks over the five tries"
expect_rc fork_loop_idle 0 "" test "$ticks" -lt 100
stops fork_loop "$T/fork_loop.log"

# a respawn's fork fails twice: the restart backs off further, then serves
run_serve "$T/respawn.log" --isolate HEARTH_FAULT_FORK=1:2
expect_rc respawn_first_ready 0 "" wait_for "$T/respawn.log" "ready on"
child=$(sed -n 's|.*engine pid \([0-9]*\)).*|\1|p' "$T/respawn.log")
kill -KILL "$child"
expect_rc respawn_backs_off 0 "" wait_for "$T/respawn.log" "fork: .*; next try in 2.0 s"
expect_rc respawn_restarted 0 "" wait_for "$T/respawn.log" "engine restarted"
expect_rc respawn_serves 0 "" test "$(chat "$T/c4")" = 200
stops respawn "$T/respawn.log"

# pipe2 call N fails (EMFILE): at setup a clear exit 1, at a spawn a retry
for n in 0 1 2 3 4; do
  run_serve "$T/pipe.$n.log" --isolate HEARTH_FAULT_PIPE2=$n
  if [ -z "$PORT" ]; then
    fails_clearly "pipe_${n}_fails_clearly" "$PID" "pipe: Too many open files" "$T/pipe.$n.log"
    continue
  fi
  expect_rc "pipe_${n}_ready" 0 "" wait_for "$T/pipe.$n.log" "ready on"
  expect_rc "pipe_${n}_serves" 0 "" test "$(chat "$T/c5")" = 200
  stops "pipe_$n" "$T/pipe.$n.log"
done
expect_rc pipe_spawn_reached 0 "" grep -qs "cannot start the engine child: pipe: Too many" \
  "$T"/pipe.*.log

# accept fails with EMFILE: no answer while it lasts and no spin, then answers
for mode in "" --isolate; do
  m=accept${mode:+_isolate}
  run_serve "$T/$m.log" "$mode" HEARTH_FAULT_ACCEPT=0:1000000
  wait_for "$T/$m.log" "ready on" >/dev/null
  t0=$(cpu_ticks "$PID")
  expect_rc "${m}_no_answer" 0 "" test "$(get /health "$T/h3" 2)" = 000
  ticks=$(($(cpu_ticks "$PID") - t0))
  echo "# $m: CPU $ticks ticks over 2 s of failing accepts"
  expect_rc "${m}_idle" 0 "" test "$ticks" -lt 40
  expect_rc "${m}_warns" 0 "" grep -q "cannot accept a connection: Too many open files" "$T/$m.log"
  stops "$m" "$T/$m.log"
  run_serve "$T/$m.6.log" "$mode" HEARTH_FAULT_ACCEPT=0:6
  wait_for "$T/$m.6.log" "ready on" >/dev/null
  expect_rc "${m}_answers_after" 0 "" test "$(get /health "$T/h4")" = 200
  stops "${m}_after" "$T/$m.6.log"
done

# the --isolate parent holds two descriptors per connection (the client's and the child's):
# its connection limit is fitted to that, so accept does not run out of them
expect_rc isolate_fd_fit 0 "needs 1056 file descriptors but the limit is 200 .*at most 84 conn" \
  sh -c "ulimit -n 200; timeout -s TERM 3 '$H' serve --model '$B' --port 0 --threads 2 \
    --kv-memory 64 --isolate --max-connections 512 2>&1; exit 0"
summary
