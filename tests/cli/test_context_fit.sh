# Context fit, errors clients recover from, and the access log, against `hearth serve` on
# qwen3-tools-20m (the real Qwen3 tokenizer and template, 131072-token config context)
# with a 1 MiB KV pool (1024 positions of the default bf16 KV): no max_tokens and max_tokens far above the context
# are served (ended by "length" at the engine's context), a prompt over it gets each API's
# wording (OpenAI context_length_exceeded, Anthropic "prompt is too long: N tokens > M
# maximum"), x-should-retry on errors, Anthropic-shaped 404s, a full queue refused with
# 503 / 529, /stats gauges back to zero the moment a cancelled stream ends, and an access
# log line per request (text and --log-format json).
. "$(dirname "$0")/lib.sh"
Q=$S/fixtures/models/qwen3-tools-20m
start_serve() { # LOG FORMAT ARGS...: hearth serve on a free port with --log-format FORMAT
  local log=$1 format=$2; shift 2
  serve_start "$log" --log-level info --log-format "$format" serve --model "$Q" --port 0 --threads 2 --kv-memory 1 "$@"
}
expect_rc bad_log_format 2 'unknown --log-format "xml" \(text\|json\)' "$H" --log-format xml serve --model "$Q"
expect_rc bad_max_queue 2 "sizes must be positive" "$H" serve --model "$Q" --max-queue -1
start_serve "$T/serve.log" text
expect_rc serve_ready 0 "" test -n "$PORT"
expect_rc context_logged 0 "context 1024 positions per sequence" cat "$T/serve.log"
cat > "$T/fit.py" <<'PY'
import json, socket, sys, threading, time, urllib.request, urllib.error
port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"
def call(path, body=None, method=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    h = {"Content-Type": "application/json", **(headers or {})}
    req = urllib.request.Request(base + path, data=data, method=method or ("POST" if data else "GET"), headers=h)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"null"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), dict(e.headers)
def check(name, cond, info=""):
    print(("ok " if cond else "FAIL ") + name + ("" if cond else ": " + str(info)[:400]))
hi = [{"role": "user", "content": "Hi"}]
long_text = "word " * 1100  # > 1024 tokens
# no max_tokens: generate until a stop or the context end
st, b, _ = call("/v1/chat/completions", {"messages": hi})
check("chat_no_max_tokens", st == 200 and b["choices"][0]["finish_reason"] in ("stop", "length"), b)
# far above the context: lowered to what fits, ends with length at the context end
st, b, _ = call("/v1/completions", {"prompt": "The weather", "max_tokens": 32000, "ignore_eos": True})
u = b.get("usage", {}) if st == 200 else {}
check("max_tokens_clamped", st == 200 and b["choices"][0]["finish_reason"] == "length" and
      u["prompt_tokens"] + u["completion_tokens"] == 1024, (st, u))
st, b, _ = call("/v1/messages", {"model": "m", "max_tokens": 32000, "messages": hi})
check("anthropic_max_tokens_32000", st == 200 and b["stop_reason"] in ("end_turn", "max_tokens"), b)
st, b, _ = call("/v1/chat/completions", {"messages": hi, "max_completion_tokens": 10 ** 9})
check("chat_max_completion_tokens_huge", st == 200, b)
# ids with an embedding row but no token (151669..151935): 400 with the valid range
bad = 151700
for name, path, body in [
        ("prompt_id_untokenizable", "/v1/completions", {"prompt": [9707, bad], "max_tokens": 2}),
        ("logit_bias_untokenizable", "/v1/chat/completions", {"messages": hi, "max_tokens": 2,
                                                              "logit_bias": {str(bad): 100}}),
        ("detokenize_untokenizable", "/detokenize", {"tokens": [bad]})]:
    st, b, _ = call(path, body)
    check(name, st == 400 and "valid ids are 0..151668" in b["error"]["message"], (st, b))
st, b, _ = call("/v1/completions", {"prompt": [9707, 151668], "max_tokens": 3, "temperature": 1.5, "seed": 3})
check("prompt_id_last_token", st == 200 and b["usage"]["completion_tokens"] >= 1, (st, b))
# a byte-0 token (188, "\u0100" in the byte-level vocab) decodes to a NUL inside the text
st, b, _ = call("/detokenize", {"tokens": [9707, 188, 9707]})
check("detokenize_nul_byte", st == 200 and b["prompt"] == "Hello\x00Hello", (st, b))
# prompts that cannot fit
st, b, h = call("/v1/chat/completions", {"messages": [{"role": "user", "content": long_text}], "max_tokens": 5})
e = b["error"] if st == 400 else {}
check("openai_context_length_exceeded", st == 400 and e.get("code") == "context_length_exceeded" and
      "maximum context length is 1024 tokens" in e.get("message", "") and e.get("type") == "invalid_request_error", b)
