# hearth convert through the CLI: usage errors exit 2, a q4 conversion of brown-llama-8m (a
# real trained model with a tokenizer) that runs, keeps its tokenizer files and prints the
# sizes, a --target-bpw conversion calibrated on its held-out text, and the refusals
# (existing --out, quantized source, missing model).
source "$(dirname "$0")/lib.sh"
M=$S/fixtures/models/brown-llama-8m
expect_rc "no --out" 2 "required" $H convert --model "$M"
expect_rc "bits 7" 2 "--bits 7" $H convert --model "$M" --out "$T/x" --bits 7
expect_rc "group size 48" 2 "--group-size 48" $H convert --model "$M" --out "$T/x" --group-size 48
expect_rc "unknown recipe" 2 "recipes are" $H convert --model "$M" --out "$T/x" --mixed mixed_9_9
expect_rc "mixed and target" 2 "exclude" $H convert --model "$M" --out "$T/x" --mixed mixed_4_6 --target-bpw 5
expect_rc "target out of range" 2 "between" $H convert --model "$M" --out "$T/x" --target-bpw 1
expect_rc "empty keep" 2 "needs a glob" $H convert --model "$M" --out "$T/x" --keep
expect_rc "convert q4" 0 "MiB -> .* MiB" $H convert --model "$M" --out "$T/q4" --keep "*embed_tokens*"
[ -f "$T/q4/tokenizer.json" ] && grep -q '"model.embed_tokens": false' "$T/q4/config.json" \
  && pass "tokenizer copied, embedding kept" || fail "tokenizer copied, embedding kept" "$(ls "$T/q4")"
expect_rc "q4 runs" 0 "" $H run --model "$T/q4" --prompt "The jury said" --max-tokens 8
expect_rc "existing out" 1 "already exists" $H convert --model "$M" --out "$T/q4"
expect_rc "quantized source" 1 "already quantized" $H convert --model "$T/q4" --out "$T/q4b"
expect_rc "missing model" 1 "" $H convert --model "$T/none" --out "$T/y"
python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['heldout_text'][:200])" "$M/reference.json" > "$T/calib.txt"
expect_rc "target bpw" 0 "bits per weight" $H convert --model "$M" --out "$T/t5" --target-bpw 5 --calib "$T/calib.txt"
[ ! -e "$T/x" ] && pass "nothing left behind" || fail "nothing left behind" "$T/x exists"
summary
