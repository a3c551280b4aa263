/* config.json parsing for the dense decoder family: defaults per model_type, both the
 * newer rope_parameters and the older rope_theta/rope_scaling keys, layer_types, and
 * validation that says which field is wrong. */
#include "model/config.h"

#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"

static const struct {
    const char *name;
    hr_arch arch;
} archs[] = {
    {"llama", HR_ARCH_LLAMA},          {"mistral", HR_ARCH_MISTRAL},
    {"qwen2", HR_ARCH_QWEN2},          {"qwen3", HR_ARCH_QWEN3},
    {"gemma3_text", HR_ARCH_GEMMA3},   {"gemma4_text", HR_ARCH_GEMMA4},
    {"qwen3_moe", HR_ARCH_QWEN3_MOE},  {"qwen3_next", HR_ARCH_QWEN3_NEXT},
    {"qwen3_5_text", HR_ARCH_QWEN3_5}, {"qwen3_5_moe_text", HR_ARCH_QWEN3_5_MOE},
};

static hr_err *get_int(const json_t *o, const char *k, int64_t def, int *out) {
    int64_t v;
    HR_TRY(hr_json_int(o, k, def, "config.json", &v));
    if (v < -1 || v > (1ll << 31) - 1) return hr_errf("config.json: \"%s\" out of range", k);
    *out = (int)v;
    return NULL;
}

static hr_err *parse_arch(const json_t *j, hr_model_config *c) {
    const char *mt;
    HR_TRY(hr_json_str(j, "model_type", NULL, "config.json", &mt));
    if (!mt) return hr_errf("config.json: missing \"model_type\"");
    for (size_t i = 0; i < sizeof archs / sizeof *archs; i++)
        if (strcmp(archs[i].name, mt) == 0) {
            c->arch = archs[i].arch;
            snprintf(c->model_type, sizeof c->model_type, "%s", mt);
            return NULL;
        }
    return hr_errf("config.json: unsupported model_type \"%s\" (supported: llama, mistral, qwen2, "
                   "qwen3, gemma3_text, gemma4_text, qwen3_moe, qwen3_next, qwen3_5_text, "
                   "qwen3_5_moe_text)",
                   mt);
}

hr_err *hr_config_rope_obj(const json_t *src, hr_rope_config *r) {
    HR_TRY(hr_json_num(src, "rope_theta", r->theta, "config.json rope", &r->theta));
    HR_TRY(hr_json_num(src, "partial_rotary_factor", r->partial_rotary, "config.json rope",
                       &r->partial_rotary));
    const char *type;
    HR_TRY(hr_json_str(src, "rope_type", NULL, "config.json rope", &type));
    if (!type) HR_TRY(hr_json_str(src, "type", "default", "config.json rope", &type));
    HR_TRY(hr_json_num(src, "factor", 1.0, "config.json rope", &r->factor));
    HR_TRY(hr_json_num(src, "low_freq_factor", 1.0, "config.json rope", &r->low_freq_factor));
    HR_TRY(hr_json_num(src, "high_freq_factor", 4.0, "config.json rope", &r->high_freq_factor));
    HR_TRY(hr_json_num(src, "original_max_position_embeddings", 8192, "config.json rope",
                       &r->original_max_pos));
    if (strcmp(type, "default") == 0)
        r->type = HR_ROPE_DEFAULT;
    else if (strcmp(type, "linear") == 0)
        r->type = HR_ROPE_LINEAR;
    else if (strcmp(type, "llama3") == 0)
        r->type = HR_ROPE_LLAMA3;
    else if (strcmp(type, "proportional") == 0)
        r->type = HR_ROPE_PROPORTIONAL;
    else
        return hr_errf("config.json: unsupported rope type \"%s\" (supported: default, linear, "
                       "llama3, proportional)",
                       type);
    if (r->theta <= 0) return hr_errf("config.json: rope_theta must be positive");
    if (r->factor <= 0) return hr_errf("config.json: rope factor must be positive");
    if (r->type == HR_ROPE_LLAMA3 && r->high_freq_factor <= r->low_freq_factor)
        return hr_errf("config.json: llama3 rope needs high_freq_factor > low_freq_factor");
    if (r->partial_rotary <= 0 || r->partial_rotary > 1)
        return hr_errf("config.json: partial_rotary_factor must be in (0, 1]");
    return NULL;
}

