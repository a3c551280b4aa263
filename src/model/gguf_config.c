/* hr_model_config from GGUF metadata: the {arch}.* keys llama.cpp writes are turned into
 * the config.json they stand for, which goes through the one config parser (defaults and
 * checks included); then the GGUF conventions are applied (docs/gguf.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "model/config.h"
#include "model/gguf.h"

static const struct {
    const char *gguf, *model_type;
} archs[] = {
    {"llama", "llama"},        {"qwen2", "qwen2"},        {"qwen3", "qwen3"},
    {"qwen3moe", "qwen3_moe"}, {"gemma3", "gemma3_text"},
};

typedef struct {
    const hr_gguf *g;
    const char *arch;
    json_t *j;
} builder;

static hr_err *set(builder *b, const char *key, json_t *v) {
    return v && json_object_set_new(b->j, key, v) == 0 ? NULL : hr_err_oom();
}

/* {arch}.suffix as an integer into config key `key` (absent: not set unless required). */
static hr_err *copy_int(builder *b, const char *suffix, const char *key, int required) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", b->arch, suffix);
    const hr_gguf_kv *kv = hr_gguf_find(b->g, k);
    if (!kv) return required ? hr_errf("missing GGUF key %s", k) : NULL;
    if (kv->type == HR_GGUF_ARRAY)
        return hr_errf("GGUF key %s: per-layer values are not supported", k);
    int64_t v;
    HR_TRY(hr_gguf_get_int(b->g, k, 0, &v));
    return set(b, key, json_integer(v));
}

static hr_err *copy_num(builder *b, const char *suffix, const char *key) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", b->arch, suffix);
    if (!hr_gguf_find(b->g, k)) return NULL;
    double v;
    HR_TRY(hr_gguf_get_num(b->g, k, 0, &v));
    return set(b, key, json_real(v));
}

static hr_err *token_id(builder *b, const char *which, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "tokenizer.ggml.%s_token_id", which);
    if (!hr_gguf_find(b->g, k)) return NULL;
    int64_t v;
    HR_TRY(hr_gguf_get_int(b->g, k, -1, &v));
    return set(b, key, json_integer(v));
}

/* rope.freq_base, rope.dimension_count (partial rotary), rope.scaling.{type,factor,...}. */
static hr_err *rope(builder *b, int64_t head_dim) {
    char k[128];
    double theta, factor;
    int64_t dims;
    const char *type;
    snprintf(k, sizeof k, "%s.rope.freq_base", b->arch);
    HR_TRY(hr_gguf_get_num(b->g, k, 10000.0, &theta));
    snprintf(k, sizeof k, "%s.rope.dimension_count", b->arch);
    HR_TRY(hr_gguf_get_int(b->g, k, head_dim, &dims));
    snprintf(k, sizeof k, "%s.rope.scaling.type", b->arch);
    HR_TRY(hr_gguf_get_str(b->g, k, &type));
    snprintf(k, sizeof k, "%s.rope.scaling.factor", b->arch);
    HR_TRY(hr_gguf_get_num(b->g, k, 1.0, &factor));
    if (dims <= 0 || dims > head_dim)
        return hr_errf("GGUF %s.rope.dimension_count %lld is out of range", b->arch,
                       (long long)dims);
    json_t *r = json_pack("{s:f, s:s}", "rope_theta", theta, "rope_type", "default");
    if (!r) return hr_err_oom();
    if (dims != head_dim)
        json_object_set_new(r, "partial_rotary_factor", json_real((double)dims / (double)head_dim));
    if (type && strcmp(type, "linear") == 0 && factor != 1.0) {
        json_object_set_new(r, "rope_type", json_string("linear"));
        json_object_set_new(r, "factor", json_real(factor));
    } else if (type && strcmp(type, "none") != 0 && strcmp(type, "linear") != 0) {
        json_decref(r);
        return hr_errf("GGUF rope scaling type \"%s\" is not supported (none, linear)", type);
    }
    return set(b, "rope_parameters", r);
}

/* gemma3: sliding window layers every sliding_window_pattern-th layer full (a period, or a
 * per-layer bool array), the local rope base, query scale as llama.cpp derives it. */
static hr_err *gemma3(builder *b, int64_t layers, int64_t hidden, int64_t heads, int64_t head_dim) {
    char k[128];
    int64_t window, period = 6;
    snprintf(k, sizeof k, "%s.attention.sliding_window", b->arch);
    HR_TRY(hr_gguf_get_int(b->g, k, 0, &window));
    HR_TRY(set(b, "sliding_window", window > 0 ? json_integer(window) : json_null()));
    HR_TRY(copy_num(b, "rope.freq_base_swa", "rope_local_base_freq"));
    HR_TRY(copy_num(b, "final_logit_softcapping", "final_logit_softcapping"));
    HR_TRY(set(b, "query_pre_attn_scalar", json_integer(layers == 62 ? hidden / heads : head_dim)));
    snprintf(k, sizeof k, "%s.attention.sliding_window_pattern", b->arch);
    const hr_gguf_kv *pat = hr_gguf_find(b->g, k);
    if (pat && pat->type != HR_GGUF_ARRAY) HR_TRY(hr_gguf_get_int(b->g, k, 6, &period));
    if (period <= 0) return hr_errf("GGUF %s must be positive", k);
    if (pat && pat->type == HR_GGUF_ARRAY &&
        (pat->arr_type != HR_GGUF_BOOL || pat->arr_n != (uint64_t)layers))
        return hr_errf("GGUF %s must be a number or one bool per layer", k);
    json_t *types = json_array();
    if (!types) return hr_err_oom();
    for (int64_t i = 0; i < layers; i++) {
        int sliding = pat && pat->type == HR_GGUF_ARRAY ? hr_gguf_arr_int(pat, (uint64_t)i) != 0
                                                        : (i + 1) % period != 0;
        json_array_append_new(
            types, json_string(window > 0 && sliding ? "sliding_attention" : "full_attention"));
    }
    return set(b, "layer_types", types);
}

