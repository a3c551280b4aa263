#!/usr/bin/env bash
# The GPU machine's checks, one command (never run in CI, which has no GPU): builds with the
# CUDA backend, runs gpu_check (every tiny fixture on CUDA against transformers' references
# and the CPU backend, the KV path, greedy decoding, 16 batched sequences, brown-llama-8m's
# held-out NLL, the sample op against its C reference and seeded sampling through the engine)
# and the server end to end on CUDA (a checkpoint and a GGUF file), and prints the table last.
# Usage: bash tests/gpu/run.sh [SHARED_DIR]   (default ../shared; it needs fixtures/models)
set -uo pipefail
cd "$(dirname "$0")/../.."
S=${1:-../shared}
B=${BUILD:-build-gpu}
# PREBUILT=1: use the binaries already in $B (built on the development machine, which has
# nvcc; the GPU machine may lack the Debian -dev packages)
if [ "${PREBUILT:-0}" != 1 ]; then
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  cmake --build "$B" -j"$(nproc)" 2>&1 | grep -E "error|warning"
fi
[ -x "$B/hearth" ] || { echo "no $B/hearth"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fail=0
"$B/tests/gpu_check" "$S" | tee "$B/gpu_check.txt" || fail=1

# the server on CUDA: a chat completion and a streamed one through the HTTP API, for a
# safetensors checkpoint and a GGUF file
serve_check() {
  local M=$1 what=$2 log pid port out
  log=$(mktemp)
  "$B/hearth" serve --model "$M" --device cuda --port 0 >"$log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 300); do grep -q "ready on" "$log" && break; sleep 0.1; done
  port=$(sed -n 's|.*ready on http://[^:]*:\([0-9]*\).*|\1|p' "$log")
  local body='{"model":"m","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":16}'
  out=$(curl -s "http://127.0.0.1:$port/v1/chat/completions" -H 'content-type: application/json' -d "$body")
  if echo "$out" | grep -q '"completion_tokens":16'; then echo "serve cuda chat ($what): ok"; else echo "serve cuda chat ($what): FAIL $out"; tail -5 "$log"; fail=1; fi
  local sbody='{"model":"m","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true}'
  out=$(curl -sN "http://127.0.0.1:$port/v1/chat/completions" -H 'content-type: application/json' -d "$sbody")
  if echo "$out" | grep -q '\[DONE\]'; then echo "serve cuda stream ($what): ok"; else echo "serve cuda stream ($what): FAIL"; fail=1; fi
  grep -m1 -i "device\|cuda" "$log" || true
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  rm -f "$log"
}
serve_check "$S/fixtures/models/brown-llama-8m" safetensors
serve_check "$S/fixtures/gguf/brown-llama-8m-Q4_K_M.gguf" "gguf Q4_K_M"
echo "gpu checks: $([ $fail = 0 ] && echo passed || echo FAILED)"
exit $fail
