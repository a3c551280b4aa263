# hearth serve against hostile setups and clients (issue 13): flag values that would wrap
# are refused, a model id that is not valid UTF-8 is refused at startup, --max-connections
# above the file-descriptor limit raises the soft limit or is lowered with a warning, and
# after a storm of connection resets mid-request the gauges are back to zero at once.
# The request-level defenses (early 401/413, memory budget, deadline, per-address limit,
# output backlog) are tested against the fake engine (tests/server/hostile_client.py).
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
Q=$S/fixtures/models/qwen3-tools-20m
big=17592186044416 # 2^44 MiB: << 20 wraps a 64-bit size
expect_rc kv_memory_wrap 2 "--kv-memory $big MiB is more bytes" "$H" serve --model "$B" --kv-memory $big
expect_rc request_memory_wrap 2 "--request-memory-mb $big MiB" "$H" serve --model "$B" --request-memory-mb $big
expect_rc max_body_wrap 2 "--max-body-mb must be 1..4096" "$H" serve --model "$B" --max-body-mb $big
expect_rc max_seqs_wrap 2 "--max-seqs and --threads must be 0..4096" "$H" serve --model "$B" --max-seqs 4294967297
expect_rc bad_request_timeout 2 "--request-timeout must be 0..86400" "$H" serve --model "$B" --request-timeout -1
expect_rc bad_per_ip 2 "--max-connections-per-ip must be 0..65536" "$H" serve --model "$B" --max-connections-per-ip -1
expect_rc alias_not_utf8 1 "--alias is not valid UTF-8" "$H" serve --model "$B" --alias $'bad\xff'
ln -s "$B" "$T/"$'brown\xfe'
expect_rc dir_not_utf8 1 "directory name \(give --alias ID\) is not valid UTF-8" "$H" serve --model "$T/"$'brown\xfe'
expect_rc alias_too_long 1 "--alias must be 1 to 255 bytes" "$H" serve --model "$B" --alias "$(printf 'a%.0s' $(seq 300))"

# a hard limit of 128 descriptors: 1000 connections cannot fit, the listener serves 96
(ulimit -n 128; exec "$H" serve --model "$B" --port 0 --threads 2 --kv-memory 16 --max-connections 1000) 2>"$T/fd.log" &
PID=$!
for _ in $(seq 100); do grep -q "ready on" "$T/fd.log" && break; sleep 0.1; done
PORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$T/fd.log")
expect_rc fd_limit_warned 0 "needs 1032 file descriptors but the limit is 128 .*serving at most 96" cat "$T/fd.log"
expect_rc fd_limit_clamped 0 '"max_connections":96' curl -sf "http://127.0.0.1:$PORT/stats"
kill "$PID"; wait "$PID" 2>/dev/null
# a soft limit of 128 under a higher hard one: raised, no warning, all 1000 served
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 1032 ]; then
  (ulimit -Sn 128; exec "$H" serve --model "$B" --port 0 --threads 2 --kv-memory 16 --max-connections 1000) 2>"$T/fd2.log" &
  PID=$!
  for _ in $(seq 100); do grep -q "ready on" "$T/fd2.log" && break; sleep 0.1; done
  PORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$T/fd2.log")
  expect_rc fd_soft_raised 0 '"max_connections":1000' curl -sf "http://127.0.0.1:$PORT/stats"
  expect_rc fd_soft_no_warning 1 "" grep -q "file descriptors" "$T/fd2.log"
  kill "$PID"; wait "$PID" 2>/dev/null
else
  echo "skipped fd_soft_raised: the hard descriptor limit is below 1032"
fi

# 120 requests at once (streamed and not), every client resetting its connection at a
# random moment: the gauges are zero within a second of the last reset
serve_start "$T/storm.log" serve --model "$Q" --port 0 --threads 2 --kv-memory 64 --max-seqs 16
cat > "$T/storm.py" <<'PY'
import json, random, socket, struct, sys, threading, time, urllib.request
port = int(sys.argv[1])
def stats():
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats").read())
def one(i):
    s = socket.create_connection(("127.0.0.1", port))
    body = json.dumps({"prompt": "The weather " * random.randint(1, 60), "max_tokens": 400,
                       "ignore_eos": True, "stream": i % 2 == 0}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(random.random() * 0.8)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
random.seed(7)
ts = [threading.Thread(target=one, args=(i,)) for i in range(120)]
for t in ts: t.start()
for t in ts: t.join()
t0 = time.time()
while time.time() < t0 + 1:
    st = stats()
    if st["active"] == 0 and st["queued"] == 0 and st["kv_blocks_used"] == 0:
        break
    time.sleep(0.02)
ok = st["active"] == 0 and st["queued"] == 0 and st["kv_blocks_used"] == 0
print(("ok" if ok else "FAIL") + " storm_gauges_zero" + ("" if ok else ": " + json.dumps(st)))
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", headers={"Content-Type": "application/json"},
                             data=json.dumps({"prompt": "Hi", "max_tokens": 3}).encode())
r = urllib.request.urlopen(req, timeout=60)
print(("ok" if r.status == 200 else "FAIL") + " storm_served_after")
PY
python3 "$T/storm.py" "$PORT" > "$T/storm.out" 2>&1
report storm_script "$T/storm.out"
kill "$PID"; wait "$PID" 2>/dev/null
summary
