#!/usr/bin/env python3
"""Slow and stalled clients against the fake-engine listener of tests/unit/test_server_http.c
that runs with a 1 s idle timeout and room for 8 connections: a request trickled in over
longer than the timeout, a long prefill, stalled requests (closed by the server while
others are served at once), a reader that stops reading, and more connections than the
limit; and a slow SSE reader on the main listener (60 s timeout: a reader held back for a
moment is slow, not stalled). After each group no fake request may still be running.
Usage: slow_client.py PORT MAIN_PORT API_KEY SERVER_PID"""
import json
import sys
import threading
import time

from slow_common import (SlowReader, burst, check, closed_after, fill_limit, get, head, listener,
                         post, run, served_again, setup, slow_socket, stalled_connections, text_of,
                         trickle)

setup(int(sys.argv[1]), sys.argv[3])
MAIN_PORT = int(sys.argv[2])
SERVER_PID = int(sys.argv[4])
TIMEOUT = 1.0  # the listener's idle timeout (test_server_http.c)
LIMIT = 8      # and its connection limit
CHAT = "/v1/chat/completions"
HELLO = "Hello from the fake engine!"


def chat(content, **kw):
    return dict({"model": "m", "messages": [{"role": "user", "content": content}]}, **kw)


def settled(name):
    """After a group: every fake request finished (cancelled ones included)."""
    deadline = time.time() + 10
    while time.time() < deadline and get("/stats")["active"]:
        time.sleep(0.05)
    check(name + "_settled", get("/stats")["active"] == 0, get("/stats"))


def rss_kib():
    with open("/proc/%d/status" % SERVER_PID) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def ticks(n, within=10.0):
    """A stream of n scripted ticks: whole, and within the given seconds."""
    st, ev, took = post(CHAT, chat("SLOW", stream=True, max_tokens=n))
    return st == 200 and took < within and text_of(ev) == "tick " * n and ev[-1] == "[DONE]"


def trickled():
    """Headers and body in 14 pieces 0.1 s apart: 1.4 s in all, longer than the timeout,
    but never silent for as long; served as usual."""
    st, reply, took = trickle(CHAT, chat("hello"))
    check("trickled_request_served", st == 200 and took > TIMEOUT + 0.2
          and reply["choices"][0]["message"]["content"] == HELLO, (st, took, reply))


def long_prefill(stream):
    """The engine is silent for 1.2 s before its first token (PAUSE): waiting on the engine
    is not a silent client, so neither a stream nor a whole reply is cut off."""
    st, out, took = post(CHAT, chat("PAUSE", stream=stream))
    text = text_of(out) if stream else out["choices"][0]["message"]["content"]
    check("long_prefill_" + ("stream" if stream else "whole"), st == 200 and took > 1.1
          and text == HELLO and (not stream or out[-1] == "[DONE]"), (st, took, out))


def test_slow_requests():
    """A trickled request and two waiting on a long prefill, at once."""
    threads = [threading.Thread(target=trickled)] + [
        threading.Thread(target=long_prefill, args=(stream,)) for stream in (False, True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    settled("slow_requests")


def test_idle():
    """Stalled connections do not delay other clients; each is closed by the server after
    about the timeout."""
    t0 = time.time()
    stalled = stalled_connections(CHAT)
    served = [post(CHAT, chat("hello %d" % i)) for i in range(3)] + [post(CHAT, chat("hi", stream=True))]
    check("idle_others_served", all(st == 200 and took < 0.5 for st, _, took in served)
          and served[0][1]["choices"][0]["message"]["content"] == HELLO
          and text_of(served[3][1]) == HELLO, [(st, took) for st, _, took in served])
    for name, s in stalled:
        at = closed_after(s, t0, TIMEOUT + 3)
        check("idle_%s_closed" % name, at is not None and at > TIMEOUT - 0.1, at)
        s.close()
    settled("idle")


def test_slow_reader():
    """A stream of 500 16 KiB tokens (8 MiB, twice what the socket buffers hold) whose reader
    falls behind (SlowReader): the engine finishes it, not cancelled, all the same; the
    reader then gets every token, and three paced streams beside it keep their pace."""
    with listener(MAIN_PORT):
        slow_reader()


def slow_reader():
    rss0, cancelled = rss_kib(), get("/stats")["cancelled"]
    reader = SlowReader(CHAT, chat("FLOOD", stream=True, max_tokens=500))
    paced = burst(3, lambda: ticks(40, within=1.0))
    check("slow_reader_others_keep_pace", paced == ["served"] * 3, paced)
    deadline = time.time() + 10
    while time.time() < deadline and get("/stats")["active"]:
        time.sleep(0.02)
    rss_backlog, stats = rss_kib() - rss0, get("/stats")
    reader.release()
    st, ev, _ = reader.join()
    check("slow_reader_engine_not_held", stats["active"] == 0 and stats["cancelled"] == cancelled
          and reader.read_when_released <= 20, (stats, reader.read_when_released))
    text = text_of(ev) if ev and ev[-1] == "[DONE]" else ""
    check("slow_reader_gets_everything", st == 200 and text == "f" * 16384 * 500
          and json.loads(ev[-2])["choices"][0]["finish_reason"] == "length", (st, len(text), ev[-2:]))
    print("# slow reader: %d KiB of SSE; server RSS %+d KiB with the backlog held, %+d KiB after"
          % (sum(map(len, ev)) // 1024, rss_backlog, rss_kib() - rss0))
    settled("slow_reader")


def test_stalled_reader():
    """A stream whose client stops reading: once the socket buffers are full and nothing
    more is taken for the timeout, the server closes the connection and cancels the
    request."""
    before = get("/stats")["cancelled"]
    s = slow_socket()
    body = json.dumps(chat("FLOOD", stream=True)).encode()
    t0 = time.time()
    s.sendall(head(CHAT, len(body)) + body)
    while time.time() < t0 + 8 and get("/stats")["cancelled"] == before:
        time.sleep(0.05)
    took = time.time() - t0
    check("stalled_reader_cancelled", get("/stats")["cancelled"] == before + 1 and took > TIMEOUT,
          (get("/stats"), took))
    s.close()
    settled("stalled_reader")


def test_limit():
    """With the 8 connections taken by idle clients, a 9th is refused at once (closed
    without a reply); once they go, requests are served again. A burst of 24 streams: each
    one is either served whole or refused, never more than 8 run at once."""
    for s in fill_limit(LIMIT):
        s.close()
    served_again({"prompt": "x", "max_tokens": 1})
    outcomes = burst(24, lambda: ticks(20))
    served = outcomes.count("served")
    check("limit_burst", served >= LIMIT and served + outcomes.count("refused") == 24
          and get("/stats")["peak_active"] <= LIMIT, (outcomes, get("/stats")["peak_active"]))
    settled("limit")


run([test_slow_requests, test_idle, test_slow_reader, test_stalled_reader, test_limit])
