# `hearth grammar` on the qwen3-tools-20m tokenizer: accepted texts (exit 0), rejections
# with their byte offset (exit 1), refused grammars (exit 2), unreadable inputs (exit 3),
# usage errors, and --bench's report.
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models/qwen3-tools-20m
G=tests/data/grammar
expect_rc help 0 "usage: hearth grammar" "$H" grammar --help
expect_rc json_file 0 "^accepted: [0-9]+ tokens" "$H" grammar --model "$M" --gbnf "$G/json.gbnf" --file "$G/sample.json"
expect_rc json_text 0 "accepted" "$H" grammar --model "$M" --gbnf "$G/json.gbnf" --text '{"a": [1, 2, {"b": null}]}'
expect_rc regex_ok 0 "accepted" "$H" grammar --model "$M" --regex '\d{4}-\d{2}-\d{2}' --text "2024-01-31"
expect_rc regex_reject 1 "rejected at byte 5: token" "$H" grammar --model "$M" --regex '\d{4}-\d{2}-\d{2}' --text "2024-x1-31"
expect_rc json_reject 1 "rejected at byte 9: token [0-9]+ \\(\\}\\)" "$H" grammar --model "$M" --gbnf "$G/json.gbnf" --text '{"a": tru}'
expect_rc incomplete 1 "rejected at the end \(byte 8\)" "$H" grammar --model "$M" --gbnf "$G/json.gbnf" --text '{"a": 1,'
expect_rc bench 0 "mask, warm cache: p50 [0-9.]+ us, p99" "$H" grammar --model "$M" --gbnf "$G/json.gbnf" --file "$G/sample.json" --bench
expect_rc bench_compile 0 "compile: [0-9.]+ ms first, p50" "$H" grammar --model "$M" --regex 'a+' --text aaa --bench
printf 'root ::= "a" | foo\nfoo ::= bar\n' >"$T/bad.gbnf"
expect_rc bad_gbnf 2 "grammar refused: .*bad.gbnf: grammar: undefined rule 'bar' referenced at offset 27" "$H" grammar --model "$M" --gbnf "$T/bad.gbnf" --text a
expect_rc bad_regex 2 "grammar refused: regex: lookaround at offset 1" "$H" grammar --model "$M" --regex 'a(?=b)' --text a
expect_rc missing_gbnf 2 "nope.gbnf" "$H" grammar --model "$M" --gbnf "$T/nope.gbnf" --text a
expect_rc missing_model 3 "no such file" "$H" grammar --model "$T/nomodel" --regex a --text a
expect_rc missing_text 3 "nope.txt" "$H" grammar --model "$M" --regex a --file "$T/nope.txt"
expect_rc no_model 2 "--model is required" "$H" grammar --regex a --text a
expect_rc no_grammar 2 "exactly one of --regex, --gbnf and --schema" "$H" grammar --model "$M" --text a
expect_rc two_grammars 2 "exactly one of --regex, --gbnf and --schema" "$H" grammar --model "$M" --regex a --gbnf "$G/json.gbnf" --text a
expect_rc no_text 2 "exactly one of --text and --file" "$H" grammar --model "$M" --regex a
printf '{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}' >"$T/s.json"
expect_rc schema_ok 0 "accepted" "$H" grammar --model "$M" --schema "$T/s.json" --text '{"n": 12}'
expect_rc schema_compact_ok 0 "accepted" "$H" grammar --model "$M" --schema "$T/s.json" --compact --text '{"n":12}'
expect_rc schema_compact_ws 1 "rejected at byte 5" "$H" grammar --model "$M" --schema "$T/s.json" --compact --text '{"n": 12}'
expect_rc schema_reject 1 "rejected at byte 6" "$H" grammar --model "$M" --schema "$T/s.json" --text '{"n": 0}'
printf '{"type":"object","if":{"minimum":2},"then":{"required":["a"]}}' >"$T/u.json"
expect_rc schema_refused 2 "grammar refused: .*u.json: schema: \"if\" at # is not supported" "$H" grammar --model "$M" --schema "$T/u.json" --text '[]'
printf '{"type":' >"$T/broken.json"
expect_rc schema_broken 2 "broken.json" "$H" grammar --model "$M" --schema "$T/broken.json" --text '[]'
expect_rc compact_alone 2 "--compact goes with --schema" "$H" grammar --model "$M" --regex a --compact --text a
summary
