/* OpenAI request bodies: POST /v1/chat/completions (messages normalized for the chat
 * template: text-part arrays joined into strings, tool-call arguments parsed into
 * objects) and POST /v1/completions (a text prompt or a token array). */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "server/request.h"

/* Joins [{"type":"text","text":...}] into one string (a string stays as it is). */
static hr_err *content_text(const json_t *c, const char *where, json_t **out) {
    if (json_is_string(c)) {
        *out = json_incref((json_t *)c);
        return NULL;
    }
    if (!json_is_array(c))
        return hr_errf("%s.content must be a string or an array of parts", where);
    size_t cap = 1, i;
    const json_t *p;
    json_array_foreach(c, i, p) {
        const char *type = json_string_value(json_object_get(p, "type"));
        const json_t *t = json_object_get(p, "text");
        if (!type || strcmp(type, "text") || !json_is_string(t))
            return hr_errf("%s.content[%zu]: only {\"type\": \"text\", \"text\": string} parts "
                           "are supported",
                           where, i);
        cap += json_string_length(t);
    }
    char *buf = malloc(cap), *w = buf;
    if (!buf) return hr_err_oom();
    json_array_foreach(c, i, p) {
        const json_t *t = json_object_get(p, "text");
        memcpy(w, json_string_value(t), json_string_length(t));
        w += json_string_length(t);
    }
    *out = json_stringn_nocheck(buf, (size_t)(w - buf));
    free(buf);
    return *out ? NULL : hr_err_oom();
}

static hr_err *norm_tool_call(const json_t *tc, const char *where, size_t i, json_t *out) {
    const json_t *fn = json_object_get(tc, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    const json_t *args = json_object_get(fn, "arguments");
    if (!name) return hr_errf("%s.tool_calls[%zu].function.name must be a string", where, i);
    json_t *a = NULL;
    if (json_is_string(args))
        a = json_loads(json_string_value(args), JSON_DECODE_ANY, NULL);
    else if (json_is_object(args))
        a = json_incref((json_t *)args);
    if (!json_is_object(a)) {
        json_decref(a);
        return hr_errf("%s.tool_calls[%zu].function.arguments must be a JSON object (or a "
                       "string holding one)",
                       where, i);
    }
    json_t *c = hr_json_deep_copy(tc);
    hr_err *e = hr_json_set_new(json_object_get(c, "function"), "arguments", a);
    if (!e && !json_object_get(c, "type")) e = hr_json_set_new(c, "type", json_string("function"));
    if (e) return json_decref(c), e;
    return hr_json_append_new(out, c);
}

/* Copies tool_calls with function.arguments as an object, as chat templates expect. */
static hr_err *norm_tool_calls(const json_t *tcs, const char *where, json_t **out) {
    if (!json_is_array(tcs)) return hr_errf("%s.tool_calls must be an array", where);
    json_t *calls = json_array();
    if (!calls) return hr_err_oom();
    size_t i;
    const json_t *tc;
    json_array_foreach(tcs, i, tc) {
        hr_err *e = norm_tool_call(tc, where, i, calls);
        if (e) return json_decref(calls), e;
    }
    *out = calls;
    return NULL;
}

static hr_err *norm_message(const json_t *m, size_t i, json_t *out) {
    char where[48];
    snprintf(where, sizeof where, "messages[%zu]", i);
    if (!json_is_object(m)) return hr_errf("%s must be an object", where);
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role || (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant") &&
                  strcmp(role, "tool") && strcmp(role, "developer")))
        return hr_errf("%s.role must be one of system, developer, user, assistant, tool", where);
    json_t *n = json_object();
    HR_TRY(hr_json_append_new(out, n));
    HR_TRY(hr_json_set_new(n, "role", json_string(strcmp(role, "developer") ? role : "system")));
    const json_t *c = json_object_get(m, "content");
    const json_t *tcs = json_object_get(m, "tool_calls");
    int is_asst = !strcmp(role, "assistant");
    if (c && !json_is_null(c)) {
        json_t *t = NULL;
        HR_TRY(content_text(c, where, &t));
        HR_TRY(hr_json_set_new(n, "content", t));
    } else if (!is_asst || !tcs) {
        return hr_errf("%s.content is required", where);
    } else {
        HR_TRY(hr_json_set_new(n, "content", json_string(""))); /* templates: text */
    }
    if (tcs && !json_is_null(tcs)) {
        if (!is_asst) return hr_errf("%s.tool_calls is only allowed on assistant messages", where);
        json_t *t = NULL;
        HR_TRY(norm_tool_calls(tcs, where, &t));
        HR_TRY(hr_json_set_new(n, "tool_calls", t));
    }
    if (!strcmp(role, "tool")) {
        const char *id = json_string_value(json_object_get(m, "tool_call_id"));
        if (!id) return hr_errf("%s.tool_call_id must be a string", where);
        HR_TRY(hr_json_set_new(n, "tool_call_id", json_string(id)));
    }
    const char *name = json_string_value(json_object_get(m, "name"));
    if (name) HR_TRY(hr_json_set_new(n, "name", json_string(name)));
    const char *rc = json_string_value(json_object_get(m, "reasoning_content"));
    if (rc) return hr_json_set_new(n, "reasoning_content", json_string(rc));
    return NULL;
}

