# hearth serve --isolate on brown-llama-8m (tests/server/isolate_client.py): replies
# through the proxy equal direct ones and stream in pieces; kill -9 and SIGSTOP of the
# engine child mid-work (error events, restart, /health answering throughout); a request
# that cannot reach the child retried on the next; 64 streams with disconnects leave no
# fd in the parent and nothing active in the child; a half-closed client's busy stream is
# cancelled; a child dying under a large upload still gets its client a 502, a parent without a
# ready child a large body's 503; the public listener enforces the
# engine server's limits (early 401/413, request deadline, per-address limit); a crash
# loop shows as failed with its reason while the parent idles; a child stuck in its load
# is killed at --load-timeout; SIGTERM removes the child and the runtime directory.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
C=tests/server/isolate_client.py
ARGS="--threads 2 --kv-memory 64"
# isolate_start LOG ARGS...: as serve_start, for a parent whose child must get ready; sets
# PID, PORT and RUNDIR (the runtime directory the parent printed).
isolate_start() {
  serve_start "$@"
  RUNDIR=$(sed -n 's|.*runtime dir \([^)]*\)).*|\1|p' "$1")
}

# the crash loop runs in the background while the rest is tested
mkdir "$T/bad" && echo '{' > "$T/bad/config.json"
"$H" serve --model "$T/bad" --port 0 --isolate 2>"$T/loop.log" &
LOOP=$!

serve_start "$T/direct.log" serve --model "$B" --port 0 $ARGS
DPID=$PID DPORT=$PORT
# the public port is bound before any child starts: a port in use fails at once
"$H" serve --model "$B" --port "$DPORT" --isolate > "$T/inuse.log" 2>&1; rc=$?
expect_rc port_in_use 0 "cannot listen on 127.0.0.1:$DPORT" sh -c "test $rc = 1 && cat $T/inuse.log"
expect_rc port_in_use_no_child 1 "" grep -q "engine" "$T/inuse.log"
isolate_start "$T/iso.log" serve --model "$B" --port 0 $ARGS --isolate --probe-timeout 2
expect_rc isolate_ready 0 "" test -n "$PORT"
expect_rc isolate_rundir 0 "" test -d "$RUNDIR"
expect_rc rundir_private 0 "^700$" stat -c %a "$RUNDIR"
for mode in same kill stop; do
  python3 "$C" $mode "$PORT" $([ $mode = same ] && echo "$DPORT") $([ $mode = stop ] && echo 2) \
    > "$T/$mode.out" 2>&1
  grep '^#' "$T/$mode.out"
  report ${mode}_script <(grep -v '^#' "$T/$mode.out")
done
python3 "$C" retry "$PORT" "$RUNDIR" > "$T/retry.out" 2>&1
grep '^#' "$T/retry.out"; report retry_script <(grep -v '^#' "$T/retry.out")
python3 "$C" many "$PORT" "$PID" > "$T/many.out" 2>&1
grep '^#' "$T/many.out"; report many_script <(grep -v '^#' "$T/many.out")
python3 "$C" halfclose "$PORT" > "$T/halfclose.out" 2>&1
report halfclose_script "$T/halfclose.out"
python3 "$C" upload "$PORT" > "$T/upload.out" 2>&1
report upload_script "$T/upload.out"
expect_rc log_says_killed 0 "did not answer /health within 2.0 s: killing it" cat "$T/iso.log"

CHILD=$(pgrep -P "$PID")
kill -TERM "$PID"; wait "$PID"; rc=$?
expect_rc sigterm_exit_0 0 "" test "$rc" = 0
expect_rc sigterm_child_gone 1 "" kill -0 "$CHILD"
expect_rc sigterm_rundir_gone 1 "" test -e "$RUNDIR"
kill -TERM "$DPID"; wait "$DPID"

# the engine server's limits on the parent's public listener
isolate_start "$T/limits.log" serve --model "$B" --port 0 $ARGS --isolate --api-key sekret \
  --max-body-mb 1 --request-timeout 2
python3 "$C" limits "$PORT" > "$T/limits.out" 2>&1
report limits_script "$T/limits.out"
expect_rc limits_deadline_logged 0 "did not arrive within 2 s \(--request-timeout\)" cat "$T/limits.log"
kill -TERM "$PID"; wait "$PID"
isolate_start "$T/per_ip.log" serve --model "$B" --port 0 $ARGS --isolate --api-key sekret \
  --max-connections-per-ip 4
python3 "$C" per_ip "$PORT" > "$T/per_ip.out" 2>&1
report per_ip_script "$T/per_ip.out"
kill -TERM "$PID"; wait "$PID"

# SIGTERM while a stream runs: the child's graceful shutdown ends it, through the proxy
isolate_start "$T/term.log" serve --model "$B" --port 0 $ARGS --isolate --shutdown-grace 0
python3 "$C" term "$PORT" "$PID" > "$T/term.out" 2>&1
report term_script "$T/term.out"
wait "$PID"; rc=$?
expect_rc term_exit_0 0 "" test "$rc" = 0
expect_rc term_rundir_gone 1 "" test -e "$RUNDIR"

# a second signal while stopping (a stream holds the 600 s grace) exits at once
isolate_start "$T/twice.log" serve --model "$B" --port 0 $ARGS --isolate --shutdown-grace 600
CHILD=$(pgrep -P "$PID")
curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -o /dev/null -d \
  '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3000, "ignore_eos": true, "stream": true}' &
