#!/usr/bin/env python3
"""A logging HTTP proxy in front of `hearth serve`, for learning what agent CLIs send.

    capture_proxy.py --upstream http://127.0.0.1:PORT --log FILE.jsonl [--port 0]
                     [--port-file F] [--fix]

Every request is forwarded unchanged to the upstream and one JSON line is appended to
FILE: time, method, path, query, headers (Authorization / x-api-key / cookies redacted),
the JSON body (or its text), the response status, content type, and the response body
when the status is not 2xx (the first 64 KiB of a 2xx body under "response_head").
Streaming (SSE) replies are passed through as they arrive.

With --fix, a request the upstream rejects (4xx) is retried once after rewrites that
get a client past today's server gaps, so the later requests it would send can be
seen: max_tokens clamped, unknown fields dropped, system-role messages folded into
the system text, unknown content blocks turned into text, and POST /v1/responses
translated to /v1/chat/completions (non-streaming and streaming). The log line then
keeps the first answer ("status", "error") and adds "fixed": {"rewrites", "status"}.
The client sees the fixed answer.

With --script-read PATH, the proxy itself answers the first generation request that
offers a read-file (or shell) tool with a call reading PATH (log line: "scripted"), in
the request's own protocol; the request carrying the tool result then goes upstream.
Stdlib only.
"""
import argparse
import gzip
import http.client
import http.server
import json
import socketserver
import sys
import threading
import time
import urllib.parse
import uuid
import zlib

REDACT = {"authorization", "x-api-key", "cookie", "proxy-authorization", "chatgpt-account-id"}
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-connection", "content-length", "host"}

ARGS = None
LOCK = threading.Lock()
SEQ = [0]


def log_line(rec):
    with LOCK:
        SEQ[0] += 1
        rec["seq"] = SEQ[0]
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def decode_body(raw, enc):
    enc = (enc or "").lower()
    try:
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        elif enc and enc != "identity":
            return None, f"<{len(raw)} bytes, content-encoding {enc}>"
    except Exception as e:  # noqa: BLE001
        return None, f"<undecodable {enc}: {e}>"
    if not raw:
        return None, None
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text), None
    except ValueError:
        return None, text[:65536]


# ---------------------------------------------------------------- rewrites (--fix)

KNOWN_MESSAGES = {"model", "messages", "system", "max_tokens", "stop_sequences", "stream",
                  "temperature", "top_p", "top_k", "tools", "tool_choice", "metadata",
                  "thinking"}


def fix_messages(body, rw):
    """Anthropic /v1/messages: the rewrites a strict server needs."""
    if not isinstance(body, dict):
        return body
    if isinstance(body.get("max_tokens"), int) and body["max_tokens"] > ARGS.clamp:
        rw.append(f"max_tokens {body['max_tokens']}->{ARGS.clamp}")
        body["max_tokens"] = ARGS.clamp
    th = body.get("thinking")
    if isinstance(th, dict) and th.get("type") not in ("enabled", "disabled"):
        rw.append(f"thinking.type {th.get('type')} dropped")
        del body["thinking"]
    for k in list(body):
        if k not in KNOWN_MESSAGES:
            rw.append(f"drop {k}")
            del body[k]
    # system as text blocks: strip cache_control etc. (kept as blocks of type text)
    sysparts = []
    s = body.get("system")
    if isinstance(s, str):
        sysparts.append(s)
    elif isinstance(s, list):
        sysparts += [b.get("text", "") for b in s if isinstance(b, dict)]
    msgs = []
    for m in body.get("messages", []):
        if m.get("role") == "system":
            rw.append("system message -> system")
            c = m.get("content")
            sysparts.append(c if isinstance(c, str) else "".join(
                b.get("text", "") for b in c if isinstance(b, dict)))
            continue
        c = m.get("content")
        if isinstance(c, list):
            nc = []
            for b in c:
                t = b.get("type")
                if t in ("text", "tool_use", "tool_result", "thinking"):
                    if t == "tool_result" and isinstance(b.get("content"), list):
                        b["content"] = "".join(x.get("text", "") for x in b["content"]
                                               if isinstance(x, dict))
                    if t == "thinking":
                        rw.append("thinking block dropped")
                        continue
                    nc.append({k: v for k, v in b.items() if k != "cache_control"})
                else:
                    rw.append(f"{t} block -> text")
                    nc.append({"type": "text", "text": f"[{t}]"})
            c = nc or ""
        msgs.append({"role": m.get("role"), "content": c})
    body["messages"] = msgs
    if sysparts:
        body["system"] = "\n".join(sysparts)
    tools = []
    for t in body.get("tools") or []:
        if "input_schema" not in t:
            rw.append(f"server tool {t.get('type') or t.get('name')} dropped")
            continue
        tools.append({k: t[k] for k in ("name", "description", "input_schema") if k in t})
    if "tools" in body:
        if tools:
            body["tools"] = tools
        else:
            del body["tools"]
            body.pop("tool_choice", None)
    return body