check("openai_context_no_retry", h.get("x-should-retry") == "false", h)
st, b, _ = call("/v1/completions", {"prompt": long_text})
check("completions_context_length_exceeded", st == 400 and b["error"].get("code") == "context_length_exceeded", b)
st, b, _ = call("/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": long_text}]})
m = b.get("error", {}).get("message", "")
check("anthropic_prompt_too_long", st == 400 and b["type"] == "error" and b["error"]["type"] == "invalid_request_error"
      and m.startswith("prompt is too long: ") and m.endswith(" tokens > 1023 maximum"), b)
# Anthropic shapes for unrouted paths and methods
st, b, h = call("/v1/messages/nope", {"x": 1})
check("anthropic_404_shape", st == 404 and b["type"] == "error" and b["error"]["type"] == "not_found_error" and
      h.get("x-should-retry") == "false", (st, b, h))
st, b, _ = call("/v1/nope", headers={"anthropic-version": "2023-06-01"})
check("anthropic_version_404_shape", st == 404 and b["type"] == "error", b)
st, b, _ = call("/v1/messages", method="GET")
check("anthropic_405_shape", st == 405 and b["type"] == "error" and "POST" in b["error"]["message"], b)
# a stream cancelled mid-way: the gauges are back to 0 without another request
s = socket.create_connection(("127.0.0.1", port))
body = json.dumps({"prompt": "The weather", "max_tokens": 900, "ignore_eos": True, "stream": True}).encode()
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
got = b""
while got.count(b"data: ") < 5:
    got += s.recv(4096)
st, busy, _ = call("/stats")
s.close()
idle = None
for _ in range(40):
    time.sleep(0.05)
    st, idle, _ = call("/stats")
    if idle["active"] == 0 and idle["kv_blocks_used"] == 0:
        break
check("stats_while_streaming", busy["active"] == 1 and busy["kv_blocks_used"] > 0, busy)
check("stats_after_cancel", idle["active"] == 0 and idle["kv_blocks_used"] == 0 and idle["queued"] == 0, idle)
PY
python3 "$T/fit.py" "$PORT" > "$T/fit.out" 2>&1
report fit_script "$T/fit.out"
kill "$PID"; wait "$PID" 2>/dev/null
expect_rc access_log_line 0 "request client=127\.0\.0\.1:[0-9]+ method=POST path=/v1/completions status=200 .*prompt_tokens=[0-9]+ cached_tokens=[0-9]+ completion_tokens=[0-9]+ ttft_ms=[0-9.]+ finish=length stream=false" cat "$T/serve.log"
expect_rc access_log_error 0 "status=400 .*error=\"This model's maximum context length" cat "$T/serve.log"
expect_rc access_log_cancelled 0 "status=200 .*finish=cancelled stream=true" cat "$T/serve.log"
# JSON logs, and a full queue: --max-seqs 1 --max-queue 1 runs one request, holds one, refuses a third
start_serve "$T/json.log" json --max-seqs 1 --max-queue 1
cat > "$T/queue.py" <<'PY'
import json, sys, threading, time, urllib.request, urllib.error
base = f"http://127.0.0.1:{sys.argv[1]}"
def call(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)
def check(name, cond, info=""):
    print(("ok " if cond else "FAIL ") + name + ("" if cond else ": " + str(info)[:400]))
long = {"prompt": "The weather", "max_tokens": 1000, "ignore_eos": True}
res = []
ts = [threading.Thread(target=lambda: res.append(call("/v1/completions", long))) for _ in range(2)]
for t in ts:
    t.start()
    time.sleep(0.3)
st, b, h = call("/v1/completions", long)
check("queue_full_openai", st == 503 and "overloaded" in b["error"]["message"] and h.get("x-should-retry") == "true", (st, b, h))
st, b, h = call("/v1/messages", {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]})
check("queue_full_anthropic", st == 529 and b["type"] == "error" and h.get("x-should-retry") == "true", (st, b))
for t in ts:
    t.join()
check("queued_requests_served", sorted(r[0] for r in res) == [200, 200], [r[0] for r in res])
PY
python3 "$T/queue.py" "$PORT" > "$T/queue.out" 2>&1
report queue_script "$T/queue.out"
kill "$PID"; wait "$PID" 2>/dev/null
python3 - "$T/json.log" > "$T/json.out" 2>&1 <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
reqs = [l for l in lines if l.get("msg") == "request"]
ok = lambda name, c, info="": print(("ok " if c else "FAIL ") + name + ("" if c else ": " + str(info)[:300]))
ok("json_log_lines", lines and all({"time", "level", "msg"} <= set(l) for l in lines), lines[:2])
ok("json_access_fields", any(r["status"] == 200 and r["path"] == "/v1/completions" and r["completion_tokens"] == 1000
                             and r["finish"] == "length" and r["ttft_ms"] > 0 for r in reqs), reqs)
ok("json_access_refused", any(r["status"] == 503 and "overloaded" in r["error"] for r in reqs), reqs)
PY
report json_log_script "$T/json.out"
summary
