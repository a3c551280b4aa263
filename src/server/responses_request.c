/* OpenAI Responses request bodies (POST /v1/responses) normalized into the chat-template
 * input every other route uses: input items become messages (consecutive function_call
 * items one assistant message with tool_calls, after the assistant text of the same turn;
 * function_call_output items tool messages; reasoning items the assistant's
 * reasoning_content), instructions a leading system message, flat function tools the
 * {"type": "function", "function": {...}} form; previous_response_id prepends the stored
 * conversation. Hosted tool types are accepted and not offered to the model. */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "server/request.h"
#include "server/response_store.h"
#include "server/text_join.h"

/* The conversation being built: messages in template form, and the assistant message of
 * the current turn while more of it (text, calls, reasoning) may follow. */
typedef struct {
    json_t *msgs;
    json_t *open; /* borrowed from msgs; NULL after a non-assistant message */
    /* the open message's content and reasoning so far, set into it when it closes */
    hr_text_join content, reasoning;
} conv;

static int is(const char *s, const char *t) { return s && !strcmp(s, t); }

static void join_string(hr_text_join *j, const json_t *s, const char *sep) {
    hr_text_join_add(j, sep, json_string_value(s), json_string_length(s));
}

/* The text of one content part: input_text / output_text / text, or a refusal. */
static hr_err *part_text(const json_t *p, const char *where, size_t i, const json_t **out) {
    const char *type = json_string_value(json_object_get(p, "type"));
    const char *key = is(type, "refusal") ? "refusal" : "text";
    if (is(type, "input_image") || is(type, "input_file") || is(type, "input_audio"))
        return hr_errf("%s.content[%zu] is an %s part; this server is text-only", where, i, type);
    if (!is(type, "input_text") && !is(type, "output_text") && !is(type, "text") &&
        !is(type, "refusal"))
        return hr_errf("%s.content[%zu].type must be input_text, output_text or text, got %s",
                       where, i, type ? type : "nothing");
    *out = json_object_get(p, key);
    if (!json_is_string(*out)) return hr_errf("%s.content[%zu].%s must be a string", where, i, key);
    return NULL;
}

/* A string, or the joined text of an array of text parts, as a new JSON string. */
static hr_err *content_text(const json_t *c, const char *where, const char *field, json_t **out) {
    if (json_is_string(c)) {
        *out = json_string(json_string_value(c));
        return *out ? NULL : hr_err_oom();
    }
    if (!json_is_array(c))
        return hr_errf("%s.%s must be a string or an array of text parts", where, field);
    hr_text_join acc = {0};
    size_t i;
    const json_t *p;
    json_array_foreach(c, i, p) {
        const json_t *t = NULL;
        hr_err *e = part_text(p, where, i, &t);
        if (e) return hr_text_join_free(&acc), e;
        join_string(&acc, t, "");
    }
    hr_err *e = NULL;
    *out = hr_text_join_take(&acc, &e);
    return e;
}

/* The assistant message of the current turn (*m, may be NULL), opened when there is none. */
static hr_err *assistant(conv *cv, json_t **m) {
    if (m) *m = cv->open;
    if (cv->open) return NULL;
    json_t *a = json_pack("{s:s, s:s}", "role", "assistant", "content", "");
    HR_TRY(hr_json_append_new(cv->msgs, a));
    if (m) *m = a;
    cv->open = a;
    return NULL;
}

/* The open assistant message is complete: its joined text goes in. */
static hr_err *close_open(conv *cv) {
    hr_err *e = NULL;
    if (cv->open && (cv->content.len || cv->content.oom)) {
        json_t *t = hr_text_join_take(&cv->content, &e);
        if (t) e = hr_json_set_new(cv->open, "content", t);
    }
    if (!e && cv->open && (cv->reasoning.len || cv->reasoning.oom)) {
        json_t *t = hr_text_join_take(&cv->reasoning, &e);
        if (t) e = hr_json_set_new(cv->open, "reasoning_content", t);
    }
    hr_text_join_free(&cv->content);
    hr_text_join_free(&cv->reasoning);
    cv->open = NULL;
    return e;
}

