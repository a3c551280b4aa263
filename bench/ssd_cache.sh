#!/usr/bin/env bash
# The SSD tier of the prefix cache (docs/ssd-cache.md) through `hearth serve` on the CPU: time
# to first token (a 1-token completion) of one long prompt cold (no cache), warm (the memory
# prefix cache), and after a restart (restored from --ssd-cache), plus steady decode tok/s
# (/stats decode_tok_s over a 128-token completion) with the tier on and off, alternated.
# Not a test.
#
#   bash bench/ssd_cache.sh [PRESET] [PREFIX_WORDS]   (from the repository root, after a build)
# PRESET: a `hearth mkmodel --preset` shape (default qwen3-0.6b), built once into
# $BENCH_DIR (default /tmp/hearth-bench-ssd) with the qwen3-tools-20m tokenizer. THREADS:
# engine threads (default 2). SERVE_ARGS: more `hearth serve` flags (e.g. "--device cuda" on
# the GPU machine). TIER_ARGS: more flags for the tier's servers only (e.g.
# "--ssd-cache-always-restore"). ROUNDS: tier off / on decode pairs (default 2); GEN: tokens each
# decode generates (default 128).
set -euo pipefail
H=${HEARTH_BIN:-build/hearth}
S=${HEARTH_SHARED:-../shared}
PRESET=${1:-qwen3-0.6b}
WORDS=${2:-2000}
DIR=${BENCH_DIR:-/tmp/hearth-bench-ssd}
M=$DIR/$PRESET
mkdir -p "$DIR"
[ -f "$M/.built" ] || { "$H" mkmodel --preset "$PRESET" --tokenizer "$S/fixtures/models/qwen3-tools-20m" --out "$M" >/dev/null && touch "$M/.built"; }
T=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
start() { # LOG ARGS...
  local log=$1; shift
  # shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
  "$H" serve --model "$M" --port 0 --threads "${THREADS:-2}" --max-seqs 4 ${SERVE_ARGS:-} "$@" >/dev/null 2>"$log" &
  PID=$!
  for _ in $(seq 1200); do grep -q "ready on" "$log" && break; sleep 0.1; done
  PORT=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$log")
}
stop() { kill "$PID"; wait "$PID" || true; PID=; }
PROMPT=$(python3 -c "print(' '.join('w%d' % (i * 7919 % 5003) for i in range($WORDS)))")
ttft() { # -> seconds for a 1-token completion of PROMPT, and its prompt/cached tokens
  python3 - "$PORT" "$PROMPT" <<'PY'
import json, sys, time, urllib.request
port, prompt = sys.argv[1], sys.argv[2]
body = json.dumps({"prompt": prompt, "max_tokens": 1, "temperature": 0}).encode()
t = time.time()
r = json.load(urllib.request.urlopen(urllib.request.Request(
    f"http://127.0.0.1:{port}/v1/completions", body, {"content-type": "application/json"})))
u = r["usage"]
print(f"{time.time() - t:.3f} s (prompt {u['prompt_tokens']} tokens, cached {u['prompt_tokens_details']['cached_tokens']})")
PY
}
decode() { # -> decode tok/s of a GEN-token completion of a short prompt
  curl -s "http://127.0.0.1:$PORT/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt": "Once upon a time", "max_tokens": '"${GEN:-128}"', "temperature": 0, "ignore_eos": true}' >/dev/null
  curl -s "http://127.0.0.1:$PORT/stats" | python3 -c 'import json,sys; print("%.2f tok/s" % json.load(sys.stdin)["decode_tok_s"])'
}
stat() { curl -s "http://127.0.0.1:$PORT/stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
echo "model $PRESET, prompt of $WORDS words, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
C=$T/cache
start "$T/a.log" --ssd-cache "$C" ${TIER_ARGS:-}
settle() { # [MIN]: waits until ssd_spills >= MIN (default 1) and unchanged for 2 s
  local last=-1 n
  for _ in $(seq 600); do
    n=$(stat ssd_spills); [ "$n" = "$last" ] && [ "$n" -ge "${1:-1}" ] && return; last=$n; sleep 2
  done
}
echo "cold:          $(ttft)"
echo "warm memory:   $(ttft)"
settle
echo "decode, tier on (after write-behind):  $(decode)"
stop
echo "files: $(ls "$C" | wc -l), $(du -sh "$C" | cut -f1)"
# the tier drops its files from the page cache after writing them (posix_fadvise), so the
# restart below reads from the disk (this machine is shared: no global drop_caches)
start "$T/b.log" --ssd-cache "$C" ${TIER_ARGS:-}
echo "after restart: $(ttft), restore $(stat ssd_last_restore_ms) ms of $(stat ssd_restores) blocks, $(stat ssd_restores_skipped) lookups left to the prefill"
settle 0
echo "decode, tier on (restarted):  $(decode)"
stop
# alternated, so a change in the shared machine's load shows as on/on disagreeing
for round in $(seq "${ROUNDS:-2}"); do
  start "$T/off$round.log"
  echo "decode, tier off:  $(decode)"
  stop
  start "$T/on$round.log" --ssd-cache "$C" ${TIER_ARGS:-}
  echo "decode, tier on:   $(decode)"
  stop
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