static hr_err *moe(builder *b) {
    HR_TRY(copy_int(b, "expert_count", "num_experts", 1));
    HR_TRY(copy_int(b, "expert_used_count", "num_experts_per_tok", 1));
    HR_TRY(copy_int(b, "expert_feed_forward_length", "moe_intermediate_size", 1));
    /* llama.cpp's qwen3moe always renormalises the top-k weights; every layer is routed */
    HR_TRY(set(b, "norm_topk_prob", json_true()));
    return set(b, "decoder_sparse_step", json_integer(1));
}

static hr_err *build(builder *b, const char *model_type) {
    const hr_tensor *embd = hr_gguf_tensor(b->g, "token_embd.weight");
    if (!embd || embd->ndim != 2) return hr_errf("missing 2-D tensor token_embd.weight");
    int64_t layers, hidden, heads, head_dim;
    char k[128];
    HR_TRY(set(b, "model_type", json_string(model_type)));
    HR_TRY(set(b, "vocab_size", json_integer(embd->shape[0])));
    HR_TRY(copy_int(b, "embedding_length", "hidden_size", 1));
    HR_TRY(copy_int(b, "block_count", "num_hidden_layers", 1));
    HR_TRY(copy_int(b, "attention.head_count", "num_attention_heads", 1));
    HR_TRY(copy_int(b, "attention.head_count_kv", "num_key_value_heads", 0));
    HR_TRY(copy_int(b, "context_length", "max_position_embeddings", 0));
    HR_TRY(copy_num(b, "attention.layer_norm_rms_epsilon", "rms_norm_eps"));
    hidden = json_integer_value(json_object_get(b->j, "hidden_size"));
    layers = json_integer_value(json_object_get(b->j, "num_hidden_layers"));
    heads = json_integer_value(json_object_get(b->j, "num_attention_heads"));
    if (heads <= 0) return hr_errf("GGUF %s.attention.head_count must be positive", b->arch);
    /* before any per-layer array is built (fuzz_gguf: a huge block_count ran out of memory) */
    if (layers < 1 || layers > HR_MAX_LAYERS)
        return hr_errf("GGUF %s.block_count (%lld) must be 1..%d", b->arch, (long long)layers,
                       HR_MAX_LAYERS);
    snprintf(k, sizeof k, "%s.attention.key_length", b->arch);
    HR_TRY(hr_gguf_get_int(b->g, k, hidden / heads, &head_dim));
    int64_t vlen;
    snprintf(k, sizeof k, "%s.attention.value_length", b->arch);
    HR_TRY(hr_gguf_get_int(b->g, k, head_dim, &vlen));
    if (vlen != head_dim)
        return hr_errf("GGUF value_length %lld != key_length %lld is not supported",
                       (long long)vlen, (long long)head_dim);
    HR_TRY(set(b, "head_dim", json_integer(head_dim)));
    HR_TRY(copy_int(b, "feed_forward_length", "intermediate_size",
                    !strcmp(model_type, "qwen3_moe") ? 0 : 1));
    if (!json_object_get(b->j, "intermediate_size"))
        HR_TRY(copy_int(b, "expert_feed_forward_length", "intermediate_size", 1));
    HR_TRY(set(b, "tie_word_embeddings", json_boolean(!hr_gguf_tensor(b->g, "output.weight"))));
    HR_TRY(
        set(b, "attention_bias", json_boolean(hr_gguf_tensor(b->g, "blk.0.attn_q.bias") != NULL)));
    HR_TRY(token_id(b, "bos", "bos_token_id"));
    HR_TRY(token_id(b, "eos", "eos_token_id"));
    HR_TRY(token_id(b, "padding", "pad_token_id"));
    HR_TRY(rope(b, head_dim));
    if (!strcmp(model_type, "qwen3_moe")) HR_TRY(moe(b));
    if (!strcmp(model_type, "gemma3_text")) HR_TRY(gemma3(b, layers, hidden, heads, head_dim));
    return NULL;
}

hr_err *hr_config_from_gguf(const hr_gguf *g, hr_model_config *cfg) {
    const char *arch;
    HR_TRY(hr_gguf_get_str(g, "general.architecture", &arch));
    if (!arch) return hr_errf("missing GGUF key general.architecture");
    const char *mt = NULL;
    for (size_t i = 0; i < sizeof archs / sizeof *archs; i++)
        if (!strcmp(arch, archs[i].gguf)) mt = archs[i].model_type;
    if (!mt)
        return hr_errf("GGUF architecture \"%s\" is not supported (supported: llama, qwen2, qwen3, "
                       "qwen3moe, gemma3)",
                       arch);
    builder b = {g, arch, json_object()};
    if (!b.j) return hr_err_oom();
    hr_err *e = build(&b, mt);
    char *text = e ? NULL : hr_json_dumps(b.j, 0);
    if (!e && !text) e = hr_err_oom();
    if (!e) e = hr_config_parse("GGUF metadata", text, cfg);
    free(text);
    json_decref(b.j);
    HR_TRY(e);
    /* convert_hf_to_gguf.py stores gemma3's norms as 1 + w (every *norm.weight) */
    if (cfg->arch == HR_ARCH_GEMMA3) cfg->norm_one_plus = 0;
    return NULL;
}