/* rope_parameters (new) or rope_theta + rope_scaling (old). */
static hr_err *parse_rope(const json_t *j, hr_model_config *c) {
    const json_t *rp = json_object_get(j, "rope_parameters");
    const json_t *rs = json_object_get(j, "rope_scaling");
    const json_t *src = json_is_object(rp) ? rp : json_is_object(rs) ? rs : NULL;
    hr_rope_config *r = &c->rope;
    HR_TRY(hr_json_num(j, "rope_theta", 10000.0, "config.json", &r->theta));
    HR_TRY(hr_json_num(j, "partial_rotary_factor", 1.0, "config.json", &r->partial_rotary));
    HR_TRY(hr_config_rope_obj(src, r));
    c->rope_sliding = *r;
    return NULL;
}

static hr_err *parse_ids(const json_t *j, const char *key, int *ids, int *n, int max) {
    const json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) return NULL;
    if (json_is_integer(v)) {
        ids[0] = (int)json_integer_value(v);
        *n = 1;
        return NULL;
    }
    if (!json_is_array(v)) return hr_errf("\"%s\" must be an integer or a list of integers", key);
    *n = 0;
    for (size_t i = 0; i < json_array_size(v) && *n < max; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_integer(e)) return hr_errf("\"%s\" must be a list of integers", key);
        ids[(*n)++] = (int)json_integer_value(e);
    }
    return NULL;
}

/* Without layer_types, transformers' qwen2/qwen3/qwen3_moe configs make layer i sliding
 * when use_sliding_window (default false) and i >= max_window_layers (default 28); mistral
 * (no such keys) slides on every layer when sliding_window is set. */
static int qwen_window_rule(hr_arch a) {
    return a == HR_ARCH_QWEN2 || a == HR_ARCH_QWEN3 || a == HR_ARCH_QWEN3_MOE;
}

static hr_err *parse_layer_types(const json_t *j, hr_model_config *c) {
    const json_t *lt = json_object_get(j, "layer_types");
    for (int i = 0; i < c->n_layers; i++)
        c->layer_kind[i] = HR_LAYER_FULL;
    int use_sw = 1, first_sliding = 0, qwen = qwen_window_rule(c->arch);
    HR_TRY(hr_json_bool(j, "use_sliding_window", !qwen, "config.json", &use_sw));
    if (qwen) HR_TRY(get_int(j, "max_window_layers", 28, &first_sliding));
    if (!use_sw) c->sliding_window = 0;
    if (!lt || json_is_null(lt)) {
        if (c->sliding_window > 0)
            for (int i = first_sliding; i < c->n_layers; i++)
                c->layer_kind[i] = HR_LAYER_SLIDING;
        return NULL;
    }
    if (!json_is_array(lt) || (int)json_array_size(lt) != c->n_layers)
        return hr_errf("config.json: \"layer_types\" must list %d layer types", c->n_layers);
    for (int i = 0; i < c->n_layers; i++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)i));
        if (!s) return hr_errf("config.json: layer_types[%d] is not a string", i);
        if (strcmp(s, "full_attention") == 0)
            c->layer_kind[i] = HR_LAYER_FULL;
        else if (strcmp(s, "linear_attention") == 0 && hr_arch_is_hybrid(c->arch))
            c->layer_kind[i] = HR_LAYER_LINEAR;
        else if (strcmp(s, "sliding_attention") == 0)
            c->layer_kind[i] = c->sliding_window > 0 ? HR_LAYER_SLIDING : HR_LAYER_FULL;
        else
            return hr_errf("config.json: layer_types[%d] \"%s\" is not supported", i, s);
    }
    return NULL;
}

