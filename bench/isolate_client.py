#!/usr/bin/env python3
"""Measures hearth serve --isolate against a direct server on the same model (run by
bench/isolate.sh, which starts both): decode tok/s and time to first token of the same
stream from both servers at once (paired by round), decode tok/s and time to first
token one request at a time, and the parent's own /health latency while 8 long
streams decode through the proxy; and the CPU time the parent spends relaying tokens.
Prints numbers, not pass/fail.

    python3 bench/isolate_client.py DIRECT_PORT PROXY_PORT [ROUNDS [PROXY_PID]]
"""
import http.client
import json
import statistics
import sys
import threading
import time

DIRECT, PROXY = int(sys.argv[1]), int(sys.argv[2])
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 8
PARENT = int(sys.argv[4]) if len(sys.argv) > 4 else 0  # the proxy's pid, for its CPU time


def stream(port, body):
    """(seconds to the first token, decode tok/s after it, tokens) of one streamed chat."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    first, last, n = None, None, 0
    while True:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b"data: {"):
            continue
        ch = json.loads(line[6:])["choices"]
        if ch and ch[0]["delta"].get("content"):
            now = time.perf_counter()
            first = first or now
            last = now
            n += 1
    c.close()
    return first - t0, (n - 1) / (last - first) if n > 1 and last > first else 0.0, n


def body_for(i, n):
    # a new prompt each round (the prefix cache would shorten the second prefill)
    return {"messages": [{"role": "user", "content": "Tell me about round %d of the jury" % i}],
            "max_tokens": n, "ignore_eos": True, "temperature": 0, "stream": True}


def compare():
    """Each round streams the same request from both servers at the same moment, so the
    two see the same machine load (the 2 cores are shared); ratios are paired by round."""
    res = {DIRECT: {"ttft": [], "tps": []}, PROXY: {"ttft": [], "tps": []}}
    for i in range(ROUNDS):
        out = {}
        ts = [threading.Thread(target=lambda port=port: out.__setitem__(port, stream(port, body_for(i, 400))))
              for port in (DIRECT, PROXY)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for port in (DIRECT, PROXY):
            res[port]["ttft"].append(out[port][0])
            res[port]["tps"].append(out[port][1])
    for name, port in (("direct", DIRECT), ("proxy", PROXY)):
        r = res[port]
        print("%-7s decode %.1f tok/s (median of %d), ttft %.2f ms (median)"
              % (name, statistics.median(r["tps"]), ROUNDS, statistics.median(r["ttft"]) * 1e3))
    d, p = res[DIRECT], res[PROXY]
    ratios = sorted(b / a - 1 for a, b in zip(d["tps"], p["tps"]) if a)
    deltas = sorted(b - a for a, b in zip(d["ttft"], p["ttft"]))
    print("proxy vs direct, paired by round: decode %+.2f%% (median; quartiles %+.2f%% .. %+.2f%%), "
          "ttft %+.2f ms (median; quartiles %+.2f .. %+.2f ms)"
          % (statistics.median(ratios) * 100, ratios[len(ratios) // 4] * 100, ratios[3 * len(ratios) // 4] * 100,
             statistics.median(deltas) * 1e3, deltas[len(deltas) // 4] * 1e3, deltas[3 * len(deltas) // 4] * 1e3))


def alternating(rounds, first, n):
    """One stream at a time, the servers alternating (order flipped each round), so neither
    competes with the other (or the parent) for the cores: each round's (direct, proxy)
    results of stream(), prompts first, first + 1, ..., n tokens each."""
    out = []
    for i in range(rounds):
        order = (DIRECT, PROXY) if i % 2 == 0 else (PROXY, DIRECT)
        r = {port: stream(port, body_for(first + i, n)) for port in order}
        out.append((r[DIRECT], r[PROXY]))
    return out


def ttft_alternating(rounds=40):
    """Time to first token one request at a time: what the extra hop adds."""
    deltas = sorted(p[0] - d[0] for d, p in alternating(rounds, 200, 8))
    print("ttft one at a time, proxy - direct: %+.2f ms (median of %d; quartiles %+.2f .. %+.2f ms)"
          % (statistics.median(deltas) * 1e3, rounds, deltas[rounds // 4] * 1e3, deltas[3 * rounds // 4] * 1e3))


def decode_alternating(rounds):
    """Decode tok/s one stream at a time, paired by round: the hop's cost to a user's stream
    (compare() pairs concurrent streams, which on a 2-core machine share the cores with the
    parent)."""
    ratios = sorted(p[1] / d[1] - 1 for d, p in alternating(rounds, 300, 400) if d[1])
    n = len(ratios)
    print("decode one at a time, proxy vs direct: %+.2f%% (median of %d; quartiles %+.2f%% .. %+.2f%%)"
          % (statistics.median(ratios) * 100, n, ratios[n // 4] * 100, ratios[3 * n // 4] * 100))


def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime + stime


def proxy_cpu():
    """CPU the parent spends relaying, against the child's for the same tokens (not
    disturbed by other load: it counts this process's own time)."""
    c = http.client.HTTPConnection("127.0.0.1", PROXY, timeout=30)
    c.request("GET", "/health")
    child = json.loads(c.getresponse().read())["isolate"]["pid"]
    c.close()
    p0, c0, tokens = cpu_ticks(PARENT), cpu_ticks(child), 0
    for i in range(4):
        tokens += stream(PROXY, body_for(100 + i, 1000))[2]
    p1, c1 = cpu_ticks(PARENT), cpu_ticks(child)
    print("parent CPU relaying %d streamed tokens: %.0f ms (%.1f us/token), %.2f%% of the child's %.0f ms"
          % (tokens, (p1 - p0) * 10, (p1 - p0) * 1e4 / tokens, 100 * (p1 - p0) / max(c1 - c0, 1), (c1 - c0) * 10))


def health_under_load():
    body = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 1500,
            "ignore_eos": True, "temperature": 0, "stream": True}
    ts = [threading.Thread(target=stream, args=(PROXY, body)) for _ in range(8)]
    for t in ts:
        t.start()
    time.sleep(1.0)
    lat = []
    c = http.client.HTTPConnection("127.0.0.1", PROXY, timeout=30)
    for _ in range(400):
        t0 = time.perf_counter()
        c.request("GET", "/health")
        c.getresponse().read()
        lat.append(time.perf_counter() - t0)
        time.sleep(0.01)
    c.close()
    for t in ts:
        t.join()
    lat.sort()
    print("parent /health during 8 streams: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d requests)"
          % (lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3, lat[-1] * 1e3, len(lat)))


compare()
decode_alternating(ROUNDS)
ttft_alternating()
if PARENT:
    proxy_cpu()
health_under_load()
