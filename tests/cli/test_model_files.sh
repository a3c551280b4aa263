# Loading checkpoints through the CLI: logits/run/mkmodel outputs, sharded checkpoints,
# and corrupt or inconsistent files, each of which must fail with a clear message and
# exit code 1, never a crash.
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models
TINY=$M/tiny-llama

# a corrupt copy of tiny-llama: $1 = name, then a python snippet editing bytes b / header h
corrupt() {
  local name=$1 code=$2
  mkdir -p "$T/$name"
  cp "$TINY/config.json" "$TINY/generation_config.json" "$T/$name/"
  python3 - "$TINY/model.safetensors" "$T/$name/model.safetensors" <<PY
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
def pack(h, data):
    t = json.dumps(h).encode(); t += b' ' * (-len(t) % 8)
    return struct.pack('<Q', len(t)) + t + data
$code
open(sys.argv[2], 'wb').write(out)
PY
}

expect_rc logits_help 0 "--tokens" "$H" logits --help
expect_rc run_help 0 "--prompt-ids" "$H" run --help
expect_rc mkmodel_help 0 "--preset" "$H" mkmodel --help
expect_rc logits_writes 0 "" "$H" logits --model "$TINY" --tokens 1,5,17 --out "$T/l.safetensors"
expect_rc logits_shape 0 "ok" python3 -c "
import json,struct; b=open('$T/l.safetensors','rb').read(); n=struct.unpack('<Q',b[:8])[0]
h=json.loads(b[8:8+n]); assert h['logits']['shape']==[3,512] and h['logits']['dtype']=='F32'; print('ok')"
expect_rc run_ids 0 "^[0-9]+( [0-9]+){7}$" "$H" run --model "$TINY" --prompt-ids 1,5,17 --max-tokens 8 --print-ids
expect_rc run_prompt_needs_ids 1 "has no tokenizer.json" "$H" run --model "$TINY" --prompt hello
B=$M/brown-llama-8m
expect_rc run_text 0 "^he was a man who had been" "$H" run --model "$B" --prompt "The jury said" --max-tokens 12
expect_rc run_text_ids 0 "^400 403 264 676 693 553" "$H" run --model "$B" --prompt "The jury said" --max-tokens 6 --print-ids
expect_rc run_bad_typical 1 "typical_p must be in" "$H" run --model "$B" --prompt A --typical-p 2
expect_rc run_bad_xtc 1 "xtc_probability must be in" "$H" run --model "$B" --prompt A --xtc-probability -1
expect_rc run_bad_xtc_threshold 2 "xtc-threshold" "$H" run --model "$B" --prompt A --xtc-threshold abc
expect_rc run_bad_compute 2 "--compute must be f32 or bf16" "$H" run --model "$B" --prompt A --compute fp16
expect_rc run_bad_kv_dtype 2 "--kv-dtype must be f32, bf16, f16, q8_0 or q4_0" "$H" run --model "$B" --prompt A --kv-dtype fp8
expect_rc run_exact_conflict 2 "cannot go with --compute bf16" "$H" run --model "$B" --prompt A --exact --compute bf16
# the same seed twice: both runs succeed, generate all 16 tokens, print the same text
seeded() { "$H" run --model "$B" --prompt 'A' --temperature 1 --seed 5 --max-tokens 16 --print-ids 2>"$T/seed$1.err"; }
s1=$(seeded 1); r1=$?; s2=$(seeded 2); r2=$?
if [ "$r1$r2" = 00 ] && [ "$(echo $s1 | wc -w)" = 16 ] && [ "$s1" = "$s2" ] &&
   grep -q "generated 16 tokens" "$T/seed1.err" && ! grep -qiE "error|sanitizer|runtime error" "$T/seed1.err" "$T/seed2.err"; then
  pass run_seeded
else
  fail run_seeded "exit $r1/$r2, ids '$s1' vs '$s2': $(cat "$T/seed1.err" "$T/seed2.err" | tail -2)"