static hr_err *parse_dims(const json_t *j, hr_model_config *c) {
    HR_TRY(get_int(j, "vocab_size", -1, &c->vocab));
    HR_TRY(get_int(j, "hidden_size", -1, &c->hidden));
    HR_TRY(get_int(j, "num_hidden_layers", -1, &c->n_layers));
    HR_TRY(get_int(j, "num_attention_heads", -1, &c->n_heads));
    HR_TRY(get_int(j, "num_key_value_heads", c->n_heads, &c->n_kv_heads));
    HR_TRY(get_int(j, "intermediate_size", -1, &c->intermediate));
    HR_TRY(get_int(j, "max_position_embeddings", 4096, &c->max_pos));
    const char *need[] = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size"};
    if (c->arch == HR_ARCH_QWEN3_5_MOE && c->intermediate < 0) c->intermediate = 0; /* all-MoE */
    int vals[] = {c->vocab, c->hidden, c->n_layers, c->n_heads,
                  c->intermediate ? c->intermediate : 1};
    for (int i = 0; i < 5; i++)
        if (vals[i] <= 0) return hr_errf("config.json: \"%s\" must be a positive integer", need[i]);
    if (c->n_layers > HR_MAX_LAYERS)
        return hr_errf("config.json: more than %d layers", HR_MAX_LAYERS);
    if (c->n_kv_heads <= 0 || c->n_heads % c->n_kv_heads != 0)
        return hr_errf(
            "config.json: num_key_value_heads (%d) does not divide num_attention_heads (%d)",
            c->n_kv_heads, c->n_heads);
    int hd_default =
        c->arch >= HR_ARCH_QWEN3 && !json_object_get(j, "head_dim") ? 128 : c->hidden / c->n_heads;
    HR_TRY(get_int(j, "head_dim", hd_default, &c->head_dim));
    if (c->head_dim <= 0 || c->head_dim % 2)
        return hr_errf("config.json: head_dim must be even and positive");
    return NULL;
}

static hr_err *parse_flags(const json_t *j, hr_model_config *c) {
    int attn_bias;
    HR_TRY(hr_json_bool(j, "attention_bias", 0, "config.json", &attn_bias));
    c->qkv_bias = c->arch == HR_ARCH_QWEN2 ? 1 : attn_bias;
    c->o_bias = c->arch == HR_ARCH_QWEN2 ? 0 : attn_bias;
    HR_TRY(hr_json_bool(j, "mlp_bias", 0, "config.json", &c->mlp_bias));
    c->qk_norm = c->arch >= HR_ARCH_QWEN3;
    HR_TRY(hr_json_bool(j, "tie_word_embeddings", 0, "config.json", &c->tie_embeddings));
    HR_TRY(hr_json_num(j, "rms_norm_eps", 1e-6, "config.json", &c->rms_eps));
    const char *act;
    HR_TRY(hr_json_str(j, "hidden_act", "silu", "config.json", &act));
    if (strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0)
        c->act = HR_ACT_SILU;
    else if (strcmp(act, "gelu_pytorch_tanh") == 0)
        c->act = HR_ACT_GELU_TANH;
    else
        return hr_errf("config.json: unsupported hidden_act \"%s\"", act);
    int64_t sw;
    HR_TRY(hr_json_int(j, "sliding_window", 0, "config.json", &sw));
    c->sliding_window = sw > 0 && sw < (1 << 30) ? (int)sw : 0;
    return NULL;
}

static hr_err *parse_special_ids(const json_t *j, hr_model_config *c) {
    int n = 0, bos[HR_MAX_EOS];
    HR_TRY(hr_err_wrap(parse_ids(j, "bos_token_id", bos, &n, 1), "config.json: "));
    if (n) c->bos_id = bos[0];
    HR_TRY(hr_err_wrap(parse_ids(j, "eos_token_id", c->eos_ids, &c->n_eos, HR_MAX_EOS),
                       "config.json: "));
    n = 0;
    int pad[1];
    HR_TRY(hr_err_wrap(parse_ids(j, "pad_token_id", pad, &n, 1), "config.json: "));
    if (n) c->pad_id = pad[0];
    return NULL;
}

