/* Anthropic POST /v1/messages and /v1/messages/count_tokens bodies, normalized into the
 * same chat-template input as OpenAI chat. The "system" field and system-role messages
 * before the first turn become one leading system message; later system-role messages stay
 * system turns (the engine folds them into the leading one when the template cannot render
 * them, system_turns.c). tool_use blocks become assistant tool_calls, thinking blocks the
 * assistant's reasoning_content, tool_result blocks tool messages. Fields that mean nothing
 * to a local model are accepted and ignored (docs/server.md lists them). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "server/request.h"
#include "server/text_join.h"

/* Blocks a text-only model cannot read: a 400 naming the block. */
static const char *const MEDIA_BLOCKS[] = {"image", "document", "search_result",
                                           "container_upload"};
/* Calls and results of tools Anthropic runs on its side, in a history that came from
 * there: skipped, as hearth never offers such tools. */
static const char *const SERVER_BLOCKS[] = {"server_tool_use",
                                            "web_search_tool_result",
                                            "web_fetch_tool_result",
                                            "code_execution_tool_result",
                                            "bash_code_execution_tool_result",
                                            "text_editor_code_execution_tool_result",
                                            "tool_search_tool_result",
                                            "mcp_tool_use",
                                            "mcp_tool_result"};

#define N_OF(a) (sizeof(a) / sizeof *(a))

static int in_list(const char *s, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return 1;
    return 0;
}

static hr_err *media_error(const char *where, const char *type) {
    return hr_errf("%s: %s blocks are not supported by this text-only model", where, type);
}

static void join_string(hr_text_join *j, const json_t *s, const char *sep) {
    hr_text_join_add(j, sep, json_string_value(s), json_string_length(s));
}

static hr_err *text_block(hr_text_join *j, const json_t *b, const char *where) {
    const json_t *text = json_object_get(b, "text");
    if (!json_is_string(text)) return hr_errf("%s.text must be a string", where);
    join_string(j, text, ""); /* cache_control, citations: ignored */
    return NULL;
}

/* Claude Code starts its system prompt with a per-session text block
 * "x-anthropic-billing-header: cc_version=...; ..." meant for Anthropic's billing. It would
 * make every session's prompt differ in its first tokens and so defeat the prefix cache:
 * it is dropped. */
static int billing_block(const json_t *b) {
    static const char head[] = "x-anthropic-billing-header:";
    const char *text = json_string_value(json_object_get(b, "text"));
    return text && !strncmp(text, head, sizeof head - 1);
}

/* A string, or an array of text blocks only (the "system" field, system messages and
 * tool_result content). */
static hr_err *text_only(const json_t *c, const char *where, json_t **out) {
    if (json_is_string(c)) {
        *out = json_incref((json_t *)c);
        return NULL;
    }
    if (!json_is_array(c))
        return hr_errf("%s must be a string or an array of content blocks", where);
    hr_text_join s = {0};
    size_t i;
    const json_t *b;
    hr_err *e = NULL;
    json_array_foreach(c, i, b) {
        char w[128];
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && !strcmp(type, "text"))
            e = billing_block(b) ? NULL : text_block(&s, b, w);
        else if (type && in_list(type, MEDIA_BLOCKS, N_OF(MEDIA_BLOCKS)))
            e = media_error(w, type);
        else
            e = hr_errf("%s: only text blocks are accepted here (type %s)", w,
                        type ? type : "missing");
        if (e) break;
    }
    if (e) return hr_text_join_free(&s), e;
    *out = hr_text_join_take(&s, &e);
    return e;
}

/* One Anthropic message taken apart: what its blocks add up to. */
typedef struct {
    const char *where; /* "messages[3]" */
    const char *role;
    hr_text_join text;      /* the text blocks, concatenated */
    hr_text_join reasoning; /* the thinking blocks, newline-joined */
    json_t *calls;          /* tool_use blocks as OpenAI tool_calls */
    json_t *results;        /* tool_result blocks as tool messages */
} msg_parts;