def fix_chat(body, rw):
    """OpenAI /v1/chat/completions."""
    if not isinstance(body, dict):
        return body
    for k in ("max_tokens", "max_completion_tokens"):
        if isinstance(body.get(k), int) and body[k] > ARGS.clamp:
            rw.append(f"{k} {body[k]}->{ARGS.clamp}")
            body[k] = ARGS.clamp
    for m in body.get("messages", []):
        if m.get("role") == "developer":
            rw.append("developer -> system")
            m["role"] = "system"
        c = m.get("content")
        if isinstance(c, list):
            parts = []
            for p in c:
                if p.get("type") != "text":
                    rw.append(f"content part {p.get('type')} -> text")
                parts.append(p.get("text", f"[{p.get('type')}]"))
            m["content"] = "".join(parts)
    return body


def responses_to_chat(body, rw):
    """OpenAI Responses request -> chat completions request (the subset Codex uses)."""
    msgs = []
    if body.get("instructions"):
        msgs.append({"role": "system", "content": body["instructions"]})
    inp = body.get("input")
    if isinstance(inp, str):
        inp = [{"type": "message", "role": "user", "content": inp}]
    for it in inp or []:
        t = it.get("type", "message")
        if t == "message":
            role = it.get("role", "user")
            role = "system" if role == "developer" else role
            c = it.get("content")
            if isinstance(c, list):
                c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
            if msgs and msgs[-1]["role"] == role == "system":
                msgs[-1]["content"] += "\n\n" + c
            elif msgs and role == "system":
                msgs.append({"role": "user", "content": c})
            else:
                msgs.append({"role": role, "content": c})
        elif t in ("function_call", "custom_tool_call", "local_shell_call"):
            call = {"id": it.get("call_id") or it.get("id"), "type": "function",
                    "function": {"name": it.get("name", "shell"),
                                 "arguments": it.get("arguments") or it.get("input") or
                                 json.dumps(it.get("action", {}))}}
            if msgs and msgs[-1]["role"] == "assistant" and "tool_calls" in msgs[-1]:
                msgs[-1]["tool_calls"].append(call)
            else:
                msgs.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif t in ("function_call_output", "custom_tool_call_output",
                   "local_shell_call_output"):
            out = it.get("output")
            if isinstance(out, list):
                out = "".join(p.get("text", "") for p in out if isinstance(p, dict))
            elif isinstance(out, dict):
                out = out.get("content", json.dumps(out))
            msgs.append({"role": "tool", "tool_call_id": it.get("call_id"), "content": out})
        else:
            rw.append(f"input item {t} dropped")
    tools = []
    for t in body.get("tools") or []:
        if t.get("type") == "function":
            tools.append({"type": "function", "function": {
                "name": t["name"], "description": t.get("description", ""),
                "parameters": t.get("parameters") or {"type": "object", "properties": {}}}})
        else:
            rw.append(f"tool type {t.get('type')} dropped")
    chat = {"model": body.get("model"), "messages": msgs,
            "max_tokens": min(body.get("max_output_tokens") or ARGS.clamp, ARGS.clamp)}
    if tools:
        chat["tools"] = tools
    rw.append("responses -> chat/completions")
    return chat