static hr_err *message_item(const json_t *it, const char *where, conv *cv) {
    const char *role = json_string_value(json_object_get(it, "role"));
    if (!is(role, "system") && !is(role, "developer") && !is(role, "user") &&
        !is(role, "assistant"))
        return hr_errf("%s.role must be one of system, developer, user, assistant", where);
    const json_t *c = json_object_get(it, "content");
    if (!c) return hr_errf("%s.content is required", where);
    json_t *text;
    HR_TRY(content_text(c, where, "content", &text));
    if (is(role, "assistant")) {
        hr_err *e = cv->open && json_object_get(cv->open, "tool_calls") ? close_open(cv) : NULL;
        if (!e) e = assistant(cv, NULL);
        if (!e) join_string(&cv->content, text, "");
        json_decref(text);
        return e;
    }
    hr_err *e = close_open(cv);
    if (e) return json_decref(text), e;
    return hr_json_append_new(
        cv->msgs,
        json_pack("{s:s, s:o}", "role", is(role, "developer") ? "system" : role, "content", text));
}

static hr_err *function_call_item(const json_t *it, const char *where, conv *cv) {
    const char *call_id = json_string_value(json_object_get(it, "call_id"));
    const char *name = json_string_value(json_object_get(it, "name"));
    const json_t *args = json_object_get(it, "arguments");
    if (!call_id) return hr_errf("%s.call_id must be a string", where);
    if (!name) return hr_errf("%s.name must be a string", where);
    json_error_t je;
    json_t *a = json_is_string(args) ? json_loads(json_string_value(args), JSON_DECODE_ANY, &je)
                                     : json_incref((json_t *)args);
    if (!a && json_is_string(args) && json_error_code(&je) == json_error_out_of_memory)
        return hr_err_oom();
    if (!json_is_object(a)) {
        json_decref(a);
        return hr_errf("%s.arguments must be a string holding a JSON object", where);
    }
    json_t *call = json_pack("{s:s, s:s, s:{s:s, s:o}}", "id", call_id, "type", "function",
                             "function", "name", name, "arguments", a);
    json_t *m, *calls = NULL;
    hr_err *e = assistant(cv, &m);
    if (!e && !(calls = json_object_get(m, "tool_calls")))
        e = hr_json_set_new(m, "tool_calls", calls = json_array());
    if (e) return json_decref(call), e;
    return hr_json_append_new(calls, call);
}

static hr_err *function_output_item(const json_t *it, const char *where, conv *cv) {
    const char *call_id = json_string_value(json_object_get(it, "call_id"));
    if (!call_id) return hr_errf("%s.call_id must be a string", where);
    const json_t *o = json_object_get(it, "output");
    if (!o) return hr_errf("%s.output is required", where);
    json_t *text;
    HR_TRY(content_text(o, where, "output", &text));
    hr_err *e = close_open(cv);
    if (e) return json_decref(text), e;
    return hr_json_append_new(cv->msgs, json_pack("{s:s, s:o, s:s}", "role", "tool", "content",
                                                  text, "tool_call_id", call_id));
}

/* The text of a reasoning item's reasoning_text content, else of its summary. */
static void reasoning_text(const json_t *it, hr_text_join *acc) {
    const char *keys[] = {"content", "summary"};
    for (int k = 0; k < 2 && !acc->len; k++) {
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(it, keys[k]), i, p) {
            const json_t *t = json_object_get(p, "text");
            if (json_string_length(t)) join_string(acc, t, "\n\n");
        }
    }
}

/* Reasoning opens the turn's assistant message (encrypted_content is ignored). */
static hr_err *reasoning_item(const json_t *it, const char *where, conv *cv) {
    const json_t *s = json_object_get(it, "summary"), *c = json_object_get(it, "content");
    if ((s && !json_is_array(s)) || (c && !json_is_null(c) && !json_is_array(c)))
        return hr_errf("%s: a reasoning item's summary and content must be arrays", where);
    hr_text_join acc = {0};
    reasoning_text(it, &acc);
    hr_err *e = NULL;
    if (acc.len && cv->open && (cv->content.len || json_object_get(cv->open, "tool_calls")))
        e = close_open(cv);
    if (acc.len && !e) e = assistant(cv, NULL);
    if (acc.len && !e) hr_text_join_add(&cv->reasoning, "\n\n", acc.s, acc.len);
    if (acc.oom && !e) e = hr_err_oom();
    hr_text_join_free(&acc);
    return e;
}