static hr_err *tool_use_call(msg_parts *p, const json_t *b, const char *where) {
    const char *id = json_string_value(json_object_get(b, "id"));
    const char *name = json_string_value(json_object_get(b, "name"));
    const json_t *input = json_object_get(b, "input");
    if (!id || !name || !json_is_object(input))
        return hr_errf("%s: tool_use needs string id and name and an object input", where);
    return hr_json_append_new(p->calls,
                              json_pack("{s:s, s:s, s:{s:s, s:O}}", "id", id, "type", "function",
                                        "function", "name", name, "arguments", input));
}

static hr_err *tool_result_msg(msg_parts *p, const json_t *b, const char *where) {
    const char *id = json_string_value(json_object_get(b, "tool_use_id"));
    if (!id) return hr_errf("%s: tool_result needs a string tool_use_id", where);
    const json_t *c = json_object_get(b, "content");
    json_t *text = NULL;
    char w[128];
    snprintf(w, sizeof w, "%s.content", where);
    if (!c || json_is_null(c))
        text = json_string("");
    else
        HR_TRY(text_only(c, w, &text)); /* is_error: the text says what went wrong */
    return hr_json_append_new(p->results, json_pack("{s:s, s:o, s:s}", "role", "tool", "content",
                                                    text, "tool_call_id", id));
}

static hr_err *thinking_block(msg_parts *p, const json_t *b, const char *where) {
    const json_t *text = json_object_get(b, "thinking");
    if (!json_is_string(text)) return hr_errf("%s.thinking must be a string", where);
    join_string(&p->reasoning, text, "\n"); /* the signature is not checked */
    return NULL;
}

/* Which role a block type belongs to (NULL: any but system). */
static hr_err *check_role(const msg_parts *p, const char *type, const char *role,
                          const char *where) {
    if (!strcmp(p->role, "system"))
        return hr_errf("%s: system messages take text blocks only (got %s)", where, type);
    if (role && strcmp(p->role, role))
        return hr_errf("%s: %s blocks belong to %s messages", where, type, role);
    return NULL;
}

static hr_err *add_block(msg_parts *p, const json_t *b, size_t j) {
    char w[96];
    snprintf(w, sizeof w, "%s.content[%zu]", p->where, j);
    const char *type = json_string_value(json_object_get(b, "type"));
    if (!type) return hr_errf("%s must be a content block with a string type", w);
    if (!strcmp(type, "text")) return text_block(&p->text, b, w);
    if (in_list(type, MEDIA_BLOCKS, N_OF(MEDIA_BLOCKS))) return media_error(w, type);
    int thinking = !strcmp(type, "thinking"), redacted = !strcmp(type, "redacted_thinking");
    if (thinking || redacted || !strcmp(type, "tool_use")) {
        HR_TRY(check_role(p, type, "assistant", w));
        return thinking ? thinking_block(p, b, w) : redacted ? NULL : tool_use_call(p, b, w);
    }
    if (!strcmp(type, "tool_result")) {
        HR_TRY(check_role(p, type, "user", w));
        return tool_result_msg(p, b, w);
    }
    if (in_list(type, SERVER_BLOCKS, N_OF(SERVER_BLOCKS))) return check_role(p, type, NULL, w);
    return hr_errf("%s: unsupported content block (type %s)", w, type);
}

/* The conversation in template form, and the leading system message while it is still
 * being joined (the "system" field and system messages before the first turn). */
typedef struct {
    json_t *norm;
    hr_text_join lead;
    int has_lead, turns; /* turns: a user or assistant message came (lead is in norm) */
} conv;

/* The first turn starts: the leading system message, if any, goes first. */
static hr_err *start_turns(conv *cv) {
    if (cv->turns) return NULL;
    cv->turns = 1;
    if (!cv->has_lead) return NULL;
    hr_err *e = NULL;
    json_t *text = hr_text_join_take(&cv->lead, &e);
    if (!text) return e;
    return hr_json_append_new(cv->norm, json_pack("{s:s, s:o}", "role", "system", "content", text));
}

/* A system message's text: joined into the leading system message before the first turn,
 * else a system turn of its own. */
static hr_err *add_system(conv *cv, json_t *text) {
    if (cv->turns)
        return hr_json_append_new(cv->norm,
                                  json_pack("{s:s, s:o}", "role", "system", "content", text));
    join_string(&cv->lead, text, "\n\n");
    cv->has_lead = 1;
    json_decref(text);
    return NULL;
}

