#!/usr/bin/env python3
"""Summarizes capture_proxy.py logs: per request the route, status, notable headers, the
top-level body fields (long values shortened), message roles and content-block / input-item
types, tool shapes, and the error text of rejected requests.

    summarize.py FILE.jsonl [...]   [--full]   (--full: print each body too)
"""
import json
import sys

NOTABLE = ("anthropic-beta", "anthropic-version", "user-agent", "openai-beta", "originator",
           "session_id", "conversation_id", "x-stainless-retry-count", "x-stainless-helper-method",
           "accept", "content-encoding", "x-app", "version", "x-codex-turn-metadata")


def short(v, n=80):
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 3] + "..."


def blocks(content):
    if isinstance(content, str):
        return "str"
    if isinstance(content, list):
        out = []
        for b in content:
            t = b.get("type", "?") if isinstance(b, dict) else type(b).__name__
            extra = [k for k in b if k not in ("type", "text", "id", "name", "input", "content",
                                                "tool_use_id", "thinking", "signature")] \
                if isinstance(b, dict) else []
            out.append(t + (f"{{{','.join(extra)}}}" if extra else ""))
        return "[" + ",".join(out) + "]"
    return type(content).__name__


def shape(body):
    lines = []
    if not isinstance(body, dict):
        return [f"  body: {short(body)}"]
    top = {k: (short(v) if k not in ("messages", "input", "tools", "system", "instructions")
               else f"<{type(v).__name__}{'/' + str(len(v)) if hasattr(v, '__len__') else ''}>")
           for k, v in body.items()}
    lines.append("  fields: " + ", ".join(f"{k}={v}" for k, v in top.items()))
    if "system" in body:
        lines.append(f"  system: {blocks(body['system'])}")
    for m in body.get("messages") or []:
        extra = [k for k in m if k not in ("role", "content")]
        lines.append(f"  msg {m.get('role')}: {blocks(m.get('content'))}"
                     + (f" +{extra}" if extra else "")
                     + (f" tool_calls={short(m['tool_calls'], 160)}" if m.get("tool_calls") else ""))
    inp = body.get("input")
    if isinstance(inp, list):
        for it in inp:
            t = it.get("type", "message")
            desc = f"  item {t}"
            if t == "message":
                desc += f" role={it.get('role')} content={blocks(it.get('content'))}"
            else:
                desc += " " + short({k: v for k, v in it.items() if k != "type"}, 160)
            lines.append(desc)
    elif inp is not None:
        lines.append(f"  input: {short(inp)}")
    tools = body.get("tools")
    if tools:
        ts = []
        for t in tools:
            fn = t.get("function") if isinstance(t.get("function"), dict) else None
            name = t.get("name") or (fn or {}).get("name") or t.get("type")
            keys = sorted(k for k in t if k not in ("name", "description"))
            if fn:
                keys += ["function." + k for k in sorted(fn) if k not in ("name", "description")]
            ts.append(f"{name}({t.get('type', '-')};{','.join(keys)})")
        lines.append(f"  tools[{len(tools)}]: " + " ".join(ts))
    return lines


def main():
    full = "--full" in sys.argv
    for path in [a for a in sys.argv[1:] if a != "--full"]:
        print(f"== {path}")
        for l in open(path):
            r = json.loads(l)
            q = f"?{r['query']}" if r.get("query") else ""
            fixed = r.get("fixed")
            st = str(r.get("status"))
            if fixed:
                st += f" (fixed: {fixed.get('status')} via {'; '.join(fixed.get('rewrites', []))})"
            print(f"#{r['seq']} {r['method']} {r['path']}{q} -> {st}  [{r.get('response_type')}, {r.get('ms')} ms]")
            h = r.get("headers", {})
            hs = {k: h[k] for k in NOTABLE if k in h}
            if hs:
                print("  headers: " + short(hs, 400))
            if "body" in r:
                for x in shape(r["body"]):
                    print(x)
                if full:
                    print("  BODY " + json.dumps(r["body"], ensure_ascii=False))
            elif "body_text" in r:
                print(f"  body_text: {short(r['body_text'])}")
            if r.get("error") is not None:
                print(f"  ERROR: {short(r['error'], 400)}")
            if fixed and fixed.get("error"):
                print(f"  FIXED-ERROR: {short(fixed['error'], 400)}")
            if r.get("proxy_error"):
                print(f"  PROXY: {r['proxy_error']}")


if __name__ == "__main__":
    main()
