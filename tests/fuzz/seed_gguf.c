/* Seed corpus for fuzz_gguf: writes small valid GGUF files into the folder argv[1] (run by
 * tests/fuzz/run.sh before the fuzzer): a llama, a qwen3moe and a gemma3 model header with
 * their config keys and a tokenizer vocab, one tensor of every block type, every scalar and
 * array kv type, a version-2 file and a 64-byte alignment. Each is a few KiB, so the fuzzer
 * mutates the structure rather than tensor bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf_write.h"
#include "seed.h"

static uint8_t blob[1 << 16]; /* tensor bytes: a fixed pseudo-random pattern */

static void put_tensor(hr_gguf_writer *w, const char *name, hr_dtype dt, int64_t r, int64_t c) {
    int64_t shape[2] = {r, c};
    hr_err_free(hr_gguf_put_tensor(w, name, dt, 2, shape, blob));
}

/* The config keys of arch, one block, hidden 32, heads 2/1 x 16. */
static void put_config(hr_gguf_writer *w, const char *arch) {
    char key[96];
    hr_err_free(hr_gguf_put_str(w, "general.architecture", arch));
    const char *u32s[] = {"block_count",          "embedding_length",        "feed_forward_length",
                          "attention.head_count", "attention.head_count_kv", "attention.key_length",
                          "context_length",       "rope.dimension_count"};
    const uint32_t vals[] = {1, 32, 64, 2, 1, 16, 64, 16};
    for (int i = 0; i < 8; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, u32s[i]);
        hr_err_free(hr_gguf_put_u32(w, key, vals[i]));
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    hr_err_free(hr_gguf_put_f32(w, key, 1e-6f));
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    hr_err_free(hr_gguf_put_f32(w, key, 10000.0f));
}

/* An 8-token vocab with scores and types, BOS/EOS ids and a chat template. */
static void put_vocab(hr_gguf_writer *w, const char *model) {
    const char *tok[8] = {"<unk>", "<s>", "</s>", "a", "b", "ab", "\xe2\x96\x81", "<0x41>"};
    const float scores[8] = {0, 0, 0, -1, -2, -3, -4, -5};
    const int32_t types[8] = {2, 3, 3, 1, 1, 1, 1, 6};
    const char *merges[1] = {"a b"};
    hr_err_free(hr_gguf_put_str(w, "tokenizer.ggml.model", model));
    hr_err_free(hr_gguf_put_str(w, "tokenizer.ggml.pre", "qwen2"));
    hr_err_free(hr_gguf_put_arr(w, "tokenizer.ggml.tokens", HR_GGUF_STRING, tok, 8));
    hr_err_free(hr_gguf_put_arr(w, "tokenizer.ggml.scores", HR_GGUF_F32, scores, 8));
    hr_err_free(hr_gguf_put_arr(w, "tokenizer.ggml.token_type", HR_GGUF_I32, types, 8));
    hr_err_free(hr_gguf_put_arr(w, "tokenizer.ggml.merges", HR_GGUF_STRING, merges, 1));
    hr_err_free(hr_gguf_put_u32(w, "tokenizer.ggml.bos_token_id", 1));
    hr_err_free(hr_gguf_put_u32(w, "tokenizer.ggml.eos_token_id", 2));
    hr_err_free(hr_gguf_put_str(w, "tokenizer.chat_template", "{{ messages[0].content }}"));
}

/* The weights of one dense block in dt (2-D projections) and F32 (norms). */
static void put_block(hr_gguf_writer *w, hr_dtype dt) {
    put_tensor(w, "token_embd.weight", HR_F16, 8, 32);
    put_tensor(w, "output_norm.weight", HR_F32, 1, 32);
    put_tensor(w, "blk.0.attn_norm.weight", HR_F32, 1, 32);
    put_tensor(w, "blk.0.ffn_norm.weight", HR_F32, 1, 32);
    put_tensor(w, "blk.0.attn_q.weight", dt, 32, 32);
    put_tensor(w, "blk.0.attn_k.weight", dt, 16, 32);
    put_tensor(w, "blk.0.attn_v.weight", dt, 16, 32);
    put_tensor(w, "blk.0.attn_output.weight", dt, 32, 32);
    put_tensor(w, "blk.0.ffn_gate.weight", dt, 64, 32);
    put_tensor(w, "blk.0.ffn_up.weight", dt, 64, 32);
    put_tensor(w, "blk.0.ffn_down.weight", dt, 32, 64);
}

