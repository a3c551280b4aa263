#!/usr/bin/env python3
"""Client side of tests/unit/test_server_http.c: real HTTP on loopback with the standard
library against the fake-engine server (n > 1 and forced tool_choice included). Prints
"ok NAME" / "FAIL NAME: why" per check.
Usage: http_client.py PORT API_KEY"""
import http.client
import json
import socket
import sys
import threading
import time

PORT = int(sys.argv[1])
KEY = sys.argv[2]
AUTH = {"Authorization": "Bearer " + KEY}
failed = 0


def check(name, cond, why=""):
    global failed
    if cond:
        print("ok " + name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))
    sys.stdout.flush()


def request(method, path, body=None, headers=AUTH, raw=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    h = dict(headers)
    if data is not None:
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    try:
        return r.status, json.loads(text), r
    except ValueError:
        return r.status, text, r


def stream(path, body, headers=AUTH):
    """Returns (status, [(event, data)], content-type) of an SSE response."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request("POST", path, body=json.dumps(body).encode(),
              headers=dict(headers, **{"Content-Type": "application/json"}))
    r = c.getresponse()
    events, name = [], None
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            d = line[6:]
            events.append((name, d if d == "[DONE]" else json.loads(d)))
            name = None
    c.close()
    return r.status, events, r.getheader("Content-Type")


USER = [{"role": "user", "content": "hi"}]


def chat(content, **kw):
    return dict({"model": "m", "messages": [{"role": "user", "content": content}]}, **kw)


TOOLS = [{"type": "function", "function": {"name": "get_weather",
                                           "parameters": {"type": "object"}}}]


def test_routes():
    st, body, _ = request("GET", "/health", headers={})
    check("health", st == 200 and body["status"] == "ok" and body["model"] == "fake-model"
          and "requests" in body, body)
    st, body, _ = request("GET", "/v1/models")
    check("models", st == 200 and body["data"][0]["id"] == "fake-model", body)
    st, body, _ = request("GET", "/v1/models", headers={})
    check("401_missing_key", st == 401 and body["error"]["type"] == "authentication_error", body)
    st, body, _ = request("POST", "/v1/chat/completions", chat("x"), headers={"Authorization": "Bearer nope"})
    check("401_wrong_key", st == 401 and body["error"]["code"] == 401, body)
    st, body, _ = request("POST", "/v1/messages", {"max_tokens": 5, "messages": USER},
                          headers={"x-api-key": "nope"})
    check("401_anthropic_shape", st == 401 and body["type"] == "error"
          and body["error"]["type"] == "authentication_error", body)
    st, body, _ = request("POST", "/v1/chat/completions", chat("x"), headers={"x-api-key": KEY})
    check("x_api_key", st == 200, body)
    st, body, _ = request("GET", "/v2/nothing")
    check("404", st == 404 and body["error"]["code"] == 404, body)
    st, body, _ = request("GET", "/v1/chat/completions")
    check("405", st == 405 and "POST" in body["error"]["message"], body)
    st, body, _ = request("POST", "/v1/chat/completions", raw=b"{" + b" " * 70000 + b"}")
    check("413", st == 413 and "larger than 65536" in body["error"]["message"], body)
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request("POST", "/v1/messages", body=iter([b"{", b" " * 40000, b" " * 40000, b"}"]),
              headers=dict(AUTH, **{"Content-Type": "application/json"}), encode_chunked=True)
    r = c.getresponse()
    body = json.loads(r.read())
    check("413_chunked_anthropic", r.status == 413 and body["error"]["type"] == "request_too_large", body)
    st, body, _ = request("POST", "/v1/chat/completions", chat("x"), headers={"Authorization": "Bearer sekret2"})
    check("401_key_prefix", st == 401, body)
    st, body, _ = request("POST", "/v1/chat/completions", chat("x"), headers={"Authorization": "Bearer sekre"})
    check("401_key_shorter", st == 401, body)


def test_bad_requests():
    cases = [
        (b"{not json", "invalid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (json.dumps(chat("x", temperature="hot")).encode(), '"temperature" must be a number'),
        (json.dumps({"messages": []}).encode(), '"messages" must not be empty'),
        (json.dumps(chat("x", max_tokens=0)).encode(), '"max_tokens" must be at least 1, got 0'),
        (json.dumps(chat("x", n=17)).encode(), '"n" must be in [1, 16], got 17'),
        (json.dumps(chat("x", n=0)).encode(), '"n" must be in [1, 16], got 0'),
        (json.dumps(chat("TOOL", tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}})).encode(),
         'names the tool "nope", which is not in "tools"'),
        (json.dumps(chat("TOOL", tool_choice="required")).encode(), 'needs a non-empty "tools" array'),
        (json.dumps(chat("x", response_format={"type": "json_schema", "json_schema": {
            "schema": {"type": "object", "if": {"minimum": 2}, "then": {"required": ["a"]}}}})).encode(),
         '"if" at #'),
        (json.dumps(chat("x", response_format={"type": "yaml"})).encode(), '"response_format".type must be'),
        (json.dumps(chat("x", guided_regex="a", grammar='root ::= "a"')).encode(), "both constrain the output"),
        (json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode(), "messages[0].role"),
    ]
    for i, (raw, want) in enumerate(cases):
        st, body, _ = request("POST", "/v1/chat/completions", raw=raw)
        check("400_case_%d" % i, st == 400 and want in body["error"]["message"]
              and body["error"]["type"] == "invalid_request_error", (st, body))
    st, body, _ = request("POST", "/v1/messages", {"messages": USER})
    check("400_anthropic_shape", st == 400 and body["type"] == "error"
          and body["error"]["type"] == "invalid_request_error"
          and '"max_tokens" is required' in body["error"]["message"], body)
    st, body, _ = request("POST", "/v1/chat/completions", chat("REJECT"))
    check("400_engine_reject", st == 400 and "longer than the context" in body["error"]["message"], body)
    st, body, _ = request("POST", "/v1/chat/completions", chat("FAIL"))
    check("500_engine_error", st == 500 and body["error"]["message"] == "scripted failure", body)


def test_chat():
    st, b, r = request("POST", "/v1/chat/completions", chat("hello"))
    check("chat_body", st == 200 and b["object"] == "chat.completion" and b["model"] == "m"
          and b["choices"][0]["message"]["content"] == "Hello from the fake engine!"
          and b["choices"][0]["finish_reason"] == "stop" and b["usage"]["completion_tokens"] == 9
          and b["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
          and r.getheader("Content-Type") == "application/json", b)
    st, ev, ctype = stream("/v1/chat/completions", chat("hello", stream=True,
                                                        stream_options={"include_usage": True}))
    text = "".join(d["choices"][0]["delta"].get("content", "") for _, d in ev[:-1] if d["choices"])
    check("chat_stream", st == 200 and ctype == "text/event-stream" and ev[-1][1] == "[DONE]"
          and text == "Hello from the fake engine!" and ev[0][1]["choices"][0]["delta"]["role"] == "assistant"
          and ev[-3][1]["choices"][0]["finish_reason"] == "stop"
          and ev[-2][1]["choices"] == [] and ev[-2][1]["usage"]["total_tokens"] == 9 + 5, ev[-3:])
    st, b, _ = request("POST", "/v1/chat/completions", chat("THINK"))
    m = b["choices"][0]["message"]
    check("chat_reasoning", m["content"] == "The answer is 42."
          and m["reasoning_content"] == "\nLet me think.\n", m)
    st, ev, _ = stream("/v1/chat/completions", chat("THINK", stream=True))
    rs = "".join(d["choices"][0]["delta"].get("reasoning_content", "") for _, d in ev[:-1])
    cs = "".join(d["choices"][0]["delta"].get("content", "") for _, d in ev[:-1])
    check("chat_reasoning_stream", rs == "\nLet me think.\n" and cs == "The answer is 42.", (rs, cs))
    st, b, _ = request("POST", "/v1/chat/completions", chat("TOOL", tools=TOOLS))
    m = b["choices"][0]["message"]
    check("chat_tool_call", b["choices"][0]["finish_reason"] == "tool_calls"
          and m["content"] == "Let me check.\n"
          and m["tool_calls"][0]["function"]["name"] == "get_weather"
          and json.loads(m["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}, m)
    st, ev, _ = stream("/v1/chat/completions", chat("TOOL", tools=TOOLS, stream=True))
    calls = [d["choices"][0]["delta"]["tool_calls"] for _, d in ev[:-1] if "tool_calls" in d["choices"][0]["delta"]]
    check("chat_tool_call_stream", len(calls) == 1 and calls[0][0]["index"] == 0
          and calls[0][0]["id"].startswith("call_") and ev[-2][1]["choices"][0]["finish_reason"] == "tool_calls", calls)
    st, b, _ = request("POST", "/v1/chat/completions", chat("TOOL"))
    check("chat_no_tools_no_parse", "<tool_call>" in b["choices"][0]["message"]["content"], b)
    st, b, _ = request("POST", "/v1/chat/completions", chat("hello", max_tokens=2))
    check("chat_length", b["choices"][0]["finish_reason"] == "length"
          and b["choices"][0]["message"]["content"] == "Hello ", b)
    st, b, _ = request("POST", "/v1/chat/completions", chat("hello", logprobs=True, top_logprobs=1))
    lp = b["choices"][0]["logprobs"]["content"]
    check("chat_logprobs", len(lp) == 9 and lp[0]["token"] == "Hel" and lp[0]["logprob"] == -0.25
          and lp[0]["top_logprobs"][0]["logprob"] == -1.25 and lp[0]["bytes"] == [72, 101, 108], lp[:1])


def test_completions():
    st, b, _ = request("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 100})
    check("completion_body", st == 200 and b["object"] == "text_completion"
          and b["choices"][0]["text"] == "Hello from the fake engine!" and b["model"] == "fake-model", b)
    st, ev, _ = stream("/v1/completions", {"prompt": [5, 6, 7], "max_tokens": 4, "stream": True})
    text = "".join(d["choices"][0]["text"] for _, d in ev[:-1])
    check("completion_stream_ids", text == "Hello from t" and ev[-2][1]["choices"][0]["finish_reason"] == "length"
          and ev[-1][1] == "[DONE]", ev)
    st, b, _ = request("POST", "/v1/completions", {"prompt": [5, 300]})
    check("completion_bad_id", st == 400 and '"prompt"[1]' in b["error"]["message"], b)


def test_messages():
    st, b, _ = request("POST", "/v1/messages", {"model": "claude", "max_tokens": 100, "system": "s",
                                                "messages": [{"role": "user", "content": "TOOL"}],
                                                "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]})
    check("messages_body", st == 200 and b["type"] == "message" and b["role"] == "assistant"
          and b["content"][0] == {"type": "text", "text": "Let me check.\n"}
          and b["content"][1]["type"] == "tool_use" and b["content"][1]["input"] == {"city": "Paris"}
          and b["stop_reason"] == "tool_use" and b["id"].startswith("msg_"), b)
    st, ev, _ = stream("/v1/messages", {"max_tokens": 100, "stream": True,
                                        "messages": [{"role": "user", "content": "THINK"}]})
    names = [n for n, _ in ev]
    want = ["message_start", "content_block_start", "ping"]
    check("messages_stream_order", names[:3] == want and names[-2:] == ["message_delta", "message_stop"]
          and all(n == d["type"] for n, d in ev), names)
    thinking = "".join(d["delta"].get("thinking", "") for n, d in ev if n == "content_block_delta")
    text = "".join(d["delta"].get("text", "") for n, d in ev if n == "content_block_delta")
    check("messages_stream_blocks", thinking == "\nLet me think.\n" and text == "The answer is 42."
          and ev[-2][1]["delta"]["stop_reason"] == "end_turn", (thinking, text))


def anthropic_error(st, b, status, etype, msg=""):
    return (st == status and isinstance(b, dict) and b.get("type") == "error"
            and b["error"]["type"] == etype and msg in b["error"]["message"])


def test_anthropic():
    """/v1/messages as Claude Code sends it, and Anthropic's error shapes."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": [{"type": "text", "text": "s",
            "cache_control": {"type": "ephemeral"}}], "thinking": {"type": "adaptive"},
            "metadata": {"user_id": "u"}, "context_management": {"edits": []}, "service_tier": "auto",
            "output_config": {"effort": "high"}, "top_k": 5, "stop_sequences": ["STOP"],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
                      {"type": "web_search_20250305", "name": "web_search"}],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
            "messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": [
                             {"type": "thinking", "thinking": "t", "signature": "x"},
                             {"type": "text", "text": "hello"}]},
                         {"role": "system", "content": "be brief"},
                         {"role": "user", "content": "THINK"}]}
    st, b, _ = request("POST", "/v1/messages", body, headers={"x-api-key": KEY,
                                                               "anthropic-version": "2023-06-01"})
    check("anth_claude_code_body", st == 200 and b["content"][0]["type"] == "thinking"
          and b["content"][1] == {"type": "text", "text": "The answer is 42."}, b)
    st, b, _ = request("POST", "/v1/messages", dict(body, thinking={"type": "enabled", "budget_tokens": 50}))
    check("anth_thinking_enabled_budget", st == 200, b)
    bad = dict(body, messages=[{"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image", "source": {"type": "base64"}}]}])
    st, b, _ = request("POST", "/v1/messages", bad)
    check("anth_400_image", anthropic_error(st, b, 400, "invalid_request_error",
          "messages[0].content[1]: image blocks are not supported by this text-only model"), b)
    st, b, _ = request("POST", "/v1/messages", dict(body, thinking={"type": "enabled", "budget_tokens": 0}))
    check("anth_400_budget", anthropic_error(st, b, 400, "invalid_request_error", "budget_tokens"), b)
    st, b, _ = request("POST", "/v1/messages", raw=b"{oops")
    check("anth_400_json", anthropic_error(st, b, 400, "invalid_request_error"), b)
    st, b, _ = request("POST", "/v1/messages", body, headers={"x-api-key": "wrong"})
    check("anth_401", anthropic_error(st, b, 401, "authentication_error"), b)
    st, b, _ = request("GET", "/v1/messages")
    check("anth_405", anthropic_error(st, b, 405, "invalid_request_error", "POST"), b)
    st, full, _ = request("POST", "/v1/messages", dict(body, messages=body["messages"][:3] + [
        {"role": "user", "content": "count me"}]))
    st2, n, _ = request("POST", "/v1/messages/count_tokens?beta=true", {k: v for k, v in dict(
        body, messages=body["messages"][:3] + [{"role": "user", "content": "count me"}]).items() if k != "max_tokens"})
    check("anth_count_tokens", st == 200 and st2 == 200 and n == {"input_tokens": full["usage"]["input_tokens"]},
          (full, n))
    st, b, _ = request("POST", "/v1/messages/count_tokens", {"messages": []})
    check("anth_count_tokens_400", anthropic_error(st, b, 400, "invalid_request_error", "must not be empty"), b)
    st, b, _ = request("GET", "/v1/messages/count_tokens")
    check("anth_count_tokens_405", anthropic_error(st, b, 405, "invalid_request_error", "POST"), b)
    st, b, _ = request("POST", "/v1/messages/nothing", {})
    check("anth_404", anthropic_error(st, b, 404, "not_found_error"), b)
    # The SDK's beta calls add ?beta=true: libmicrohttpd routes on the path alone.
    st, b, _ = request("POST", "/v1/messages?beta=true", {"max_tokens": 5, "messages": USER})
    check("anth_beta_query", st == 200 and b["type"] == "message", b)
    for method, path in [("GET", "/health?beta=true"), ("GET", "/v1/models?beta=true&x=1"),
                         ("POST", "/tokenize?beta=true")]:
        st, b, _ = request(method, path, {"content": "ab"} if method == "POST" else None)
        check("query_string " + path, st == 200, b)
    st, b, _ = request("POST", "/v1/messages", raw=b"{" + b" " * 70000 + b"}")
    check("anth_413", anthropic_error(st, b, 413, "request_too_large", "larger than 65536"), b)


