"""Helpers shared by the slow-client tests (slow_client.py against the fake engine,
slow_engine_client.py against hearth serve): requests over loopback sockets that can be
trickled, stalled or read slowly, SSE parsing, and the "ok NAME" / "FAIL NAME: why" lines
the test drivers count."""
import contextlib
import http.client
import json
import socket
import sys
import threading
import time

PORT = 0
KEY = ""
failed = 0
_out = threading.Lock()


def setup(port, key):
    global PORT, KEY
    PORT, KEY = port, key


@contextlib.contextmanager
def listener(port):
    """Points the helpers at another listener of the same server for a while."""
    global PORT
    saved, PORT = PORT, port
    try:
        yield
    finally:
        PORT = saved


def check(name, cond, why=""):
    """One result line, whole even when checks run on several threads."""
    global failed
    with _out:
        if not cond:
            failed += 1
        sys.stdout.write("ok %s\n" % name if cond else "FAIL %s: %s\n" % (name, str(why)[:600]))
        sys.stdout.flush()


def run(groups):
    """Runs each group; one that raises fails by its name and the others still run."""
    for g in groups:
        try:
            g()
        except Exception as e:
            check(g.__name__, False, "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if failed else 0)


def headers():
    h = {"Content-Type": "application/json"}
    if KEY:
        h["Authorization"] = "Bearer " + KEY
    return h


def head(path, length):
    """The request line and headers of a POST with a body of length bytes."""
    lines = ["POST %s HTTP/1.1" % path, "Host: x", "Content-Length: %d" % length]
    lines += ["%s: %s" % kv for kv in headers().items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def slow_socket():
    """A connected socket with a 4 KiB receive buffer, so that the server's writes block soon
    when it is not read."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", PORT))
    return s


def get(path):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request("GET", path, headers=headers())
    body = json.loads(c.getresponse().read())
    c.close()
    return body


def post(path, body, sock=None, hold=None):
    """Returns (status, the JSON reply or the list of SSE data strings, seconds taken);
    hold(count), when given, is called after each SSE event with the number read so far
    (it may sleep or block)."""
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.sock = sock
    c.request("POST", path, body=json.dumps(body).encode(), headers=headers())
    r = c.getresponse()
    if not body.get("stream"):
        out = json.loads(r.read())
    else:
        out = []
        for line in iter(r.readline, b""):
            if line.startswith(b"data: "):
                out.append(line[6:].rstrip(b"\n").decode())
                if hold:
                    hold(len(out))
    c.close()
    return r.status, out, time.time() - t0


def text_of(events):
    """The generated text of an SSE stream (chat deltas or completion text)."""
    out = ""
    for d in events:
        if d == "[DONE]":
            continue
        for ch in json.loads(d).get("choices", []):
            out += ch.get("delta", {}).get("content", "") or ch.get("text", "") or ""
    return out


class SlowReader:
    """Streams body on a thread through a 4 KiB receive buffer, reading one event per 5 ms;
    after the first 20 events it reads no more until release() (or 30 s), so that whatever
    the engine's speed the reader is behind it, then reads the rest at full speed."""

    def __init__(self, path, body):
        self.released = threading.Event()
        self.read = 0
        self.read_when_released = None
        self.reply = (0, [], 0)
        self.thread = threading.Thread(target=self._run, args=(path, body))
        self.thread.start()

    def _hold(self, n):
        self.read = n
        if n == 20:
            self.released.wait(30)
        elif not self.released.is_set():
            time.sleep(0.005)

    def _run(self, path, body):
        self.reply = post(path, body, sock=slow_socket(), hold=self._hold)

    def release(self):
        """Lets it read on; remembers how many events it had read."""
        self.read_when_released = self.read
        self.released.set()

    def join(self):
        """(status, SSE data strings, seconds) of its stream."""
        self.thread.join()
        return self.reply


def trickle(path, body, pieces=14, gap=0.1):
    """Sends a whole request (headers and body) in pieces gap seconds apart; returns
    (status, JSON reply, seconds taken)."""
    data = json.dumps(body).encode()
    msg = head(path, len(data)) + data
    s = socket.create_connection(("127.0.0.1", PORT))
    t0 = time.time()
    for i in range(pieces):
        s.sendall(msg[i * len(msg) // pieces:(i + 1) * len(msg) // pieces])
        time.sleep(gap)
    r = http.client.HTTPResponse(s)
    r.begin()
    reply = json.loads(r.read())
    s.close()
    return r.status, reply, time.time() - t0


def stalled_connections(path):
    """Three connections that stop short: silent, half a header line, and headers with part
    of the body."""
    silent = socket.create_connection(("127.0.0.1", PORT))
    half = socket.create_connection(("127.0.0.1", PORT))
    half.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nContent-Ty" % path).encode())
    partial = socket.create_connection(("127.0.0.1", PORT))
    partial.sendall(head(path, 200) + b'{"prompt": "The')
    return [("silent", silent), ("half_header", half), ("partial_body", partial)]


def closed_after(sock, t0, limit):
    """Seconds from t0 until the server closed sock (what it sends is read and dropped), or
    None when it is still open at t0 + limit."""
    while time.time() < t0 + limit:
        sock.settimeout(max(0.01, t0 + limit - time.time()))
        try:
            if not sock.recv(65536):
                return time.time() - t0
        except socket.timeout:
            return None
        except ConnectionError:
            return time.time() - t0
    return None


REFUSED = (ConnectionError, http.client.RemoteDisconnected)


def burst(n, request):
    """Runs request() on n threads at once; each outcome is "served" (request() returned
    true), "refused" (the connection was closed without a reply) or "broken ..."."""
    outcomes = []

    def one():
        try:
            outcomes.append("served" if request() else "broken reply")
        except REFUSED:
            outcomes.append("refused")
        except Exception as e:
            outcomes.append("broken %s: %s" % (type(e).__name__, e))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def fill_limit(limit):
    """Takes every connection slot: one kept-alive connection asks /stats until it is the
    only one the server counts (earlier ones may take a moment to leave), then limit - 1
    idle ones join it. A request beyond them must be refused at once. Returns the sockets."""
    keeper = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)

    def connections():
        keeper.request("GET", "/stats", headers=headers())
        return json.loads(keeper.getresponse().read())["connections"]

    deadline = time.time() + 5
    while connections() != 1 and time.time() < deadline:
        time.sleep(0.05)
    idle = [socket.create_connection(("127.0.0.1", PORT)) for _ in range(limit - 1)]
    deadline = time.time() + 5
    while connections() != limit and time.time() < deadline:
        time.sleep(0.05)
    check("limit_all_slots_taken", connections() == limit)
    t0 = time.time()
    try:
        post("/v1/completions", {"prompt": "x", "max_tokens": 1})
        outcome = "served"
    except REFUSED as e:
        outcome = type(e).__name__
    check("limit_refuses_extra", outcome != "served" and time.time() - t0 < 0.5,
          (outcome, time.time() - t0))
    return idle + [keeper]


def served_again(body):
    """After the idle connections closed, a request is served within 3 s."""
    deadline, st = time.time() + 3, 0
    while time.time() < deadline and st != 200:
        try:
            st = post("/v1/completions", body)[0]
        except REFUSED:
            time.sleep(0.05)
    check("limit_serves_after_close", st == 200, st)
