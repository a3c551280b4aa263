# `hearth template`: exact renders through real tokenizer dirs and --template files, and
# exit 1 with a message for missing files, bad request JSON and template errors.
. "$(dirname "$0")/lib.sh"
bash scripts/fetch-tokenizers.sh >/dev/null || { fail fetch "fetch-tokenizers.sh failed"; summary; exit 1; }
C=.cache/tokenizers
echo '{"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": true}' >"$T/req.json"
want=$(printf '<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n_')
got=$("$H" template --model "$C/qwen3" --request "$T/req.json"; echo _)
if [ "$got" = "$want" ]; then pass qwen3_exact; else fail qwen3_exact "got: $got"; fi
echo '{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}' >"$T/bad_roles.json"
expect_rc gemma_raise 1 "^hearth template: Conversation roles must alternate" "$H" template --model "$C/gemma3" --request "$T/bad_roles.json"
expect_rc llama2_no_template 1 "chat_template is not set" "$H" template --model "$C/llama2" --request "$T/req.json"
printf '{%% for m in messages %%}[{{ m.role }}]{%% endfor %%}' >"$T/t.jinja"
expect_rc template_file 0 '^\[user\]$' "$H" template --model "$C/qwen3" --template "$T/t.jinja" --request "$T/req.json"
expect_rc request_pipe 0 '^\[user\]$' sh -c 'cat "$3" | "$0" template --model "$1" --template "$2" --request /dev/stdin' "$H" "$C/qwen3" "$T/t.jinja" "$T/req.json"
printf 'ok\n{%% if x %%}\n{{ 1 + }}' >"$T/broken.jinja"
expect_rc syntax_error 1 "line 3, column 8" "$H" template --template "$T/broken.jinja" --request "$T/req.json"
expect_rc missing_request 1 "nope.json" "$H" template --model "$C/qwen3" --request "$T/nope.json"
echo '{"messages": [' >"$T/malformed.json"
expect_rc malformed_request 1 "invalid JSON|malformed" "$H" template --model "$C/qwen3" --request "$T/malformed.json"
echo '{"messages": 3}' >"$T/badmsgs.json"
expect_rc messages_not_array 1 "messages" "$H" template --model "$C/qwen3" --request "$T/badmsgs.json"
expect_rc missing_dir 1 "no such directory" "$H" template --model "$T/nodir" --request "$T/req.json"
expect_rc missing_args 1 "required" "$H" template
expect_rc help 0 "--request" "$H" template --help
summary