def chunks_by_choice(ev):
    """Per choice index: (content, finish_reason) from OpenAI stream chunks."""
    out = {}
    for _, d in ev:
        if d == "[DONE]" or not d.get("choices"):
            continue
        c = d["choices"][0]
        text, finish = out.get(c["index"], ("", None))
        out[c["index"]] = (text + (c.get("delta", {}).get("content") or c.get("text") or ""),
                           c["finish_reason"] or finish)
    return out


def test_n():
    st, b, _ = request("POST", "/v1/chat/completions", chat("hello", n=3))
    ch = b["choices"]
    check("n3_body", st == 200 and [c["index"] for c in ch] == [0, 1, 2]
          and all(c["message"]["content"] == "Hello from the fake engine!" and c["finish_reason"] == "stop"
                  for c in ch)
          and b["usage"]["prompt_tokens"] == 5 and b["usage"]["completion_tokens"] == 27
          and b["usage"]["total_tokens"] == 32, b)
    st, ev, _ = stream("/v1/chat/completions", chat("hello", n=3, stream=True,
                                                    stream_options={"include_usage": True}))
    per = chunks_by_choice(ev)
    dones = [i for i, (_, d) in enumerate(ev) if d == "[DONE]"]
    roles = sorted(d["choices"][0]["index"] for _, d in ev if d != "[DONE]" and d["choices"]
                   and d["choices"][0]["delta"].get("role"))
    check("n3_stream", st == 200 and dones == [len(ev) - 1] and roles == [0, 1, 2]
          and per == {i: ("Hello from the fake engine!", "stop") for i in range(3)}
          and ev[-2][1]["choices"] == [] and ev[-2][1]["usage"]["completion_tokens"] == 27
          and ev[-2][1]["usage"]["prompt_tokens"] == 5, (per, dones, ev[-2:]))
    st, ev, _ = stream("/v1/completions", {"prompt": "Once", "max_tokens": 4, "n": 2, "stream": True})
    per = chunks_by_choice(ev)
    check("n2_completion_stream", st == 200 and ev[-1][1] == "[DONE]"
          and [d for _, d in ev].count("[DONE]") == 1
          and per == {0: ("Hello from t", "length"), 1: ("Hello from t", "length")}, per)
    st, b, _ = request("POST", "/v1/chat/completions", chat("SEED", n=3, seed=7))
    seeds = [c["message"]["content"] for c in b["choices"]]
    check("n3_seeds", seeds == ["seed=7", "seed=8", "seed=9"], seeds)
    st, b, _ = request("POST", "/v1/chat/completions", chat("REJECT", n=3))
    check("n3_engine_reject", st == 400 and "longer than the context" in b["error"]["message"], b)
    before = stat("cancelled")
    st, b, _ = request("POST", "/v1/chat/completions", chat("SLOW REFUSE_ODD_SEED", n=3, seed=10))
    deadline = time.time() + 5
    while time.time() < deadline and stat("active"):
        time.sleep(0.05)
    check("n3_second_choice_refused", st == 400 and "no room for seed 11" in b["error"]["message"]
          and stat("cancelled") == before + 1 and stat("active") == 0, (b, stat("cancelled") - before))
    st, b, _ = request("POST", "/v1/chat/completions", chat("FAIL", n=2))
    check("n2_engine_error", st == 500 and b["error"]["message"] == "scripted failure", b)


