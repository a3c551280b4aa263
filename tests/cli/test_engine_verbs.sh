# hearth fit and hearth bench: numbers printed from config + safetensors headers, clear
# usage errors, and a tiny bench run end to end.
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
summary
