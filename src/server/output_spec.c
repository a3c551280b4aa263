/* The fields that constrain a request's output, for every API, into one hr_output_spec:
 * OpenAI response_format (text, json_object, json_schema) on chat and completions,
 * Responses text.format, Anthropic output_format / output_config.format (json_schema),
 * llama.cpp's grammar and json_schema, vLLM's guided_json / guided_regex / guided_choice /
 * guided_grammar and structured_outputs {json, regex, choice, grammar}. At most one may
 * constrain a request; each bad value is an error naming its field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "server/request.h"

void hr_output_spec_free(hr_output_spec *s) {
    json_decref(s->value);
    free(s->text);
    memset(s, 0, sizeof *s);
}

/* Takes the constraint (kind, value or text) from field, or errors when one is set. */
static hr_err *set_spec(hr_output_spec *s, const char *field, hr_output_kind kind,
                        const json_t *value, const char *text) {
    if (s->kind != HR_OUT_FREE)
        return hr_errf("request: \"%s\" and \"%s\" both constrain the output; give one", s->field,
                       field);
    s->kind = kind;
    snprintf(s->field, sizeof s->field, "%s", field);
    if (value && !(s->value = hr_json_deep_copy(value))) return hr_err_oom();
    if (text && !(s->text = strdup(text))) return hr_err_oom();
    return NULL;
}

/* A schema given as an object, or as a JSON string holding one (vLLM's guided_json). */
static hr_err *schema_value(const json_t *v, const char *field, json_t **out) {
    *out = NULL;
    if (json_is_object(v)) {
        *out = json_incref((json_t *)v);
        return NULL;
    }
    if (json_is_true(v)) { /* the schema that allows everything */
        *out = json_object();
        return *out ? NULL : hr_err_oom();
    }
    if (json_is_string(v)) {
        json_error_t je;
        *out = json_loadb(json_string_value(v), json_string_length(v), 0, &je);
        if (*out && json_is_object(*out)) return NULL;
        json_decref(*out);
        *out = NULL;
        return hr_errf("request: \"%s\" is not a JSON schema object%s%s", field,
                       je.text[0] ? ": " : "", je.text);
    }
    return hr_errf("request: \"%s\" must be a JSON schema object", field);
}

static hr_err *set_schema(hr_output_spec *s, const char *field, const json_t *v) {
    json_t *schema;
    HR_TRY(schema_value(v, field, &schema));
    hr_err *e = set_spec(s, field, HR_OUT_JSON_SCHEMA, schema, NULL);
    json_decref(schema);
    return e;
}

static hr_err *set_text(hr_output_spec *s, const char *field, hr_output_kind kind,
                        const json_t *v) {
    if (!json_is_string(v) || !json_string_length(v))
        return hr_errf("request: \"%s\" must be a non-empty string", field);
    return set_spec(s, field, kind, NULL, json_string_value(v));
}

static hr_err *set_choice(hr_output_spec *s, const char *field, const json_t *v) {
    size_t i, n = json_array_size(v);
    if (!json_is_array(v) || !n)
        return hr_errf("request: \"%s\" must be a non-empty array of strings", field);
    for (i = 0; i < n; i++)
        if (!json_is_string(json_array_get(v, i)))
            return hr_errf("request: \"%s\"[%zu] must be a string", field, i);
    return set_spec(s, field, HR_OUT_CHOICE, v, NULL);
}

/* {"type": "text" | "json_object" | "json_schema", ...}: OpenAI's response_format (schema
 * under "json_schema"), Responses' text.format and Anthropic's output_format (schema at the
 * top; json_object also takes llama.cpp's "schema" there). */