def tool_call_of(b):
    m = b["choices"][0]["message"]
    calls = m.get("tool_calls") or []
    return (b["choices"][0]["finish_reason"], m["content"],
            [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls])


def test_tool_choice():
    want = ("tool_calls", None, [("get_weather", {"city": "Paris"})])
    named = {"type": "function", "function": {"name": "get_weather"}}
    st, b, _ = request("POST", "/v1/chat/completions", chat("TOOL", tools=TOOLS, tool_choice="required"))
    check("tool_choice_required", st == 200 and tool_call_of(b) == want, b)
    st, b, _ = request("POST", "/v1/chat/completions", chat("TOOL", tools=TOOLS, tool_choice=named))
    check("tool_choice_named", st == 200 and tool_call_of(b) == want, b)
    st, ev, _ = stream("/v1/chat/completions", chat("TOOL", tools=TOOLS, tool_choice=named, stream=True))
    deltas = [d["choices"][0]["delta"] for _, d in ev if d != "[DONE]"]
    calls = [x["tool_calls"][0] for x in deltas if "tool_calls" in x]
    text = "".join(x.get("content") or "" for x in deltas)
    check("tool_choice_named_stream", len(calls) == 1 and calls[0]["function"]["name"] == "get_weather"
          and json.loads(calls[0]["function"]["arguments"]) == {"city": "Paris"} and text == ""
          and ev[-2][1]["choices"][0]["finish_reason"] == "tool_calls", deltas)
    st, b, _ = request("POST", "/v1/chat/completions", chat("TOOL", tools=TOOLS, tool_choice=named, n=2))
    check("tool_choice_named_n2", st == 200 and len(b["choices"]) == 2 and all(
        c["message"]["tool_calls"][0]["function"]["name"] == "get_weather" for c in b["choices"]), b)
    anth = {"model": "claude", "max_tokens": 100, "messages": [{"role": "user", "content": "TOOL"}],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]}
    for name, tc in [("any", {"type": "any"}), ("tool", {"type": "tool", "name": "get_weather"})]:
        st, b, _ = request("POST", "/v1/messages", dict(anth, tool_choice=tc))
        check("anthropic_tool_choice_" + name, st == 200 and b["stop_reason"] == "tool_use"
              and [c["type"] for c in b["content"]] == ["tool_use"]
              and b["content"][0]["name"] == "get_weather" and b["content"][0]["input"] == {"city": "Paris"}, b)
    st, b, _ = request("POST", "/v1/messages", dict(anth, tool_choice={"type": "tool", "name": "nope"}))
    check("anthropic_tool_choice_unknown", st == 400 and b["type"] == "error"
          and 'names the tool "nope"' in b["error"]["message"], b)


