# The MoE and hybrid families through the CLI: hearth logits runs on each fixture (the
# golden test checks its values), mkmodel builds checkpoints of their configs that load and run, and a hybrid
# checkpoint missing a DeltaNet tensor or with a wrong conv shape fails naming the tensor;
# Qwen3.5's vision-language layout loads its text model.
. "$(dirname "$0")/lib.sh"
M=$S/fixtures/models

for f in qwen3_moe qwen3_next qwen3_5 qwen3_5_moe; do
  expect_rc "logits_$f" 0 "" "$H" logits --model "$M/tiny-$f" --tokens 1,7,99,3,250,11 --out "$T/$f.safetensors"
  expect_rc "mkmodel_$f" 0 "" "$H" mkmodel --config "$M/tiny-$f/config.json" --seed 5 --out "$T/mk-$f"
  expect_rc "mkmodel_runs_$f" 0 "" "$H" logits --model "$T/mk-$f" --tokens 1,2,3,4,5 --out "$T/mk-$f.safetensors"
done

# a copy of tiny-qwen3_next with one tensor dropped or reshaped
edit() {
  local name=$1 code=$2
  mkdir -p "$T/$name"
  cp "$M/tiny-qwen3_next/config.json" "$T/$name/"
  python3 - "$M/tiny-qwen3_next/model.safetensors" "$T/$name/model.safetensors" <<PY
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
$code
nd = b''  # the remaining tensors' bytes, packed in order (a dropped tensor's go too)
for (b0, e0), k in sorted((v['data_offsets'], k) for k, v in h.items() if k != '__metadata__'):
    h[k]['data_offsets'] = [len(nd), len(nd) + e0 - b0]; nd += data[b0:e0]
t = json.dumps(h).encode(); t += b' ' * (-len(t) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(t)) + t + nd)
PY
}
edit no_alog 'del h["model.layers.1.linear_attn.A_log"]'
expect_rc missing_alog 1 "model.layers.1.linear_attn.A_log" "$H" logits --model "$T/no_alog" --tokens 1,2 --out "$T/x.safetensors"
edit no_expert 'del h["model.layers.2.mlp.experts.5.up_proj.weight"]'
expect_rc missing_expert 1 "model.layers.2.mlp.experts.5.up_proj.weight" "$H" logits --model "$T/no_expert" --tokens 1,2 --out "$T/x.safetensors"
edit bad_conv 'h["model.layers.0.linear_attn.conv1d.weight"]["shape"] = [256, 4, 1]'
expect_rc bad_conv_shape 1 "conv1d.weight" "$H" logits --model "$T/bad_conv" --tokens 1,2 --out "$T/x.safetensors"
# the Qwen3.5 vision-language layout (text_config, model.language_model.*, a vision tower
# to ignore) gives the same logits as the text-only checkpoint
for f in qwen3_5 qwen3_5_moe; do
  mkdir -p "$T/vl-$f"
  python3 - "$M/tiny-$f" "$T/vl-$f" <<'PY'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
c = json.load(open(src + "/config.json"))
vl = {"model_type": c["model_type"].replace("_text", ""), "tie_word_embeddings": c["tie_word_embeddings"],
      "text_config": c, "vision_config": {"depth": 2}}
json.dump(vl, open(dst + "/config.json", "w"))
b = open(src + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
h = {(k.replace("model.", "model.language_model.", 1) if k.startswith("model.") else k): v for k, v in h.items()}
v = dict(h["model.language_model.norm.weight"])  # a vision tensor of its own bytes, at the end
b0, e0 = v["data_offsets"]
v["data_offsets"] = [len(data), len(data) + e0 - b0]
h["model.visual.patch_embed.weight"] = v
data += data[b0:e0]
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(dst + "/model.safetensors", "wb").write(struct.pack("<Q", len(t)) + t + data)
PY
  expect_rc "vl_logits_$f" 0 "" "$H" logits --model "$T/vl-$f" --tokens 1,7,99,3,250,11 --out "$T/vl-$f.safetensors"
  expect_rc "vl_same_$f" 0 "" cmp "$T/vl-$f.safetensors" "$T/$f.safetensors"
done
summary
