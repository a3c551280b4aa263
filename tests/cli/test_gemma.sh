# The Gemma families through the CLI: random-weight checkpoints of the gemma3/gemma4/gemma4
# MoE shapes load and run, a KV-shared layer's checkpoint carries no k/v weights, and each
# config feature we do not implement fails with a message naming it.
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models

# $1 = name, $2 = fixture, $3 = python editing the config dict c
edit_config() {
  mkdir -p "$T/$1"
  cp "$M/$2/model.safetensors" "$T/$1/"
  python3 - "$M/$2/config.json" "$T/$1/config.json" <<PY
import json, sys
c = json.load(open(sys.argv[1]))
$3
json.dump(c, open(sys.argv[2], 'w'))
PY
}

for m in gemma3 gemma4 gemma4_moe; do
  expect_rc "mkmodel_$m" 0 "" "$H" mkmodel --config "$M/tiny-$m/config.json" --seed 5 --out "$T/mk_$m"
  expect_rc "mkmodel_${m}_runs" 0 "^[0-9]+( [0-9]+){19}$" "$H" run --model "$T/mk_$m" \
    --prompt-ids 1,5,17,100,200,300,400,1,5,17,100,200,300,400,1,5,17,100 --max-tokens 20 --print-ids
done
expect_rc mkmodel_shared_kv 0 "^none$" python3 -c "
import json,struct; b=open('$T/mk_gemma4/model.safetensors','rb').read(); n=struct.unpack('<Q',b[:8])[0]
h=json.loads(b[8:8+n]); print('none' if not any(k.startswith('model.layers.5.self_attn.k_') for k in h) else 'some')"
expect_rc fixture_runs 0 "^[0-9]+( [0-9]+){3}$" "$H" run --model "$M/tiny-gemma4" --prompt-ids 1,5,17 --max-tokens 4 --print-ids

edit_config k_eq_v tiny-gemma4 "c['attention_k_eq_v'] = True"
expect_rc k_eq_v 1 "attention_k_eq_v.*not supported" "$H" logits --model "$T/k_eq_v" --tokens 1 --out "$T/x"
edit_config double_mlp tiny-gemma4 "c['use_double_wide_mlp'] = True"
expect_rc double_wide_mlp 1 "use_double_wide_mlp.*not supported" "$H" logits --model "$T/double_mlp" --tokens 1 --out "$T/x"
edit_config bidir tiny-gemma3 "c['use_bidirectional_attention'] = True"
expect_rc bidirectional 1 "use_bidirectional_attention.*not supported" "$H" logits --model "$T/bidir" --tokens 1 --out "$T/x"
edit_config bidir_all tiny-gemma4 "c['use_bidirectional_attention'] = 'all'"
expect_rc bidirectional_all 1 "use_bidirectional_attention.*not supported" "$H" logits --model "$T/bidir_all" --tokens 1 --out "$T/x"
edit_config bidir_vision tiny-gemma4 "c['use_bidirectional_attention'] = 'vision'; c['per_layer_config']['2']['num_key_value_heads'] = 2"
expect_rc bidirectional_vision_ok 0 "" "$H" logits --model "$T/bidir_vision" --tokens 1,2 --out "$T/x"
edit_config plc tiny-gemma4 "c['per_layer_config']['2']['num_key_value_heads'] = 1"
expect_rc per_layer_kv_heads 1 "per_layer_config\[2\].num_key_value_heads is not supported" "$H" logits --model "$T/plc" --tokens 1 --out "$T/x"
edit_config act tiny-gemma3 "c['hidden_activation'] = 'relu'"
expect_rc activation 1 "unsupported hidden_activation \"relu\"" "$H" logits --model "$T/act" --tokens 1 --out "$T/x"
edit_config rope tiny-gemma4 "c['rope_parameters']['full_attention']['rope_type'] = 'yarn'"
expect_rc rope_type 1 "unsupported rope type \"yarn\"" "$H" logits --model "$T/rope" --tokens 1 --out "$T/x"
edit_config shared tiny-gemma4 "c['num_kv_shared_layers'] = 6"
expect_rc shared_all 1 "num_kv_shared_layers must be < num_hidden_layers" "$H" logits --model "$T/shared" --tokens 1 --out "$T/x"
summary
