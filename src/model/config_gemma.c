/* config.json keys of the Gemma families (gemma3_text, gemma4_text) on top of the generic
 * parse: (1 + w) norms, sandwich norms, embedding scale, rope per layer type, per-layer head
 * dims, KV sharing, per-layer input embeddings and the MoE block. Features we do not
 * implement fail here with an error naming the key. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"

static hr_err *get_pos_int(const json_t *j, const char *k, int64_t def, int *out) {
    int64_t v;
    HR_TRY(hr_json_int(j, k, def, "config.json", &v));
    if (v < 0 || v > (1 << 30)) return hr_errf("config.json: \"%s\" out of range", k);
    *out = (int)v;
    return NULL;
}

/* Rope per layer type: rope_parameters {full_attention: {...}, sliding_attention: {...}}, or
 * the older rope_theta/rope_scaling (full) plus rope_local_base_freq (sliding). */
static hr_err *parse_rope(const json_t *j, hr_model_config *c) {
    const json_t *rp = json_object_get(j, "rope_parameters");
    const json_t *full = json_object_get(rp, "full_attention");
    const json_t *slid = json_object_get(rp, "sliding_attention");
    hr_rope_config base = {.theta = 10000.0, .partial_rotary = 1.0};
    if (json_is_object(full) || json_is_object(slid)) {
        c->rope = c->rope_sliding = base;
        HR_TRY(hr_config_rope_obj(json_is_object(full) ? full : NULL, &c->rope));
        HR_TRY(hr_config_rope_obj(json_is_object(slid) ? slid : NULL, &c->rope_sliding));
        return NULL;
    }
    c->rope_sliding = base;
    HR_TRY(hr_json_num(j, "rope_local_base_freq", 10000.0, "config.json", &c->rope_sliding.theta));
    return hr_config_rope_obj(NULL, &c->rope_sliding);
}

/* gemma3 configs without layer_types: every sliding_window_pattern-th layer is full. */
static hr_err *parse_pattern(const json_t *j, hr_model_config *c) {
    if (json_is_array(json_object_get(j, "layer_types")) || c->sliding_window <= 0) return NULL;
    int pat = 6;
    HR_TRY(get_pos_int(j, "_sliding_window_pattern", 6, &pat));
    HR_TRY(get_pos_int(j, "sliding_window_pattern", pat, &pat));
    for (int i = 0; i < c->n_layers; i++)
        c->layer_kind[i] = pat > 0 && (i + 1) % pat == 0 ? HR_LAYER_FULL : HR_LAYER_SLIDING;
    return NULL;
}

/* use_bidirectional_attention: "vision" only changes the mask around image tokens, which a
 * text-only decoder never sees; true / "all" make text attention bidirectional. */
static hr_err *check_bidirectional(const json_t *j) {
    const json_t *v = json_object_get(j, "use_bidirectional_attention");
    if (json_is_string(v) && strcmp(json_string_value(v), "vision") == 0) return NULL;
    if (!v || json_is_null(v) || json_is_false(v)) return NULL;
    return hr_errf(
        "config.json: \"use_bidirectional_attention\" (bidirectional text attention) is not "
        "supported");
}

static hr_err *reject_true(const json_t *j, const char *key) {
    const json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v) || json_is_false(v)) return NULL;
    return hr_errf("config.json: \"%s\" is not supported", key);
}

static hr_err *parse_common(const json_t *j, hr_model_config *c) {
    const char *act;
    HR_TRY(hr_json_str(j, "hidden_activation", "gelu_pytorch_tanh", "config.json", &act));
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return hr_errf("config.json: unsupported hidden_activation \"%s\"", act);
    c->act = HR_ACT_GELU_TANH;
    c->qk_norm = 1;
    c->sandwich_norm = 1;
    c->embed_scale = (float)sqrt((double)c->hidden); /* HF casts it to the model dtype (f32) */
    HR_TRY(hr_json_bool(j, "tie_word_embeddings", 1, "config.json", &c->tie_embeddings));
    HR_TRY(hr_json_num(j, "final_logit_softcapping", 0, "config.json", &c->final_softcap));
    HR_TRY(hr_json_num(j, "attn_logit_softcapping", 0, "config.json", &c->attn_softcap));
    if (c->final_softcap < 0 || c->attn_softcap < 0)
        return hr_errf("config.json: soft-capping values must be positive");
    HR_TRY(check_bidirectional(j));
    HR_TRY(parse_rope(j, c));
    return parse_pattern(j, c);
}