static hr_err *input_item(const json_t *it, size_t i, conv *cv) {
    char where[48];
    snprintf(where, sizeof where, "input[%zu]", i);
    if (!json_is_object(it)) return hr_errf("%s must be an object", where);
    const char *type = json_string_value(json_object_get(it, "type"));
    if (!type || is(type, "message")) return message_item(it, where, cv);
    if (is(type, "function_call")) return function_call_item(it, where, cv);
    if (is(type, "function_call_output")) return function_output_item(it, where, cv);
    if (is(type, "reasoning")) return reasoning_item(it, where, cv);
    if (is(type, "item_reference"))
        return hr_errf("%s: item_reference is not supported; send the item itself, or continue "
                       "a stored response with previous_response_id",
                       where);
    return hr_errf("%s.type \"%s\" is not supported (message, function_call, "
                   "function_call_output and reasoning items are)",
                   where, type);
}

static hr_err *parse_input(const json_t *body, conv *cv) {
    const json_t *in = json_object_get(body, "input");
    if (!in || json_is_null(in)) return NULL;
    if (json_is_string(in))
        return hr_json_append_new(cv->msgs, json_pack("{s:s, s:O}", "role", "user", "content", in));
    if (!json_is_array(in))
        return hr_errf("request: \"input\" must be a string or an array of items");
    HR_TRY(hr_check_conversation_size(in, "input", "content"));
    size_t i;
    const json_t *it;
    json_array_foreach(in, i, it) HR_TRY(input_item(it, i, cv));
    return close_open(cv);
}

/* A flat function tool in the chat-template form. */
static hr_err *function_tool(const json_t *x, size_t i, json_t *out) {
    const json_t *name = json_object_get(x, "name");
    if (!json_is_string(name)) return hr_errf("tools[%zu].name must be a string", i);
    const json_t *params = json_object_get(x, "parameters");
    if (params && !json_is_null(params) && !json_is_object(params))
        return hr_errf("tools[%zu].parameters must be an object", i);
    json_t *fn = json_pack("{s:O}", "name", name);
    const char *keys[] = {"description", "parameters", "strict"};
    hr_err *e = fn ? NULL : hr_err_oom();
    for (int k = 0; k < 3 && !e; k++) {
        const json_t *v = json_object_get(x, keys[k]);
        if (v && !json_is_null(v)) e = hr_json_set_new(fn, keys[k], json_incref((json_t *)v));
    }
    if (e) return json_decref(fn), e;
    return hr_json_append_new(out, json_pack("{s:s, s:o}", "type", "function", "function", fn));
}

/* Function tools converted; tools of every other type (web_search, file_search, mcp,
 * custom, ...) are run by OpenAI's servers, not the model's markup: skipped. */
static hr_err *convert_tools(const json_t *t, json_t **out) {
    *out = NULL;
    if (!t || json_is_null(t)) return NULL;
    if (!json_is_array(t)) return hr_errf("request: \"tools\" must be an array");
    json_t *conv = json_array();
    if (!conv) return hr_err_oom();
    size_t i, skipped = 0;
    const json_t *x;
    json_array_foreach(t, i, x) {
        const char *type = json_string_value(json_object_get(x, "type"));
        hr_err *e = NULL;
        if (!type)
            e = hr_errf("tools[%zu].type must be a string", i);
        else if (is(type, "function"))
            e = function_tool(x, i, conv);
        else
            skipped++;
        if (e) return json_decref(conv), e;
    }
    if (skipped)
        HR_DEBUG("responses: %zu tool(s) of hosted types (web_search, mcp, ...) not offered to "
                 "the model",
                 skipped);
    *out = conv;
    return NULL;
}

