#!/usr/bin/env python3
"""Soak of `hearth serve` (a program, not a test; not run in CI): mixed and hostile traffic
for N minutes against a running server, then a report. Traffic: chat, completions, Anthropic
messages and Responses, streamed and whole, random lengths; streams left after a few events;
clients that hang up before any reply byte or half-close after their request; stalled
readers (a small receive buffer, a few events read, then nothing for 2-20 s, then the rest
read slowly or the connection closed); and the hostile cases of issue 13 (malformed JSON, a
NUL in a string, token ids past the vocabulary, 20k messages, 40k Anthropic text blocks, two
Content-Lengths, Transfer-Encoding: gzip, a garbage request line, an oversized body announced
with Expect: 100-continue, an unknown route, headers trickled a byte a second).

Every reply is read with its own HTTP/1.1 client, so a reply cut short is told from a whole
one: "ok" is the expected status and a whole reply (a stream's last event: [DONE],
message_stop, response.completed / incomplete). A clean fault is a 502/503 JSON error or a
stream ended by an error event; "unexpected" is anything else (a wrong status, a reply cut
without an error event, no answer for --deadline seconds, a refused or reset connection).

--kill-child SECONDS (for `serve --isolate`) SIGKILLs the engine child every SECONDS, the
second time a SIGSTOP instead (the supervisor must find it hung and replace it), and waits
for /health to show a new child ready. Clean faults of requests in flight during a kill
(from the signal to 2 s after the new child is ready) are counted as expected; outside
those windows, and in a run without kills, they are unexpected.

Reported: requests by kind and outcome, unexpected ones, latency percentiles, the RSS and
open fds of the server and its descendants (the --isolate engine child) at the start, after
the warm-up and at the end, the parent's and child's RSS every 30 s, /stats right after the last client and once settled, the
machine's load during the run, and whether the server process stayed the same one.

    python3 bench/soak.py --url http://127.0.0.1:8080 --pid PID [--minutes 10] [--clients 8]
        [--warmup 30] [--kill-child SECONDS] [--deadline 180]
"""
import argparse, json, os, random, signal, socket, threading, time, urllib.parse, urllib.request

WORDS = ["the", "jury", "said", "a", "man", "city", "of", "time", "Fulton", "election"]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def descendants(pid):
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        return []
    return kids + [d for k in kids for d in descendants(k)]


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read().split("\0")
    except OSError:
        return []


def start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except OSError:
        return None


def engine_child(pid):
    return next((p for p in descendants(pid) if "--unix-socket" in cmdline(p)), None)


def usage(pid):
    """{"parent"/"child"/pid: (pid, RSS KiB, open fds)} of the server and its descendants."""
    out = {}
    for p in [pid] + descendants(pid):
        try:
            use = (p, rss_kib(p), len(os.listdir(f"/proc/{p}/fd")))
        except OSError:
            continue
        args = cmdline(p)
        key = "parent" if p == pid else "child" if "--unix-socket" in args else p
        out[key] = use
    return out


def percentiles(xs):
    xs = sorted(xs)
    at = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3
    return f"p50 {at(0.5):.0f} p90 {at(0.9):.0f} p99 {at(0.99):.0f} max {xs[-1] * 1e3:.0f} ms"


class Cut(Exception):
    """The connection ended before the reply's framing did."""


class Http:
    """One request on its own connection, its reply read as it comes (chunked or not)."""

    def __init__(self, url, timeout, rcvbuf=0):
        u = urllib.parse.urlparse(url)
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:  # before connect, so the window is small from the start
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(timeout)
        self.s.connect((u.hostname, u.port))
        self.buf, self.status, self.headers = b"", 0, {}

    def send(self, data):
        self.s.sendall(data)

    def request(self, path, body, extra=b""):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (path.encode(), extra, len(data))
                  + data)

    def fill(self, n=65536):
        d = self.s.recv(n)
        if not d:
            raise Cut("connection closed")
        self.buf += d

    def head(self):
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        if self.status == 100:
            return self.head()
        return self.status

    def pieces(self, n=65536):
        """The body's decoded bytes as they come; Cut when it ends before its framing."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                while b"\r\n" not in self.buf:
                    self.fill(n)
                line, self.buf = self.buf.split(b"\r\n", 1)
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    return
                while len(self.buf) < size + 2:
                    self.fill(n)
                piece, self.buf = self.buf[:size], self.buf[size + 2:]
                yield piece
        elif "content-length" in self.headers:
            left = int(self.headers["content-length"])
            while left:
                if not self.buf:
                    self.fill(n)
                piece, self.buf = self.buf[:left], self.buf[left:]
                left -= len(piece)
                yield piece
        else:
            while True:
                if self.buf:
                    yield self.buf
                    self.buf = b""
                try:
                    self.fill(n)
                except Cut:
                    return

    def close(self):
        self.s.close()


def stream_end(body):
    """How a stream's body ended: "done" (its API's last event), "error" (an error event,
    then [DONE] or nothing) or "cut"."""
    events = [e.strip() for e in body.split(b"\n\n") if e.strip()]
    if any(e.startswith(b"event: error") or e.startswith(b'data: {"error"') for e in events[-2:]):
        return "error"
    last = events[-1] if events else b""
    if last == b"data: [DONE]" or last.startswith((b"event: message_stop", b"event: response.completed",
                                                   b"event: response.incomplete")):
        return "done"
    return "cut"


def is_fault(status, body):
    """A clean 502/503: the API's JSON error."""
    try:
        return status in (502, 503) and "error" in json.loads(body)
    except ValueError:
        return False


