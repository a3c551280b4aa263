# Shared by run.sh and sdks.sh (source it): agents_serve starts `hearth serve` on $MODEL
# (port 0, info log in $CAP/serve.log) with a temp dir $T and a cleanup trap that stops
# every pid in PIDS; sets SPORT, or prints a failed setup check and exits.
agents_serve() {
  mkdir -p "$CAP"
  T=$(mktemp -d)
  PIDS=()
  trap agents_cleanup EXIT
  "$H" --log-level info serve --model "$MODEL" --port 0 >"$CAP/serve.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do grep -q "ready on" "$CAP/serve.log" && break; sleep 0.1; done
  SPORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$CAP/serve.log")
  [ -n "$SPORT" ] || { echo "FAIL setup: hearth serve did not start: $(tail -3 "$CAP/serve.log")"; echo "# 0 passed, 1 failed"; exit 1; }
}

agents_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