fi
# the file's template is the one rendered: "Q: hiA:" is 5 tokens (the model's own makes 2),
# and greedy output from it differs from greedy output with the model's template
echo '{% for m in messages %}Q: {{ m.content }}{% endfor %}A:' > "$T/tpl.jinja"
expect_rc run_chat_template 0 "prompt 5 tokens in" "$H" run --model "$B" --prompt "hi" --chat-template "$T/tpl.jinja" --max-tokens 4 --temperature 0
own=$("$H" run --model "$B" --prompt "hi" --max-tokens 8 --temperature 0 --print-ids 2>/dev/null)
file=$("$H" run --model "$B" --prompt "hi" --chat-template "$T/tpl.jinja" --max-tokens 8 --temperature 0 --print-ids 2>/dev/null)
expect_rc run_chat_template_output 0 "" test -n "$file" -a -n "$own" -a "$file" != "$own"
echo '{% for m in messages %' > "$T/bad.jinja"
expect_rc run_bad_template 1 "chat template|line" "$H" run --model "$B" --prompt "hi" --chat-template "$T/bad.jinja" --max-tokens 4
expect_rc run_bad_ids 1 "not a comma-separated list" "$H" run --model "$TINY" --prompt-ids 1,x
expect_rc run_id_range 1 "out of range" "$H" run --model "$TINY" --prompt-ids 1,99999 --max-tokens 2
expect_rc logits_missing_out 2 "required" "$H" logits --model "$TINY" --tokens 1
expect_rc unknown_option 2 "unknown option --frob" "$H" logits --frob 1
expect_rc missing_dir 1 "config.json" "$H" logits --model "$T/nope" --tokens 1 --out "$T/x"

corrupt truncated "out = b[:len(b) - 1000]"
expect_rc truncated 1 "truncated or corrupt" "$H" logits --model "$T/truncated" --tokens 1 --out "$T/x"
corrupt header_len "out = struct.pack('<Q', len(b) * 2) + b[8:]"
expect_rc header_beyond_file 1 "header length .* beyond the file" "$H" logits --model "$T/header_len" --tokens 1 --out "$T/x"
corrupt bad_json "out = struct.pack('<Q', n) + b'{' * n + data"
expect_rc header_not_json 1 "invalid JSON" "$H" logits --model "$T/bad_json" --tokens 1 --out "$T/x"
corrupt wrong_shape "h['model.norm.weight']['shape'] = [64, 2]; out = pack(h, data)"
expect_rc wrong_shape 1 "model.norm.weight.*shape \[64, 2\], expected \[128\]" "$H" logits --model "$T/wrong_shape" --tokens 1 --out "$T/x"
corrupt missing "
ents = sorted((v['data_offsets'], k) for k, v in h.items() if k != '__metadata__')
nh, nd = {}, b''
for (b0, e0), k in ents:
    if k == 'model.layers.1.mlp.up_proj.weight': continue
    nh[k] = dict(h[k], data_offsets=[len(nd), len(nd) + e0 - b0]); nd += data[b0:e0]
