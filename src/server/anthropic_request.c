/* Anthropic POST /v1/messages bodies, normalized into the same chat-template input as
 * OpenAI chat: system (string or text blocks) becomes a system message, tool_use blocks
 * become assistant tool_calls, tool_result blocks become tool messages. */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "server/request.h"

/* Text of a string or of a block array's text blocks (other block types rejected
 * unless allow_tools, in which case they are skipped here). */
static hr_err *blocks_text(const json_t *c, const char *where, int allow_tools, json_t **out) {
    if (json_is_string(c)) {
        *out = json_incref((json_t *)c);
        return NULL;
    }
    if (!json_is_array(c))
        return hr_errf("%s must be a string or an array of content blocks", where);
    json_t *s = json_string("");
    size_t i;
    const json_t *b;
    json_array_foreach(c, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        const char *text = json_string_value(json_object_get(b, "text"));
        int is_tool = type && (!strcmp(type, "tool_use") || !strcmp(type, "tool_result"));
        if (type && !strcmp(type, "text") && text) {
            size_t n = json_string_length(s), m = strlen(text);
            char *buf = malloc(n + m + 1);
            if (!buf) return json_decref(s), hr_err_oom();
            memcpy(buf, json_string_value(s), n);
            memcpy(buf + n, text, m + 1);
            json_string_set(s, buf);
            free(buf);
        } else if (!(is_tool && allow_tools) && !(type && !strcmp(type, "thinking"))) {
            json_decref(s);
            return hr_errf("%s[%zu]: unsupported content block (type %s)", where, i,
                           type ? type : "missing");
        }
    }
    *out = s;
    return NULL;
}

static hr_err *tool_use_call(const json_t *b, const char *where, json_t *calls) {
    const char *id = json_string_value(json_object_get(b, "id"));
    const char *name = json_string_value(json_object_get(b, "name"));
    const json_t *input = json_object_get(b, "input");
    if (!id || !name || !json_is_object(input))
        return hr_errf("%s: tool_use needs string id and name and an object input", where);
    json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:O}}", "id", id, "type", "function",
                                           "function", "name", name, "arguments", input));
    return NULL;
}

static hr_err *tool_result_msg(const json_t *b, const char *where, json_t *out) {
    const char *id = json_string_value(json_object_get(b, "tool_use_id"));
    if (!id) return hr_errf("%s: tool_result needs a string tool_use_id", where);
    const json_t *c = json_object_get(b, "content");
    json_t *text = NULL;
    if (!c || json_is_null(c))
        text = json_string("");
    else
        HR_TRY(blocks_text(c, where, 0, &text));
    json_array_append_new(
        out, json_pack("{s:s, s:o, s:s}", "role", "tool", "content", text, "tool_call_id", id));
    return NULL;
}

/* Appends the template messages for one Anthropic message (tool results first, as they
 * answer the previous assistant turn). */
static hr_err *norm_message(const json_t *m, size_t i, json_t *out) {
    char where[48];
    snprintf(where, sizeof where, "messages[%zu]", i);
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role || (strcmp(role, "user") && strcmp(role, "assistant")))
        return hr_errf("%s.role must be \"user\" or \"assistant\"", where);
    const json_t *c = json_object_get(m, "content");
    json_t *text;
    HR_TRY(blocks_text(c, where, 1, &text));
    json_t *calls = json_array();
    size_t j, n_results = 0;
    const json_t *b;
    hr_err *e = NULL;
    if (json_is_array(c)) json_array_foreach(c, j, b) {
            const char *type = json_string_value(json_object_get(b, "type"));
            char w[80];
            snprintf(w, sizeof w, "%s.content[%zu]", where, j);
            if (e || !type) continue;
            if (!strcmp(type, "tool_use")) e = tool_use_call(b, w, calls);
            if (!strcmp(type, "tool_result")) e = tool_result_msg(b, w, out), n_results++;
        }
    if (!e && json_array_size(calls) && strcmp(role, "assistant"))
        e = hr_errf("%s: tool_use blocks belong to assistant messages", where);
    if (!e && (json_string_length(text) || json_array_size(calls) || !n_results)) {
        json_t *msg = json_pack("{s:s, s:O}", "role", role, "content", text);
        if (json_array_size(calls)) json_object_set(msg, "tool_calls", calls);
        json_array_append_new(out, msg);
    }
    json_decref(text);
    json_decref(calls);
    return e;
}

/* tool_choice {"type": "auto" | "any" | "none"} or {"type": "tool", "name"}; *forced for
 * any and tool, *name for tool. */