/* The template messages of a user or assistant message: tool results first (they answer
 * the previous assistant turn), then the message unless it held only results. */
static hr_err *emit_parts(msg_parts *p, json_t *norm) {
    if (p->text.oom || p->reasoning.oom || json_array_extend(norm, p->results))
        return hr_err_oom(); /* a failed first piece would look like no text */
    int has_reasoning = p->reasoning.len > 0;
    if (!p->text.len && !json_array_size(p->calls) && !has_reasoning && json_array_size(p->results))
        return NULL;
    hr_err *e = NULL;
    json_t *text = hr_text_join_take(&p->text, &e);
    if (!text) return e;
    json_t *msg = json_pack("{s:s, s:o}", "role", p->role, "content", text);
    if (!msg) return hr_err_oom();
    if (json_array_size(p->calls) && json_object_set(msg, "tool_calls", p->calls)) e = hr_err_oom();
    json_t *reasoning = !e && has_reasoning ? hr_text_join_take(&p->reasoning, &e) : NULL;
    if (reasoning) e = hr_json_set_new(msg, "reasoning_content", reasoning);
    if (e) return json_decref(msg), e;
    return hr_json_append_new(norm, msg);
}

static hr_err *norm_message(const json_t *m, size_t i, conv *cv) {
    char where[48];
    snprintf(where, sizeof where, "messages[%zu]", i);
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role || (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system")))
        return hr_errf("%s.role must be \"user\", \"assistant\" or \"system\"", where);
    const json_t *c = json_object_get(m, "content");
    char cw[64];
    snprintf(cw, sizeof cw, "%s.content", where);
    json_t *text;
    if (!strcmp(role, "system")) {
        HR_TRY(text_only(c, cw, &text));
        return add_system(cv, text);
    }
    if (!json_is_string(c) && !json_is_array(c))
        return hr_errf("%s must be a string or an array of content blocks", cw);
    HR_TRY(start_turns(cv));
    msg_parts p = {.where = where, .role = role, .calls = json_array(), .results = json_array()};
    if (json_is_string(c)) join_string(&p.text, c, "");
    hr_err *e = p.calls && p.results ? NULL : hr_err_oom();
    size_t j;
    const json_t *b;
    if (json_is_array(c)) json_array_foreach(c, j, b) if (!e) e = add_block(&p, b, j);
    if (!e) e = emit_parts(&p, cv->norm);
    hr_text_join_free(&p.text);
    hr_text_join_free(&p.reasoning);
    json_decref(p.calls);
    json_decref(p.results);
    return e;
}

/* tool_choice {"type": "auto" | "any" | "none"} or {"type": "tool", "name"}, each with an
 * optional disable_parallel_tool_use (accepted, not enforced); *forced for any and tool,
 * *name for tool. */
static hr_err *parse_tool_choice(const json_t *tc, int *none, int *forced, const char **name) {
    *none = *forced = 0;
    *name = NULL;
    if (!tc || json_is_null(tc)) return NULL;
    const char *type = json_string_value(json_object_get(tc, "type"));
    if (!type || (strcmp(type, "auto") && strcmp(type, "any") && strcmp(type, "tool") &&
                  strcmp(type, "none")))
        return hr_errf("request: \"tool_choice\".type must be \"auto\", \"any\", \"tool\" or "
                       "\"none\"");
    int one;
    HR_TRY(hr_json_bool(tc, "disable_parallel_tool_use", 0, "tool_choice", &one));
    *none = !strcmp(type, "none");
    *forced = !strcmp(type, "any") || !strcmp(type, "tool");
    if (strcmp(type, "tool")) return NULL;
    *name = json_string_value(json_object_get(tc, "name"));
    return *name ? NULL
                 : hr_errf("request: \"tool_choice\" of type \"tool\" needs a string \"name\"");
}

/* A tool Anthropic runs itself (web_search_*, bash_*, text_editor_*, ...): any type but
 * "custom". Accepted and not offered to the model; said once per process. */
static int server_tool(const json_t *x, size_t i, hr_err **e) {
    const json_t *t = json_object_get(x, "type");
    *e = NULL;
    if (!t || json_is_null(t)) return 0;
    if (!json_is_string(t)) return *e = hr_errf("tools[%zu].type must be a string", i), 0;
    if (!strcmp(json_string_value(t), "custom")) return 0;
    static atomic_int said;
    const char *name = json_string_value(json_object_get(x, "name"));
    if (!atomic_exchange(&said, 1))
        HR_INFO("/v1/messages: server tools such as %s (type %s) are accepted but not offered "
                "to the model: hearth runs no server tools",
                name ? name : "(unnamed)", json_string_value(t));
    return 1;
}

/* Anthropic tools {"name", "description", "input_schema"} in the OpenAI form. */
static hr_err *convert_tools(const json_t *t, json_t **out) {
    if (!json_is_array(t)) return hr_errf("request: \"tools\" must be an array");
    *out = json_array();
    size_t i;
    const json_t *x;
    hr_err *e = *out ? NULL : hr_err_oom();
    json_array_foreach(t, i, x) {
        if (e) break;
        if (server_tool(x, i, &e) || e) {
            if (e) break;
            continue;
        }
        const char *name = json_string_value(json_object_get(x, "name"));
        const json_t *schema = json_object_get(x, "input_schema");
        if (!name || !json_is_object(schema)) {
            e = hr_errf("tools[%zu] needs a string name and an object input_schema", i);
            break;
        }
        const char *desc = json_string_value(json_object_get(x, "description"));
        json_t *fn = json_pack("{s:s, s:{s:s, s:s, s:O}}", "type", "function", "function", "name",
                               name, "description", desc ? desc : "", "parameters", schema);
        const json_t *strict = json_object_get(x, "strict");
        if (json_is_boolean(strict) && /* constrained under auto too (request_grammar.c) */
            json_object_set(json_object_get(fn, "function"), "strict", (json_t *)strict)) {
            json_decref(fn);
            fn = NULL; /* out of memory, said by the append */
        }
        e = hr_json_append_new(*out, fn);
    }
    if (e) json_decref(*out), *out = NULL;
    return e;
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

static hr_err *parse_system(const json_t *body, conv *cv) {
    const json_t *s = json_object_get(body, "system");
    if (!s || json_is_null(s)) return NULL;
    json_t *text;
    HR_TRY(text_only(s, "request: \"system\"", &text));
    return add_system(cv, text);
}

/* budget_tokens: at least 1 (Anthropic asks for 1024), capped below max_tokens. */
static hr_err *parse_budget(const json_t *t, hr_api_request *r) {
    int64_t b;
    HR_TRY(hr_json_int(t, "budget_tokens", 0, "thinking", &b));
    if (!json_object_get(t, "budget_tokens") || json_is_null(json_object_get(t, "budget_tokens")))
        return NULL; /* no budget: as adaptive */
    if (b < 1)
        return hr_errf("request: \"thinking\".budget_tokens must be >= 1, got %lld", (long long)b);
    if (r->max_tokens > 0 && b >= r->max_tokens) b = r->max_tokens - 1;
    r->reasoning_budget = b > INT32_MAX ? INT32_MAX : (int)b;
    return NULL;
}

/* thinking {"type": "enabled", "budget_tokens"} | {"type": "adaptive"} | {"type":
 * "disabled"}: the template's enable_thinking, and the budget the engine enforces. */
static hr_err *parse_thinking(const json_t *body, hr_api_request *r, json_t *kwargs) {
    const json_t *t = json_object_get(body, "thinking");
    if (!t || json_is_null(t)) return NULL;
    const char *type = json_string_value(json_object_get(t, "type"));
    if (!type || (strcmp(type, "enabled") && strcmp(type, "adaptive") && strcmp(type, "disabled")))
        return hr_errf("request: \"thinking\".type must be \"enabled\", \"adaptive\" or "
                       "\"disabled\"");
    HR_TRY(hr_json_set_new(kwargs, "enable_thinking", json_boolean(strcmp(type, "disabled"))));
    return strcmp(type, "enabled") ? NULL : parse_budget(t, r);
}

/* output_config {"effort": low | medium | high | max} as reasoning_effort ("max" is the
 * templates' "high"); "format" (structured outputs) needs constrained decoding. */
static hr_err *parse_output_config(const json_t *body, hr_api_request *r, json_t *kwargs) {
    const json_t *fmt = json_object_get(body, "output_format");
    if (fmt && !json_is_null(fmt))
        return hr_errf("request: \"output_format\" (structured outputs) is not supported yet "
                       "(needs constrained decoding)");
    const json_t *oc = json_object_get(body, "output_config");
    if (!oc || json_is_null(oc)) return NULL;
    if (!json_is_object(oc)) return hr_errf("request: \"output_config\" must be an object");
    fmt = json_object_get(oc, "format");
    if (fmt && !json_is_null(fmt))
        return hr_errf("request: \"output_config\".format (structured outputs) is not supported "
                       "yet (needs constrained decoding)");
    const char *effort;
    HR_TRY(hr_json_str(oc, "effort", NULL, "output_config", &effort));
    if (!effort) return NULL;
    if (strcmp(effort, "low") && strcmp(effort, "medium") && strcmp(effort, "high") &&
        strcmp(effort, "max"))
        return hr_errf("request: \"output_config\".effort must be low, medium, high or max");
    if (!strcmp(effort, "max")) effort = "high";
    if (!(r->reasoning_effort = strdup(effort))) return hr_err_oom();
    return hr_json_set_new(kwargs, "reasoning_effort", json_string(effort));
}

/* Everything but max_tokens and stream, which /count_tokens does not take. */
static hr_err *parse_conversation(const json_t *body, const hr_request_limits *lim,
                                  hr_api_request *r) {
    HR_TRY(hr_parse_sampling(body, lim, r));
    HR_TRY(hr_parse_stop(body, "stop_sequences", r));
    const json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs)) return hr_errf("request: \"messages\" must be an array");
    if (!json_array_size(msgs)) return hr_errf("request: \"messages\" must not be empty");
    HR_TRY(hr_check_conversation_size(msgs, "messages", "content"));
    conv cv = {.norm = json_array()};
    json_t *tools = NULL, *kwargs = json_object();
    hr_err *e = cv.norm && kwargs ? parse_system(body, &cv) : hr_err_oom();
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) if (!e) e = norm_message(m, i, &cv);
    if (!e) e = start_turns(&cv);
    hr_text_join_free(&cv.lead);
    json_t *norm = cv.norm;
    if (!e) e = norm_tools(body, r, &tools);
    if (!e) e = parse_thinking(body, r, kwargs);
    if (!e) e = parse_output_config(body, r, kwargs);
    return hr_set_chat(r, e, norm, tools, kwargs);
}