def test_nul():
    """A NUL in any request string is a 400 naming the field, never a silently cut prompt."""
    z = "a\x00b"
    three = [{"role": "user", "content": z}, {"role": "assistant", "content": "x"},
             {"role": "user", "content": "y"}]
    call = {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "get_weather", "arguments": json.dumps({"city": "P"})[:-1] + ', "q": "' + z + '"}'}}]}
    tools = [{"type": "function", "function": {"name": "f", "description": z,
                                               "parameters": {"type": "object"}}}]
    cases = [
        ("/v1/chat/completions", {"messages": three}, "messages[0].content"),
        ("/v1/chat/completions", chat([{"type": "text", "text": z}]), "messages[0].content[0].text"),
        ("/v1/chat/completions", {"messages": USER + [call]}, "messages[1].tool_calls[0].function.arguments"),
        ("/v1/chat/completions", chat("x", tools=tools), "tools[0].function.description"),
        ("/v1/chat/completions", chat("x", stop=["ok", z]), "stop[1]"),
        ("/v1/chat/completions", dict(chat("x"), model=z), "model"),
        ("/v1/completions", {"prompt": z}, "prompt"),
        ("/v1/completions", {"prompt": ["x", z]}, "prompt[1]"),
        ("/v1/responses", {"input": z}, "input"),
        ("/v1/responses", {"input": [{"role": "user", "content": z}]}, "input[0].content"),
        ("/v1/messages", {"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": z}]}]},
         "messages[0].content[0].text"),
        ("/v1/messages", {"max_tokens": 5, "system": z, "messages": USER}, "system"),
        ("/tokenize", {"content": z}, "content"),
    ]
    for i, (path, body, field) in enumerate(cases):
        st, b, _ = request("POST", path, body)
        msg = b["error"]["message"] if isinstance(b, dict) and "error" in b else ""
        check("nul_%d_%s" % (i, field), st == 400 and msg.startswith(field + " contains a NUL character"),
              (st, b))