def generation(url, rng, deadline):
    """A chat, completion, Anthropic or Responses request, streamed or whole."""
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 200)))
    long = rng.random() < 0.1
    n = rng.randint(200, 400) if long else rng.randint(1, 48)
    stream = rng.random() < 0.5
    k = rng.random()
    if k < 0.35:
        kind, path = "chat", "/v1/chat/completions"
        body = {"messages": [{"role": "user", "content": words}], "max_tokens": n}
    elif k < 0.7:
        kind, path = "completion", "/v1/completions"
        body = {"prompt": words, "max_tokens": n, "temperature": rng.random()}
    elif k < 0.9:
        kind, path = "messages", "/v1/messages"
        body = {"model": "m", "max_tokens": n, "messages": [{"role": "user", "content": words}]}
    else:
        kind, path = "responses", "/v1/responses"
        body = {"input": words, "max_output_tokens": n, "store": False}
    body["stream"] = stream
    if long:
        body["ignore_eos"] = True
    h = Http(url, deadline)
    try:
        h.request(path, body)
        status = h.head()
        data = b"".join(h.pieces())
    finally:
        h.close()
    kind += "_stream" if stream else ""
    if stream and status == 200:
        end = stream_end(data)
        return kind, "ok" if end == "done" else "fault" if end == "error" else "bad", f"stream {end}"
    if status == 200:
        try:
            json.loads(data)
            return kind, "ok", ""
        except ValueError:
            return kind, "bad", f"200 with a body that is not JSON: {data[:80]!r}"
    return kind, "fault" if is_fault(status, data) else "bad", f"{status} {data[:160]!r}"


def cancel(url, rng, deadline):
    """A stream left after its first few events (the server must cancel it)."""
    body = {"messages": [{"role": "user", "content": "the jury said"}], "max_tokens": 400,
            "ignore_eos": True, "stream": True}
    h = Http(url, deadline)
    try:
        h.request("/v1/chat/completions", body)
        status = h.head()
        if status != 200:
            return "cancel", "fault" if is_fault(status, b"".join(h.pieces())) else "bad", str(status)
        got, want = b"", rng.randint(1, 20)
        for piece in h.pieces():
            got += piece
            if got.count(b"\n\n") >= want:
                return "cancel", "ok", ""
        end = stream_end(got)  # it ended before the client left: must be an error event
        return "cancel", "fault" if end == "error" else "bad", f"stream {end} early"
    finally:
        h.close()


def stall(url, rng, deadline):
    """A stalled reader: a small receive window, a few events, nothing for 2-20 s, then the
    rest read slowly (it must be whole) or the connection closed."""
    body = {"prompt": "the jury said", "max_tokens": rng.randint(100, 400), "ignore_eos": True,
            "stream": True}
    finish = rng.random() < 0.5
    kind = "stall_read" if finish else "stall_close"
    h = Http(url, deadline, rcvbuf=4096)
    try:
        h.request("/v1/completions", body)
        status = h.head()
        if status != 200:
            return kind, "fault" if is_fault(status, b"".join(h.pieces())) else "bad", str(status)
        got, first, stalled = b"", rng.randint(1, 5), False
        for piece in h.pieces(256):
            got += piece
            if not stalled and got.count(b"\n\n") >= first:
                stalled = True
                time.sleep(rng.uniform(2, 20))
                if not finish:
                    return kind, "ok", ""
            elif stalled:
                time.sleep(0.002)
        end = stream_end(got)
        return kind, "ok" if end == "done" else "fault" if end == "error" else "bad", f"stream {end}"
    finally:
        h.close()