CURL=$!
sleep 0.5; kill -TERM "$PID"; sleep 0.5; kill -TERM "$PID"; wait "$PID"; rc=$?
expect_rc twice_exit_at_once 0 "" test "$rc" = 143
for _ in $(seq 40); do kill -0 "$CHILD" 2>/dev/null || break; sleep 0.05; done
expect_rc twice_child_gone 1 "" kill -0 "$CHILD"
expect_rc twice_rundir_gone 1 "" test -e "$RUNDIR"
expect_rc twice_logged 0 "signal 15 while stopping, exiting" cat "$T/twice.log"
wait "$CURL" 2>/dev/null

# a parent killed with SIGKILL takes its child along (PR_SET_PDEATHSIG)
isolate_start "$T/orphan.log" serve --model "$B" --port 0 $ARGS --isolate
CHILD=$(pgrep -P "$PID")
kill -KILL "$PID"; wait "$PID" 2>/dev/null
for _ in $(seq 40); do kill -0 "$CHILD" 2>/dev/null || break; sleep 0.05; done
expect_rc parent_killed_child_gone 1 "" kill -0 "$CHILD"
rm -rf "$RUNDIR"

# a child stuck in its load (the test hook sleeps before it loads) is killed at
# --load-timeout and restarted, as a crash; requests meanwhile get the not-ready 503
HEARTH_TEST_CHILD_LOAD_DELAY_S=600 "$H" serve --model "$B" --port 0 $ARGS --isolate \
  --load-timeout 1 2>"$T/load.log" &
LPID=$!
for _ in $(seq 100); do grep -qs "restarting in" "$T/load.log" && break; sleep 0.1; done
LTPORT=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' "$T/load.log")
expect_rc load_timeout_logged 0 "was not ready within 1 s \(--load-timeout\): killing it" cat "$T/load.log"
expect_rc load_timeout_restarts 0 "restarting in 0.5 s" cat "$T/load.log"
expect_rc load_timeout_health 0 '"reason":"engine child was killed by signal 9 \(SIGKILL\) after [0-9.]+ s: it was not ready within 1 s' \
  curl -s "http://127.0.0.1:$LTPORT/health"
expect_rc load_timeout_503 0 'not ready \(restarting\).*--load-timeout.*"code":503' \
  curl -s "http://127.0.0.1:$LTPORT/v1/completions" -d '{"prompt": "hi"}'
kill -TERM $LPID; wait $LPID; rc=$?
expect_rc load_timeout_sigterm 0 "" test "$rc" = 0
# without the flag the same slow child is waited for (the default is 600 s)
HEARTH_TEST_CHILD_LOAD_DELAY_S=2 "$H" serve --model "$B" --port 0 $ARGS --isolate 2>"$T/load2.log" &
LPID=$!
for _ in $(seq 100); do grep -q "ready on" "$T/load2.log" && break; sleep 0.1; done
expect_rc load_slow_ready 0 "ready on" cat "$T/load2.log"
expect_rc load_slow_not_killed 1 "" grep -q "killing it" "$T/load2.log"
kill -TERM $LPID; wait $LPID

# the crash loop: failed after 5 quick exits (0.5 + 1 + 2 + 4 s of backoff), with the reason
LPORT=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' "$T/loop.log")
for _ in $(seq 150); do
  curl -s "http://127.0.0.1:$LPORT/health" > "$T/loop.json"; grep -q '"failed"' "$T/loop.json" && break; sleep 0.1
done
expect_rc loop_failed 0 '"state":"failed".*no tokenizer.json' cat "$T/loop.json"
expect_rc loop_503 0 '"type":"error".*not ready \(it keeps failing\)' \
  curl -s "http://127.0.0.1:$LPORT/v1/messages" -d '{}'
python3 "$C" notready "$LPORT" > "$T/notready.out" 2>&1
report notready_script "$T/notready.out"
cpu=$(awk '{print $14 + $15}' /proc/$LOOP/stat)
expect_rc loop_parent_idle 0 "" test "$cpu" -lt 50  # clock ticks (1/100 s) in all that time
echo "# crash-loop parent CPU: $cpu ticks"
expect_rc loop_logged 0 "crash loop \(5 quick exits in a row\)" cat "$T/loop.log"
kill -TERM $LOOP; wait $LOOP; rc=$?
expect_rc loop_sigterm 0 "" test "$rc" = 0

expect_rc no_sanitizer_reports 1 "" grep -qE "AddressSanitizer|runtime error|LeakSanitizer|ThreadSanitizer" \
  "$T/iso.log" "$T/loop.log" "$T/direct.log" "$T/term.log" "$T/load.log" "$T/limits.log"

# bad input
expect_rc bad_load_timeout 2 "--load-timeout must be 0..86400" "$H" serve --model "$B" --isolate --load-timeout -1
expect_rc bad_probe_timeout 2 "--probe-interval and --probe-timeout must be in" "$H" serve --model "$B" --isolate --probe-timeout 0
expect_rc isolate_and_socket 2 "do not go together" "$H" serve --model "$B" --isolate --unix-socket "$T/s"
expect_rc help_hides_socket 1 "" sh -c "$H serve --help | grep -q unix-socket"
expect_rc help_lists_isolate 0 "--isolate" "$H" serve --help
summary