static hr_err *parse_tool_choice(const json_t *tc, int *none, int *forced, const char **name) {
    *none = *forced = 0;
    *name = NULL;
    if (!tc || json_is_null(tc)) return NULL;
    const char *type = json_string_value(json_object_get(tc, "type"));
    if (!type || (strcmp(type, "auto") && strcmp(type, "any") && strcmp(type, "tool") &&
                  strcmp(type, "none")))
        return hr_errf("request: \"tool_choice\".type must be \"auto\", \"any\", \"tool\" or "
                       "\"none\"");
    *none = !strcmp(type, "none");
    *forced = !strcmp(type, "any") || !strcmp(type, "tool");
    if (strcmp(type, "tool")) return NULL;
    *name = json_string_value(json_object_get(tc, "name"));
    return *name ? NULL
                 : hr_errf("request: \"tool_choice\" of type \"tool\" needs a string \"name\"");
}

/* Anthropic tools {"name", "description", "input_schema"} in the OpenAI form. */
static hr_err *convert_tools(const json_t *t, json_t **out) {
    if (!json_is_array(t)) return hr_errf("request: \"tools\" must be an array");
    *out = json_array();
    size_t i;
    const json_t *x;
    json_array_foreach(t, i, x) {
        const char *name = json_string_value(json_object_get(x, "name"));
        const json_t *schema = json_object_get(x, "input_schema");
        if (!name || !json_is_object(schema)) {
            json_decref(*out);
            *out = NULL;
            return hr_errf("tools[%zu] needs a string name and an object input_schema", i);
        }
        const char *desc = json_string_value(json_object_get(x, "description"));
        json_array_append_new(*out, json_pack("{s:s, s:{s:s, s:s, s:O}}", "type", "function",
                                              "function", "name", name, "description",
                                              desc ? desc : "", "parameters", schema));
    }
    return NULL;
}

static hr_err *norm_tools(const json_t *body, hr_api_request *r, json_t **tools) {
    const json_t *t = json_object_get(body, "tools");
    const char *name;
    int none, forced;
    *tools = NULL;
    HR_TRY(parse_tool_choice(json_object_get(body, "tool_choice"), &none, &forced, &name));
    if (none) return NULL;
    json_t *out = NULL;
    if (t && !json_is_null(t)) HR_TRY(convert_tools(t, &out));
    hr_err *e = forced ? hr_set_tool_choice(r, out, name) : NULL;
    if (e || !json_array_size(out)) return json_decref(out), e;
    *tools = out;
    r->use_tools = 1;
    return NULL;
}

static hr_err *parse_system(const json_t *body, json_t *msgs) {
    const json_t *s = json_object_get(body, "system");
    if (!s || json_is_null(s)) return NULL;
    json_t *text;
    HR_TRY(blocks_text(s, "request: \"system\"", 0, &text));
    json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "system", "content", text));
    return NULL;
}

static hr_err *parse_thinking(const json_t *body, json_t *kwargs) {
    const json_t *t = json_object_get(body, "thinking");
    if (!t || json_is_null(t)) return NULL;
    const char *type = json_string_value(json_object_get(t, "type"));
    if (!type || (strcmp(type, "enabled") && strcmp(type, "disabled")))
        return hr_errf("request: \"thinking\".type must be \"enabled\" or \"disabled\"");
    json_object_set_new(kwargs, "enable_thinking", json_boolean(!strcmp(type, "enabled")));
    return NULL;
}

static hr_err *parse_messages(const json_t *body, const hr_request_limits *lim, hr_api_request *r) {
    if (!json_is_object(body)) return hr_errf("request body must be a JSON object");
    const char *model;
    HR_TRY(hr_json_str(body, "model", NULL, "request", &model));
    if (model && !(r->model = strdup(model))) return hr_err_oom();
    HR_TRY(hr_parse_max_tokens(body, "max_tokens", 1, lim, r));
    HR_TRY(hr_json_bool(body, "stream", 0, "request", &r->stream));
    HR_TRY(hr_parse_sampling(body, r));
    HR_TRY(hr_parse_stop(body, "stop_sequences", r));
    const json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs)) return hr_errf("request: \"messages\" must be an array");
    if (!json_array_size(msgs)) return hr_errf("request: \"messages\" must not be empty");
    json_t *norm = json_array(), *tools = NULL, *kwargs = json_object();
    hr_err *e = parse_system(body, norm);
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) if (!e) e = norm_message(m, i, norm);
    if (!e) e = norm_tools(body, r, &tools);
    if (!e) e = parse_thinking(body, kwargs);
    return hr_set_chat(r, e, norm, tools, kwargs);
}

hr_err *hr_parse_messages_request(const json_t *body, const hr_request_limits *lim,
                                  hr_api_request **out) {
    return hr_parse_request(HR_API_MESSAGES, parse_messages, body, lim, out);
}