def hang_up(url, rng, deadline):
    """A client gone before any reply byte: closed, or half-closed (shutdown SHUT_WR, which
    the server treats as gone: no reply)."""
    half = rng.random() < 0.3
    h = Http(url, deadline)
    try:
        h.request("/v1/completions", {"prompt": "the jury said", "max_tokens": 200, "stream": True})
        if not half:
            return "hangup", "ok", ""
        h.s.shutdown(socket.SHUT_WR)
        try:  # closed, or a stream's head and then closed (the server saw the client gone)
            status = h.head()
            data = b"".join(h.pieces())
        except (Cut, ConnectionResetError):
            return "halfclose", "ok", ""
        # an answer at once (the proxy's 503 while the child restarts) is not a generation
        return "halfclose", "fault" if is_fault(status, data) else "bad", f"{status} {data[:100]!r}"
    finally:
        h.close()


def raw(url, data, deadline, trickle=0.0):
    """(status, reply) of raw bytes sent on a new connection (0: closed with no reply);
    trickle: seconds between the bytes, sent one at a time until the server closes."""
    h = Http(url, deadline)
    try:
        if trickle:
            for i in range(len(data)):
                try:
                    h.send(data[i:i + 1])
                except OSError:
                    break
                time.sleep(trickle)
        else:
            h.send(data)
        try:
            status = h.head()
        except (Cut, ConnectionResetError):
            return 0, h.buf
        return status, b"".join(h.pieces())
    finally:
        h.close()


def post_head(path, length, extra=""):
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n").encode()


def json_post(path, body):
    data = json.dumps(body).encode()
    return post_head(path, len(data)) + data


HOSTILE = {  # name: (bytes to send, the expected status; 0: closed without a reply)
    "malformed": (lambda: post_head("/v1/chat/completions", 5) + b"{oops", 400),
    "nul": (lambda: json_post("/v1/chat/completions", {"max_tokens": 3, "messages": [
        {"role": "user", "content": "a\u0000b"}, {"role": "user", "content": "c"}]}), 400),
    "bad_token_id": (lambda: json_post("/v1/completions", {"prompt": [1, 40000], "max_tokens": 3}), 400),
    "bad_bias_id": (lambda: json_post("/v1/completions", {"prompt": "a", "max_tokens": 3,
                                                          "logit_bias": {"99999": 5}}), 400),
    "many_messages": (lambda: json_post("/v1/chat/completions", {"max_tokens": 3, "messages": [
        {"role": "user", "content": "a"}] * 20000}), 400),
    "many_blocks": (lambda: json_post("/v1/messages", {"model": "m", "max_tokens": 3, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "a"}] * 40000}]}), 400),
    "two_lengths": (lambda: post_head("/v1/completions", 2, "Content-Length: 3\r\n") + b"{}", 400),
    "gzip": (lambda: b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n"
                     b"Connection: close\r\n\r\nabc", 501),
    # libmicrohttpd calls no application code for a line it cannot split (docs/server.md)
    "garbage_line": (lambda: b"GARBAGE\r\n\r\n", 0),
    "expect_413": (lambda: post_head("/v1/completions", 10 ** 9, "Expect: 100-continue\r\n"), 413),
    "no_route": (lambda: json_post("/v1/nothing", {}), 404),
}


def hostile(url, rng, deadline):
    name = rng.choice(sorted(HOSTILE))
    make, want = HOSTILE[name]
    status, reply = raw(url, make(), deadline)
    if status == want and not (name == "expect_413" and b"100 Continue" in reply):
        return name, "ok", ""
    return name, "fault" if is_fault(status, reply) else "bad", f"{status} (want {want}) {reply[:120]!r}"


def slowloris(url, rng, deadline):
    """Headers trickled a byte a second: cut at the server's --request-timeout, no reply."""
    status, reply = raw(url, json_post("/v1/completions", {"prompt": "a", "max_tokens": 1}) * 4,
                        deadline, trickle=1.0)
    return "slowloris", "ok" if status == 0 else "bad", f"{status} {reply[:80]!r}"


KINDS = [(0.60, generation), (0.68, cancel), (0.76, stall), (0.82, hang_up), (0.995, hostile),
         (1.0, slowloris)]


