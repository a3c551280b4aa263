# Hostile chat templates and template files through the CLI and the server: /dev/zero, a
# FIFO and an oversized file as --chat-template are startup errors (not a hang or an OOM
# kill), so is a template nested past the depth limit; a limit hit while rendering a request
# is a 500 (the server's fault), the template's own raise_exception a 400; SIGINT and
# SIGTERM stop a server that is still loading. The hostile inputs are generated here.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
C=.cache/tokenizers
bash scripts/fetch-tokenizers.sh >/dev/null || { fail fetch "fetch-tokenizers.sh failed"; summary; exit 1; }
echo '{"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true}' >"$T/req.json"
mkfifo "$T/fifo"
head -c 1100000 /dev/zero | tr '\0' x >"$T/big.jinja"
python3 -c "print('{{ ' + ' + '.join(['1'] * 100000) + ' }}')" >"$T/chain.jinja"
for f in /dev/zero "$T/fifo" "$T/big.jinja" "$T/chain.jinja"; do
  want="not a regular file"
  case $f in *big.jinja) want="over the limit";; *chain.jinja) want="nested too deeply";; esac
  n=$(basename "$f")
  expect_rc "template_$n" 1 "$want" timeout 20 "$H" template --model "$C/qwen3" --template "$f" --request "$T/req.json"
  expect_rc "run_$n" 1 "$want" timeout 20 "$H" run --model "$B" --prompt hi --chat-template "$f" --max-tokens 1
  expect_rc "serve_$n" 1 "$want" timeout 20 "$H" serve --model "$B" --port 0 --chat-template "$f"
done
# a model directory whose tokenizer_config.json is a FIFO, or whose chat_template.jinja is
mkdir -p "$T/m1" "$T/m2"
cp "$C/qwen3/tokenizer.json" "$T/m1/"
cp "$C/qwen3/tokenizer.json" "$C/qwen3/tokenizer_config.json" "$T/m2/"
mkfifo "$T/m1/tokenizer_config.json" "$T/m2/chat_template.jinja"
expect_rc config_fifo 1 "tokenizer_config.json: not a regular file" timeout 20 "$H" template --model "$T/m1" --request "$T/req.json"
expect_rc jinja_fifo 1 "chat_template.jinja: not a regular file" timeout 20 "$H" template --model "$T/m2" --request "$T/req.json"
expect_rc gguf_fifo 1 "" timeout 20 "$H" tokenize --model "$T/fifo" --text hi

# Limits at render time are the server's (500); the template's own error is the request's (400).
cat >"$T/limits.jinja" <<'EOF'
{%- macro f(n) %}{{ f(n + 1) }}{% endmacro -%}
{%- if messages[0].content == 'recurse' %}{{ f(0) }}{% endif -%}
{%- if messages[0].content == 'raise' %}{{ raise_exception('no such role') }}{% endif -%}
{{ messages[0].content }}
EOF
serve_start "$T/serve.log" serve --model "$B" --port 0 --threads 2 --kv-memory 16 --chat-template "$T/limits.jinja"
expect_rc serve_ready 0 "" test -n "$PORT"
cat >"$T/limits.py" <<'PY'
import json, sys, urllib.request, urllib.error
port = int(sys.argv[1])
def post(path, content):
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 1}
    if path == "/v1/messages": body["model"] = "m"
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
def check(name, cond, info):
    print(("ok " if cond else "FAIL ") + name + ("" if cond else ": " + str(info)[:300]))
st, b = post("/v1/chat/completions", "recurse")
check("limit_500", st == 500 and b["error"]["type"] == "server_error" and "nested deeper" in b["error"]["message"], (st, b))
st, b = post("/v1/messages", "recurse")
check("limit_500_anthropic", st == 500 and b["error"]["type"] == "api_error", (st, b))
st, b = post("/v1/chat/completions", "raise")
check("raise_400", st == 400 and "no such role" in b["error"]["message"], (st, b))
st, b = post("/v1/chat/completions", "hello")
check("plain_200", st == 200, (st, b))
PY
if [ -n "$PORT" ]; then
  python3 "$T/limits.py" "$PORT" >"$T/limits.out" 2>&1
  report limits_client "$T/limits.out"
  kill -TERM "$PID"; wait "$PID"
fi

# A signal while the model loads ends the process then, not after the load. The load has
# begun once the main thread blocks SIGINT/SIGTERM (SigBlk in /proc, bits 2 and 15).
loading_signal() {
  local sig=$1 log="$T/load_$1.log"
  "$H" serve --model "$B" --port 0 --threads 1 2>"$log" &
  local pid=$! blocked=0
  for _ in $(seq 2000); do
    mask=$(sed -n 's/^SigBlk:\s*//p' "/proc/$pid/status" 2>/dev/null)
    [ -n "$mask" ] && [ $(( 0x$mask & 0x4002 )) = $(( 0x4002 )) ] && { blocked=1; break; }
  done
  kill -"$sig" "$pid"
  wait "$pid"
  local rc=$?
  if grep -q "ready on" "$log"; then
    fail "load_$sig" "the load finished before the signal came (blocked=$blocked)"
  elif [ "$blocked" = 1 ] && grep -q "while loading, exiting" "$log" && [ "$rc" -gt 128 ]; then
    pass "load_$sig"
  else
    fail "load_$sig" "rc $rc, blocked=$blocked: $(tail -2 "$log")"
  fi
}
loading_signal INT
loading_signal TERM
summary