/* tool_choice "auto" | "none" | "required" | {"type": "function", "name"}. */
static hr_err *parse_tool_choice(const json_t *tc, int *none, int *forced, const char **name) {
    *none = *forced = 0;
    *name = NULL;
    if (!tc || json_is_null(tc)) return NULL;
    if (json_is_object(tc)) {
        const char *type = json_string_value(json_object_get(tc, "type"));
        *name = json_string_value(json_object_get(tc, "name"));
        if (is(type, "function") && *name) return *forced = 1, NULL;
        if (is(type, "function"))
            return hr_errf("request: \"tool_choice\" of type function needs a string \"name\"");
        return hr_errf("request: \"tool_choice\" type \"%s\" is not supported here; use \"auto\", "
                       "\"none\", \"required\" or {\"type\": \"function\", \"name\"}",
                       type ? type : "missing");
    }
    const char *s = json_string_value(tc);
    if (!is(s, "auto") && !is(s, "none") && !is(s, "required"))
        return hr_errf("request: \"tool_choice\" must be \"auto\", \"none\", \"required\" or "
                       "{\"type\": \"function\", \"name\": string}");
    *none = is(s, "none");
    *forced = is(s, "required");
    return NULL;
}

static hr_err *parse_tools(const json_t *body, hr_api_request *r, json_t **tools) {
    const char *name;
    int none, forced;
    *tools = NULL;
    HR_TRY(parse_tool_choice(json_object_get(body, "tool_choice"), &none, &forced, &name));
    json_t *t;
    HR_TRY(convert_tools(json_object_get(body, "tools"), &t));
    hr_err *e = !none && forced ? hr_set_tool_choice(r, t, name) : NULL;
    if (e || none || !json_array_size(t)) return json_decref(t), e;
    *tools = t;
    r->use_tools = 1;
    return NULL;
}

static const char *const EFFORTS[] = {"none", "minimal", "low", "medium", "high", "xhigh", NULL};
static const char *const SUMMARIES[] = {"auto", "concise", "detailed", NULL};
static const char *const VERBOSITY[] = {"low", "medium", "high", NULL};

/* A string field of o that must be one of allowed (or absent / null). */
static hr_err *one_of(const json_t *o, const char *key, const char *prefix,
                      const char *const *allowed, const char **out) {
    const json_t *v = json_object_get(o, key);
    *out = json_string_value(v);
    if (v && !json_is_null(v) && !*out)
        return hr_errf("request: \"%s%s\" must be a string", prefix, key);
    if (!*out) return NULL;
    char list[128] = "";
    for (const char *const *a = allowed; *a; a++) {
        if (!strcmp(*a, *out)) return NULL;
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *a);
    }
    return hr_errf("request: \"%s%s\" must be one of %s, got \"%s\"", prefix, key, list, *out);
}

/* reasoning {"effort", "summary"}: effort goes to the template like chat's
 * reasoning_effort; "none" turns thinking off. */
static hr_err *parse_reasoning(const json_t *body, hr_api_request *r, json_t *kwargs) {
    const json_t *rs = json_object_get(body, "reasoning");
    if (!rs || json_is_null(rs)) return NULL;
    if (!json_is_object(rs)) return hr_errf("request: \"reasoning\" must be an object");
    const char *effort, *summary;
    HR_TRY(one_of(rs, "effort", "reasoning.", EFFORTS, &effort));
    HR_TRY(one_of(rs, "summary", "reasoning.", SUMMARIES, &summary));
    if (!effort) return NULL;
    if (!(r->reasoning_effort = strdup(effort))) return hr_err_oom();
    HR_TRY(hr_json_set_new(kwargs, "reasoning_effort", json_string(effort)));
    return is(effort, "none") ? hr_json_set_new(kwargs, "enable_thinking", json_false()) : NULL;
}

/* text {"format", "verbosity"}: the format is the output's constraint (output_spec.c). */
static hr_err *parse_text(const json_t *body, hr_api_request *r) {
    const json_t *t = json_object_get(body, "text");
    if (!t || json_is_null(t)) return NULL;
    if (!json_is_object(t)) return hr_errf("request: \"text\" must be an object");
    const char *verbosity;
    HR_TRY(one_of(t, "verbosity", "text.", VERBOSITY, &verbosity));
    return hr_parse_output_spec(body, r->api, &r->output);
}

