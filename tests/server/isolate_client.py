#!/usr/bin/env python3
"""hearth serve --isolate on brown-llama-8m, driven by tests/cli/test_isolate.sh (which
starts the servers). Prints "ok NAME" / "FAIL NAME: why" lines.
  same PORT DIRECT_PORT: replies through the proxy equal direct ones (non-stream and
    stream, temperature 0, chat, completions, Anthropic); a stream arrives in many
    pieces spread over its decode; the query string and errors pass through.
  kill PORT: kill -9 of the child mid-stream: chat and Anthropic streams end with their
    error event, a non-streamed request in flight gets a 502; /health says restarting, then ready with a new pid; the next request works.
  stop PORT: SIGSTOP of the child: detected within the probe timeout, killed, replaced;
    /health answers all along (its latency is printed).
  retry PORT RUNDIR: a request that cannot reach the child (its socket removed) waits for
    the replacement and succeeds there.
  term PORT PARENT_PID: SIGTERM to the parent (--shutdown-grace 0) while a stream runs:
    the stream ends with the child's shutdown error event, passed through.
  many PORT PARENT_PID: 64 concurrent streams, about half left mid-stream and some read
    slowly: afterwards the parent's fd count is back to its baseline, its RSS grew less
    than 16 MiB (thread stacks and malloc arenas), and /stats shows nothing active.
  halfclose PORT: a client that half-closes (shutdown SHUT_WR) while its stream flows
    without a pause is gone, as for the engine server: its connection closes within a
    second and the child's sequence is cancelled (not relayed to its end).
  upload PORT: (--probe-timeout 2) the child dies (SIGSTOPped, then killed by the
    supervisor) while a 6 MB body is on its way: the client still gets its 502 (the rest
    of the body read and dropped first), not a broken pipe; the next request succeeds.
  notready PORT: (a parent whose child keeps failing) a 6 MB body gets the not-ready 503,
    read after the body, not a broken pipe.
  limits PORT: the public listener's own limits (the parent runs with --api-key sekret
    --max-body-mb 1 --request-timeout 2): a wrong key and an oversized body are answered
    after the headers (no 100 Continue); headers trickled a byte per 0.3 s are cut at the
    2 s deadline.
  per_ip PORT: (the parent runs with --api-key sekret --max-connections-per-ip 4) a
    client's fifth connection is closed while its four others are served."""
import http.client
import json
import os
import random
import signal
import socket
import sys
import threading
import time

from slow_common import closed_after

MODE, PORT = sys.argv[1], int(sys.argv[2])
CHAT = {"messages": [{"role": "user", "content": "Hello"}], "temperature": 0}


def check(name, cond, info=""):
    print(("ok " if cond else "FAIL ") + name + ("" if cond else ": " + str(info)[:400]), flush=True)


