# hearth fit, hearth bench and bench-serve --engine: numbers printed from config +
# safetensors headers, clear usage errors, and tiny bench runs end to end.
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models/brown-llama-8m
expect_rc fit_prints 0 "kv per token   3072 bytes" "$H" fit --model "$M" --ctx 2048 --seqs 4
expect_rc fit_total 0 "total          42177408 bytes" "$H" fit --model "$M" --ctx 2048 --seqs 4
expect_rc fit_verdict 0 "verdict        fits" "$H" fit --model "$M" --ctx 16
expect_rc fit_huge 0 "does NOT fit" "$H" fit --model "$M" --ctx 100000000 --seqs 100000
expect_rc fit_needs_ctx 2 "--ctx N" "$H" fit --model "$M"
expect_rc fit_missing_model 1 "config.json" "$H" fit --model "$T/nope" --ctx 16
expect_rc bench_tiny 0 "decode   2 seqs" "$H" bench --model "$M" --threads 1 --max-seqs 2 --gen 4 --prefill 32
expect_rc bench_bad_seqs 2 "max-seqs" "$H" bench --model "$M" --max-seqs 0
expect_rc bench_bf16 0 "bf16 products" "$H" bench --model "$M" --threads 1 --max-seqs 1 --gen 2 --prefill 16 --compute bf16
expect_rc bench_bad_compute 1 "--compute must be f32 or bf16" "$H" bench --model "$M" --compute fp8
expect_rc bench_serve_engine 0 "tokens: +15 output \(5\.0 per request\), 13\.0 prompt" \
  "$H" bench-serve --engine "$M" --threads 1 --concurrency 2 --requests 3 --prompt-tokens 12 --max-tokens 5 --compute bf16
expect_rc bench_serve_both 2 "exactly one of --url and --engine" "$H" bench-serve --engine "$M" --url http://127.0.0.1:1
expect_rc bench_serve_compute_http 2 "need --engine" "$H" bench-serve --url http://127.0.0.1:1 --compute bf16
expect_rc bench_serve_bad_dir 1 "config.json" "$H" bench-serve --engine "$T/nope" --requests 1
summary