/* Accepted fields with nothing to do here: their types are still checked. */
static hr_err *parse_accepted(const json_t *body, int *store) {
    const char *s;
    int b;
    const char *strs[] = {"user", "safety_identifier", "prompt_cache_key", "service_tier"};
    for (int i = 0; i < 4; i++)
        HR_TRY(hr_json_str(body, strs[i], NULL, "request", &s));
    HR_TRY(hr_json_bool(body, "store", 1, "request", store));
    HR_TRY(hr_json_bool(body, "parallel_tool_calls", 1, "request", &b));
    HR_TRY(hr_json_bool(body, "background", 0, "request", &b));
    if (b)
        return hr_errf("request: \"background\": true is not supported (responses run while "
                       "the request is open)");
    static const char *const TRUNC[] = {"auto", "disabled", NULL};
    HR_TRY(one_of(body, "truncation", "", TRUNC, &s));
    const char *objs[] = {"metadata", "stream_options"};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(body, objs[i]);
        if (v && !json_is_null(v) && !json_is_object(v))
            return hr_errf("request: \"%s\" must be an object", objs[i]);
    }
    const json_t *inc = json_object_get(body, "include");
    size_t i;
    const json_t *x;
    if (inc && !json_is_null(inc) && !json_is_array(inc))
        return hr_errf("request: \"include\" must be an array of strings");
    json_array_foreach(inc, i, x) if (!json_is_string(x)) return hr_errf(
        "request: \"include\"[%zu] must be a string", i);
    const char *unsupported[] = {"conversation", "prompt"};
    for (int k = 0; k < 2; k++) {
        const json_t *v = json_object_get(body, unsupported[k]);
        if (v && !json_is_null(v))
            return hr_errf("request: \"%s\" is not supported; send the input, or continue a "
                           "stored response with previous_response_id",
                           unsupported[k]);
    }
    return NULL;
}

/* body[key] when present and not null, else def (a new reference either way). */
static json_t *field_or(const json_t *body, const char *key, json_t *def) {
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return def;
    json_decref(def);
    return hr_json_deep_copy(v);
}

/* The echoed "text": the request's, with format and verbosity defaulted; NULL when out of
 * memory. */
static json_t *echo_text(const json_t *body) {
    json_t *text = field_or(body, "text", json_object());
    hr_err *e = text ? NULL : hr_err_oom();
    if (!e && !json_object_get(text, "format"))
        e = hr_json_set_new(text, "format", json_pack("{s:s}", "type", "text"));
    if (!e && !json_object_get(text, "verbosity"))
        e = hr_json_set_new(text, "verbosity", json_string("medium"));
    if (!e) return text;
    hr_err_free(e);
    json_decref(text);
    return NULL;
}

/* The request fields a response object repeats, with OpenAI's defaults; NULL when out of
 * memory. */
static json_t *echo_fields(const json_t *body, int store) {
    const hr_json_field f[] = {
        {"instructions", field_or(body, "instructions", json_null())},
        {"tools", field_or(body, "tools", json_array())},
        {"tool_choice", field_or(body, "tool_choice", json_string("auto"))},
        {"parallel_tool_calls", field_or(body, "parallel_tool_calls", json_true())},
        {"temperature", field_or(body, "temperature", json_null())},
        {"top_p", field_or(body, "top_p", json_null())},
        {"max_output_tokens", field_or(body, "max_output_tokens", json_null())},
        {"previous_response_id", field_or(body, "previous_response_id", json_null())},
        {"user", field_or(body, "user", json_null())},
        {"safety_identifier", field_or(body, "safety_identifier", json_null())},
        {"prompt_cache_key", field_or(body, "prompt_cache_key", json_null())},
        {"reasoning", field_or(body, "reasoning", json_pack("{s:n, s:n}", "effort", "summary"))},
        {"text", echo_text(body)},
        {"truncation", field_or(body, "truncation", json_string("disabled"))},
        {"service_tier", field_or(body, "service_tier", json_string("default"))},
        {"metadata", field_or(body, "metadata", json_object())},
        {"store", json_boolean(store)},
        {"background", json_false()},
    };
    json_t *e = json_object();
    hr_err *err = hr_json_set_fields(e, f, sizeof f / sizeof *f);
    if (!err) return e;
    hr_err_free(err);
    json_decref(e);
    return NULL;
}

