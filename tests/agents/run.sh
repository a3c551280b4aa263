#!/usr/bin/env bash
# make test-agents: real agent CLIs (Claude Code, Codex, opencode, pi) against `hearth serve`
# on the trained tool-calling fixture, through a logging proxy (capture_proxy.py), then the
# agent frameworks (sdks.sh: @openai/agents, Vercel AI SDK, LangChain) on the same server.
# Opt-in, not in CI: it installs pinned CLIs from npm into .cache/agents (and the frameworks
# into .cache/agents-sdks) on first use.
#
# Each check prints "ok NAME" or "FAIL NAME: why" and the last line is "# N passed, M failed"
# (the tests/cli/lib.sh convention), one total over CLIs and frameworks. A CLI check passes
# when the CLI exits 0 within the timeout and every request the server saw got a 2xx.
#
# Environment:
#   HEARTH_BIN        hearth binary (default build/hearth; this script builds nothing)
#   AGENTS_MODEL      model dir (default ../shared/fixtures/models/qwen3-tools-20m)
#   AGENTS_ONLY       CLIs to run, space separated (default "claude codex opencode pi";
#                     empty: none)
#   AGENTS_SDKS_ONLY  frameworks to run (default "openai_agents vercel_ai langchain"; empty:
#                     none; see sdks.sh)
#   AGENTS_TASKS      tasks to run (default "hello tool")
#   AGENTS_TIMEOUT    seconds per CLI run (default 180)
#   AGENTS_CAPTURES   where the request logs and outputs go (default .cache/agents-captures)
#   AGENTS_SCRIPT=0   in the "tool" task, let the model decide; by default the proxy answers
#                     the first turn itself with a call of the CLI's read tool on notes.txt
#                     (a 20M model does not reliably call tools under an agent's long
#                     prompt), so the server always sees the follow-up carrying the result
#   AGENTS_FIX=1      let the proxy rewrite requests the server rejects (exploration only:
#                     the status check still reads the server's first answer)
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
H=${HEARTH_BIN:-build/hearth}
MODEL=${AGENTS_MODEL:-$ROOT/../shared/fixtures/models/qwen3-tools-20m}
ONLY=${AGENTS_ONLY-claude codex opencode pi}
TASKS=${AGENTS_TASKS:-hello tool}
TMO=${AGENTS_TIMEOUT:-180}
CAP=${AGENTS_CAPTURES:-$ROOT/.cache/agents-captures}
AG=$ROOT/.cache/agents
BIN=$AG/node_modules/.bin
MID=qwen3-tools-20m
KEY=sk-hearth-test

PKGS="@anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 opencode-ai@1.18.33 \
@mariozechner/pi-coding-agent@0.73.1"

_p=0; _f=0
pass() { echo "ok $1"; _p=$((_p + 1)); }
fail() { echo "FAIL $1: $2"; _f=$((_f + 1)); }

[ -x "$H" ] || { echo "FAIL setup: no $H (run make build first)"; echo "# 0 passed, 1 failed"; exit 1; }

# ---- the pinned CLIs
installed() {
  local want
  for want in $PKGS; do
    local name=${want%@*} ver=${want##*@}
    local pj=$AG/node_modules/$name/package.json
    [ -f "$pj" ] || return 1
    [ "$(node -p "require('$pj').version" 2>/dev/null)" = "$ver" ] || return 1
  done
  for b in claude codex opencode pi; do [ -x "$BIN/$b" ] || return 1; done
}
if [ -n "$ONLY" ] && ! installed; then
  echo "# installing $PKGS into $AG" >&2
  mkdir -p "$AG"
  [ -f "$AG/package.json" ] || echo '{"name":"hearth-agents","private":true,"version":"0.0.0"}' >"$AG/package.json"
  # a failed install skips the CLIs, not the frameworks
  # shellcheck disable=SC2086
  if ! (cd "$AG" && npm install --no-audit --no-fund --save-exact $PKGS >"$AG/npm-install.log" 2>&1); then
    fail setup "npm install failed: $(tail -3 "$AG/npm-install.log" | tr '\n' ' ')"; ONLY=
  elif ! installed; then
    fail setup "CLIs missing after npm install"; ONLY=
  fi
fi

# ---- hearth serve
# shellcheck source=tests/agents/server.sh
. "$ROOT/tests/agents/server.sh"
agents_serve

# start_proxy NAME TASK: a capture proxy logging to $CAP/NAME.jsonl; sets PORT.
start_proxy() {
  rm -f "$CAP/$1.jsonl" "$T/$1.port"
  local fix=()
  [ "${AGENTS_FIX:-0}" = 1 ] && fix=(--fix --keep-responses)
  [ "$2" = tool ] && [ "${AGENTS_SCRIPT:-1}" = 1 ] && fix+=(--script-read "$WORK/notes.txt")
  python3 "$ROOT/tests/agents/capture_proxy.py" --upstream "http://127.0.0.1:$SPORT" \
    --log "$CAP/$1.jsonl" --port-file "$T/$1.port" --name "$1" "${fix[@]}" 2>"$T/$1.proxy.log" &
  PROXY=$!
  PIDS+=($PROXY)
  for _ in $(seq 100); do [ -s "$T/$1.port" ] && break; sleep 0.05; done
  PORT=$(cat "$T/$1.port" 2>/dev/null)
}

prompt_of() {
  case $1 in
    hello) echo "Say hello" ;;
    tool) echo "Read notes.txt" ;;
  esac
}

# A sandboxed HOME and working dir per run; the CLIs see no real account or config.
setup_dirs() {
  HOMED=$T/home-$1
  WORK=$T/work-$1
  mkdir -p "$HOMED" "$WORK"
  echo "The meeting moved to Thursday at 10am." >"$WORK/notes.txt"
}