class Run:
    def __init__(self, a):
        self.a, self.lock = a, threading.Lock()
        self.outcomes = {}  # kind: {"ok": n, "fault": n, "fault_unexpected": n, "bad": n}
        self.unexpected, self.lat, self.kills, self.faults = [], {}, [], []
        self.stop_t = time.time() + a.minutes * 60

    def in_kill_window(self, t0, t1):
        with self.lock:
            return any(t0 <= k["ready_t"] + 2 and t1 >= k["t"] for k in self.kills)

    def record(self, kind, outcome, detail, t0, t1):
        if outcome == "fault" and not self.in_kill_window(t0, t1):
            outcome = "fault_unexpected"
        with self.lock:
            o = self.outcomes.setdefault(kind, {})
            o[outcome] = o.get(outcome, 0) + 1
            if outcome == "ok":
                self.lat.setdefault(kind, []).append(t1 - t0)
            if outcome == "fault" and len(self.faults) < 5000:
                self.faults.append(f"{kind} at {t0 - self.t0:.1f}-{t1 - self.t0:.1f} s: {detail}")
            if outcome in ("bad", "fault_unexpected"):
                self.unexpected.append(f"{kind} at {t0 - self.t0:.1f}-{t1 - self.t0:.1f} s: {detail}")

    def client(self, seed):
        rng = random.Random(seed)
        while time.time() < self.stop_t:
            t0, r = time.time(), rng.random()
            fn = next(f for p, f in KINDS if r < p)
            try:
                kind, outcome, detail = fn(self.a.url, rng, self.a.deadline)
            except socket.timeout:
                kind, outcome, detail = fn.__name__, "bad", f"no answer for {self.a.deadline} s"
            except Exception as e:  # a refused or reset connection, a cut reply
                kind, outcome, detail = fn.__name__, "bad", repr(e)
            self.record(kind, outcome, detail, t0, time.time())
            if outcome == "fault":  # as a client honouring Retry-After would, not spinning
                time.sleep(0.25)

    def health(self):
        try:
            with urllib.request.urlopen(self.a.url + "/health", timeout=5) as r:
                return json.loads(r.read())
        except Exception as e:  # a 503 while not ready is an HTTPError with the same body
            try:
                return json.loads(e.read())
            except Exception:
                return {}

    def killer(self):
        """SIGKILL the engine child every --kill-child s, the second time SIGSTOP; each time
        wait for /health to show a new child ready."""
        n = 0
        while time.time() + self.a.kill_child < self.stop_t:
            time.sleep(self.a.kill_child)
            old = engine_child(self.a.pid)
            if old is None:
                with self.lock:
                    self.unexpected.append(f"kill {n}: no engine child to kill")
                continue
            sig = signal.SIGSTOP if n == 1 else signal.SIGKILL
            k = {"t": time.time(), "sig": sig.name, "pid": old, "ready_t": float("inf")}
            with self.lock:
                self.kills.append(k)
            os.kill(old, sig)
            n += 1
            while time.time() < k["t"] + 120:
                h = self.health()
                iso = h.get("isolate", {})
                if iso.get("state") == "ready" and iso.get("pid") not in (None, old):
                    with self.lock:
                        k["ready_t"], k["new_pid"] = time.time(), iso["pid"]
                    break
                time.sleep(0.1)
            else:
                with self.lock:
                    self.unexpected.append(f"kill {n} ({sig.name} of {old}): no new child in 120 s")
                    k["ready_t"] = k["t"] + 120
            print(f"# {k['t'] - self.t0:.0f} s: {sig.name} engine child {old}, "
                  f"new child {k.get('new_pid')} ready after {k['ready_t'] - k['t']:.2f} s", flush=True)

    def loadavg(self, into):
        while time.time() < self.stop_t:
            with open("/proc/loadavg") as f:
                into.append(float(f.read().split()[0]))
            time.sleep(10)