/* tool_choice: "auto" (the default), "none", "required" or {"type": "function",
 * "function": {"name"}}; *forced for the last two, *name for the named one. */
static hr_err *parse_tool_choice(const json_t *tc, int *none, int *forced, const char **name) {
    *none = *forced = 0;
    *name = NULL;
    if (!tc || json_is_null(tc)) return NULL;
    if (json_is_object(tc)) {
        const char *type = json_string_value(json_object_get(tc, "type"));
        *name = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
        if (!type || strcmp(type, "function") || !*name)
            return hr_errf("request: \"tool_choice\" object must be {\"type\": \"function\", "
                           "\"function\": {\"name\": string}}");
        *forced = 1;
        return NULL;
    }
    const char *s = json_string_value(tc);
    if (!s || (strcmp(s, "auto") && strcmp(s, "none") && strcmp(s, "required")))
        return hr_errf("request: \"tool_choice\" must be \"auto\", \"none\", \"required\" or "
                       "{\"type\": \"function\", \"function\": {\"name\": string}}");
    *none = !strcmp(s, "none");
    *forced = !strcmp(s, "required");
    return NULL;
}

static hr_err *parse_tools(const json_t *body, hr_api_request *r, json_t **tools) {
    const json_t *t = json_object_get(body, "tools");
    const char *name;
    int none, forced;
    *tools = NULL;
    HR_TRY(parse_tool_choice(json_object_get(body, "tool_choice"), &none, &forced, &name));
    if (none) return NULL;
    if (t && !json_is_null(t) && !json_is_array(t))
        return hr_errf("request: \"tools\" must be an array");
    size_t i;
    const json_t *x;
    json_array_foreach(t, i, x) {
        const char *type = json_string_value(json_object_get(x, "type"));
        const json_t *fn = json_object_get(x, "function");
        if (!type || strcmp(type, "function"))
            return hr_errf("tools[%zu].type must be \"function\"", i);
        if (!json_is_string(json_object_get(fn, "name")))
            return hr_errf("tools[%zu].function.name must be a string", i);
    }
    if (forced) HR_TRY(hr_set_tool_choice(r, t, name));
    if (!json_array_size(t)) return NULL;
    *tools = hr_json_deep_copy(t);
    r->use_tools = 1;
    return *tools ? NULL : hr_err_oom();
}

/* Fields common to chat and completions: model, n, stream, sampling, stop, the output's
 * constraint. */
static hr_err *parse_common(const json_t *body, const hr_request_limits *lim, hr_api_request *r) {
    if (!json_is_object(body)) return hr_errf("request body must be a JSON object");
    const char *model;
    HR_TRY(hr_json_str(body, "model", NULL, "request", &model));
    if (model && !(r->model = strdup(model))) return hr_err_oom();
    int64_t n;
    HR_TRY(hr_json_int(body, "n", 1, "request", &n));
    if (n < 1 || n > HR_MAX_CHOICES)
        return hr_errf("request: \"n\" must be in [1, %d], got %lld", HR_MAX_CHOICES, (long long)n);
    r->n = (int)n;
    HR_TRY(hr_json_bool(body, "stream", 0, "request", &r->stream));
    HR_TRY(hr_json_bool(body, "ignore_eos", 0, "request", &r->ignore_eos));
    const json_t *so = json_object_get(body, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return hr_errf("request: \"stream_options\" must be an object");
        HR_TRY(hr_json_bool(so, "include_usage", 0, "stream_options", &r->include_usage));
    }
    HR_TRY(hr_parse_sampling(body, lim, r));
    HR_TRY(hr_parse_output_spec(body, r->api, &r->output));
    return hr_parse_stop(body, "stop", r);
}

static hr_err *parse_chat_logprobs(const json_t *body, hr_api_request *r) {
    int64_t top;
    HR_TRY(hr_json_bool(body, "logprobs", 0, "request", &r->logprobs));
    HR_TRY(hr_json_int(body, "top_logprobs", 0, "request", &top));
    if (top < 0 || top > 20) return hr_errf("request: \"top_logprobs\" must be in [0, 20]");
    if (top && !r->logprobs) return hr_errf("request: \"top_logprobs\" needs \"logprobs\": true");
    r->top_logprobs = (int)top;
    return NULL;
}