/* per_layer_config {"i": {"head_dim": d}} (transformers >= 5.15) or global_head_dim. */
static hr_err *parse_head_dims(const json_t *j, hr_model_config *c) {
    int ghd = 0;
    HR_TRY(get_pos_int(j, "global_head_dim", 0, &ghd));
    for (int i = 0; i < c->n_layers; i++)
        if (ghd > 0 && c->layer_kind[i] == HR_LAYER_FULL) c->layer_head_dim[i] = ghd;
    const json_t *plc = json_object_get(j, "per_layer_config");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)plc, key, v) {
        char *end;
        long l = strtol(key, &end, 10);
        if (*end || l < 0 || l >= c->n_layers)
            return hr_errf("config.json: per_layer_config key \"%s\" is not a layer index", key);
        const char *f;
        const json_t *fv;
        json_object_foreach((json_t *)v, f, fv) {
            json_int_t n = json_is_integer(fv) ? json_integer_value(fv) : -1;
            if (strcmp(f, "head_dim") == 0 && n > 0 && n % 2 == 0 && n <= 4096)
                c->layer_head_dim[l] = (int)n;
            else if (!(strcmp(f, "num_key_value_heads") == 0 && n == c->n_kv_heads) &&
                     !(strcmp(f, "num_attention_heads") == 0 && n == c->n_heads))
                /* a per-layer head count would need per-layer GQA geometry */
                return hr_errf("config.json: per_layer_config[%s].%s is not supported", key, f);
        }
    }
    return NULL;
}

/* The last num_kv_shared_layers layers attend over the KV of the last earlier layer of
 * the same type, and store none of their own. */
static hr_err *parse_kv_sharing(const json_t *j, hr_model_config *c) {
    int shared = 0;
    HR_TRY(get_pos_int(j, "num_kv_shared_layers", 0, &shared));
    if (shared >= c->n_layers)
        return hr_errf("config.json: num_kv_shared_layers must be < num_hidden_layers");
    int first = c->n_layers - shared;
    for (int l = first; l < c->n_layers; l++) {
        int src = -1;
        for (int k = first - 1; k >= 0 && src < 0; k--)
            if (c->layer_kind[k] == c->layer_kind[l]) src = k;
        if (src < 0)
            return hr_errf("config.json: KV-shared layer %d has no earlier layer of its type", l);
        if (c->layer_head_dim[src] != c->layer_head_dim[l])
            return hr_errf("config.json: KV-shared layer %d and layer %d differ in head_dim", l,
                           src);
        c->kv_source[l] = src;
    }
    return NULL;
}

static hr_err *parse_gemma4(const json_t *j, hr_model_config *c) {
    HR_TRY(reject_true(j, "attention_k_eq_v"));
    HR_TRY(reject_true(j, "use_double_wide_mlp"));
    c->attn_scale = 1.0; /* q_norm does the scaling */
    c->v_norm = 1;
    c->layer_scalar = 1;
    HR_TRY(parse_head_dims(j, c));
    HR_TRY(parse_kv_sharing(j, c));
    HR_TRY(get_pos_int(j, "hidden_size_per_layer_input", 0, &c->ple_dim));
    HR_TRY(get_pos_int(j, "vocab_size_per_layer_input", c->vocab, &c->ple_vocab));
    if (c->ple_dim && c->ple_vocab < c->vocab)
        return hr_errf(
            "config.json: vocab_size_per_layer_input (%d) < vocab_size (%d) is not supported",
            c->ple_vocab, c->vocab);
    HR_TRY(hr_json_bool(j, "enable_moe_block", 0, "config.json", &c->moe));
    if (!c->moe) return NULL;
    HR_TRY(get_pos_int(j, "num_experts", 0, &c->n_experts));
    HR_TRY(get_pos_int(j, "top_k_experts", 0, &c->n_experts_per_tok));
    HR_TRY(get_pos_int(j, "moe_intermediate_size", 0, &c->moe_intermediate));
    if (c->n_experts <= 0 || c->n_experts_per_tok <= 0 || c->n_experts_per_tok > c->n_experts ||
        c->moe_intermediate <= 0)
        return hr_errf(
            "config.json: enable_moe_block needs num_experts, top_k_experts <= num_experts "
            "and moe_intermediate_size");
    return NULL;
}

hr_err *hr_config_gemma(const json_t *j, hr_model_config *c) {
    HR_TRY(parse_common(j, c));
    if (c->arch == HR_ARCH_GEMMA3) {
        c->norm_one_plus = 1;
        double s;
        HR_TRY(hr_json_num(j, "query_pre_attn_scalar", 256, "config.json", &s));
        if (s <= 0) return hr_errf("config.json: query_pre_attn_scalar must be positive");
        c->attn_scale = 1.0 / sqrt(s);
        return NULL;
    }
    return parse_gemma4(j, c);
}
