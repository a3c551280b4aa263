#!/usr/bin/env python3
"""Graceful shutdown of hearth serve on brown-llama-8m (tests/cli/test_serve_stop.sh starts
the server and reads its exit status).
  cut PORT PID: server with --shutdown-grace 0 --max-seqs 1: one stream decoding and
    chat, completion, Anthropic and Responses requests queued behind it; after SIGTERM each
    stream ends with its API's error event (and [DONE] where the API sends it) and the
    non-streamed request gets a 503 JSON error.
  grace PORT PID LOG: a stream in flight at SIGTERM finishes normally while new
    connections are refused.
  twice PORT PID LOG: a second SIGTERM while a stream runs exits at once.
  burst PORT PID NAME: server with --max-connections 4: bursts of 16 streams at once (past the
    limit: each served whole or refused, none left waiting), then /health answers and a
    SIGTERM stops it (libmicrohttpd 0.9.75 left its connection mutex locked when a
    connection added from the acceptor met the limit: every thread then hung)."""
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time

MODE, PORT, PID = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
LONG = 2000  # tokens: seconds of decoding on brown-llama-8m


def check(name, cond, info=""):
    print(("ok " if cond else "FAIL ") + name + ("" if cond else ": " + str(info)[:400]), flush=True)


def get(path):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.request("GET", path)
    return json.loads(c.getresponse().read())


def open_post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return c.getresponse()


def wait_until(name, cond, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    check(name, False, "timed out")
    return False


def log_says(text):
    return lambda: text in open(sys.argv[4]).read()


def events(raw):
    """SSE "event:"/"data:" pairs in order: (event name or None, data)."""
    out, name = [], None
    for line in raw.decode().split("\n"):
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((name, line[6:]))
            name = None
    return out


def collect(path, body, into, key):
    r = open_post(path, body)
    into[key] = (r.status, r.read())


CHAT = {"messages": [{"role": "user", "content": "Hello"}], "temperature": 0}


def cut():
    res = {}
    first = open_post("/v1/chat/completions", dict(CHAT, max_tokens=LONG, ignore_eos=True, stream=True))
    first.readline()  # decoding has started
    # long greedy requests: one the engine admits after the cut cannot finish before its
    # HTTP thread notices the shutdown (within 50 ms)
    queued = [("/v1/chat/completions", dict(CHAT, max_tokens=LONG, ignore_eos=True, stream=True), "chat"),
              ("/v1/completions", {"prompt": "The jury", "max_tokens": LONG, "ignore_eos": True,
                                   "temperature": 0}, "whole"),
              ("/v1/messages", {"model": "m", "max_tokens": LONG, "stream": True, "temperature": 0,
                                "messages": [{"role": "user", "content": "Hi"}]}, "anthropic"),
              ("/v1/responses", {"input": "Hi", "max_output_tokens": LONG, "stream": True,
                                 "temperature": 0}, "responses")]
    threads = [threading.Thread(target=collect, args=(p, b, res, k)) for p, b, k in queued]
    for t in threads:
        t.start()
    if not wait_until("cut_queued", lambda: get("/stats")["queued"] == 4):
        return
    os.kill(PID, signal.SIGTERM)
    res["first"] = (first.status, first.read())
    for t in threads:
        t.join(60)
    for key in ("first", "chat"):
        ev = events(res[key][1])
        err = json.loads(ev[-2][1]) if len(ev) > 1 else {}
        check("cut_stream_error_" + key, ev[-1][1] == "[DONE]"
              and "shutting down" in err.get("error", {}).get("message", ""), ev[-3:])
    st, raw = res["whole"]
    check("cut_whole_503", st == 503 and "shutting down" in json.loads(raw)["error"]["message"], (st, raw))
    ev = events(res["anthropic"][1])
    check("cut_anthropic_error_event", ev and ev[-1][0] == "error"
          and "shutting down" in json.loads(ev[-1][1])["error"]["message"], ev[-2:])
    ev = events(res["responses"][1])
    check("cut_responses_failed", ev and ev[-1][0] == "response.failed"
          and "shutting down" in json.loads(ev[-1][1])["response"]["error"]["message"], ev[-2:])


def grace():
    r = open_post("/v1/chat/completions", dict(CHAT, max_tokens=300, ignore_eos=True, stream=True))
    r.readline()
    os.kill(PID, signal.SIGTERM)
    if not wait_until("grace_stopping", log_says("no new connections")):
        return
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=10).close()
        refused = False
    except ConnectionRefusedError:
        refused = True
    check("grace_refuses_new_connections", refused)
    ev = events(r.read())
    last = json.loads(ev[-2][1]) if len(ev) > 1 else {}
    check("grace_stream_finishes", ev[-1][1] == "[DONE]"
          and last.get("choices", [{}])[0].get("finish_reason") == "length", ev[-2:])


def twice():
    r = open_post("/v1/chat/completions", dict(CHAT, max_tokens=LONG, ignore_eos=True, stream=True))
    r.readline()
    os.kill(PID, signal.SIGTERM)
    if not wait_until("twice_stopping", log_says("no new connections")):
        return
    os.kill(PID, signal.SIGTERM)
    try:
        r.read()
    except (http.client.IncompleteRead, ConnectionError):
        pass
    check("twice_cut_stream_ended", True)


def burst_stream(outcomes):
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 12, "ignore_eos": True,
                       "stream": True}).encode()
    head = ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)).encode()
    data = b""
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=30) as s:
            s.sendall(head + body)
            data = s.makefile("rb").read()
    except socket.timeout:
        return outcomes.append("waiting")
    except OSError:
        pass
    outcomes.append("served" if b"data: [DONE]\n\n" in data else "refused" if not data else "cut")


def burst():
    for n in range(3):
        outcomes = []
        threads = [threading.Thread(target=burst_stream, args=(outcomes,)) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        served = outcomes.count("served")
        check("%s_%d_served_or_refused" % (sys.argv[4], n), served >= 1 and served + outcomes.count("refused") == 16,
              outcomes)
    try:
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        c.request("GET", "/health")
        status = c.getresponse().status
    except (OSError, http.client.HTTPException) as e:
        status = e
    check(sys.argv[4] + "_then_health", status == 200, status)
    os.kill(PID, signal.SIGTERM)


{"cut": cut, "grace": grace, "twice": twice, "burst": burst}[MODE]()