def raw_exchange(data, wait=5):
    """Sends data on a fresh socket; returns (seconds, what came back until close or wait)."""
    s = socket.create_connection(("127.0.0.1", PORT))
    s.settimeout(wait)
    t0, out = time.time(), b""
    s.sendall(data)
    try:
        while True:
            d = s.recv(4096)
            if not d:
                break
            out += d
    except socket.timeout:
        pass
    s.close()
    return time.time() - t0, out


def test_framing():
    """A body length that is ambiguous (smuggling) or a transfer coding we cannot read gets
    an answer at once, not a guess and not a hang."""
    body = json.dumps(chat("hi")).encode()
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode()
    cases = [
        ("two_content_lengths", head + b"\r\nContent-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(body) + body,
         b"400", b"conflicting Content-Length"),
        ("te_and_content_length", head + b"\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n%x\r\n"
         % len(body) + body + b"\r\n0\r\n\r\n", b"400", b"both Transfer-Encoding and Content-Length"),
        ("te_gzip", head + b"\r\nTransfer-Encoding: gzip\r\n\r\n" + body, b"501", b"not supported (only chunked)"),
    ]
    for name, data, status, want in cases:
        took, out = raw_exchange(data)
        check("framing_" + name, out.startswith(b"HTTP/1.1 " + status) and want in out and took < 2,
              (round(took, 2), out[:300]))
    took, out = raw_exchange(head + b"\r\nContent-Length: %d\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                             % (len(body), len(body)) + body)
    check("framing_same_content_lengths", out.startswith(b"HTTP/1.1 200"), out[:300])


def test_tokenize():
    st, b, _ = request("POST", "/tokenize", {"content": "AB"})
    check("tokenize", st == 200 and b["tokens"] == [1, 65, 66] and b["count"] == 3, b)
    st, b, _ = request("POST", "/detokenize", {"tokens": [72, 105]})
    check("detokenize", st == 200 and b["prompt"] == "Hi", b)
    st, b, _ = request("POST", "/detokenize", {"tokens": [999]})
    check("detokenize_bad", st == 400 and '"tokens"[0]' in b["error"]["message"], b)


def stat(key):
    return request("GET", "/health", headers={})[1][key]


def test_disconnect():
    before = stat("cancelled")
    s = socket.create_connection(("127.0.0.1", PORT))
    body = json.dumps(chat("SLOW", stream=True)).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode()
              + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
              + b"\r\n\r\n" + body)
    got = b""
    while got.count(b"tick") < 3:
        got += s.recv(4096)
    s.close()
    deadline = time.time() + 5
    while time.time() < deadline and stat("cancelled") == before:
        time.sleep(0.05)
    check("disconnect_cancels_stream", stat("cancelled") == before + 1, stat("cancelled"))
    before = stat("cancelled")
    s = socket.create_connection(("127.0.0.1", PORT))
    body = json.dumps(chat("SLOW")).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode()
              + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(0.1)
    s.close()
    deadline = time.time() + 5
    while time.time() < deadline and stat("cancelled") == before:
        time.sleep(0.05)
    check("disconnect_cancels_whole", stat("cancelled") == before + 1, stat("cancelled"))