/* The stored conversation previous_response_id continues (none: nothing to do). */
static hr_err *previous(const json_t *body, hr_response_store *store, conv *cv) {
    const char *id;
    HR_TRY(hr_json_str(body, "previous_response_id", NULL, "request", &id));
    if (!id) return NULL;
    int oom = 0;
    json_t *history = NULL, *resp = store ? hr_response_store_get(store, id, &history, &oom) : NULL;
    json_decref(resp);
    if (oom) return hr_err_oom();
    if (!resp) return hr_errf("Previous response with id '%s' not found.", id);
    int bad = json_array_extend(cv->msgs, history);
    json_decref(history);
    return bad ? hr_err_oom() : NULL;
}

static hr_err *parse_instructions(const json_t *body, json_t *msgs) {
    const char *ins;
    HR_TRY(hr_json_str(body, "instructions", NULL, "request", &ins));
    if (!ins) return NULL;
    return hr_json_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", ins));
}

static hr_err *parse_body(const json_t *body, const hr_request_limits *lim,
                          hr_response_store *store, hr_api_request *r, int *stored, json_t *kwargs,
                          conv *cv) {
    if (!json_is_object(body)) return hr_errf("request body must be a JSON object");
    const char *model;
    HR_TRY(hr_json_str(body, "model", NULL, "request", &model));
    if (model && !(r->model = strdup(model))) return hr_err_oom();
    HR_TRY(hr_json_bool(body, "stream", 0, "request", &r->stream));
    HR_TRY(hr_parse_max_tokens(body, "max_output_tokens", 0, lim, r));
    HR_TRY(hr_parse_sampling(body, lim, r));
    HR_TRY(parse_accepted(body, stored));
    HR_TRY(parse_text(body, r));
    HR_TRY(parse_reasoning(body, r, kwargs));
    HR_TRY(previous(body, store, cv));
    HR_TRY(parse_input(body, cv));
    if (json_array_size(cv->msgs)) return NULL;
    return json_object_get(body, "input")
               ? hr_errf("request: \"input\" must not be empty")
               : hr_errf("request: \"input\" is required (a string or an array of items)");
}

/* The chat object (instructions first, then the conversation) and r->responses. */
static hr_err *finish(const json_t *body, hr_api_request *r, hr_err *e, int store, conv *cv,
                      json_t *tools, json_t *kwargs) {
    json_t *msgs = json_array();
    if (!e) e = parse_instructions(body, msgs);
    if (!e && json_array_extend(msgs, cv->msgs)) e = hr_err_oom();
    if (!e)
        r->responses = json_pack("{s:o, s:O, s:b}", "echo", echo_fields(body, store), "input",
                                 cv->msgs, "store", store);
    if (!e && !r->responses) e = hr_err_oom();
    hr_text_join_free(&cv->content);
    hr_text_join_free(&cv->reasoning);
    json_decref(cv->msgs);
    return hr_set_chat(r, e, msgs, tools, kwargs);
}

hr_err *hr_parse_responses_request(const json_t *body, const hr_request_limits *lim,
                                   hr_response_store *store, hr_api_request **out) {
    *out = NULL;
    hr_api_request *r = hr_api_request_new(HR_API_RESPONSES);
    if (!r) return hr_err_oom();
    conv cv = {.msgs = json_array()};
    json_t *kwargs = json_object(), *tools = NULL;
    int stored = 1;
    hr_err *e =
        cv.msgs && kwargs ? parse_body(body, lim, store, r, &stored, kwargs, &cv) : hr_err_oom();
    if (!e) e = parse_tools(body, r, &tools);
    e = finish(body, r, e, stored, &cv, tools, kwargs);
    if (e)
        hr_api_request_free(r);
    else
        *out = r;
    return e;
}
