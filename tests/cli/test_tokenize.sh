# `hearth tokenize` / `hearth detokenize` on the real tokenizers (fetched first) and the
# brown-llama-8m model dir: ids, special tokens, files, round trips and error exits.
. "$(dirname "$0")/lib.sh"
bash scripts/fetch-tokenizers.sh >/dev/null || { fail fetch "scripts/fetch-tokenizers.sh failed"; summary; exit 1; }
Q=.cache/tokenizers/qwen3
L2=.cache/tokenizers/llama2
expect_rc help 0 "usage: hearth tokenize" "$H" tokenize --help
expect_rc detok_help 0 "usage: hearth detokenize" "$H" detokenize --help
expect_rc qwen_ids 0 '^\[9707, 11, 1879, 0\]$' "$H" tokenize --model "$Q" --text "Hello, world!"
expect_rc llama2_special 0 '^\[1, 22557, 28725' "$H" tokenize --model "$L2" --text "Hello, world!" --special
expect_rc llama2_plain 0 '^\[22557, 28725' "$H" tokenize --model "$L2" --text "Hello, world!"
expect_rc chat_tokens 0 '^\[151644, 872, 198, 14990, 151645\]$' "$H" tokenize --model "$Q" --text $'<|im_start|>user\nhello<|im_end|>'
printf 'def f(x):\n    return x\n' >"$T/in.py"
expect_rc file 0 '^\[750, 282' "$H" tokenize --model "$Q" --file "$T/in.py"
expect_rc model_dir 0 '^\[1, 415, 19723, 773\]$' "$H" tokenize --model "$S/fixtures/models/brown-llama-8m" --text "The jury said" --special
expect_rc detok 0 '^Hello, world!$' "$H" detokenize --model "$Q" --ids 9707,11,1879,0
expect_rc detok_skip 0 '^user$' "$H" detokenize --model "$Q" --ids 151644,872,151645 --skip-special
expect_rc detok_llama2 0 '^Hello, world!$' "$H" detokenize --model "$L2" --ids 1,22557,28725,1526,28808 --skip-special
expect_rc no_model 2 "--model is required" "$H" tokenize --text hi
expect_rc no_text 2 "exactly one of --text and --file" "$H" tokenize --model "$Q"
expect_rc both_text_file 2 "exactly one" "$H" tokenize --model "$Q" --text a --file "$T/in.py"
expect_rc missing_dir 1 "no such file" "$H" tokenize --model "$T/nope" --text hi
expect_rc missing_file 1 "nope.txt" "$H" tokenize --model "$Q" --file "$T/nope.txt"
expect_rc unknown_opt 2 "unknown option --frob" "$H" tokenize --frob
expect_rc bad_ids 2 "not a comma-separated list" "$H" detokenize --model "$Q" --ids 1,x
expect_rc empty_ids 2 "empty list" "$H" detokenize --model "$Q" --ids ,
expect_rc id_range 1 "out of range" "$H" detokenize --model "$Q" --ids 5,151669
expect_rc id_negative 1 "out of range" "$H" detokenize --model "$Q" --ids 5,-3
mkdir -p "$T/bad" && echo '{"model": {"type": "WordPiece", "vocab": {}}}' >"$T/bad/tokenizer.json"
expect_rc bad_model 1 'unsupported model type "WordPiece"' "$H" tokenize --model "$T/bad" --text hi
echo '{"model": ' >"$T/bad/tokenizer.json"
expect_rc bad_json 1 "invalid JSON" "$H" detokenize --model "$T/bad" --ids 1
# Round trip through both verbs.
ids=$("$H" tokenize --model "$Q" --text "Grüße, 世界! 👋" | tr -d '[] ')
expect_rc round_trip 0 '^Grüße, 世界! 👋$' "$H" detokenize --model "$Q" --ids "$ids"
summary
