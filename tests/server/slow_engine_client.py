#!/usr/bin/env python3
"""Slow and stalled clients against hearth serve on brown-llama-8m (tests/cli/test_serve.sh
starts it with --timeout 1 --max-connections 8): a trickled request, stalled connections
(closed by the server while others are served at once), a slow SSE reader, a client that
reads nothing, and more connections than the limit. After each group /stats must show no
sequence running or queued and no KV block in use.
Usage: slow_engine_client.py PORT GREEDY (GREEDY: hearth run's 16 greedy tokens after
"The jury said")"""
import json
import sys
import threading
import time

from slow_common import (SlowReader, burst, check, closed_after, fill_limit, get, head, post,
                         run, served_again, setup, slow_socket, stalled_connections, text_of,
                         trickle)

setup(int(sys.argv[1]), "")
GREEDY = sys.argv[2]
TIMEOUT = 1.0
LIMIT = 8
JURY = {"prompt": "The jury said", "max_tokens": 16, "temperature": 0}


def settled(name):
    """No sequence running or queued, no KV block in use (cached prefixes may stay)."""
    deadline = time.time() + 10
    while time.time() < deadline:
        st = get("/stats")
        if st["active"] == 0 and st["queued"] == 0 and st["kv_blocks_used"] == 0:
            break
        time.sleep(0.05)
    check(name + "_nothing_leaked", st["active"] == 0 and st["queued"] == 0
          and st["kv_blocks_used"] == 0, st)


def stream(n, prompt="Once upon a time", **kw):
    body = dict({"prompt": prompt, "max_tokens": n, "ignore_eos": True, "stream": True,
                 "stream_options": {"include_usage": True}}, **kw)
    return post("/v1/completions", body)


def usage_tokens(events):
    return json.loads(events[-2])["usage"]["completion_tokens"] if len(events) > 1 else -1


def whole_stream(n):
    """A stream of n tokens, complete."""
    st, ev, _ = stream(n)
    return st == 200 and ev[-1] == "[DONE]" and usage_tokens(ev) == n


def test_trickle_and_idle():
    """Stalled connections and a request trickled in over 1.4 s (never silent for the
    timeout): the others are served meanwhile (their latency is checked by the fake-engine
    test, where it does not depend on the machine's load), the trickled one as usual, and
    each stalled one is closed after about the timeout."""
    t0 = time.time()
    stalled = stalled_connections("/v1/completions")
    closes = {}  # watched from the start: the requests below may outlast the timeout
    watchers = [threading.Thread(target=lambda n=n, s=s: closes.update({n: closed_after(s, t0, TIMEOUT + 30)}))
                for n, s in stalled]
    for w in watchers:
        w.start()
    trickled = {}
    t = threading.Thread(target=lambda: trickled.update(r=trickle("/v1/completions", JURY)))
    t.start()
    served = [post("/v1/completions", JURY) for _ in range(3)] + [stream(8)]
    check("idle_others_served", all(st == 200 for st, _, _ in served)
          and all(r[1]["choices"][0]["text"] == GREEDY for r in served[:3])
          and usage_tokens(served[3][1]) == 8, [(st, took) for st, _, took in served])
    for w in watchers:
        w.join()
    for name, s in stalled:
        at = closes.get(name)
        check("idle_%s_closed" % name, at is not None and at > TIMEOUT - 0.1, at)
        s.close()
    t.join()
    st, reply, took = trickled["r"]
    check("trickled_request_served", st == 200 and took > TIMEOUT + 0.2
          and reply["choices"][0]["text"] == GREEDY, (st, took, reply))
    settled("idle")


def test_slow_reader():
    """A 200-token stream whose reader falls behind (SlowReader): the engine finishes the
    sequence and frees its KV blocks all the same, the reader then gets every token, and
    streams beside it are served whole."""
    before = get("/stats")["requests_done"]
    reader = SlowReader("/v1/completions", {"prompt": "The", "max_tokens": 200, "ignore_eos": True,
                                            "stream": True, "stream_options": {"include_usage": True}})
    paced = burst(3, lambda: whole_stream(16))
    check("slow_reader_others_served", paced == ["served"] * 3, paced)
    deadline = time.time() + 30
    while time.time() < deadline and get("/stats")["requests_done"] < before + 4:
        time.sleep(0.02)
    st = get("/stats")
    reader.release()
    check("slow_reader_engine_not_held", st["requests_done"] == before + 4 and st["kv_blocks_used"] == 0
          and reader.read_when_released <= 20, (st, reader.read_when_released))
    st, ev, _ = reader.join()
    chunks = [json.loads(d) for d in ev[:-1]]
    pieces = sum(1 for c in chunks if c["choices"] and c["choices"][0]["finish_reason"] is None)
    check("slow_reader_gets_everything", st == 200 and ev[-1] == "[DONE]" and usage_tokens(ev) == 200
          and pieces > 150 and len(text_of(ev)) > 200, (st, usage_tokens(ev), pieces, ev[-2:]))
    settled("slow_reader")


def test_stalled_reader():
    """A client that reads nothing of its stream: the engine finishes the sequence and frees
    its KV blocks regardless, and the server closes the connection about the timeout after
    its last write."""
    before = get("/stats")["requests_done"]
    s = slow_socket()
    body = json.dumps({"prompt": "The", "max_tokens": 100, "ignore_eos": True, "stream": True}).encode()
    s.sendall(head("/v1/completions", len(body)) + body)
    t0 = time.time()
    while time.time() < t0 + 30 and get("/stats")["requests_done"] == before:
        time.sleep(0.02)
    done = time.time()
    st = get("/stats")
    check("stalled_reader_engine_done", st["requests_done"] == before + 1 and st["kv_blocks_used"] == 0, st)
    at = closed_after(s, done, TIMEOUT + 3)
    check("stalled_reader_closed", at is not None, at)
    s.close()
    settled("stalled_reader")


def test_limit():
    """8 idle connections take every slot: a 9th is refused at once (closed without a reply);
    once they go, requests are served again. A burst of 16 streams: each is served whole or
    refused."""
    for s in fill_limit(LIMIT):
        s.close()
    served_again(JURY)
    outcomes = burst(16, lambda: whole_stream(12))
    served = outcomes.count("served")
    check("limit_burst", served >= LIMIT and served + outcomes.count("refused") == 16, outcomes)
    settled("limit")


run([test_trickle_and_idle, test_slow_reader, test_stalled_reader, test_limit])
