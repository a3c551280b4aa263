/* tokenizer_config.json and friends: BOS/EOS (a string or an AddedToken object),
 * add_bos_token/add_eos_token, clean_up_tokenization_spaces, the chat template(s), the
 * stop ids of generation_config.json, and the pipeline transformers builds for
 * LlamaTokenizer (v5 replaces tokenizer.json's normalizer with a Metaspace pre-tokenizer). */
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "template/template.h"
#include "tokenizer/tok_internal.h"

/* Loads dir/name if it exists; *out stays NULL when it does not. Numbers load as reals:
 * configs hold integers too big for jansson (model_max_length = 1e30). */
static hr_err *load_optional(const char *dir, const char *name, json_t **out) {
    *out = NULL;
    char *path = hr_path_join(dir, name);
    if (!path) return hr_err_oom();
    hr_err *e = NULL;
    if (hr_file_exists(path)) e = hr_json_load_file_flags(path, JSON_DECODE_INT_AS_REAL, out);
    free(path);
    return e;
}

static const char *token_content(json_t *v) {
    if (json_is_string(v)) return json_string_value(v);
    return json_string_value(json_object_get(v, "content"));
}

static int32_t id_of(const hr_tokenizer *t, const char *s) {
    return s ? hr_tokenizer_token_id(t, s) : -1;
}

hr_err *hr_tok_stop_push(hr_tokenizer *t, int32_t id) {
    if (id < 0) return NULL;
    for (int i = 0; i < t->n_stop; i++)
        if (t->stop_ids[i] == id) return NULL;
    int32_t *v = realloc(t->stop_ids, sizeof *v * (size_t)(t->n_stop + 1));
    if (!v) return hr_err_oom();
    t->stop_ids = v;
    v[t->n_stop++] = id;
    return NULL;
}

static hr_err *special_tokens(hr_tokenizer *t, json_t *cfg, json_t *map) {
    const char *bos = token_content(json_object_get(cfg, "bos_token"));
    const char *eos = token_content(json_object_get(cfg, "eos_token"));
    if (!bos) bos = token_content(json_object_get(map, "bos_token"));
    if (!eos) eos = token_content(json_object_get(map, "eos_token"));
    if ((bos && !(t->bos = strdup(bos))) || (eos && !(t->eos = strdup(eos)))) return hr_err_oom();
    t->bos_id = id_of(t, bos);
    t->eos_id = id_of(t, eos);
    return hr_tok_stop_push(t, t->eos_id);
}

/* transformers adds BOS/EOS per add_bos_token/add_eos_token when the config sets them;
 * otherwise the post-processor of tokenizer.json decides. */
static hr_err *bos_eos_flags(hr_tokenizer *t, json_t *cfg) {
    json_t *ab = json_object_get(cfg, "add_bos_token"), *ae = json_object_get(cfg, "add_eos_token");
    if (!json_is_boolean(ab) && !json_is_boolean(ae)) return NULL;
    free(t->prefix_ids);
    free(t->suffix_ids);
    t->prefix_ids = t->suffix_ids = NULL;
    t->n_prefix = t->n_suffix = 0;
    if (json_is_true(ab) && t->bos_id >= 0) {
        if (!(t->prefix_ids = malloc(sizeof(int32_t)))) return hr_err_oom();
        t->prefix_ids[t->n_prefix++] = t->bos_id;
    }
    if (json_is_true(ae) && t->eos_id >= 0) {
        if (!(t->suffix_ids = malloc(sizeof(int32_t)))) return hr_err_oom();
        t->suffix_ids[t->n_suffix++] = t->eos_id;
    }
    return NULL;
}

static hr_err *generation_stops(hr_tokenizer *t, const char *dir) {
    json_t *gen;
    HR_TRY(load_optional(dir, "generation_config.json", &gen));
    json_t *v = json_object_get(gen, "eos_token_id");
    hr_err *e = NULL;
    if (json_is_number(v)) e = hr_tok_stop_push(t, (int32_t)json_number_value(v));
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v) && !e; i++)
        e = hr_tok_stop_push(t, (int32_t)json_number_value(json_array_get(v, i)));
    json_decref(gen);
    return e;
}

static hr_err *template_file(hr_tokenizer *t, const char *dir) {
    char *path = hr_path_join(dir, "chat_template.jinja");
    if (!path) return hr_err_oom();
    hr_err *e = NULL;
    if (hr_file_exists(path)) {
        size_t len;
        e = hr_read_file_max(path, HR_TEMPLATE_MAX_SOURCE, &t->template_file, &len);
    }
    free(path);
    return e;
}

/* transformers v5 rebuilds LlamaTokenizer's pipeline: no normalizer, a Metaspace
 * pre-tokenizer without splitting, prepending per legacy/add_prefix_space. */
static hr_err *llama_pipeline(hr_tokenizer *t, json_t *cfg) {
    const char *cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
    if (!cls || (strcmp(cls, "LlamaTokenizer") != 0 && strcmp(cls, "LlamaTokenizerFast") != 0))
        return NULL;
    json_t *legacy = json_object_get(cfg, "legacy"),
           *aps = json_object_get(cfg, "add_prefix_space");
    hr_prepend_scheme ps = json_is_false(aps)      ? HR_PREPEND_NEVER
                           : json_is_false(legacy) ? HR_PREPEND_FIRST
                                                   : HR_PREPEND_ALWAYS;
    hr_pre_step st = {
        .kind = HR_PRE_METASPACE, .replacement = strdup("\xE2\x96\x81"), .prepend = ps};
    hr_pipeline *p = &t->pipe[1];
    p->pre = malloc(sizeof *p->pre);
    if (!st.replacement || !p->pre) {
        free(st.replacement);
        return hr_err_oom();
    }
    p->pre[p->n_pre++] = st;
    return NULL;
}

hr_err *hr_tok_apply_config(hr_tokenizer *t, json_t *cfg, json_t *map) {
    HR_TRY(special_tokens(t, cfg, map));
    HR_TRY(bos_eos_flags(t, cfg));
    json_t *ct = json_object_get(cfg, "chat_template");
    if (json_is_string(ct) || json_is_array(ct)) t->templates = json_incref(ct);
    HR_TRY(llama_pipeline(t, cfg));
    t->cleanup_spaces = json_is_true(json_object_get(cfg, "clean_up_tokenization_spaces"));
    return NULL;
}

hr_err *hr_tok_load_config(hr_tokenizer *t, const char *dir) {
    json_t *cfg, *map = NULL;
    HR_TRY(load_optional(dir, "tokenizer_config.json", &cfg));
    hr_err *e = load_optional(dir, "special_tokens_map.json", &map);
    if (!e) e = hr_tok_apply_config(t, cfg, map);
    if (!e) e = generation_stops(t, dir);
    if (!e) e = template_file(t, dir);
    json_decref(cfg);
    json_decref(map);
    return e;
}
