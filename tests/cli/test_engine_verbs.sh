# hearth fit, hearth bench and bench-serve --engine: numbers printed from config +
# safetensors headers, clear usage errors, and tiny bench runs end to end.
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models/brown-llama-8m
# bf16 weights: serve's default KV is bf16 (half of f32); --exact counts f32, q8_0 34 bytes per 32, q4_0 18
expect_rc fit_prints 0 "kv per token   1536 bytes \(bf16 K and V, 6 of 6 layers" "$H" fit --model "$M" --ctx 2048 --seqs 4
expect_rc fit_total 0 "total          29594496 bytes" "$H" fit --model "$M" --ctx 2048 --seqs 4
expect_rc fit_exact 0 "kv per token   3072 bytes \(f32" "$H" fit --model "$M" --ctx 2048 --seqs 4 --exact
expect_rc fit_exact_total 0 "total          42177408 bytes" "$H" fit --model "$M" --ctx 2048 --seqs 4 --exact
expect_rc fit_q8 0 "kv per token   816 bytes \(q8_0" "$H" fit --model "$M" --ctx 2048 --kv-dtype q8_0
expect_rc fit_q4 0 "kv per token   432 bytes \(q4_0" "$H" fit --model "$M" --ctx 2048 --kv-dtype q4_0
expect_rc fit_bad_kv 2 "--kv-dtype must be f32, bf16, f16, q8_0 or q4_0" "$H" fit --model "$M" --ctx 16 --kv-dtype q4
# per-layer KV: 1 of 4 layers of tiny-qwen3_next stores KV (plus its recurrent state per sequence)
expect_rc fit_hybrid 0 "kv per token   512 bytes \(f32 K and V, 1 of 4 layers" "$H" fit --model "$S/fixtures/models/tiny-qwen3_next" --ctx 64 --exact
expect_rc fit_hybrid_state 0 "state per seq  58368 bytes" "$H" fit --model "$S/fixtures/models/tiny-qwen3_next" --ctx 64 --exact
expect_rc fit_verdict 0 "verdict        fits" "$H" fit --model "$M" --ctx 16
expect_rc fit_huge 0 "does NOT fit" "$H" fit --model "$M" --ctx 100000000 --seqs 100000
expect_rc fit_needs_ctx 2 "--ctx N" "$H" fit --model "$M"
expect_rc fit_missing_model 1 "config.json" "$H" fit --model "$T/nope" --ctx 16
expect_rc bench_tiny 0 "decode   2 seqs" "$H" bench --model "$M" --threads 1 --max-seqs 2 --gen 4 --prefill 32
expect_rc bench_bad_seqs 2 "max-seqs" "$H" bench --model "$M" --max-seqs 0
expect_rc bench_streams 0 "decode   3 seqs" "$H" bench --model "$M" --threads 1 --streams 3 --gen 4 --prefill 8
expect_rc bench_streams_over 2 "--streams: 8 is outside \[1, --max-seqs 4\]" "$H" bench --model "$M" --max-seqs 4 --streams 2,8
expect_rc bench_streams_empty 2 "--streams: empty list" "$H" bench --model "$M" --streams ","
expect_rc bench_streams_bad 2 "not a comma-separated list" "$H" bench --model "$M" --streams 2x
expect_rc bench_bf16 0 "bf16 products" "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16 --compute bf16
expect_rc bench_bad_compute 2 "--compute must be f32 or bf16" "$H" bench --model "$M" --compute fp8
expect_rc bench_bad_kv 2 "--kv-dtype must be" "$H" bench --model "$M" --kv-dtype int4
expect_rc bench_exact_conflict 2 "--exact keeps an f32 KV cache" "$H" bench --model "$M" --exact --kv-dtype q8_0
expect_rc bench_default_fast 0 "bf16 products, bf16 KV pool" "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16
expect_rc bench_exact 0 "f32 products, f32 KV pool" "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16 --exact
expect_rc bench_q8 0 "q8_0 KV pool" "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16 --kv-dtype q8_0
expect_rc bench_q4 0 "q4_0 KV pool" "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16 --kv-dtype q4_0
expect_rc bench_serve_engine 0 "tokens: +15 output \(5\.0 per request\), 13\.0 prompt" \
  "$H" bench-serve --engine "$M" --threads 1 --concurrency 2 --requests 3 --prompt-tokens 12 --max-tokens 5 --compute bf16
expect_rc bench_serve_both 2 "exactly one of --url and --engine" "$H" bench-serve --engine "$M" --url http://127.0.0.1:1
expect_rc bench_serve_compute_http 2 "need --engine" "$H" bench-serve --url http://127.0.0.1:1 --compute bf16
expect_rc bench_serve_kv_http 2 "need --engine" "$H" bench-serve --url http://127.0.0.1:1 --kv-dtype f16
expect_rc bench_serve_bad_dir 1 "config.json" "$H" bench-serve --engine "$T/nope" --requests 1
summary