def chat_to_response(chat, model):
    """Chat completion JSON -> Responses API response object."""
    msg = (chat.get("choices") or [{}])[0].get("message", {})
    out = []
    rid = "resp_" + uuid.uuid4().hex[:24]
    if msg.get("reasoning_content"):
        out.append({"type": "reasoning", "id": "rs_" + uuid.uuid4().hex[:16],
                    "summary": [{"type": "summary_text", "text": msg["reasoning_content"]}]})
    if msg.get("content"):
        out.append({"type": "message", "id": "msg_" + uuid.uuid4().hex[:16],
                    "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": msg["content"],
                                 "annotations": []}]})
    for tc in msg.get("tool_calls") or []:
        out.append({"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:16],
                    "status": "completed", "call_id": tc.get("id"),
                    "name": tc["function"]["name"], "arguments": tc["function"]["arguments"]})
    u = chat.get("usage") or {}
    return {"id": rid, "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": model, "output": out,
            "usage": {"input_tokens": u.get("prompt_tokens", 0),
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": u.get("completion_tokens", 0),
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": u.get("total_tokens", 0)}}


def response_sse(resp):
    """The SSE event stream of a finished Responses API response."""
    ev = []
    base = dict(resp, status="in_progress", output=[])
    ev.append(("response.created", {"type": "response.created", "response": base}))
    ev.append(("response.in_progress", {"type": "response.in_progress", "response": base}))
    for i, item in enumerate(resp["output"]):
        start = dict(item, status="in_progress")
        if item["type"] == "message":
            start["content"] = []
        if item["type"] == "function_call":
            start["arguments"] = ""
        ev.append(("response.output_item.added",
                   {"type": "response.output_item.added", "output_index": i, "item": start}))
        if item["type"] == "message":
            part = item["content"][0]
            ev.append(("response.content_part.added", {
                "type": "response.content_part.added", "item_id": item["id"],
                "output_index": i, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}))
            ev.append(("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"],
                "output_index": i, "content_index": 0, "delta": part["text"]}))
            ev.append(("response.output_text.done", {
                "type": "response.output_text.done", "item_id": item["id"],
                "output_index": i, "content_index": 0, "text": part["text"]}))
            ev.append(("response.content_part.done", {
                "type": "response.content_part.done", "item_id": item["id"],
                "output_index": i, "content_index": 0, "part": part}))
        if item["type"] == "function_call":
            ev.append(("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "item_id": item["id"],
                "output_index": i, "delta": item["arguments"]}))
            ev.append(("response.function_call_arguments.done", {
                "type": "response.function_call_arguments.done", "item_id": item["id"],
                "output_index": i, "arguments": item["arguments"]}))
        ev.append(("response.output_item.done",
                   {"type": "response.output_item.done", "output_index": i, "item": item}))
    ev.append(("response.completed", {"type": "response.completed", "response": resp}))
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in ev).encode()


# ---------------------------------------------------------------- scripted tool call

SCRIPTED = [False]


def tool_names(body):
    out = {}
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        name = fn.get("name")
        schema = fn.get("input_schema") or fn.get("parameters") or {}
        if name:
            out[name] = list((schema.get("properties") or {}).keys())
    return out