def stats(url):
    with urllib.request.urlopen(url + "/stats", timeout=10) as r:
        s = json.loads(r.read())
    return {k: s[k] for k in ("active", "queued", "kv_blocks_used", "kv_blocks_cached")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--pid", type=int, required=True, help="the server's (the --isolate parent's)")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--warmup", type=float, default=30, help="seconds before the RSS baseline")
    ap.add_argument("--kill-child", type=float, default=0, metavar="SECONDS",
                    help="SIGKILL the --isolate engine child this often (the second time SIGSTOP)")
    ap.add_argument("--deadline", type=float, default=180,
                    help="seconds without a byte that make a request a hang")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    run = Run(a)
    parent_start = start_time(a.pid)
    start, run.t0 = usage(a.pid), time.time()
    loads = []
    threads = [threading.Thread(target=run.client, args=(a.seed * 1000 + i,)) for i in range(a.clients)]
    threads.append(threading.Thread(target=run.loadavg, args=(loads,), daemon=True))
    if a.kill_child:
        threads.append(threading.Thread(target=run.killer))
    rss_series = []  # (seconds, parent MiB, child MiB) every 30 s: growth told from a late first touch

    def sample_rss():
        while True:
            u = usage(a.pid)
            rss_series.append((time.time() - run.t0, u.get("parent", (0, 0))[1] / 1024,
                               u.get("child", (0, 0))[1] / 1024))
            time.sleep(30)
    threads.append(threading.Thread(target=sample_rss, daemon=True))
    [t.start() for t in threads]
    # the baseline once warm: the KV cache touched, every thread's malloc arena made
    warm = min(a.warmup, a.minutes * 30)
    time.sleep(warm)
    use0 = usage(a.pid)
    [t.join() for t in threads if not t.daemon]
    t_end = time.time()
    at_once = stats(a.url)
    settled, t_settled = at_once, 0.0
    while time.time() < t_end + 30 and (settled["active"] or settled["queued"] or settled["kv_blocks_used"]):
        time.sleep(0.1)
        settled, t_settled = stats(a.url), time.time() - t_end
    fds_deadline = time.time() + 10
    while time.time() < fds_deadline and usage(a.pid)["parent"][2] > start["parent"][2]:
        time.sleep(0.1)
    use1 = usage(a.pid)
    served = sum(sum(o.values()) for o in run.outcomes.values())
    same_parent = start_time(a.pid) == parent_start
    print(f"requests: {served} in {t_end - run.t0:.0f} s, {a.clients} clients"
          + (f", {len(run.kills)} kills every {a.kill_child:.0f} s" if a.kill_child else ""))
    for kind in sorted(run.outcomes):
        print(f"  {kind}: " + ", ".join(f"{k} {v}" for k, v in sorted(run.outcomes[kind].items())))
    print(f"unexpected: {len(run.unexpected)}" + "".join(f"\n  {e}" for e in run.unexpected[:20]))
    if run.faults:
        rng = random.Random(1)
        print("expected faults, a sample:" + "".join(f"\n  {e}" for e in sorted(
            rng.sample(run.faults, min(12, len(run.faults))), key=lambda e: float(e.split(" at ")[1].split("-")[0]))))
    for kind in sorted(run.lat):
        print(f"latency {kind}: {percentiles(run.lat[kind])}")
    for who in ["parent", "child"] + sorted(k for k in set(use0) | set(use1) if isinstance(k, int)):
        (ps, rs, fs), (p0, r0, f0), (p1, r1, f1) = (u.get(who, (0, 0, 0)) for u in (start, use0, use1))
        print(f"{who} {ps}/{p0}/{p1}: rss {rs / 1024:.1f} at the start, {r0 / 1024:.1f} after {warm:.0f} s, "
              f"{r1 / 1024:.1f} MiB at the end ({(r1 - r0) / max(r0, 1) * 100:+.1f}% since warm); "
              f"fds {fs}, {f0}, {f1}")
    print("rss every 30 s (s: parent / child MiB): " + ", ".join(
        f"{t:.0f}: {p:.1f} / {c:.1f}" for t, p, c in rss_series))
    print(f"stats right after: {json.dumps(at_once)}; settled after {t_settled:.1f} s: {json.dumps(settled)}")
    print(f"load (1 min, every 10 s): min {min(loads):.2f} median {sorted(loads)[len(loads) // 2]:.2f} "
          f"max {max(loads):.2f}")
    faults = sum(o.get("fault", 0) for o in run.outcomes.values())
    print(f"server process: {'the same, alive' if same_parent else 'GONE or replaced'}; "
          f"expected faults (in kill windows): {faults}")
    print("summary: " + json.dumps({"requests": served, "unexpected": len(run.unexpected),
                                    "faults_expected": faults, "kills": len(run.kills),
                                    "outcomes": run.outcomes, "same_parent": same_parent,
                                    "start": start, "warm": use0, "end": use1,
                                    "stats_at_once": at_once, "stats_settled": settled,
                                    "load": [min(loads), max(loads)]}, default=str))


if __name__ == "__main__":
    main()