static hr_err *parse_format(hr_output_spec *s, const char *field, const json_t *f, int anthropic) {
    if (!f || json_is_null(f)) return NULL;
    if (!json_is_object(f)) return hr_errf("request: \"%s\" must be an object", field);
    const char *type = json_string_value(json_object_get(f, "type"));
    char sub[64];
    if (!type) return hr_errf("request: \"%s\".type must be a string", field);
    if (!anthropic && !strcmp(type, "text")) return NULL;
    if (!anthropic && !strcmp(type, "json_object")) {
        const json_t *schema = json_object_get(f, "schema");
        snprintf(sub, sizeof sub, "%s.schema", field);
        if (schema && !json_is_null(schema)) return set_schema(s, sub, schema);
        return set_spec(s, field, HR_OUT_JSON_OBJECT, NULL, NULL);
    }
    if (strcmp(type, "json_schema"))
        return hr_errf(
            "request: \"%s\".type must be %s, got \"%s\"", field,
            anthropic ? "\"json_schema\"" : "\"text\", \"json_object\" or \"json_schema\"", type);
    const json_t *holder = f, *js = json_object_get(f, "json_schema");
    if (!anthropic && js && !json_is_null(js)) { /* OpenAI chat: {"json_schema": {"schema"}} */
        if (!json_is_object(js))
            return hr_errf("request: \"%s\".json_schema must be an object", field);
        holder = js;
        snprintf(sub, sizeof sub, "%s.json_schema.schema", field);
    } else {
        snprintf(sub, sizeof sub, "%s.schema", field);
    }
    const json_t *schema = json_object_get(holder, "schema");
    if (!schema || json_is_null(schema)) return set_spec(s, field, HR_OUT_JSON_OBJECT, NULL, NULL);
    return set_schema(s, sub, schema);
}

/* llama.cpp's and vLLM's fields, on the chat and completion routes. */
static hr_err *parse_extensions(hr_output_spec *s, const json_t *body) {
    const json_t *v;
    if ((v = json_object_get(body, "json_schema")) && !json_is_null(v))
        HR_TRY(set_schema(s, "json_schema", v));
    if ((v = json_object_get(body, "grammar")) && !json_is_null(v))
        HR_TRY(set_text(s, "grammar", HR_OUT_GBNF, v));
    if ((v = json_object_get(body, "guided_json")) && !json_is_null(v))
        HR_TRY(set_schema(s, "guided_json", v));
    if ((v = json_object_get(body, "guided_regex")) && !json_is_null(v))
        HR_TRY(set_text(s, "guided_regex", HR_OUT_REGEX, v));
    if ((v = json_object_get(body, "guided_grammar")) && !json_is_null(v))
        HR_TRY(set_text(s, "guided_grammar", HR_OUT_GBNF, v));
    if ((v = json_object_get(body, "guided_choice")) && !json_is_null(v))
        HR_TRY(set_choice(s, "guided_choice", v));
    const json_t *so = json_object_get(body, "structured_outputs");
    if (!so || json_is_null(so)) return NULL;
    if (!json_is_object(so)) return hr_errf("request: \"structured_outputs\" must be an object");
    if ((v = json_object_get(so, "json")) && !json_is_null(v))
        HR_TRY(set_schema(s, "structured_outputs.json", v));
    if ((v = json_object_get(so, "regex")) && !json_is_null(v))
        HR_TRY(set_text(s, "structured_outputs.regex", HR_OUT_REGEX, v));
    if ((v = json_object_get(so, "grammar")) && !json_is_null(v))
        HR_TRY(set_text(s, "structured_outputs.grammar", HR_OUT_GBNF, v));
    if ((v = json_object_get(so, "choice")) && !json_is_null(v))
        HR_TRY(set_choice(s, "structured_outputs.choice", v));
    return NULL;
}

hr_err *hr_parse_output_spec(const json_t *body, hr_api_kind api, hr_output_spec *s) {
    hr_err *e = NULL;
    switch (api) {
    case HR_API_CHAT:
    case HR_API_COMPLETION:
        e = parse_format(s, "response_format", json_object_get(body, "response_format"), 0);
        if (!e) e = parse_extensions(s, body);
        break;
    case HR_API_RESPONSES: {
        const json_t *t = json_object_get(body, "text");
        if (json_is_object(t)) e = parse_format(s, "text.format", json_object_get(t, "format"), 0);
        break;
    }
    case HR_API_MESSAGES: {
        e = parse_format(s, "output_format", json_object_get(body, "output_format"), 1);
        const json_t *oc = json_object_get(body, "output_config");
        if (!e && oc && !json_is_null(oc) && !json_is_object(oc))
            e = hr_errf("request: \"output_config\" must be an object");
        if (!e && json_is_object(oc))
            e = parse_format(s, "output_config.format", json_object_get(oc, "format"), 1);
        break;
    }
    }
    if (e) hr_output_spec_free(s);
    return e;
}
