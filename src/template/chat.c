/* Loading a model's chat template (chat_template.jinja, or tokenizer_config.json's
 * chat_template: a string or a list of {name, template}) with its special tokens, and
 * rendering a request the way transformers' apply_chat_template does. */
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "template/template.h"

static const char *const no_template_msg =
    "Cannot use chat template functions because tokenizer.chat_template is not set and no "
    "template argument was passed! For information about writing templates and setting the "
    "tokenizer.chat_template attribute, please see the documentation at "
    "https://huggingface.co/docs/transformers/main/en/chat_templating";

/* A special token: a string, or an AddedToken object {"content": ...}. */
static char *token_str(const json_t *cfg, const char *key) {
    const json_t *v = json_object_get(cfg, key);
    if (json_is_object(v)) v = json_object_get(v, "content");
    return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

static const char *template_from_config(const json_t *cfg) {
    const json_t *t = json_object_get(cfg, "chat_template");
    if (json_is_string(t)) return json_string_value(t);
    size_t i;
    const json_t *item;
    json_array_foreach(t, i, item) {
        const json_t *name = json_object_get(item, "name");
        if (json_is_string(name) && !strcmp(json_string_value(name), "default"))
            return json_string_value(json_object_get(item, "template"));
    }
    return NULL;
}

static hr_err *parse_file(const char *path, hr_template **out) {
    char *src;
    size_t n;
    HR_TRY(hr_read_file_max(path, HR_TEMPLATE_MAX_SOURCE, &src, &n));
    hr_err *e = hr_template_parse(src, out);
    free(src);
    return hr_err_wrap(e, "%s: ", path);
}

static hr_err *load_from_dir(const char *dir, const json_t *cfg, hr_template **out) {
    char *jinja = hr_path_join(dir, "chat_template.jinja");
    if (!jinja) return hr_err_oom();
    hr_err *e = NULL;
    if (hr_file_exists(jinja))
        e = parse_file(jinja, out);
    else if (cfg && template_from_config(cfg))
        e = hr_err_wrap(hr_template_parse(template_from_config(cfg), out),
                        "tokenizer_config.json chat_template: ");
    else
        e = hr_errf("%s", no_template_msg);
    free(jinja);
    return e;
}

/* Configs hold integers beyond 64 bits (model_max_length), so numbers load as reals. */
static hr_err *load_config(const char *path, json_t **out) {
    return hr_json_load_file_flags(path, JSON_DECODE_INT_AS_REAL, out);
}

hr_err *hr_chat_template_load(const char *dir, const char *template_path, hr_chat_template *out) {
    memset(out, 0, sizeof *out);
    char *cfg_path = hr_path_join(dir, "tokenizer_config.json");
    if (!cfg_path) return hr_err_oom();
    json_t *cfg = NULL;
    hr_err *e = NULL;
    if (hr_file_exists(cfg_path))
        e = load_config(cfg_path, &cfg);
    else if (!template_path && !hr_file_exists(dir))
        e = hr_errf("%s: no such directory", dir);
    free(cfg_path);
    if (!e)
        e = template_path ? parse_file(template_path, &out->tpl)
                          : load_from_dir(dir, cfg, &out->tpl);
    if (!e && cfg) {
        out->bos_token = token_str(cfg, "bos_token");
        out->eos_token = token_str(cfg, "eos_token");
    }
    json_decref(cfg);
    if (e) hr_chat_template_free(out);
    return e;
}

hr_err *hr_chat_template_from(const char *source, const char *bos, const char *eos,
                              hr_chat_template *out) {
    memset(out, 0, sizeof *out);
    if (!source) return hr_errf("%s", no_template_msg);
    HR_TRY(hr_err_wrap(hr_template_parse(source, &out->tpl), "chat template: "));
    if ((bos && !(out->bos_token = strdup(bos))) || (eos && !(out->eos_token = strdup(eos)))) {
        hr_chat_template_free(out);
        return hr_err_oom();
    }
    return NULL;
}

void hr_chat_template_free(hr_chat_template *ct) {
    hr_template_free(ct->tpl);
    free(ct->bos_token);
    free(ct->eos_token);
    memset(ct, 0, sizeof *ct);
}

static hr_err *build_context(const hr_chat_template *ct, const json_t *req, json_t *ctx) {
    const json_t *msgs = json_object_get(req, "messages"), *tools = json_object_get(req, "tools");
    const json_t *agp = json_object_get(req, "add_generation_prompt"),
                 *kw = json_object_get(req, "kwargs");
    if (!json_is_array(msgs)) return hr_errf("request: \"messages\" must be an array");
    if (tools && !json_is_array(tools) && !json_is_null(tools))
        return hr_errf("request: \"tools\" must be an array");
    if (agp && !json_is_boolean(agp))
        return hr_errf("request: \"add_generation_prompt\" must be a boolean");
    if (kw && !json_is_object(kw) && !json_is_null(kw))
        return hr_errf("request: \"kwargs\" must be an object");
    int ok =
        !json_object_set(ctx, "messages", (json_t *)msgs) &&
        !json_object_set_new(ctx, "tools", tools ? hr_json_deep_copy(tools) : json_null()) &&
        !json_object_set_new(ctx, "documents", json_null()) &&
        !json_object_set_new(ctx, "add_generation_prompt", json_boolean(agp && json_is_true(agp)));
    if (ct->bos_token)
        ok = ok && !json_object_set_new(ctx, "bos_token", json_string(ct->bos_token));
    if (ct->eos_token)
        ok = ok && !json_object_set_new(ctx, "eos_token", json_string(ct->eos_token));
    if (json_is_object(kw)) ok = ok && !json_object_update(ctx, (json_t *)kw);
    return ok ? NULL : hr_err_oom();
}

hr_err *hr_chat_template_apply(const hr_chat_template *ct, const json_t *request, char **out,
                               int *raised) {
    *out = NULL;
    if (raised) *raised = 0;
    if (!json_is_object(request)) return hr_errf("request must be a JSON object");
    json_t *ctx = json_object();
    if (!ctx) return hr_err_oom();
    hr_err *e = build_context(ct, request, ctx);
    if (!e) e = hr_template_render(ct->tpl, ctx, out, raised);
    json_decref(ctx);
    return e;
}
