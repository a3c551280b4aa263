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
expect_rc mkmodel_gguf_type_bad 2 'gguf-type must be' "$H" mkmodel --config "$S/fixtures/models/tiny-qwen3/config.json" --out "$T/q3d" --gguf "$T/x.gguf" --gguf-type q4_k
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