def has_tool_result(body):
    for m in body.get("messages") or []:
        if m.get("role") == "tool":
            return True
        if isinstance(m.get("content"), list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"]):
            return True
    for it in body.get("input") or [] if isinstance(body.get("input"), list) else []:
        if it.get("type", "").endswith("_output"):
            return True
    return False


def scripted_call(body):
    """(name, arguments) of a call reading ARGS.script_read, or None."""
    if SCRIPTED[0] or not ARGS.script_read or not isinstance(body, dict) or has_tool_result(body):
        return None
    tools = tool_names(body)
    for name, props in tools.items():
        if name.lower() in ("read", "read_file"):
            key = next((k for k in ("file_path", "filePath", "path") if k in props), "path")
            return name, {key: ARGS.script_read}
    for name, props in tools.items():
        if name.lower() in ("exec_command", "shell", "bash"):
            key = "cmd" if "cmd" in props else "command"
            return name, {key: f"cat {ARGS.script_read}"}
    return None


def sse(events):
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()


def scripted_reply(path, body, name, args):
    """(content type, bytes) answering one generation request with a tool call."""
    cid = "call_" + uuid.uuid4().hex[:12]
    arg = json.dumps(args)
    model = body.get("model")
    stream = bool(body.get("stream"))
    if path.startswith("/v1/messages"):
        mid = "msg_" + uuid.uuid4().hex[:24]
        usage = {"input_tokens": 10, "output_tokens": 10}
        block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name,
                 "input": args}
        if not stream:
            return "application/json", json.dumps({
                "id": mid, "type": "message", "role": "assistant", "model": model,
                "content": [block], "stop_reason": "tool_use", "stop_sequence": None,
                "usage": usage}).encode()
        return "text/event-stream", sse([
            ("message_start", {"type": "message_start", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": dict(block, input={})}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "input_json_delta", "partial_json": arg}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {
                "stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 10}}),
            ("message_stop", {"type": "message_stop"})])
    chat = {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{
                    "id": cid, "type": "function",
                    "function": {"name": name, "arguments": arg}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}
    if path == "/v1/responses":
        out = chat_to_response(chat, model)
        if stream:
            return "text/event-stream", response_sse(out)
        return "application/json", json.dumps(out).encode()
    if not stream:
        return "application/json", json.dumps(chat).encode()
    base = {"id": chat["id"], "object": "chat.completion.chunk", "created": chat["created"],
            "model": model}
    chunks = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "tool_calls": [{
                  "index": 0, "id": cid, "type": "function",
                  "function": {"name": name, "arguments": arg}}]}, "finish_reason": None}]),
              dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])]
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(dict(base, choices=[], usage=chat["usage"]))
    return "text/event-stream", (
        "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


# ---------------------------------------------------------------- proxy


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # quiet
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def upstream(self, method, path, headers, body):
        u = urllib.parse.urlsplit(ARGS.upstream)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=ARGS.timeout)
        h = {k: v for k, v in headers.items() if k.lower() not in HOP}
        if body or method in ("POST", "PUT", "PATCH"):
            h["Content-Length"] = str(len(body))
        conn.request(method, path, body=body or None, headers=h)
        return conn, conn.getresponse()

    def send_head(self, status, headers, length):
        self.send_response_only(status)
        for k, v in headers:
            if k.lower() not in HOP:
                self.send_header(k, v)
        if length is not None:
            self.send_header("Content-Length", length)
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def relay(self, resp, rec):
        """Streams an upstream response to the client; returns the bytes kept for the log."""
        length = resp.getheader("Content-Length")
        chunked = length is None
        self.send_head(resp.status, resp.getheaders(), length)
        kept = b""
        while True:
            d = resp.read1(65536)
            if not d:
                break
            if len(kept) < 65536:
                kept += d[: 65536 - len(kept)]
            if chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(d), d))
            else:
                self.wfile.write(d)
            self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        return kept

    def answer(self, status, ctype, data):
        self.send_response_only(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def handle_any(self):
        t0 = time.time()
        raw = self.read_body()
        u = urllib.parse.urlsplit(self.path)
        jbody, tbody = decode_body(raw, self.headers.get("Content-Encoding"))
        rec = {"t": round(t0, 3), "client": ARGS.name, "method": self.command, "path": u.path,
               "query": u.query or None,
               "headers": {k.lower(): ("<redacted>" if k.lower() in REDACT else v)
                           for k, v in self.headers.items()}}
        if jbody is not None:
            rec["body"] = jbody
        elif tbody is not None:
            rec["body_text"] = tbody
        try:
            self.forward(rec, raw, jbody, u)
        except (BrokenPipeError, ConnectionResetError) as e:
            rec["client_gone"] = str(e)
        except Exception as e:  # noqa: BLE001
            rec["proxy_error"] = repr(e)
            try:
                self.answer(502, "application/json",
                            json.dumps({"error": {"message": f"proxy: {e}"}}).encode())
            except Exception:  # noqa: BLE001
                pass
        rec["ms"] = int((time.time() - t0) * 1000)
        log_line(rec)

    def forward(self, rec, raw, jbody, u):
        method = self.command
        call = scripted_call(jbody) if method == "POST" and u.path in (
            "/v1/messages", "/v1/chat/completions", "/v1/responses") else None
        if call:
            SCRIPTED[0] = True
            ctype, data = scripted_reply(u.path, jbody, *call)
            rec["status"] = 200
            rec["scripted"] = {"tool": call[0], "arguments": call[1]}
            return self.answer(200, ctype, data)
        if not ARGS.fix:
            conn, resp = self.upstream(method, self.path, self.headers, raw)
            self.finish_log(rec, resp, self.relay(resp, rec))
            conn.close()
            return
        # --fix: buffer the first answer; on 4xx rewrite and retry.
        conn, resp = self.upstream(method, self.path, self.headers, raw)
        if resp.status < 400 or jbody is None and u.path != "/v1/responses":
            self.finish_log(rec, resp, self.relay(resp, rec))
            conn.close()
            return
        first = resp.read()
        conn.close()
        self.finish_log(rec, resp, first)
        rw = []
        body = json.loads(json.dumps(jbody)) if jbody is not None else None
        hdrs = {k: v for k, v in self.headers.items() if k.lower() != "content-encoding"}
        if u.path == "/v1/responses" and method == "POST" and isinstance(body, dict):
            chat = responses_to_chat(body, rw)
            c2, r2 = self.upstream("POST", "/v1/chat/completions", hdrs,
                                   json.dumps(chat).encode())
            data = r2.read()
            c2.close()
            rec["fixed"] = {"rewrites": rw, "status": r2.status}
            if r2.status >= 400:
                rec["fixed"]["error"] = data.decode("utf-8", "replace")
                return self.answer(r2.status, "application/json", data)
            out = chat_to_response(json.loads(data), body.get("model"))
            rec["fixed"]["response_head"] = out
            if body.get("stream"):
                return self.answer(200, "text/event-stream", response_sse(out))
            return self.answer(200, "application/json", json.dumps(out).encode())
        if u.path.startswith("/v1/messages") and isinstance(body, dict):
            body = fix_messages(body, rw)
            path = self.path
            if u.path == "/v1/messages/count_tokens":
                rec["fixed"] = {"rewrites": ["answered by proxy"], "status": 200}
                n = len(json.dumps(body)) // 4
                return self.answer(200, "application/json",
                                   json.dumps({"input_tokens": n}).encode())
        elif u.path == "/v1/chat/completions" and isinstance(body, dict):
            body = fix_chat(body, rw)
            path = self.path
        else:
            rec["fixed"] = {"rewrites": ["replayed first answer"], "status": resp.status}
            return self.answer(resp.status, resp.getheader("Content-Type") or "text/plain",
                               first)
        c2, r2 = self.upstream(method, path, hdrs, json.dumps(body).encode())
        rec["fixed"] = {"rewrites": rw, "status": r2.status}
        kept = self.relay(r2, rec)
        if r2.status >= 400:
            rec["fixed"]["error"] = kept.decode("utf-8", "replace")
            rec["fixed"]["body"] = body
        c2.close()

    def finish_log(self, rec, resp, kept):
        rec["status"] = resp.status
        rec["response_type"] = resp.getheader("Content-Type")
        text = kept.decode("utf-8", "replace")
        if resp.status >= 300 or resp.status < 200:
            try:
                rec["error"] = json.loads(text)
            except ValueError:
                rec["error"] = text
        elif ARGS.keep_responses:
            rec["response_head"] = text

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--upstream", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--name", default=None, help="client name stored in each log line")
    p.add_argument("--fix", action="store_true")
    p.add_argument("--clamp", type=int, default=1024, help="--fix: largest max_tokens")
    p.add_argument("--keep-responses", action="store_true",
                   help="log the first 64 KiB of 2xx bodies too")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--script-read", metavar="PATH",
                   help="answer the first generation request that offers a read (or shell) "
                        "tool with a call reading PATH, so the request carrying the tool "
                        "result can be seen (the model cannot be relied on to call it)")
    ARGS = p.parse_args()
    srv = Server(("127.0.0.1", ARGS.port), Handler)
    port = srv.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        import os
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    print(f"capture proxy on http://127.0.0.1:{port} -> {ARGS.upstream}", file=sys.stderr,
          flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
