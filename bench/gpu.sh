#!/usr/bin/env bash
# The GPU benchmark (issue 11): builds with the CUDA backend, makes random-weight checkpoints
# with mkmodel, measures the device's copy bandwidth (the decode roofline: bytes a step must
# read over it) and runs hearth bench on CUDA: batch-1 decode at 512 and 8192 tokens of
# context (with and without CUDA graphs), prefill, aggregate decode at 1 / 8 / 32 / 64 / 128
# streams with the time until all of them had a first token, and the products alone
# (tests/gpu/bench_kernels). Numbers, never pass/fail.
# Usage: bash bench/gpu.sh [PRESET ...]   (default: llama3-8b qwen3-8b; e.g. qwen3-0.6b for a quick run)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build-gpu}
W=${WORK:-/tmp/hearth-gpu-bench}
# PREBUILT=1: use the binaries already in $B (built on the development machine, which has
# nvcc; the GPU machine may lack the Debian -dev packages)
if [ "${PREBUILT:-0}" != 1 ]; then
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  cmake --build "$B" -j"$(nproc)" 2>&1 | grep -E "error|warning"
fi
[ -x "$B/hearth" ] || { echo "no $B/hearth"; exit 1; }
mkdir -p "$W"
bw=$(python3 - <<'PY' 2>/dev/null
import torch
x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda.synchronize(); s.record()
for _ in range(20): y.copy_(x)
e.record(); torch.cuda.synchronize()
print(f"{2 * x.numel() * 20 / (s.elapsed_time(e) * 1e-3) / 1e9:.0f}")
PY
)
echo "device copy bandwidth (read + write): ${bw:-unknown} GB/s"
[ -x "$B/tests/bench_kernels" ] && "$B/tests/bench_kernels"
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(llama3-8b qwen3-8b)
for preset in "${presets[@]}"; do
  m=$W/$preset
  [ -f "$m/config.json" ] || "$B/hearth" mkmodel --preset "$preset" --out "$m" >/dev/null || exit 1
  gb=$(du -sb "$m" | awk '{printf "%.2f", $1 / 1e9}')
  echo "== $preset ($gb GB of weights; roofline ${bw:+$(awk -v b="$bw" -v g="$gb" 'BEGIN{printf "%.0f", b/g}')} tok/s at batch 1)"
  # the first prefill pays cuBLAS' first calls: 512 twice, the second is the figure
  "$B/hearth" bench --model "$m" --device cuda --compute bf16 --max-seqs 1 --gen 64 --context 512 --prefill 512,512,2048,4096,8192
  echo "-- the same decode without CUDA graphs (HEARTH_CUDA_GRAPHS=0)"
  HEARTH_CUDA_GRAPHS=0 "$B/hearth" bench --model "$m" --device cuda --compute bf16 --max-seqs 1 --gen 64 --context 512 --prefill 1 | grep decode
  "$B/hearth" bench --model "$m" --device cuda --compute bf16 --max-seqs 1 --gen 64 --context 8192 --prefill 1
  "$B/hearth" bench --model "$m" --device cuda --compute bf16 --streams 1,8,32,64,128 --gen 128 --context 512 --prefill 1
done