static hr_err *parse_config(const json_t *j, hr_model_config *c) {
    memset(c, 0, sizeof *c);
    c->bos_id = c->pad_id = -1;
    c->gen = (hr_gen_defaults){
        .temperature = 1.0, .top_p = 1.0, .typical_p = 1.0, .repetition_penalty = 1.0};
    if (!json_is_object(j)) return hr_errf("config.json: not a JSON object");
    snprintf(c->prefix, sizeof c->prefix, "model.");
    const json_t *top = j;
    j = hr_config_text_part(j, c);
    HR_TRY(parse_arch(j, c));
    HR_TRY(parse_dims(j, c));
    HR_TRY(parse_flags(j, c));
    HR_TRY(parse_layer_types(j, c));
    HR_TRY(parse_rope(j, c));
    HR_TRY(parse_special_ids(j, c));
    c->embed_scale = 1.0;
    for (int i = 0; i < c->n_layers; i++) {
        c->layer_head_dim[i] = c->head_dim;
        c->kv_source[i] = i;
    }
    if (c->arch == HR_ARCH_GEMMA3 || c->arch == HR_ARCH_GEMMA4) HR_TRY(hr_config_gemma(j, c));
    HR_TRY(hr_config_parse_hybrid(j, c));
    if (top != j)
        HR_TRY(hr_json_bool(top, "tie_word_embeddings", c->tie_embeddings, "config.json",
                            &c->tie_embeddings));
    return NULL;
}

static hr_err *parse_generation(const json_t *g, hr_model_config *c) {
    hr_gen_defaults *d = &c->gen;
    const char *w = "generation_config.json";
    HR_TRY(hr_json_num(g, "temperature", d->temperature, w, &d->temperature));
    HR_TRY(hr_json_num(g, "top_p", d->top_p, w, &d->top_p));
    HR_TRY(hr_json_num(g, "typical_p", d->typical_p, w, &d->typical_p));
    int64_t k;
    HR_TRY(hr_json_int(g, "top_k", d->top_k, w, &k));
    d->top_k = k > 0 && k < (1 << 30) ? (int)k : 0;
    HR_TRY(hr_json_bool(g, "do_sample", d->do_sample, w, &d->do_sample));
    HR_TRY(hr_json_num(g, "repetition_penalty", d->repetition_penalty, w, &d->repetition_penalty));
    if (json_object_get(g, "eos_token_id"))
        HR_TRY(hr_err_wrap(parse_ids(g, "eos_token_id", c->eos_ids, &c->n_eos, HR_MAX_EOS),
                           "%s: ", w));
    return NULL;
}

hr_err *hr_config_parse(const char *what, const char *text, hr_model_config *cfg) {
    json_t *j;
    HR_TRY(hr_json_load_buf(what, text, strlen(text), &j));
    hr_err *err = parse_config(j, cfg);
    json_decref(j);
    return err;
}

hr_err *hr_config_load(const char *dir, hr_model_config *cfg) {
    char *path = hr_path_join(dir, "config.json");
    if (!path) return hr_err_oom();
    json_t *j;
    hr_err *err = hr_json_load_file(path, &j);
    free(path);
    if (err) return err;
    err = parse_config(j, cfg);
    json_decref(j);
    if (err) return err;
    char *gpath = hr_path_join(dir, "generation_config.json");
    if (!gpath) return hr_err_oom();
    if (hr_file_exists(gpath)) {
        json_t *g;
        err = hr_json_load_file(gpath, &g);
        if (!err) {
            err = parse_generation(g, cfg);
            json_decref(g);
        }
    }
    free(gpath);
    return err;
}