out = pack(nh, nd)"
expect_rc missing_tensor 1 "missing tensor \"model.layers.1.mlp.up_proj.weight\"" "$H" logits --model "$T/missing" --tokens 1 --out "$T/x"
corrupt dtype "h['model.norm.weight']['dtype'] = 'F8_E4M3'; out = pack(h, data)"
expect_rc unknown_dtype 1 "unsupported dtype F8_E4M3" "$H" logits --model "$T/dtype" --tokens 1 --out "$T/x"
corrupt size "h['model.norm.weight']['shape'] = [100]; out = pack(h, data)"
expect_rc size_mismatch 1 "bytes for a BF16 tensor" "$H" logits --model "$T/size" --tokens 1 --out "$T/x"
corrupt header_short "t = json.dumps(h).encode() + b'  '; out = struct.pack('<Q', len(t) - 1) + t + data"
expect_rc header_one_short 1 "tensors end at byte" "$H" logits --model "$T/header_short" --tokens 1 --out "$T/x"
corrupt overlap "h['model.norm.weight']['data_offsets'] = h['model.layers.0.input_layernorm.weight']['data_offsets']; out = pack(h, data)"
expect_rc overlapping_offsets 1 "overlaps|owned by no tensor" "$H" logits --model "$T/overlap" --tokens 1 --out "$T/x"
corrupt trailing "out = b + bytes(8)"
expect_rc trailing_bytes 1 "trailing bytes" "$H" logits --model "$T/trailing" --tokens 1 --out "$T/x"
corrupt huge "h['x.huge'] = {'dtype': 'F32', 'shape': [1 << 40, 1 << 24], 'data_offsets': [len(data), len(data)]}; out = pack(h, data)"
expect_rc element_overflow 1 "more than 2\^48 elements" "$H" logits --model "$T/huge" --tokens 1 --out "$T/x"
corrupt empty "out = pack({}, b'')"
expect_rc no_tensors 1 "missing tensor" "$H" logits --model "$T/empty" --tokens 1 --out "$T/x"
corrupt ok "out = b"
echo '{"model_type": "llama", "hidden_size": ' > "$T/ok/config.json"
expect_rc bad_config 1 "config.json:.*invalid JSON" "$H" logits --model "$T/ok" --tokens 1 --out "$T/x"
sed 's/"num_key_value_heads": 2/"num_key_value_heads": 3/' "$TINY/config.json" > "$T/ok/config.json"
expect_rc kv_heads 1 "num_key_value_heads \(3\) does not divide num_attention_heads \(4\)" "$H" logits --model "$T/ok" --tokens 1 --out "$T/x"
sed 's/"model_type": "llama"/"model_type": "gpt9"/' "$TINY/config.json" > "$T/ok/config.json"
expect_rc unknown_arch 1 "unsupported model_type \"gpt9\"" "$H" logits --model "$T/ok" --tokens 1 --out "$T/x"
sed 's/"hidden_size": 128/"hidden_size": "big"/' "$TINY/config.json" > "$T/ok/config.json"
expect_rc config_type 1 "\"hidden_size\" must be an integer" "$H" logits --model "$T/ok" --tokens 1 --out "$T/x"

# mkmodel: a tiny config, sharded, loads and runs; same seed -> same logits
expect_rc mkmodel_sharded 0 "" "$H" mkmodel --config "$M/tiny-qwen3/config.json" --shard-mb 1 --seed 3 --out "$T/mk"
expect_rc mkmodel_index 0 "" test -f "$T/mk/model.safetensors.index.json"
expect_rc mkmodel_runs 0 "" "$H" logits --model "$T/mk" --tokens 1,2,3 --out "$T/mk1.safetensors"
expect_rc mkmodel_again 0 "" "$H" mkmodel --config "$M/tiny-qwen3/config.json" --seed 3 --dtype f32 --out "$T/mk2"
expect_rc mkmodel_f32 0 "" "$H" logits --model "$T/mk2" --tokens 1,2,3 --out "$T/mk2.safetensors"
expect_rc mkmodel_tokenizer 0 "" "$H" mkmodel --config "$M/tiny-llama/config.json" --tokenizer "$M/brown-llama-8m" --out "$T/mk3"
expect_rc mkmodel_tokenizer_copied 0 "" test -f "$T/mk3/tokenizer.json"
expect_rc mkmodel_bad_preset 1 "unknown preset \"gpt5\"" "$H" mkmodel --preset gpt5 --out "$T/mk4"
expect_rc mkmodel_bad_dtype 1 "--dtype must be bf16 or f32" "$H" mkmodel --preset qwen3-0.6b --dtype q3 --out "$T/mk4"
expect_rc mkmodel_needs_one 2 "required" "$H" mkmodel --out "$T/mk4"
summary
