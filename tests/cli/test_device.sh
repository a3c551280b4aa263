# --device on every verb that opens a backend (serve, run, bench, logits, fit, bench-serve
# --engine): unknown names are usage errors, cuda in a build without the CUDA backend or on a
# machine without a GPU says so, cpu and auto run on the CPU (auto: where there is no GPU;
# tests/gpu/run.sh covers the GPU machine).
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models/brown-llama-8m
NOCUDA="built without CUDA|no CUDA GPU is visible"
expect_rc run_bad_device 2 'unknown device "tpu" \(cpu, cuda or auto\)' \
  "$H" run --model "$M" --prompt-ids 1,2,3 --max-tokens 2 --device tpu
expect_rc run_cuda_unavailable 1 "$NOCUDA" \
  "$H" run --model "$M" --prompt-ids 1,2,3 --max-tokens 2 --device cuda
expect_rc run_cpu 0 "generated 2 tokens" \
  "$H" run --model "$M" --prompt-ids 1,2,3 --max-tokens 2 --threads 1 --device cpu
expect_rc run_auto 0 "generated 2 tokens" \
  "$H" run --model "$M" --prompt-ids 1,2,3 --max-tokens 2 --threads 1 --device auto
expect_rc logits_bad_device 2 "unknown device" \
  "$H" logits --model "$M" --tokens 1,2,3 --out "$T/l.safetensors" --device gpu
expect_rc logits_cuda_unavailable 1 "$NOCUDA" \
  "$H" logits --model "$M" --tokens 1,2,3 --out "$T/l.safetensors" --device cuda
expect_rc logits_cpu 0 "" "$H" logits --model "$M" --tokens 1,2,3 --out "$T/l.safetensors" --device cpu
if [ -s "$T/l.safetensors" ]; then pass logits_cpu_wrote; else fail logits_cpu_wrote "no output file"; fi
expect_rc bench_bad_device 2 "unknown device" "$H" bench --model "$M" --device CUDA
expect_rc bench_cuda_unavailable 1 "$NOCUDA" \
  "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16 --device cuda
expect_rc bench_bad_context 2 "--context must be in \[1, 1000000\]" \
  "$H" bench --model "$M" --threads 1 --context 0
expect_rc bench_cpu 0 "decode   1 seqs" \
  "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16 --device cpu
expect_rc bench_sampled 0 "decode   2 seqs" \
  "$H" bench --model "$M" --threads 1 --max-seqs 2 --gen 3 --prefill 16 --temperature 0.8
expect_rc bench_bad_temperature 2 "--temperature must be in \[0, 100\]" \
  "$H" bench --model "$M" --threads 1 --temperature -1
expect_rc bench_serve_bad_device 2 "unknown device" \
  "$H" bench-serve --engine "$M" --requests 1 --device metal
expect_rc bench_serve_device_http 2 "need --engine" \
  "$H" bench-serve --url http://127.0.0.1:1 --device cpu
expect_rc bench_serve_cuda_unavailable 1 "$NOCUDA" \
  "$H" bench-serve --engine "$M" --requests 1 --device cuda
expect_rc bench_serve_cpu 0 "tokens: +2 output" \
  "$H" bench-serve --engine "$M" --threads 1 --concurrency 1 --requests 1 --prompt-tokens 4 --max-tokens 2 --device cpu
expect_rc serve_bad_device 2 "unknown device" "$H" serve --model "$M" --port 0 --device rocm
expect_rc serve_cuda_unavailable 1 "$NOCUDA" "$H" serve --model "$M" --port 0 --device cuda
expect_rc fit_bad_device 2 "unknown device" "$H" fit --model "$M" --ctx 512 --device gpu
expect_rc fit_cuda_unavailable 1 "$NOCUDA" "$H" fit --model "$M" --ctx 512 --device cuda
expect_rc fit_cpu 0 "machine RAM .* GiB total" "$H" fit --model "$M" --ctx 512 --device cpu
expect_rc serve_gpu_memory_range 2 "--gpu-memory must be a fraction in \(0, 1\]" \
  "$H" serve --model "$M" --port 0 --gpu-memory 1.5
expect_rc serve_gpu_memory_zero 2 "--gpu-memory must be a fraction" "$H" serve --model "$M" --port 0 --gpu-memory -0.5
expect_rc serve_gpu_memory_nan 2 "is not a number" "$H" serve --model "$M" --port 0 --gpu-memory lots
serve_start "$T/serve.log" serve --model "$M" --port 0 --threads 1 --device cpu
if [ -n "$PORT" ] && curl -sf "http://127.0.0.1:$PORT/v1/models" | grep -q brown-llama-8m; then
  pass serve_cpu
else
  fail serve_cpu "$(tail -3 "$T/serve.log")"
fi
kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null
summary
