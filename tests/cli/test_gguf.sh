# Every verb's --model takes a .gguf file: tokenize/detokenize/template/run/logits/fit/serve
# on llama.cpp-made fixtures, logits equal to the checkpoint's, mkmodel --gguf, and clear
# errors for a path that is neither a model directory nor a GGUF file, or a corrupt GGUF.
. "$(dirname "$0")/lib.sh"
G=$S/fixtures/gguf
BF=$G/brown-llama-8m-F16.gguf
Q3=$G/e2e-qwen3-Q8_0.gguf
expect_rc tokenize_spm 0 '^\[1, 415, 2936, 9060, 12459, 28744, 6483, 28713, 754, 272, 17898, 3914, 28723\]$' \
  "$H" tokenize --model "$BF" --text "The quick brown fox jumps over the lazy dog." --special
expect_rc tokenize_bpe 0 '^\[151644, 872, 198, 14990, 151645\]$' "$H" tokenize --model "$Q3" --text $'<|im_start|>user\nhello<|im_end|>'
expect_rc detokenize 0 '^The jury said$' "$H" detokenize --model "$BF" --ids 1,415,19723,773 --skip-special
echo '{"messages": [{"role": "user", "content": "What is 2+2?"}], "add_generation_prompt": true}' >"$T/req.json"
expect_rc template 0 '<\|im_start\|>assistant' "$H" template --model "$Q3" --request "$T/req.json"
expect_rc run 0 'generated 4 tokens' "$H" run --model "$BF" --prompt "The jury said" --max-tokens 4 --threads 2
expect_rc fit 0 'weights +17016576 bytes' "$H" fit --model "$BF" --ctx 256
expect_rc logits_gguf 0 '' "$H" logits --model "$BF" --tokens 1,415,19723,773 --out "$T/g.safetensors" --threads 2
expect_rc logits_dir 0 '' "$H" logits --model "$S/fixtures/models/brown-llama-8m" --tokens 1,415,19723,773 --out "$T/d.safetensors" --threads 2
if python3 - "$T/g.safetensors" "$T/d.safetensors" <<'PY'
import json, struct, sys, array
def rd(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; a = array.array('f'); a.frombytes(b[8 + n:]); return a
a, b = rd(sys.argv[1]), rd(sys.argv[2])
sys.exit(0 if len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < 1e-4 else 1)
PY
then pass logits_equal; else fail logits_equal "GGUF logits differ from the checkpoint's"; fi
expect_rc mkmodel_gguf 0 '' "$H" mkmodel --config "$S/fixtures/models/tiny-qwen3/config.json" --out "$T/q3" --gguf "$T/q3.gguf"
expect_rc mkmodel_logits 0 '' "$H" logits --model "$T/q3.gguf" --tokens 1,2,3 --out "$T/q.safetensors" --threads 2
# --gguf-type: the matrices quantized (the GGUF is about a third of the F16 one for Q4_0 on
# tiny-qwen3's rows of 64), logits near the F16 file's; unknown types and a type without a file refused
expect_rc mkmodel_gguf_q4 0 '' "$H" mkmodel --config "$S/fixtures/models/tiny-qwen3/config.json" --out "$T/q3b" --gguf "$T/q3-q4.gguf" --gguf-type q4_0
expect_rc mkmodel_gguf_q8 0 '' "$H" mkmodel --config "$S/fixtures/models/tiny-qwen3/config.json" --out "$T/q3c" --gguf "$T/q3-q8.gguf" --gguf-type Q8_0
expect_rc mkmodel_q8_logits 0 '' "$H" logits --model "$T/q3-q8.gguf" --tokens 1,2,3 --out "$T/q8.safetensors" --threads 2
if [ "$(stat -c %s "$T/q3-q4.gguf")" -lt "$(( $(stat -c %s "$T/q3.gguf") * 6 / 10 ))" ]; then pass gguf_q4_smaller
else fail gguf_q4_smaller "Q4_0 file $(stat -c %s "$T/q3-q4.gguf") bytes vs F16 $(stat -c %s "$T/q3.gguf")"; fi
if python3 - "$T/q.safetensors" "$T/q8.safetensors" <<'PY'
import struct, sys, array
def rd(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; a = array.array('f'); a.frombytes(b[8 + n:]); return a
a, b = rd(sys.argv[1]), rd(sys.argv[2])
m = max(abs(x) for x in a)
sys.exit(0 if len(a) == len(b) and 0 < max(abs(x - y) for x, y in zip(a, b)) < 0.05 * m else 1)
PY
then pass gguf_q8_logits_near; else fail gguf_q8_logits_near "Q8_0 logits far from (or equal to) the F16 file's"; fi
expect_rc mkmodel_gguf_type_bad 2 'gguf-type must be .*q4_k_m' "$H" mkmodel --config "$S/fixtures/models/tiny-qwen3/config.json" --out "$T/q3d" --gguf "$T/x.gguf" --gguf-type q3_k
expect_rc mkmodel_gguf_type_q6_k_m 2 'gguf-type must be' "$H" mkmodel --config "$S/fixtures/models/tiny-qwen3/config.json" --out "$T/q3d" --gguf "$T/x.gguf" --gguf-type q6_k_m
# K-quants on rows of 256 and 512 (tiny-qwen3 at hidden 256, intermediate 512, 8 layers, an
# untied head): Q4_K_M, Q5_K_M and Q6_K files load and run, their logits near the F16 file's.
# Bounds on the relative rms logit error: a Q4_K step of a 32-weight range / 15 leaves ~8% rms
# weight noise (Q5_K's range / 31: ~4%, Q6_K's range / 64 per 16: ~2%), which the 8 random
# layers amplify about 3x (the 8-bit activations alone cost ~2.4%, Q8_0's figure); measured
# 0.21, 0.12 and 0.07, so 0.35, 0.2 and 0.12 (and that order) leave headroom, while a wrong
# layout (codes or scales of other weights: noise as large as the weights) would give about 1.4.
python3 - "$S/fixtures/models/tiny-qwen3/config.json" "$T/k.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(hidden_size=256, intermediate_size=512, num_hidden_layers=8, tie_word_embeddings=False,
         layer_types=["full_attention"] * 8)
json.dump(c, open(sys.argv[2], "w"))
PY
for k in f16 q4_k_m q5_k_m q6_k; do
  expect_rc "mkmodel_gguf_$k" 0 '' "$H" mkmodel --config "$T/k.json" --out "$T/k_$k" --gguf "$T/k-$k.gguf" --gguf-type $k
  expect_rc "logits_$k" 0 '' "$H" logits --model "$T/k-$k.gguf" --tokens 1,2,3,50,400,7,99,12 --out "$T/k-$k.safetensors" --threads 2
done
expect_rc run_q4_k_m 0 'generated 4 tokens' "$H" run --model "$T/k-q4_k_m.gguf" --prompt-ids 1,2,3 --max-tokens 4 --threads 2
if python3 - "$T"/k-f16.safetensors "$T"/k-q4_k_m.safetensors "$T"/k-q5_k_m.safetensors "$T"/k-q6_k.safetensors <<'PY'
import math, struct, sys, array
def rd(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; a = array.array('f'); a.frombytes(b[8 + n:]); return a
f, q4, q5, q6 = (rd(p) for p in sys.argv[1:])
rel = lambda a: math.sqrt(sum((x - y) ** 2 for x, y in zip(a, f)) / sum(y * y for y in f)) if len(a) == len(f) else 9
print("relative rms logit error: Q4_K_M %.3f, Q5_K_M %.3f, Q6_K %.3f" % (rel(q4), rel(q5), rel(q6)))
sys.exit(0 if 0 < rel(q6) < 0.12 and rel(q6) < rel(q5) < 0.2 and rel(q5) < rel(q4) < 0.35 else 1)
PY
then pass gguf_k_logits_near; else fail gguf_k_logits_near "K-quant logits far from the F16 file's"; fi
expect_rc mkmodel_gguf_type_alone 2 'needs --gguf' "$H" mkmodel --config "$S/fixtures/models/tiny-qwen3/config.json" --out "$T/q3e" --gguf-type q8_0
printf 'not a model' >"$T/plain.txt"
expect_rc not_model 1 'neither a model directory .* nor a GGUF file' "$H" logits --model "$T/plain.txt" --tokens 1 --out "$T/x.safetensors"
head -c 100000 "$BF" >"$T/cut.gguf"
expect_rc truncated 1 'truncated GGUF' "$H" tokenize --model "$T/cut.gguf" --text hi
serve_start "$T/serve.log" serve --model "$BF" --port 0 --threads 2 --kv-memory 16
if [ -n "$PORT" ]; then
  out=$(curl -s "localhost:$PORT/v1/completions" -d '{"prompt": "The jury said", "max_tokens": 4}')
  echo "$out" | grep -q '"text"' && pass serve || fail serve "reply: $out"
else
  fail serve "did not start: $(tail -2 "$T/serve.log")"
fi
kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null
summary
