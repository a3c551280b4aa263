# Decode rate with and without a JSON schema through `hearth serve` (not a test): the same
# seeded 128-token chat requests, unconstrained and under response_format json_schema, in
# alternating rounds at 1 and 8 streams; prints each rate and the paired ratio (the #14 target is
# >= 0.95). Usage: python3 bench/constrained.py PORT [ROUNDS] against a server of a chat model.
import json, sys, time, threading, urllib.request
port = int(sys.argv[1]); rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
schema = {"type": "object", "properties": {"story": {"type": "string"}, "n": {"type": "integer"}}, "required": ["story"]}
def one(constrained, seed, out):
    body = {"model": "m", "messages": [{"role": "user", "content": "Tell me a long story."}], "max_tokens": 128,
            "temperature": 1, "seed": seed, "chat_template_kwargs": {"enable_thinking": False}}
    if constrained: body["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    t = time.time()
    r = json.load(urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
        json.dumps(body).encode(), {"content-type": "application/json"})))
    out.append((r["usage"]["completion_tokens"], time.time() - t))
def batch(constrained, streams, seed):
    out = []; th = [threading.Thread(target=one, args=(constrained, seed + i, out)) for i in range(streams)]
    t = time.time(); [x.start() for x in th]; [x.join() for x in th]
    return sum(o[0] for o in out) / (time.time() - t)
for streams in (1, 8):
    free, con = [], []
    for r in range(rounds):
        free.append(batch(False, streams, 100 * r)); con.append(batch(True, streams, 100 * r))
    ratios = sorted(c / f for c, f in zip(con, free))
    print(f"streams {streams}: free {sorted(free)} tok/s, schema {sorted(con)} tok/s, paired ratio median {ratios[len(ratios)//2]:.3f} (min {ratios[0]:.3f}, max {ratios[-1]:.3f})")
