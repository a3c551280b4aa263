#!/usr/bin/env bash
# The cost of `hearth serve --isolate`: a direct server and an isolated one on the same
# model, measured in the same run by bench/isolate_client.py (decode tok/s and time to
# first token of both at once, paired; the parent's CPU per relayed token; its /health
# latency during 8 streams). Not a test. THREADS: engine threads of each (default 1, so
# that the two servers streaming at once each have a core of the 2).
#
#   bash bench/isolate.sh [MODEL_DIR] [ROUNDS]    (from the repository root, after a build)
set -euo pipefail
H=${HEARTH_BIN:-build/hearth}
M=${1:-${HEARTH_SHARED:-../shared}/fixtures/models/brown-llama-8m}
ROUNDS=${2:-8}
T=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait; rm -rf "$T"; }
trap cleanup EXIT
start() { # LOG ARGS...: starts a server and waits until it is ready; sets PORT
  local log=$1; shift
  "$H" serve --model "$M" --port 0 --no-prefix-cache "$@" >/dev/null 2>"$log" &
  pids+=($!)
  for _ in $(seq 600); do grep -q "ready on" "$log" && break; sleep 0.1; done
  PORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$log")
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
start "$T/direct.log" --threads "${THREADS:-1}"; direct=$PORT
start "$T/proxy.log" --threads "${THREADS:-1}" --isolate; proxy=$PORT
python3 "$(dirname "$0")/isolate_client.py" "$direct" "$proxy" "$ROUNDS" "${pids[1]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