# Base environment of every CLI: nothing from the caller's but PATH (node) and locale.
BASE_ENV=(env -i "PATH=$PATH" "TERM=dumb" "LANG=C.UTF-8" "NO_COLOR=1" "CI=1")

run_claude() {
  local as_root=()
  [ "$(id -u)" = 0 ] && as_root=(IS_SANDBOX=1) # --dangerously-skip-permissions refuses root otherwise
  (cd "$WORK" && "${BASE_ENV[@]}" HOME="$HOMED" "${as_root[@]}" \
    ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY="$KEY" \
    ANTHROPIC_MODEL="$MID" ANTHROPIC_SMALL_FAST_MODEL="$MID" ANTHROPIC_DEFAULT_HAIKU_MODEL="$MID" \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
    DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1 \
    timeout "$TMO" "$BIN/claude" -p "$1" --model "$MID" --dangerously-skip-permissions)
}

run_codex() {
  mkdir -p "$HOMED/.codex"
  cat >"$HOMED/.codex/config.toml" <<EOF
model = "$MID"
model_provider = "hearth"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.hearth]
name = "hearth"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
env_key = "HEARTH_API_KEY"

[analytics]
enabled = false
EOF
  (cd "$WORK" && "${BASE_ENV[@]}" HOME="$HOMED" CODEX_HOME="$HOMED/.codex" HEARTH_API_KEY="$KEY" \
    timeout "$TMO" "$BIN/codex" exec --skip-git-repo-check --ephemeral \
    --dangerously-bypass-approvals-and-sandbox "$1" </dev/null)
}

run_opencode() {
  cat >"$HOMED/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "model": "hearth/$MID",
  "small_model": "hearth/$MID",
  "autoupdate": false,
  "share": "disabled",
  "permission": {"*": "allow"},
  "provider": {
    "hearth": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "hearth",
      "options": {"baseURL": "http://127.0.0.1:$PORT/v1", "apiKey": "$KEY"},
      "models": {"$MID": {"name": "$MID", "tool_call": true, "reasoning": true,
                          "limit": {"context": 131072, "output": 4096}}}
    }
  }
}
EOF
  (cd "$WORK" && "${BASE_ENV[@]}" HOME="$HOMED" XDG_CONFIG_HOME="$HOMED/.config" \
    XDG_DATA_HOME="$HOMED/.local/share" XDG_CACHE_HOME="$HOMED/.cache" XDG_STATE_HOME="$HOMED/.local/state" \
    OPENCODE_CONFIG="$HOMED/opencode.json" OPENCODE_DISABLE_MODELS_FETCH=1 \
    OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 \
    OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_CLAUDE_CODE=1 OPENCODE_DISABLE_EXTERNAL_SKILLS=1 \
    timeout "$TMO" "$BIN/opencode" run --pure --auto -m "hearth/$MID" "$1" </dev/null)
}

run_pi() {
  mkdir -p "$HOMED/.pi/agent"
  cat >"$HOMED/.pi/agent/models.json" <<EOF
{
  "providers": {
    "hearth": {
      "baseUrl": "http://127.0.0.1:$PORT/v1",
      "api": "openai-completions",
      "apiKey": "$KEY",
      "models": [{"id": "$MID", "reasoning": true, "contextWindow": 131072, "maxTokens": 4096}]
    }
  }
}
EOF
  (cd "$WORK" && "${BASE_ENV[@]}" HOME="$HOMED" PI_CODING_AGENT_DIR="$HOMED/.pi/agent" \
    PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \
    timeout "$TMO" "$BIN/pi" -p --offline --no-session --provider hearth --model "$MID" "$1" </dev/null)
}

# check NAME RC: exit status and the proxy log.
check() {
  local name=$1 rc=$2 why
  why=$(python3 - "$CAP/$name.jsonl" <<'PY'
import json, sys
try:
    recs = [json.loads(l) for l in open(sys.argv[1])]
except FileNotFoundError:
    recs = []
if not recs:
    print("no request reached the server"); sys.exit()
recs = [r for r in recs if "scripted" not in r]
if not recs:
    print("no request reached the server"); sys.exit()
bad = [r for r in recs if not 200 <= r.get("status", 0) < 300]
if bad:
    r = bad[0]
    err = r.get("error")
    if isinstance(err, dict):
        err = (err.get("error") or {}).get("message", err) if isinstance(err.get("error"), dict) else err
    print(f"{len(bad)}/{len(recs)} requests not 2xx, first: {r['method']} {r['path']} -> "
          f"{r.get('status')} {str(err)[:200]}")
PY
)
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then fail "$name" "timed out after ${TMO}s${why:+; $why}"; return; fi
  if [ "$rc" != 0 ]; then
    fail "$name" "exit $rc: $(tail -c 300 "$CAP/$name.out" | tr '\n' ' ')${why:+; $why}"; return
  fi
  if [ -n "$why" ]; then fail "$name" "$why"; return; fi
  pass "$name"
}

for cli in $ONLY; do
  for task in $TASKS; do
    name=${cli}_$task
    setup_dirs "$name"
    start_proxy "$name" "$task"
    [ -n "$PORT" ] || { fail "$name" "capture proxy did not start: $(tail -2 "$T/$name.proxy.log")"; continue; }
    "run_$cli" "$(prompt_of "$task")" >"$CAP/$name.out" 2>&1
    rc=$?
    kill "$PROXY" 2>/dev/null
    wait "$PROXY" 2>/dev/null
    check "$name" "$rc"
  done
done

# ---- the frameworks (same server, same counters)
# shellcheck source=tests/agents/sdks.sh
. "$ROOT/tests/agents/sdks.sh"
sdks_main

echo "# $_p passed, $_f failed"
[ "$_f" = 0 ]