static hr_err *parse_model(const json_t *body, hr_api_request *r) {
    if (!json_is_object(body)) return hr_errf("request body must be a JSON object");
    const char *model;
    HR_TRY(hr_json_str(body, "model", NULL, "request", &model));
    if (model && !(r->model = strdup(model))) return hr_err_oom();
    return NULL;
}

static hr_err *parse_messages(const json_t *body, const hr_request_limits *lim, hr_api_request *r) {
    HR_TRY(parse_model(body, r));
    HR_TRY(hr_parse_max_tokens(body, "max_tokens", 1, lim, r));
    HR_TRY(hr_json_bool(body, "stream", 0, "request", &r->stream));
    HR_TRY(hr_parse_output_spec(body, r->api, &r->output));
    return parse_conversation(body, lim, r);
}

static hr_err *parse_count(const json_t *body, const hr_request_limits *lim, hr_api_request *r) {
    HR_TRY(parse_model(body, r));
    return parse_conversation(body, lim, r);
}

hr_err *hr_parse_messages_request(const json_t *body, const hr_request_limits *lim,
                                  hr_api_request **out) {
    return hr_parse_request(HR_API_MESSAGES, parse_messages, body, lim, out);
}

hr_err *hr_parse_count_tokens_request(const json_t *body, const hr_request_limits *lim,
                                      hr_api_request **out) {
    return hr_parse_request(HR_API_MESSAGES, parse_count, body, lim, out);
}