def call(path, body=None, port=PORT, method=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method or ("POST" if body is not None else "GET"), path,
              json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def health():
    st, data = call("/health", timeout=10)
    return st, json.loads(data)


def child_pid():
    return health()[1]["isolate"]["pid"]


def wait_ready(old_pid=None, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        st, h = health()
        if st == 200 and h["isolate"]["pid"] != old_pid:
            return h
        time.sleep(0.05)
    return None


def stream_pieces(path, body, port=PORT):
    """The body of a streamed reply as the pieces recv returned, with their times."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    raw = json.dumps(body).encode()
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (path.encode(), len(raw)) + raw)
    pieces, t0 = [], time.time()
    while True:
        d = s.recv(65536)
        if not d:
            break
        pieces.append((time.time() - t0, d))
    s.close()
    return pieces


def sse_events(raw):
    """(event name or None, data) pairs of an SSE body (chunked framing removed loosely)."""
    out, name = [], None
    for line in raw.decode(errors="replace").split("\n"):
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((name, line[6:]))
            name = None
    return out


def chat_text(raw):
    text = ""
    for _, d in sse_events(raw):
        if d != "[DONE]":
            for ch in json.loads(d).get("choices", []):
                text += ch["delta"].get("content") or ""
    return text


def same():
    direct = int(sys.argv[3])
    comp = {"prompt": "The jury said", "max_tokens": 24, "temperature": 0}
    a, b = call("/v1/completions", comp), call("/v1/completions", comp, port=direct)
    ja, jb = json.loads(a[1]), json.loads(b[1])
    check("same_completion", a[0] == 200 and ja["choices"][0]["text"] == jb["choices"][0]["text"]
          and ja["usage"] == jb["usage"], (a, b))
    anth = {"model": "m", "max_tokens": 12, "temperature": 0, "messages": [{"role": "user", "content": "Hi"}]}
    a, b = call("/v1/messages?beta=true", anth), call("/v1/messages?beta=true", anth, port=direct)
    check("same_anthropic", a[0] == 200 and json.loads(a[1])["content"] == json.loads(b[1])["content"], (a, b))
    body = dict(CHAT, max_tokens=40, stream=True)
    a, b = call("/v1/chat/completions", body), call("/v1/chat/completions", body, port=direct)
    check("same_stream", a[0] == 200 and chat_text(a[1]) == chat_text(b[1]) and chat_text(a[1]),
          (chat_text(a[1]), chat_text(b[1])))
    ea = [e for e in sse_events(a[1])]
    check("stream_done", ea and ea[-1][1] == "[DONE]", a[1][-200:])
    pieces = stream_pieces("/v1/chat/completions", dict(CHAT, max_tokens=200, ignore_eos=True, stream=True))
    total = pieces[-1][0] if pieces else 0
    early = [t for t, _ in pieces if t < total / 2]
    check("stream_in_pieces", len(pieces) >= 20 and len(early) >= 5,
          "%d pieces over %.3f s, %d in the first half" % (len(pieces), total, len(early)))
    st, data = call("/v1/nope")
    check("not_found_passes", st == 404 and "unknown route" in json.loads(data)["error"]["message"], data)
    st, data = call("/v1/chat/completions", {"messages": "x"})
    check("bad_request_passes", st == 400, data)
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    c.putrequest("POST", "/v1/completions")
    c.putheader("Transfer-Encoding", "chunked")
    c.putheader("Content-Type", "application/json")
    c.endheaders()
    raw = json.dumps(comp).encode()
    for i in range(0, len(raw), 7):
        part = raw[i:i + 7]
        c.send(b"%x\r\n%s\r\n" % (len(part), part))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    check("chunked_request_body", r.status == 200 and json.loads(r.read())["choices"][0]["text"] == ja["choices"][0]["text"])
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello")
    check("conflicting_lengths_400", s.recv(100).startswith(b"HTTP/1.1 400"))
    s.close()
    raw = json.dumps(comp).encode()
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
              b"Content-Length: %d\r\n\r\n" % len(raw))
    interim = s.recv(100)
    s.sendall(raw)
    s.settimeout(10)
    rest = b""
    while b'"usage"' not in rest:
        d = s.recv(4096)
        if not d:
            break
        rest += d
    s.close()
    check("expect_continue", interim == b"HTTP/1.1 100 Continue\r\n\r\n" and rest.startswith(b"HTTP/1.1 200"),
          (interim, rest[:100]))

    def first_line(port):  # an oversized body announced with Expect: the child decides
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: 100000000\r\n\r\n")
        line = s.recv(100).split(b"\r\n")[0]
        s.close()
        return line
    a, b = first_line(PORT), first_line(direct)
    check("expect_oversized_as_direct", a == b, (a, b))
    st, h = health()
    check("health_merged", st == 200 and h["status"] == "ok" and h["model"] == "brown-llama-8m"
          and h["isolate"]["state"] == "ready" and "kv_blocks_used" in h and h["max_connections"] == 512, h)


def long_stream(path, body, into, key):
    try:
        st, data = call(path, body, timeout=60)
        into[key] = (st, data)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        into[key] = (0, repr(e).encode())


def kill():
    pid = child_pid()
    res = {}
    ts = [threading.Thread(target=long_stream, args=("/v1/chat/completions",
                                                     dict(CHAT, max_tokens=3000, ignore_eos=True, stream=True), res, "chat")),
          threading.Thread(target=long_stream, args=("/v1/messages",
                                                     {"model": "m", "max_tokens": 3000, "stream": True,
                                                      "messages": [{"role": "user", "content": "Hi"}]}, res, "anth")),
          threading.Thread(target=long_stream, args=("/v1/completions",
                                                     {"prompt": "The jury", "max_tokens": 3000, "ignore_eos": True},
                                                     res, "whole"))]
    for t in ts:
        t.start()
    time.sleep(0.7)
    os.kill(pid, signal.SIGKILL)
    seen = set()
    deadline = time.time() + 20
    while time.time() < deadline:
        st, h = health()
        seen.add(h["isolate"]["state"])
        if st == 200 and h["isolate"]["pid"] != pid:
            break
        time.sleep(0.02)
    for t in ts:
        t.join()
    ev = sse_events(res["chat"][1])
    check("kill_chat_error_event", len(ev) > 3 and ev[-1][1] == "[DONE]" and
          "engine process stopped" in json.loads(ev[-2][1])["error"]["message"], res["chat"][1][-300:])
    ev = sse_events(res["anth"][1])
    # the Anthropic route has no ignore_eos: a reply that reached its end of sequence before
    # the kill ended normally (the kill itself is judged by the other two streams)
    early = len(ev) > 3 and ev[-1][0] == "message_stop" and b'"stop_reason":"end_turn"' in res["anth"][1]
    check("kill_anthropic_error_event", early or (len(ev) > 3 and ev[-1][0] == "error" and
          json.loads(ev[-1][1])["type"] == "error"), res["anth"][1][-300:])
    st, data = res["whole"]
    check("kill_whole_502", st == 502 and "stopped before it answered" in json.loads(data)["error"]["message"],
          (st, data[:300]))
    check("kill_health_restarting", "restarting" in seen, seen)
    st, h = health()
    check("kill_health_ready_again", st == 200 and h["isolate"]["pid"] != pid and h["isolate"]["restarts"] >= 1
          and h["isolate"]["last_exit"] == {"signal": 9}, h)
    st, data = call("/v1/completions", {"prompt": "The jury said", "max_tokens": 8, "temperature": 0})
    check("kill_next_request", st == 200 and json.loads(data)["choices"][0]["text"], data)


def stop():
    timeout = float(sys.argv[3])
    pid = child_pid()
    os.kill(pid, signal.SIGSTOP)
    t0, worst, detected, lat = time.time(), 0, None, []
    while time.time() - t0 < timeout + 15:
        a = time.time()
        st, h = health()
        lat.append(time.time() - a)
        if detected is None and h["isolate"]["state"] != "ready":
            detected = time.time() - t0
        if st == 200 and h["isolate"]["pid"] != pid:
            break
        time.sleep(0.02)
    lat.sort()
    print("# /health during the stall: %d answers, p50 %.2f ms, max %.2f ms; detected after %.2f s"
          % (len(lat), lat[len(lat) // 2] * 1e3, lat[-1] * 1e3, detected or -1), flush=True)
    check("stop_detected_within_timeout", detected is not None and detected < timeout + 1.5, detected)
    check("stop_health_answers", lat[-1] < 0.5, lat[-1])
    check("stop_replaced", health()[1]["isolate"]["pid"] != pid)
    check("stop_old_child_killed", not os.path.exists("/proc/%d" % pid) or
          open("/proc/%d/stat" % pid).read().split(")")[1].split()[0] == "Z")
    st, data = call("/v1/completions", {"prompt": "The jury said", "max_tokens": 8, "temperature": 0})
    check("stop_next_request", st == 200, data)


def retry():
    rundir = sys.argv[3]
    pid = child_pid()
    for f in os.listdir(rundir):
        os.unlink(os.path.join(rundir, f))  # the child lives on but cannot be reached
    t0 = time.time()
    st, data = call("/v1/completions", {"prompt": "The jury said", "max_tokens": 8, "temperature": 0})
    check("retry_on_next_child", st == 200 and json.loads(data)["choices"][0]["text"] and child_pid() != pid,
          (st, data))
    print("# the request waited %.2f s for the replacement" % (time.time() - t0), flush=True)


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def one_stream(i, rng, out):
    try:
        s = socket.create_connection(("127.0.0.1", PORT), timeout=60)
        raw = json.dumps(dict(CHAT, max_tokens=rng.randint(20, 300), ignore_eos=True, stream=True)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(raw) + raw)
        leave = rng.random() < 0.5
        slow = rng.random() < 0.2
        got = b""
        limit = rng.randint(200, 4000)
        while True:
            d = s.recv(4096 if not slow else 64)
            if not d:
                break
            got += d
            if slow:
                time.sleep(0.01)
            if leave and len(got) > limit:
                break
            if got.endswith(b"0\r\n\r\n"):
                break
        s.close()
        out[i] = leave or b"[DONE]" in got
    except Exception as e:  # noqa: BLE001
        out[i] = repr(e)


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def many():
    parent = int(sys.argv[3])
    base, rss0 = fds(parent), rss_kib(parent)
    rng = random.Random(5)
    out = {}
    ts = [threading.Thread(target=one_stream, args=(i, random.Random(rng.random()), out)) for i in range(64)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    peak = fds(parent)
    for t in ts:
        t.join()
    bad = {k: v for k, v in out.items() if v is not True}
    check("many_streams_served", len(out) == 64 and not bad, bad)
    deadline, now, stats = time.time() + 10, None, None
    while time.time() < deadline:
        now = fds(parent)
        stats = json.loads(call("/stats")[1])
        if now <= base and stats["active"] == 0 and stats["queued"] == 0:
            break
        time.sleep(0.1)
    rss1 = rss_kib(parent)
    print("# parent fds: %d before, %d during, %d after; RSS %d KiB before, %d after"
          % (base, peak, now, rss0, rss1), flush=True)
    # under ThreadSanitizer (make test-tsan) the shadow memory and the state of every thread
    # the parent has had add ~50 MiB for the 64 connections' threads
    limit = 131072 if os.environ.get("HEARTH_TSAN") else 16384
    check("many_parent_rss", rss1 - rss0 < limit, (rss0, rss1))
    check("many_parent_fds_back", now <= base and peak > base, (base, peak, now))
    check("many_child_idle", stats["active"] == 0 and stats["queued"] == 0, stats)


def halfclose():
    body = json.dumps({"prompt": "the jury said", "max_tokens": 1800, "ignore_eos": True,
                       "stream": True}).encode()
    for i in range(2):
        s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        got = s.recv(65536)
        while got.count(b"data: ") < 20:  # the stream flows: tokens closer than 50 ms apart
            got += s.recv(65536)
        s.shutdown(socket.SHUT_WR)
        t0, n = time.time(), 0
        while True:
            d = s.recv(65536)
            if not d:
                break
            n += len(d)
            got = got[-16:] + d
        took = time.time() - t0
        s.close()
        check("halfclose_closed_%d" % i, took < 1.0 and b"[DONE]" not in got,
              "closed %.2f s after the half-close, %d more bytes" % (took, n))
        deadline, active = time.time() + 2, None
        while time.time() < deadline:
            active = json.loads(call("/stats")[1])["active"]
            if active == 0:
                break
            time.sleep(0.05)
        check("halfclose_cancelled_%d" % i, active == 0, active)


def big_post():
    """(the reply, the error) of a 6 MB completion request: more than the sockets on the
    way hold, so the client is still sending when the proxy decides."""
    body = json.dumps({"prompt": "a " * 3000000, "max_tokens": 1}).encode()
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    got, err = b"", None
    try:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except OSError as e:
        err = e
    s.close()
    return got, err


def notready():
    got, err = big_post()
    check("notready_503_after_body", got.startswith(b"HTTP/1.1 503") and b"not ready" in got, (err, got[:200]))


def upload():
    pid = child_pid()
    os.kill(pid, signal.SIGSTOP)
    got, err = big_post()  # the send blocks until the supervisor kills the child
    check("upload_child_died_502", got.startswith(b"HTTP/1.1 502") and b"engine process stopped" in got,
          (err, got[:200]))
    check("upload_replaced", wait_ready(pid) is not None)
    st, data = call("/v1/completions", {"prompt": "The jury said", "max_tokens": 4})
    check("upload_next_request", st == 200, data)


def term():
    parent = int(sys.argv[3])
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.request("POST", "/v1/chat/completions", json.dumps(dict(CHAT, max_tokens=3000, ignore_eos=True, stream=True)),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    r.readline()  # decoding has started
    os.kill(parent, signal.SIGTERM)
    ev = sse_events(r.read())
    check("term_stream_ends_with_shutdown_error", len(ev) >= 2 and ev[-1][1] == "[DONE]" and
          "shutting down" in json.loads(ev[-2][1])["error"]["message"], ev[-2:])


def raw(data, wait=5.0):
    """Sends data on a new connection; the reply's first bytes and the seconds they took."""
    s = socket.create_connection(("127.0.0.1", PORT))
    t0 = time.time()
    s.sendall(data)
    s.settimeout(wait)
    try:
        got = s.recv(65536)
    except (socket.timeout, ConnectionError):
        got = b""
    s.close()
    return got, time.time() - t0


def limits():
    post = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    got, took = raw((post + "Content-Length: 60000\r\nExpect: 100-continue\r\n\r\n").encode())
    check("limits_early_401", got.startswith(b"HTTP/1.1 401") and b"100 Continue" not in got
          and b"invalid or missing API key" in got and took < 3, (got[:200], took))
    got, took = raw((post + "Authorization: Bearer sekret\r\nContent-Length: 2000000\r\n"
                     "Expect: 100-continue\r\n\r\n").encode())
    check("limits_early_413", got.startswith(b"HTTP/1.1 413") and b"100 Continue" not in got
          and b"larger than 1048576 bytes (--max-body-mb)" in got and took < 3, (got[:200], took))
    # headers a byte per 0.3 s (each restarts the 60 s idle timer): cut at the 2 s deadline
    s = socket.create_connection(("127.0.0.1", PORT))
    t0 = time.time()
    s.sendall(post.encode())
    closed = None
    for b in b"X-Slow: " + b"a" * 40:
        try:
            s.sendall(bytes([b]))
        except ConnectionError:
            closed = time.time() - t0
            break
        if closed_after(s, time.time(), 0.3) is not None:
            closed = time.time() - t0
            break
    s.close()
    check("limits_deadline_headers", closed is not None and 1.8 < closed < 8, closed)


def per_ip():
    """Its own parent, without the 2 s --request-timeout of limits(): a silent held
    connection must not reach a deadline while a loaded machine is slow."""
    held = [socket.create_connection(("127.0.0.1", PORT)) for _ in range(4)]
    time.sleep(0.8)  # accepted by the parent before the fifth comes (a loaded machine is slow)
    extra = socket.create_connection(("127.0.0.1", PORT))
    check("per_ip_fifth_closed", closed_after(extra, time.time(), 3) is not None)
    extra.close()
    held[0].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    held[0].settimeout(10)
    check("per_ip_held_served", held[0].recv(4096).startswith(b"HTTP/1.1 200"))
    for h in held:
        h.close()
    time.sleep(0.3)
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.request("POST", "/v1/chat/completions", json.dumps(dict(CHAT, max_tokens=4)),
              {"Content-Type": "application/json", "Authorization": "Bearer sekret"})
    r = c.getresponse()
    check("per_ip_served_after", r.status == 200, r.read()[:200])


{"same": same, "kill": kill, "stop": stop, "retry": retry, "many": many, "halfclose": halfclose, "upload": upload, "notready": notready, "term": term,
 "limits": limits, "per_ip": per_ip}[MODE]()
