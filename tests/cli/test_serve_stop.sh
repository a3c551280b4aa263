# hearth serve's graceful shutdown on brown-llama-8m (tests/server/stop_client.py): after
# SIGTERM new connections are refused and requests in flight finish within
# --shutdown-grace; past it, streams end with their API's error event and non-streamed
# requests get a 503; a second signal exits at once; bursts past --max-connections (the
# engine server and the --isolate parent) leave the server answering and stopping.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
C=tests/server/stop_client.py
serve_start "$T/cut.log" serve --model "$B" --port 0 --threads 2 --kv-memory 64 --max-seqs 1 --shutdown-grace 0
expect_rc cut_ready 0 "" test -n "$PORT"
python3 "$C" cut "$PORT" "$PID" > "$T/cut.out" 2>&1
report cut_script "$T/cut.out"
wait $PID; rc=$?
expect_rc cut_exit 0 "" test "$rc" = 0
expect_rc cut_logged 0 "ending them" grep "still running" "$T/cut.log"

serve_start "$T/grace.log" serve --model "$B" --port 0 --threads 2 --kv-memory 64 --shutdown-grace 600
python3 "$C" grace "$PORT" "$PID" "$T/grace.log" > "$T/grace.out" 2>&1
report grace_script "$T/grace.out"
wait $PID; rc=$?
expect_rc grace_exit 0 "" test "$rc" = 0

serve_start "$T/twice.log" serve --model "$B" --port 0 --threads 2 --kv-memory 64 --shutdown-grace 600
python3 "$C" twice "$PORT" "$PID" "$T/twice.log" > "$T/twice.out" 2>&1
report twice_script "$T/twice.out"
wait $PID; rc=$?
expect_rc twice_exit_at_once 0 "" test "$rc" = 143
expect_rc twice_logged 0 "while stopping" cat "$T/twice.log"
# burst_stop NAME ARGS...: stop_client.py burst against serve ARGS, which must then exit 0
# within 20 s of its SIGTERM.
burst_stop() {
  local name=$1; shift
  serve_start "$T/$name.log" serve --model "$B" --port 0 --threads 2 --kv-memory 64 --timeout 1 \
    --max-connections 4 "$@"
  python3 "$C" burst "$PORT" "$PID" "$name" > "$T/$name.out" 2>&1
  report "${name}_script" "$T/$name.out"
  for _ in $(seq 200); do kill -0 $PID 2>/dev/null || break; sleep 0.1; done
  expect_rc "${name}_stopped" 1 "" kill -0 $PID
  kill -9 $PID 2>/dev/null; wait $PID; rc=$?
  expect_rc "${name}_exit" 0 "" test "$rc" = 0
}
burst_stop burst
burst_stop burst_isolate --isolate
expect_rc bad_grace 2 "--shutdown-grace must be 0..86400" "$H" serve --model "$B" --shutdown-grace -1
summary