def test_disconnect_n():
    """A client leaving a streamed n=3 request cancels all three; nothing stays active."""
    before = stat("cancelled")
    s = socket.create_connection(("127.0.0.1", PORT))
    body = json.dumps(chat("SLOW", stream=True, n=3)).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode()
              + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
              + b"\r\n\r\n" + body)
    got = b""
    while got.count(b"tick") < 6:
        got += s.recv(4096)
    s.close()
    deadline = time.time() + 5
    while time.time() < deadline and (stat("cancelled") < before + 3 or stat("active")):
        time.sleep(0.05)
    check("disconnect_cancels_n3", stat("cancelled") == before + 3 and stat("active") == 0,
          (stat("cancelled") - before, stat("active")))


def test_concurrent():
    results = []

    def one(i):
        st, ev, _ = stream("/v1/chat/completions", chat("hello %d" % i, stream=True))
        text = "".join(d["choices"][0]["delta"].get("content", "") for _, d in ev[:-1])
        results.append(st == 200 and text == "Hello from the fake engine!")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("concurrent_streams", len(results) == 16 and all(results), results)


def test_grammar_cache():
    """The same schema again is not compiled again (the grammar cache's counters in /stats);
    another schema is; concurrent requests for one new schema all get it."""
    def fmt(schema):
        return {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    s1 = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    _, a, _ = request("GET", "/stats")
    sts = [request("POST", "/v1/chat/completions", chat("hello", response_format=fmt(s1)))[0] for _ in range(2)]
    _, b, _ = request("GET", "/stats")
    check("grammar_cache_hit", sts == [200, 200] and b["grammar_compiles"] - a["grammar_compiles"] == 1
          and b["grammar_cache_hits"] - a["grammar_cache_hits"] == 1 and b["grammar_cache_entries"] >= 1
          and b["grammar_cache_bytes"] > 0, (sts, a, b))
    check("grammar_mask_cache_stats", all(isinstance(b.get(k), int) and b[k] >= 0 for k in (
        "grammar_mask_cache_entries", "grammar_mask_cache_bytes", "grammar_mask_cache_evictions")), b)
    st, _, _ = request("POST", "/v1/chat/completions", chat("hello", response_format=fmt({"type": "integer"})))
    _, c, _ = request("GET", "/stats")
    check("grammar_cache_other_schema", st == 200 and c["grammar_compiles"] - b["grammar_compiles"] == 1, (st, c))
    s3 = {"type": "array", "items": {"type": "number", "minimum": 0.5}}
    results = []
    threads = [threading.Thread(target=lambda: results.append(request(
        "POST", "/v1/chat/completions", chat("hello", response_format=fmt(s3)))[0])) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _, d, _ = request("GET", "/stats")
    got = (d["grammar_compiles"] - c["grammar_compiles"]) + (d["grammar_cache_hits"] - c["grammar_cache_hits"])
    check("grammar_cache_concurrent", results == [200] * 8 and got == 8
          and d["grammar_compiles"] - c["grammar_compiles"] >= 1, (results, c, d))


RTOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
          {"type": "web_search_preview"}]


def responses_stream(body):
    """A streamed /v1/responses: (status, [(event, data)]), each data's type checked against
    its event line and its sequence_number against its position."""
    st, ev, ctype = stream("/v1/responses", dict(body, stream=True))
    ok = ctype == "text/event-stream" and all(
        d != "[DONE]" and d["type"] == name and d["sequence_number"] == i for i, (name, d) in enumerate(ev))
    return st, ev, ok


def test_responses():
    st, b, _ = request("POST", "/v1/responses", {"model": "m", "input": "THINK please", "instructions": "Be brief."})
    out = b.get("output", []) if st == 200 else []
    check("responses_create", st == 200 and b["object"] == "response" and b["id"].startswith("resp_")
          and b["status"] == "completed" and [o["type"] for o in out] == ["reasoning", "message"]
          and out[0]["content"][0]["text"] == "Let me think.\n"
          and out[1]["content"][0] == {"type": "output_text", "text": "The answer is 42.", "annotations": [],
                                       "logprobs": []}
          and b["usage"]["input_tokens"] > 0 and b["usage"]["output_tokens"] > 0
          and b["usage"]["output_tokens_details"]["reasoning_tokens"] > 0
          and b["instructions"] == "Be brief." and b["model"] == "m" and b["error"] is None, b)
    first = b.get("id")
    st, g, _ = request("GET", "/v1/responses/" + str(first))
    check("responses_get", st == 200 and g == b, g)
    st, ev, ok = responses_stream({"input": "THINK please"})
    names = [n for n, _ in ev]
    fin = ev[-1][1]["response"] if ev else {}
    text = "".join(d["delta"] for n, d in ev if n == "response.output_text.delta")
    check("responses_stream", st == 200 and ok and names[:3] == ["response.created", "response.in_progress",
                                                                 "response.output_item.added"]
          and names[-1] == "response.completed" and "response.reasoning_text.delta" in names
          and text == "The answer is 42." and fin["output"][1]["content"][0]["text"] == text
          and fin["usage"]["total_tokens"] > 0, names)
    st, g, _ = request("GET", "/v1/responses/" + fin.get("id", "x"))
    check("responses_stream_stored", st == 200 and g["output"] == fin["output"], g)
    # a tool call, then its result through previous_response_id
    st, b, _ = request("POST", "/v1/responses", {"input": "TOOL weather", "tools": RTOOLS})
    calls = [o for o in b.get("output", []) if o["type"] == "function_call"]
    check("responses_tool_call", st == 200 and len(calls) == 1 and calls[0]["name"] == "get_weather"
          and json.loads(calls[0]["arguments"]) == {"city": "Paris"} and calls[0]["call_id"].startswith("call_")
          and b["output"][0]["type"] == "message" and b["output"][0]["content"][0]["text"] == "Let me check.\n"
          and len(b["tools"]) == 2, b)
    st, b2, _ = request("POST", "/v1/responses", {
        "previous_response_id": b.get("id"), "tools": RTOOLS,
        "input": [{"type": "function_call_output", "call_id": calls[0]["call_id"] if calls else "x", "output": "21 C"}]})
    check("responses_tool_result", st == 200 and b2["previous_response_id"] == b.get("id")
          and b2["output"][0]["content"][0]["text"] == "Hello from the fake engine!", b2)
    st, ev, ok = responses_stream({"input": "TOOL weather", "tools": RTOOLS,
                                   "tool_choice": {"type": "function", "name": "get_weather"}})
    names = [n for n, _ in ev]
    done = [d for n, d in ev if n == "response.function_call_arguments.done"]
    check("responses_tool_stream_forced", st == 200 and ok and len(done) == 1
          and json.loads(done[0]["arguments"]) == {"city": "Paris"}
          and "response.output_text.delta" not in names and names[-1] == "response.completed", names)
    # the history reaches the template: instructions are not carried over
    st, c1, _ = request("POST", "/v1/responses", {"input": "COUNT", "instructions": "sys"})
    st2, c2, _ = request("POST", "/v1/responses", {"input": "COUNT", "previous_response_id": c1.get("id")})
    st3, c3, _ = request("POST", "/v1/responses", {"input": [{"role": "user", "content": "COUNT"}],
                                                   "previous_response_id": c2.get("id"), "instructions": "sys"})
    texts = [c["output"][0]["content"][0]["text"] if c.get("output") else c for c in (c1, c2, c3)]
    check("responses_previous_chain", texts == ["messages=2", "messages=3", "messages=6"], texts)
    st, d, _ = request("DELETE", "/v1/responses/" + str(first))
    check("responses_delete", st == 200 and d == {"id": first, "object": "response", "deleted": True}, d)
    st, d, _ = request("GET", "/v1/responses/" + str(first))
    check("responses_get_deleted_404", st == 404 and "not found" in d["error"]["message"], d)
    st, d, _ = request("DELETE", "/v1/responses/resp_nope")
    check("responses_delete_unknown_404", st == 404 and d["error"]["type"] == "not_found_error", d)
    st, d, _ = request("POST", "/v1/responses", {"input": "x", "previous_response_id": "resp_nope"})
    check("responses_previous_unknown", st == 400 and d["error"]["param"] == "previous_response_id"
          and d["error"]["message"] == "Previous response with id 'resp_nope' not found.", d)
    st, b, _ = request("POST", "/v1/responses", {"input": "x", "store": False})
    st2, g, _ = request("GET", "/v1/responses/" + b.get("id", ""))
    check("responses_store_false", st == 200 and b["store"] is False and st2 == 404, (b, g))
    st, b, _ = request("POST", "/v1/responses", {"input": "story", "max_output_tokens": 2})
    check("responses_incomplete", st == 200 and b["status"] == "incomplete"
          and b["incomplete_details"] == {"reason": "max_output_tokens"} and b["usage"]["output_tokens"] == 2, b)
    st, ev, ok = responses_stream({"input": "FAIL now"})
    check("responses_stream_failed", st == 200 and ok and ev[-1][0] == "response.failed"
          and ev[-1][1]["response"]["error"]["message"] == "scripted failure", ev[-1:])
    st, b, _ = request("POST", "/v1/responses", {"input": "FAIL now"})
    check("responses_failed_500", st == 500 and "scripted failure" in b["error"]["message"], b)
    st, b, _ = request("PUT", "/v1/responses/resp_x")
    check("responses_405", st == 405 and "GET, DELETE" in b["error"]["message"], b)
    st, b, _ = request("GET", "/v1/responses/resp_x", headers={})
    check("responses_401", st == 401, b)
    bad = [
        ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "data:"}]}]},
         "input[0].content[0] is an input_image part", "input[0].content[0]"),
        ({"input": "x", "text": {"format": {"type": "json_schema", "name": "s", "schema": {"if": {"minimum": 2}, "then": {"required": ["a"]}}}}},
         '"if" at #', "text.format.schema"),
        ({"input": "x", "text": {"format": {"type": "yaml"}}}, '"text.format".type must be', "text.format"),
        ({"input": "x", "background": True}, '"background": true is not supported', "background"),
        ({}, '"input" is required', "input"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "item_reference is not supported", "input[0]"),
        ({"input": "x", "tool_choice": "required"}, 'needs a non-empty "tools"', "tool_choice"),
        ({"input": "x", "temperature": 9}, '"temperature" must be in', "temperature"),
    ]
    for body, want, param in bad:
        st, b, _ = request("POST", "/v1/responses", body)
        check("responses_400_" + param.replace("[", "_").replace("]", "").replace(".", "_"),
              st == 400 and want in b["error"]["message"] and b["error"]["param"] == param, b)
    st, b, _ = request("POST", "/v1/responses", raw=b"{not json")
    check("responses_400_json", st == 400 and b["error"]["param"] is None, b)
    st, s, _ = request("GET", "/stats")
    check("responses_stats", st == 200 and s["responses_stored"] >= 5 and s["responses_stored_bytes"] > 0, s)


for t in [test_routes, test_bad_requests, test_chat, test_completions, test_messages, test_anthropic, test_n,
          test_tool_choice, test_nul, test_framing, test_tokenize, test_responses, test_disconnect, test_disconnect_n,
          test_concurrent, test_grammar_cache]:
    try:
        t()
    except Exception as e:  # a crash in one group fails it and the others still run
        check(t.__name__, False, "%s: %s" % (type(e).__name__, e))
sys.exit(1 if failed else 0)