static int save(hr_gguf_writer *w, const char *dir, const char *name, int version) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    uint8_t *buf = NULL;
    size_t len = 0;
    hr_err *e = hr_gguf_writer_bytes(w, &buf, &len);
    hr_gguf_writer_free(w);
    int bad = 1;
    if (e) {
        fprintf(stderr, "seed_gguf: %s: %s\n", name, hr_err_msg(e));
    } else {
        if (version) buf[4] = (uint8_t)version; /* v2 has v3's layout, little-endian */
        bad = seed_file(path, buf, len);
    }
    hr_err_free(e);
    free(buf);
    return bad;
}

static hr_gguf_writer *writer(void) {
    hr_gguf_writer *w = NULL;
    hr_err *e = hr_gguf_writer_new(&w);
    if (e) fprintf(stderr, "seed_gguf: %s\n", hr_err_msg(e)), exit(1);
    return w;
}

static int seed_models(const char *dir) {
    int bad = 0;
    hr_gguf_writer *w = writer();
    put_config(w, "llama");
    put_vocab(w, "llama");
    put_block(w, HR_Q8_0);
    bad |= save(w, dir, "llama-q8_0", 0);

    w = writer();
    put_config(w, "qwen3");
    put_vocab(w, "gpt2");
    put_block(w, HR_Q4_0);
    put_tensor(w, "blk.0.attn_q_norm.weight", HR_F32, 1, 16);
    put_tensor(w, "blk.0.attn_k_norm.weight", HR_F32, 1, 16);
    bad |= save(w, dir, "qwen3-q4_0-v2", 2);

    w = writer();
    put_config(w, "qwen3moe");
    hr_err_free(hr_gguf_put_u32(w, "qwen3moe.expert_count", 4));
    hr_err_free(hr_gguf_put_u32(w, "qwen3moe.expert_used_count", 2));
    hr_err_free(hr_gguf_put_u32(w, "qwen3moe.expert_feed_forward_length", 32));
    int64_t exps[3] = {4, 32, 32};
    hr_err_free(hr_gguf_put_tensor(w, "blk.0.ffn_gate_exps.weight", HR_Q8_0, 3, exps, blob));
    put_tensor(w, "blk.0.ffn_gate_inp.weight", HR_F32, 4, 32);
    bad |= save(w, dir, "qwen3moe", 0);

    w = writer();
    put_config(w, "gemma3");
    hr_err_free(hr_gguf_put_u32(w, "gemma3.attention.sliding_window", 16));
    const uint8_t pattern[2] = {1, 0};
    hr_err_free(
        hr_gguf_put_arr(w, "gemma3.attention.sliding_window_pattern", HR_GGUF_BOOL, pattern, 2));
    hr_err_free(hr_gguf_put_f32(w, "gemma3.final_logit_softcapping", 30.0f));
    hr_err_free(hr_gguf_put_u32(w, "general.alignment", 64));
    put_block(w, HR_F16);
    bad |= save(w, dir, "gemma3-align64", 0);
    return bad;
}

/* One 256-element row of every block type, and one kv of every scalar and array type. */
static int seed_types(const char *dir) {
    hr_gguf_writer *w = writer();
    for (int t = HR_F32; t <= HR_IQ4_XS; t++) {
        if (t == HR_U8 || t == HR_U32) continue; /* no ggml type */
        char name[32];
        snprintf(name, sizeof name, "t.%s", hr_dtype_name((hr_dtype)t));
        put_tensor(w, name, (hr_dtype)t, 1, 256);
    }
    uint64_t v = 0x3f80000000000001ull;
    for (int t = HR_GGUF_U8; t < HR_GGUF_TYPE_COUNT; t++) {
        if (t == HR_GGUF_STRING || t == HR_GGUF_ARRAY) continue;
        char key[32];
        snprintf(key, sizeof key, "k.%d", t);
        hr_err_free(hr_gguf_put(w, key, (hr_gguf_type)t, &v));
        snprintf(key, sizeof key, "a.%d", t);
        hr_err_free(hr_gguf_put_arr(w, key, (hr_gguf_type)t, blob, 5));
    }
    hr_err_free(hr_gguf_put_str(w, "k.str", "caf\xc3\xa9"));
    return save(w, dir, "types", 0);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seed_gguf DIR\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof blob; i++)
        blob[i] = (uint8_t)((i * 2654435761u) >> 13);
    return seed_models(argv[1]) | seed_types(argv[1]);
}
