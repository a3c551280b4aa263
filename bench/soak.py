#!/usr/bin/env python3
"""Soak of `hearth serve` (a program, not a test; not run in CI): mixed traffic for N
minutes against a running server -- chat, completions and Anthropic messages, streamed and
whole, random lengths, streams cancelled after a few events, clients that hang up before
any reply byte, a few malformed bodies -- then reports request counts, unexpected errors,
latency percentiles per kind, the RSS and open file descriptors of the server and of its
children (the --isolate engine child) at the start and the end (from /proc), and whether
/stats shows sequences or KV blocks left in use.

    python3 bench/soak.py --url http://127.0.0.1:8080 --pid PID [--minutes 10] [--clients 8]
        [--warmup 30]
"""
import argparse, json, os, random, socket, threading, time, urllib.error, urllib.parse, urllib.request


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def descendants(pid):
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            kids += [int(k) for k in f.read().split()]
    return kids + [d for k in kids for d in descendants(k)]


def usage(pid):
    """{pid: (RSS KiB, open fds)} of the server and its descendants."""
    out = {}
    for p in [pid] + descendants(pid):
        try:
            out[p] = (rss_kib(p), len(os.listdir(f"/proc/{p}/fd")))
        except OSError:
            pass
    return out


def name(pid):
    """What the process is: the --isolate parent, its engine child, or a plain server."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            args = f.read().split("\0")
    except OSError:
        return "gone"
    return ("engine child" if "--unix-socket" in args else "parent" if "--isolate" in args
            else " ".join(a for a in args[:2] if a))


def percentiles(xs):
    xs = sorted(xs)
    at = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3
    return f"p50 {at(0.5):.0f} p90 {at(0.9):.0f} p99 {at(0.99):.0f} max {xs[-1] * 1e3:.0f} ms"


def post(url, path, body, timeout=120):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def hang_up(url, body):
    u = urllib.parse.urlparse(url)
    s = socket.create_connection((u.hostname, u.port))
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    s.recv(200)
    s.close()


def cancel(url, body, events):
    """A stream left after its first few events (the server must cancel it)."""
    u = urllib.parse.urlparse(url)
    s = socket.create_connection((u.hostname, u.port), timeout=120)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    got = b""
    while got.count(b"\n\n") < events:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    s.close()
    return int(got[9:12]) if got.startswith(b"HTTP/1.1 ") else 0


def one_request(url, rng):
    words = " ".join(rng.choice(["the", "jury", "said", "a", "man", "city", "of", "time"])
                     for _ in range(rng.randint(1, 200)))
    n, stream = rng.randint(1, 48), rng.random() < 0.5
    kind = rng.random()
    if kind < 0.05:
        return "hangup", hang_up(url, {"prompt": words, "max_tokens": 200, "stream": True}) or 200, 200
    if kind < 0.08:
        return "malformed", post(url, "/v1/chat/completions", b"{oops")[0], 400
    if kind < 0.15:
        body = {"messages": [{"role": "user", "content": words}], "max_tokens": 400,
                "ignore_eos": True, "stream": True}
        return "cancel", cancel(url, body, rng.randint(1, 20)), 200
    if kind < 0.4:
        body = {"messages": [{"role": "user", "content": words}], "max_tokens": n, "stream": stream}
        return "chat", post(url, "/v1/chat/completions", body)[0], 200
    if kind < 0.7:
        body = {"prompt": words, "max_tokens": n, "stream": stream, "temperature": rng.random()}
        return "completion", post(url, "/v1/completions", body)[0], 200
    body = {"model": "m", "max_tokens": n, "stream": stream, "messages": [{"role": "user", "content": words}]}
    return "messages", post(url, "/v1/messages", body)[0], 200


def client(url, deadline, seed, counts, errors, lat, lock):
    rng = random.Random(seed)
    while time.time() < deadline:
        t = time.time()
        try:
            kind, got, want = one_request(url, rng)
            ok = got == want
        except Exception as e:  # a refused or reset connection is an error too
            kind, ok, got = "exception", False, repr(e)
        with lock:
            counts[kind] = counts.get(kind, 0) + 1
            lat.setdefault(kind, []).append(time.time() - t)
            if not ok:
                errors.append(f"{kind}: {got}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--warmup", type=float, default=30, help="seconds before the RSS baseline")
    a = ap.parse_args()
    start, t0 = usage(a.pid), time.time()
    counts, errors, lat, lock = {}, [], {}, threading.Lock()
    deadline = t0 + a.minutes * 60
    threads = [threading.Thread(target=client, args=(a.url, deadline, i, counts, errors, lat, lock))
               for i in range(a.clients)]
    [t.start() for t in threads]
    # the baseline once warm: the KV cache touched, every thread's malloc arena made
    time.sleep(min(a.warmup, a.minutes * 30))
    use0 = usage(a.pid)
    [t.join() for t in threads]
    time.sleep(2)
    stats = json.loads(urllib.request.urlopen(a.url + "/stats").read())
    use1 = usage(a.pid)
    print(f"requests: {sum(counts.values())} in {time.time() - t0:.0f} s, {a.clients} clients {json.dumps(counts)}")
    print(f"unexpected: {len(errors)}" + "".join(f"\n  {e}" for e in errors[:10]))
    for kind in sorted(lat):
        print(f"latency {kind}: {percentiles(lat[kind])}")
    for p in sorted(set(use0) | set(use1)):
        (rs, fs), (r0, f0), (r1, f1) = (u.get(p, (0, 0)) for u in (start, use0, use1))
        print(f"{name(p)} {p}: rss {rs / 1024:.1f} at the start, {r0 / 1024:.1f} after "
              f"{min(a.warmup, a.minutes * 30):.0f} s, {r1 / 1024:.1f} MiB at the end "
              f"({(r1 - r0) / max(r0, 1) * 100:+.1f}% since warm); fds {fs}, {f0}, {f1}")
    print(f"after: active {stats['active']}, queued {stats['queued']}, kv_blocks_used {stats['kv_blocks_used']}")

if __name__ == "__main__":
    main()
