#!/usr/bin/env bash
# The frameworks part of make test-agents: agent SDKs (@openai/agents, the Vercel AI SDK,
# @langchain/openai) driven by Node scripts (sdk_*.mjs) against `hearth serve` on the trained
# tool-calling fixture, through capture_proxy.py. Opt-in, not in CI: installs pinned packages
# from npm into .cache/agents-sdks on first use.
#
# Sourced by run.sh (after the CLIs; it reuses run.sh's server, counters and pass/fail) or run
# on its own (`bash tests/agents/sdks.sh`: it then starts a server and prints the total).
# Every line a script prints as "ok NAME" / "FAIL NAME: why" counts as one check; per
# framework one more check, sdk_NAME_http, passes when every request the server logged
# (`request client=... status=...`) during the script got a 2xx and the script exited 0.
#
# Environment (besides run.sh's HEARTH_BIN, AGENTS_MODEL, AGENTS_CAPTURES, AGENTS_TIMEOUT):
#   AGENTS_SDKS_ONLY  frameworks to run (default "openai_agents vercel_ai langchain"; empty: none)
#   SDK_DEBUG=1       the scripts print stack traces of what they caught

SDK_PKGS="@openai/agents@0.20.0 openai@7.59.0 ai@7.0.173 @ai-sdk/openai-compatible@3.0.92 \
@langchain/openai@1.6.0 @langchain/core@1.4.0 zod@4.6.7"

sdks_main() {
  local root=${ROOT:-$PWD}
  local sd=$root/.cache/agents-sdks
  local only=${AGENTS_SDKS_ONLY-openai_agents vercel_ai langchain}
  local tmo=${AGENTS_TIMEOUT:-180}

  sdks_installed() {
    local want
    for want in $SDK_PKGS; do
      local name=${want%@*} ver=${want##*@}
      [ "$(node -p "require('$sd/node_modules/$name/package.json').version" 2>/dev/null)" = "$ver" ] || return 1
    done
  }
  if ! sdks_installed; then
    echo "# installing $SDK_PKGS into $sd" >&2
    mkdir -p "$sd"
    [ -f "$sd/package.json" ] || echo '{"name":"hearth-agents-sdks","private":true,"version":"0.0.0"}' >"$sd/package.json"
    # shellcheck disable=SC2086
    if ! (cd "$sd" && npm install --no-audit --no-fund --save-exact $SDK_PKGS >"$sd/npm-install.log" 2>&1) ||
      ! sdks_installed; then
      fail sdks_setup "npm install failed: $(tail -3 "$sd/npm-install.log" | tr '\n' ' ')"
      return
    fi
  fi

  local fw name log out before rc line why
  for fw in $only; do
    name=sdk_$fw
    log=$CAP/$name.jsonl out=$CAP/$name.out
    rm -f "$log" "$T/$name.port"
    python3 "$root/tests/agents/capture_proxy.py" --upstream "http://127.0.0.1:$SPORT" --log "$log" \
      --port-file "$T/$name.port" --name "$name" --keep-responses 2>"$T/$name.proxy.log" &
    local proxy=$!
    PIDS+=("$proxy")
    for _ in $(seq 100); do [ -s "$T/$name.port" ] && break; sleep 0.05; done
    local port
    port=$(cat "$T/$name.port" 2>/dev/null)
    [ -n "$port" ] || { fail "$name" "capture proxy did not start: $(tail -2 "$T/$name.proxy.log")"; continue; }
    before=$(wc -l <"$CAP/serve.log")
    (cd "$root" && env -i "PATH=$PATH" "HOME=$T" "LANG=C.UTF-8" "NO_COLOR=1" ${SDK_DEBUG:+SDK_DEBUG=1} \
      HEARTH_BASE="http://127.0.0.1:$port/v1" HEARTH_MODEL="$MID" HEARTH_KEY="$KEY" AGENTS_SDKS="$sd" \
      timeout "$tmo" node "tests/agents/$name.mjs") >"$out" 2>&1
    rc=$?
    kill "$proxy" 2>/dev/null
    wait "$proxy" 2>/dev/null
    while IFS= read -r line; do
      case $line in
        "ok "*) pass "${line#ok }" ;;
        "FAIL "*) why=${line#FAIL }; fail "${why%%: *}" "${why#*: }" ;;
      esac
    done <"$out"
    why=$(sed -n "$((before + 1)),\$p" "$CAP/serve.log" | python3 -c '
import re, sys
lines = [l for l in sys.stdin if " request client=" in l]
bad = [l for l in lines if not re.search(r" status=2\d\d ", l)]
if not lines: print("no request reached the server")
elif bad: print(f"{len(bad)}/{len(lines)} requests not 2xx, first: " + bad[0].split(" request ", 1)[1].strip()[:300])
')
    if [ -z "$why" ]; then
      why=$(python3 - "$log" <<'PY'
import json, sys
bad = [r for r in map(json.loads, open(sys.argv[1])) if not 200 <= r.get("status", 0) < 300]
if bad:
    print(f"proxy saw {bad[0]['method']} {bad[0]['path']} -> {bad[0].get('status')} {str(bad[0].get('error'))[:200]}")
PY
)
    fi
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then fail "${name}_http" "timed out after ${tmo}s${why:+; $why}"
    elif [ -n "$why" ]; then fail "${name}_http" "$why"
    elif [ "$rc" != 0 ] && ! grep -q "^FAIL " "$out"; then fail "${name}_http" "exit $rc: $(tail -c 300 "$out" | tr '\n' ' ')"
    else pass "${name}_http"; fi
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # standalone: a server of our own
  set -u
  cd "$(dirname "$0")/../.." || exit 1
  ROOT=$PWD
  H=${HEARTH_BIN:-build/hearth}
  MODEL=${AGENTS_MODEL:-$ROOT/../shared/fixtures/models/qwen3-tools-20m}
  CAP=${AGENTS_CAPTURES:-$ROOT/.cache/agents-captures}
  MID=qwen3-tools-20m
  KEY=sk-hearth-test
  _p=0; _f=0
  pass() { echo "ok $1"; _p=$((_p + 1)); }
  fail() { echo "FAIL $1: $2"; _f=$((_f + 1)); }
  [ -x "$H" ] || { echo "FAIL setup: no $H (run make build first)"; echo "# 0 passed, 1 failed"; exit 1; }
  # shellcheck source=tests/agents/server.sh
  . "$ROOT/tests/agents/server.sh"
  agents_serve
  sdks_main
  echo "# $_p passed, $_f failed"
  [ "$_f" = 0 ]
fi