static hr_err *parse_chat_kwargs(const json_t *body, hr_api_request *r, json_t **kwargs) {
    const json_t *k = json_object_get(body, "chat_template_kwargs");
    if (k && !json_is_null(k) && !json_is_object(k))
        return hr_errf("request: \"chat_template_kwargs\" must be an object");
    *kwargs = json_is_object(k) ? hr_json_deep_copy(k) : json_object();
    if (!*kwargs) return hr_err_oom();
    const char *effort;
    HR_TRY(hr_json_str(body, "reasoning_effort", NULL, "request", &effort));
    if (!effort) return NULL;
    if (strcmp(effort, "none") && strcmp(effort, "minimal") && strcmp(effort, "low") &&
        strcmp(effort, "medium") && strcmp(effort, "high") && strcmp(effort, "xhigh"))
        return hr_errf(
            "request: \"reasoning_effort\" must be none, minimal, low, medium, high or xhigh");
    if (!(r->reasoning_effort = strdup(effort))) return hr_err_oom();
    HR_TRY(hr_json_set_new(*kwargs, "reasoning_effort", json_string(effort)));
    if (!strcmp(effort, "none") && !json_object_get(*kwargs, "enable_thinking"))
        return hr_json_set_new(*kwargs, "enable_thinking", json_false());
    return NULL;
}

static hr_err *parse_chat(const json_t *body, const hr_request_limits *lim, hr_api_request *r) {
    HR_TRY(parse_common(body, lim, r));
    HR_TRY(hr_parse_max_tokens(body, "max_tokens", 0, lim, r));
    if (!r->max_tokens) HR_TRY(hr_parse_max_tokens(body, "max_completion_tokens", 0, lim, r));
    HR_TRY(parse_chat_logprobs(body, r));
    const json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs)) return hr_errf("request: \"messages\" must be an array");
    if (json_array_size(msgs) == 0) return hr_errf("request: \"messages\" must not be empty");
    HR_TRY(hr_check_conversation_size(msgs, "messages", "content"));
    json_t *norm = json_array(), *tools = NULL, *kwargs = NULL;
    size_t i;
    const json_t *m;
    hr_err *e = norm ? NULL : hr_err_oom();
    json_array_foreach(msgs, i, m) if (!e) e = norm_message(m, i, norm);
    if (!e) e = parse_tools(body, r, &tools);
    if (!e) e = parse_chat_kwargs(body, r, &kwargs);
    return hr_set_chat(r, e, norm, tools, kwargs);
}

hr_err *hr_parse_chat_request(const json_t *body, const hr_request_limits *lim,
                              hr_api_request **out) {
    return hr_parse_request(HR_API_CHAT, parse_chat, body, lim, out);
}

static hr_err *parse_prompt_ids(const json_t *p, const hr_request_limits *lim, hr_api_request *r) {
    if (!(r->prompt_ids = malloc((json_array_size(p) + 1) * sizeof *r->prompt_ids)))
        return hr_err_oom();
    size_t i;
    const json_t *v;
    json_array_foreach(p, i, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id > INT32_MAX || (lim->vocab_size && id >= lim->vocab_size))
            return hr_errf("request: \"prompt\"[%zu] is not a token id (valid ids are 0..%d)", i,
                           lim->vocab_size ? lim->vocab_size - 1 : INT32_MAX);
        r->prompt_ids[r->n_prompt_ids++] = (int32_t)id;
    }
    return NULL;
}

static hr_err *parse_prompt(const json_t *body, const hr_request_limits *lim, hr_api_request *r) {
    const json_t *p = json_object_get(body, "prompt");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
        p = json_array_get(p, 0);
    if (json_is_string(p)) {
        if (!json_string_length(p)) return hr_errf("request: \"prompt\" must not be empty");
        r->prompt = strdup(json_string_value(p));
        return r->prompt ? NULL : hr_err_oom();
    }
    if (json_is_array(p) && json_is_string(json_array_get(p, 0)))
        return hr_errf("request: \"prompt\" holds several prompts; send one prompt per request");
    if (!json_is_array(p) || !json_array_size(p))
        return hr_errf("request: \"prompt\" must be a non-empty string or array of token ids "
                       "(one prompt per request)");
    return parse_prompt_ids(p, lim, r);
}

static hr_err *parse_completion(const json_t *body, const hr_request_limits *lim,
                                hr_api_request *r) {
    HR_TRY(parse_common(body, lim, r));
    HR_TRY(hr_parse_max_tokens(body, "max_tokens", 0, lim, r));
    if (!r->max_tokens) /* OpenAI's default for completions */
        r->max_tokens = lim->max_tokens_limit < 16 ? lim->max_tokens_limit : 16;
    int64_t lp;
    HR_TRY(hr_json_int(body, "logprobs", 0, "request", &lp));
    if (lp < 0 || lp > 20) return hr_errf("request: \"logprobs\" must be in [0, 20]");
    r->logprobs = json_is_integer(json_object_get(body, "logprobs"));
    r->top_logprobs = (int)lp;
    int echo;
    HR_TRY(hr_json_bool(body, "echo", 0, "request", &echo));
    if (echo) return hr_errf("request: \"echo\" is not supported");
    return parse_prompt(body, lim, r);
}

hr_err *hr_parse_completion_request(const json_t *body, const hr_request_limits *lim,
                                    hr_api_request **out) {
    return hr_parse_request(HR_API_COMPLETION, parse_completion, body, lim, out);
}
