/* Replies in OpenAI's shapes (chat.completion, chat.completion.chunk, text_completion),
 * with logprobs and usage, plus what every formatter shares: ids, SSE framing, the
 * event plumbing from the output parser, and error bodies. */
#include <stdio.h>
#include <sys/random.h>

#include "base/json.h"
#include "server/reply_internal.h"

void hr_make_id(char *buf, size_t cap, const char *prefix) {
    unsigned char rnd[12] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        static _Atomic unsigned long counter;
        unsigned long c = ++counter;
        memcpy(rnd, &c, sizeof c);
    }
    int n = snprintf(buf, cap, "%s", prefix);
    for (size_t i = 0; i < sizeof rnd && n + 2 < (int)cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%02x", rnd[i]);
}

/* Anthropic's error type for an HTTP status (docs.anthropic.com, "Errors"): other 4xx are
 * invalid_request_error, other 5xx api_error. */
static const char *anthropic_error_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

/* The message as a JSON string: one cut at a byte limit (%.200s) may end mid-character. */
static json_t *message_string(const char *message) {
    return hr_json_string_lossy(message, strlen(message));
}

json_t *hr_error_body(hr_api_kind api, int status, const char *message) {
    if (api == HR_API_MESSAGES)
        return json_pack("{s:s, s:{s:s, s:o}}", "type", "error", "error", "type",
                         anthropic_error_type(status), "message", message_string(message));
    const char *oa = status == 401   ? "authentication_error"
                     : status == 404 ? "not_found_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
    char buf[96];
    if (api == HR_API_RESPONSES)
        return json_pack("{s:{s:o, s:s, s:i, s:s?}}", "error", "message", message_string(message),
                         "type", oa, "code", status, "param",
                         hr_resp_error_param(message, buf, sizeof buf));
    return json_pack("{s:{s:o, s:s, s:i}}", "error", "message", message_string(message), "type", oa,
                     "code", status);
}

json_t *hr_models_body(const char *name) {
    return json_pack("{s:s, s:[{s:o, s:s, s:i, s:s}]}", "object", "list", "data", "id",
                     hr_json_string_lossy(name, strlen(name)), "object", "model", "created", 0,
                     "owned_by", "hearth");
}

#define OOM_OPENAI                                                                                 \
    "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"code\":503}}"
#define OOM_ANTHROPIC                                                                              \
    "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"out of memory\"}}"
#define OOM_RESPONSES                                                                              \
    "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"code\":503,"            \
    "\"param\":null}}"

const char *hr_oom_body(hr_api_kind api) {
    return api == HR_API_MESSAGES    ? OOM_ANTHROPIC
           : api == HR_API_RESPONSES ? OOM_RESPONSES
                                     : OOM_OPENAI;
}

int hr_reply_failed(const hr_reply *r) { return r->failed; }

void hr_reply_fail(hr_reply *r) { r->failed = 1; }

size_t hr_error_event(hr_api_kind api, int status, const char *msg, long seq, char *buf,
                      size_t cap) {
    int n;
    if (api == HR_API_MESSAGES)
        n = snprintf(buf, cap,
                     "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\","
                     "\"message\":\"%s\"}}\n\n",
                     msg);
    else if (api == HR_API_RESPONSES)
        n = snprintf(buf, cap,
                     "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\","
                     "\"message\":\"%s\",\"param\":null,\"sequence_number\":%ld}\n\n",
                     msg, seq);
    else
        n = snprintf(buf, cap,
                     "data: {\"error\":{\"message\":\"%s\",\"type\":\"server_error\","
                     "\"code\":%d}}\n\ndata: [DONE]\n\n",
                     msg, status);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

const char *hr_reply_fail_event(hr_reply *r, size_t *len) {
    *len = 0;
    if (!r->failed) return NULL;
    *len = hr_error_event(r->req->api, 503, "out of memory", hr_resp_next_seq(r), r->fail_event,
                          sizeof r->fail_event);
    return r->fail_event;
}

json_t *hr_reply_chk(hr_reply *r, json_t *v) {
    if (!v) r->failed = 1;
    return v;
}

void hr_reply_set(hr_reply *r, json_t *obj, const char *key, json_t *v) {
    if (json_object_set_new(obj, key, v)) r->failed = 1;
}

void hr_reply_append(hr_reply *r, json_t *arr, json_t *v) {
    if (json_array_append_new(arr, v)) r->failed = 1;
}

void hr_reply_add(hr_reply *r, hr_sbuf *b, const char *s, size_t n) {
    if (!r->failed && !hr_sbuf_add(b, s, n)) r->failed = 1;
}

json_t *hr_reply_call_args(hr_reply *r, const json_t *tool_call) {
    const json_t *fn = json_object_get(tool_call, "function");
    json_error_t je;
    json_t *a = json_loads(json_string_value(json_object_get(fn, "arguments")), 0, &je);
    if (a || json_error_code(&je) == json_error_out_of_memory) return hr_reply_chk(r, a);
    return hr_reply_chk(r, json_object());
}

void hr_sse_put(hr_reply *r, const char *name, json_t *v) {
    char *s = v && !r->failed ? hr_json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    size_t n = s ? strlen(s) : 0, name_len = name ? strlen(name) : 0;
    if (!s || !hr_sbuf_reserve(&r->out, (name ? 8 + name_len : 0) + 6 + n + 2)) {
        free(s);
        r->failed = 1;
        return;
    }
    if (name) {
        hr_sbuf_add(&r->out, "event: ", 7);
        hr_sbuf_add(&r->out, name, name_len);
        hr_sbuf_add(&r->out, "\n", 1);
    }
    hr_sbuf_add(&r->out, "data: ", 6);
    hr_sbuf_add(&r->out, s, n);
    hr_sbuf_add(&r->out, "\n\n", 2);
    free(s);
}

int hr_choice_reasoning_tokens(const hr_choice *c) {
    int n = c->reasoning_until;
    if (n && n < c->tokens_fed) n++; /* the </think> token */
    return n > c->completion_tokens ? c->completion_tokens : n;
}

static json_t *usage(const hr_reply *r) {
    int completion = 0, reasoning = 0;
    for (int i = 0; i < r->n; i++) {
        completion += r->choices[i].completion_tokens;
        reasoning += hr_choice_reasoning_tokens(&r->choices[i]);
    }
    return json_pack("{s:i, s:i, s:i, s:{s:i}, s:{s:i}}", "prompt_tokens", r->prompt_tokens,
                     "completion_tokens", completion, "total_tokens", r->prompt_tokens + completion,
                     "prompt_tokens_details", "cached_tokens", r->cached_tokens,
                     "completion_tokens_details", "reasoning_tokens", reasoning);
}

static const char *finish_str(const hr_choice *c) {
    if (c->why == HR_FINISH_LENGTH) return "length";
    if (json_array_size(c->tool_calls)) return "tool_calls";
    return "stop";
}

static int is_chat(const hr_reply *r) { return r->req->api == HR_API_CHAT; }

/* {"id", "object", "created", "model", "choices": [choice]} (+ "usage": null when the
 * stream reports usage at its end). Steals choice. */
static json_t *chunk(hr_reply *r, json_t *choice) {
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", r->id, "object",
                          is_chat(r) ? "chat.completion.chunk" : "text_completion", "created",
                          (json_int_t)r->created, "model", r->model, "choices", choice);
    if (r->req->include_usage) hr_reply_set(r, c, "usage", json_null());
    return c;
}

/* A chat-form entry's alternatives as the legacy {token: logprob} map. */
static json_t *top_map(hr_reply *r, const json_t *e) {
    json_t *top = hr_reply_chk(r, json_object());
    size_t j;
    const json_t *alt;
    json_array_foreach(json_object_get(e, "top_logprobs"), j, alt)
        hr_reply_set(r, top, json_string_value(json_object_get(alt, "token")),
                     json_incref(json_object_get(alt, "logprob")));
    return top;
}

/* Legacy completions logprobs from the chat-form entries. */
static json_t *legacy_logprobs(hr_reply *r, const json_t *entries, size_t offset) {
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    size_t i;
    const json_t *e;
    json_array_foreach(entries, i, e) {
        hr_reply_append(r, toks, json_incref(json_object_get(e, "token")));
        hr_reply_append(r, lps, json_incref(json_object_get(e, "logprob")));
        hr_reply_append(r, tops, top_map(r, e));
        hr_reply_append(r, offs, json_integer((json_int_t)offset));
        offset += json_string_length(json_object_get(e, "token"));
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs",
                     tops, "text_offset", offs);
}

/* The choice's pending logprobs in the API's form (null when not requested); clears them. */
static json_t *take_logprobs(hr_choice *c, size_t text_offset) {
    hr_reply *r = c->r;
    if (!r->req->logprobs) return json_null();
    json_t *lp = is_chat(r) ? json_pack("{s:O}", "content", c->logprobs)
                            : legacy_logprobs(r, c->logprobs, text_offset);
    if (r->req->stream) json_array_clear(c->logprobs);
    return lp;
}

static json_t *chat_choice(hr_choice *c, json_t *delta, const char *finish) {
    return json_pack("{s:i, s:o, s:o, s:s?}", "index", c->index, "delta", delta, "logprobs",
                     take_logprobs(c, 0), "finish_reason", finish);
}

static json_t *text_choice(hr_choice *c, const char *text, size_t len, size_t lp_offset,
                           const char *finish) {
    return json_pack("{s:i, s:o, s:o, s:s?}", "index", c->index, "text",
                     hr_json_string_lossy(text, len), "logprobs", take_logprobs(c, lp_offset),
                     "finish_reason", finish);
}

static void openai_stream_event(hr_choice *c, const hr_out_event *ev) {
    json_t *delta;
    if (ev->kind == HR_OUT_TOOL_CALL) {
        json_t *tc = json_array_get(c->tool_calls, (size_t)ev->tool_index);
        json_t *d = hr_reply_chk(c->r, hr_json_deep_copy(tc));
        hr_reply_set(c->r, d, "index", json_integer(ev->tool_index));
        delta = json_pack("{s:[o]}", "tool_calls", d);
    } else {
        delta = json_pack("{s:o}", ev->kind == HR_OUT_REASONING ? "reasoning_content" : "content",
                          hr_json_string_lossy(ev->text, ev->len));
    }
    hr_sse_put(c->r, NULL, chunk(c->r, chat_choice(c, delta, NULL)));
}

/* Parser events: accumulate (for the final body and tool ids), then format. */
static void on_event(void *ud, const hr_out_event *ev) {
    hr_choice *c = ud;
    hr_reply *r = c->r;
    if (r->failed) return;
    if (ev->kind == HR_OUT_CONTENT) hr_reply_add(r, &c->content, ev->text, ev->len);
    if (ev->kind == HR_OUT_REASONING) {
        hr_reply_add(r, &c->reasoning, ev->text, ev->len);
        c->reasoning_until = c->tokens_fed + 1; /* the token being fed released it */
    }
    if (ev->kind == HR_OUT_TOOL_CALL) {
        char id[48];
        hr_make_id(id, sizeof id, r->req->api == HR_API_MESSAGES ? "toolu_" : "call_");
        hr_reply_append(r, c->tool_calls,
                        json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type", "function",
                                  "function", "name", ev->tool_name, "arguments", ev->tool_args));
    }
    if (r->req->api == HR_API_RESPONSES) { /* streamed or not */
        hr_resp_event(r, ev);
        return;
    }
    if (!r->req->stream) return;
    if (r->req->api == HR_API_MESSAGES)
        hr_anth_event(r, ev);
    else
        openai_stream_event(c, ev);
}

hr_err *hr_reply_create(const hr_api_request *req, const char *model, long created,
                        const hr_server_backend *be, hr_reply **out) {
    int n = req->n > 0 ? req->n : 1;
    hr_reply *r = calloc(1, sizeof *r + (size_t)n * sizeof(hr_choice));
    if (!r) return hr_err_oom();
    r->req = req;
    r->be = be;
    r->created = created;
    r->block = -1;
    r->n = n;
    r->model = strdup(req->model ? req->model : model);
    int ok = r->model != NULL;
    for (int i = 0; i < n; i++) {
        hr_choice *c = &r->choices[i];
        *c = (hr_choice){.r = r, .index = i, .tool_calls = json_array(), .logprobs = json_array()};
        ok = ok && c->tool_calls && c->logprobs;
    }
    const char *prefix = req->api == HR_API_CHAT        ? "chatcmpl-"
                         : req->api == HR_API_MESSAGES  ? "msg_"
                         : req->api == HR_API_RESPONSES ? "resp_"
                                                        : "cmpl-";
    hr_make_id(r->id, sizeof r->id, prefix);
    if (!ok) return hr_reply_free(r), hr_err_oom();
    *out = r;
    return NULL;
}

void hr_reply_free(hr_reply *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        hr_choice *c = &r->choices[i];
        hr_out_parser_free(c->parser);
        free(c->detail);
        free(c->content.s);
        free(c->reasoning.s);
        json_decref(c->tool_calls);
        json_decref(c->logprobs);
    }
    hr_resp_free(r);
    free(r->model);
    free(r->out.s);
    free(r);
}

void hr_reply_set_store(hr_reply *r, struct hr_response_store *s) { r->store = s; }

/* Text into the choice's parser (its events come back through on_event). */
static void feed(hr_choice *c, const char *text, size_t len) {
    hr_err *e = hr_out_parser_feed(c->parser, text, len);
    if (e) hr_reply_fail(c->r);
    hr_err_free(e);
}

/* The choice's first event: its parser (fed the request's prefill as if generated) and,
 * when streaming, the opening chunk or message_start. */
static void choice_begin(hr_choice *c, int in_reasoning) {
    if (c->began) return;
    c->began = 1;
    hr_reply *r = c->r;
    if (r->req->api != HR_API_COMPLETION) {
        hr_out_config oc = {.reasoning = r->be->reasoning,
                            .in_reasoning = in_reasoning,
                            .tools = r->req->use_tools ? r->be->tool_format : HR_TOOLS_NONE,
                            .tool_defs = json_object_get(r->req->chat, "tools")};
        hr_err *e = hr_out_parser_create(&oc, on_event, c, &c->parser);
        if (e) hr_reply_fail(r);
        hr_err_free(e);
    }
    if (r->req->stream && r->req->api == HR_API_MESSAGES) hr_anth_start(r);
    if (r->req->api == HR_API_RESPONSES) hr_resp_start(r);
    if (r->req->stream && is_chat(r))
        hr_sse_put(
            r, NULL,
            chunk(r, chat_choice(c, json_pack("{s:s, s:s}", "role", "assistant", "content", ""),
                                 NULL)));
    if (c->parser && r->req->prefill) feed(c, r->req->prefill, strlen(r->req->prefill));
}

void hr_reply_begin(hr_reply *r, int choice, int prompt_tokens, int cached_tokens,
                    int in_reasoning) {
    hr_choice *c = &r->choices[choice];
    if (c->began) return;
    if (!r->counted) r->prompt_tokens = prompt_tokens;
    if (!r->counted || cached_tokens < r->cached_tokens) r->cached_tokens = cached_tokens;
    r->counted = 1;
    choice_begin(c, in_reasoning);
}

static json_t *alt_entry(hr_reply *r, const char *text, size_t len, float logprob) {
    json_t *bytes = json_array();
    for (size_t i = 0; i < len; i++)
        hr_reply_append(r, bytes, json_integer((unsigned char)text[i]));
    return json_pack("{s:o, s:f, s:o}", "token", hr_json_string_lossy(text, len), "logprob",
                     (double)logprob, "bytes", bytes);
}

static void add_logprobs(hr_choice *c, const hr_gen_token *t) {
    hr_reply *r = c->r;
    json_t *e = alt_entry(r, t->token_text ? t->token_text : "", t->token_len, t->logprob);
    json_t *top = json_array();
    for (int i = 0; i < t->n_top && i < r->req->top_logprobs; i++)
        hr_reply_append(r, top, alt_entry(r, t->top[i].text, t->top[i].len, t->top[i].logprob));
    hr_reply_set(r, e, "top_logprobs", top);
    hr_reply_append(r, c->logprobs, e);
}

void hr_reply_token(hr_reply *r, int choice, const hr_gen_token *t) {
    hr_choice *c = &r->choices[choice];
    if (c->finished) return;
    r->tokens_seen++;
    choice_begin(c, 0);
    if (r->failed) return;
    if (r->req->logprobs) add_logprobs(c, t);
    const char *text = t->text ? t->text : "";
    if (r->req->api != HR_API_COMPLETION) {
        if (c->parser) feed(c, text, t->len);
        c->tokens_fed++;
        return;
    }
    size_t offset = c->content.len;
    hr_reply_add(r, &c->content, text, t->len);
    if (r->req->stream && (t->len || r->req->logprobs))
        hr_sse_put(r, NULL, chunk(r, text_choice(c, text, t->len, offset, NULL)));
}

static int any_error(const hr_reply *r) {
    for (int i = 0; i < r->n; i++)
        if (r->choices[i].finished && r->choices[i].why == HR_FINISH_ERROR) return 1;
    return 0;
}

/* The choice's last chunk; after the last choice's, usage and [DONE]. */
static void openai_stream_finish(hr_choice *c) {
    hr_reply *r = c->r;
    if (c->why == HR_FINISH_ERROR)
        hr_sse_put(r, NULL,
                   hr_error_body(HR_API_CHAT, 500, c->detail ? c->detail : "engine error"));
    else if (is_chat(r))
        hr_sse_put(r, NULL, chunk(r, chat_choice(c, json_object(), finish_str(c))));
    else
        hr_sse_put(r, NULL, chunk(r, text_choice(c, "", 0, c->content.len, finish_str(c))));
    if (r->n_finished < r->n) return;
    if (r->req->include_usage && !any_error(r)) {
        json_t *u = chunk(r, json_object());
        hr_reply_set(r, u, "choices", json_array());
        hr_reply_set(r, u, "usage", usage(r));
        hr_sse_put(r, NULL, u);
    }
    hr_reply_add(r, &r->out, "data: [DONE]\n\n", 14);
}

void hr_reply_finish(hr_reply *r, int choice, hr_finish why, int completion_tokens,
                     const char *detail) {
    hr_choice *c = &r->choices[choice];
    if (c->finished) return;
    choice_begin(c, 0);
    hr_err *e = c->parser && !r->failed ? hr_out_parser_finish(c->parser) : NULL;
    if (e) hr_reply_fail(r);
    hr_err_free(e);
    c->finished = 1;
    r->n_finished++;
    c->why = why;
    c->completion_tokens = completion_tokens;
    if (detail && !(c->detail = strdup(detail))) hr_reply_fail(r);
    if (r->req->api == HR_API_RESPONSES) { /* streamed or not */
        hr_resp_finish(r);
        return;
    }
    if (!r->req->stream) return;
    if (r->req->api == HR_API_MESSAGES)
        hr_anth_finish(r);
    else
        openai_stream_finish(c);
}

void hr_reply_summarize(const hr_reply *r, hr_reply_summary *out) {
    *out = (hr_reply_summary){.prompt_tokens = r->prompt_tokens,
                              .cached_tokens = r->cached_tokens,
                              .tokens_seen = r->tokens_seen};
    for (int i = 0; i < r->n; i++)
        out->completion_tokens += r->choices[i].completion_tokens;
    const hr_choice *c = &r->choices[0];
    if (r->failed) out->finish = "error";
    if (!c->finished || r->failed) return;
    out->finish = c->why == HR_FINISH_CANCELLED ? "cancelled"
                  : c->why == HR_FINISH_ERROR   ? "error"
                                                : finish_str(c);
}

char *hr_reply_take(hr_reply *r, size_t *len) {
    char *s = r->out.s;
    *len = r->out.len;
    r->out = (hr_sbuf){0};
    return s;
}

static json_t *chat_body(hr_choice *c) {
    hr_reply *r = c->r;
    int tools = json_array_size(c->tool_calls) > 0;
    json_t *msg = json_pack("{s:s}", "role", "assistant");
    hr_reply_set(r, msg, "content",
                 c->content.len || !tools
                     ? hr_json_string_lossy(c->content.s ? c->content.s : "", c->content.len)
                     : json_null());
    if (c->reasoning.len)
        hr_reply_set(r, msg, "reasoning_content",
                     hr_json_string_lossy(c->reasoning.s, c->reasoning.len));
    if (tools) hr_reply_set(r, msg, "tool_calls", json_incref(c->tool_calls));
    return json_pack("{s:i, s:o, s:o, s:s}", "index", c->index, "message", msg, "logprobs",
                     take_logprobs(c, 0), "finish_reason", finish_str(c));
}

/* The body (and *status) the reply's builders make; NULL, or r failed, when out of memory. */
static json_t *body(hr_reply *r, int *status) {
    *status = 200;
    for (int i = 0; i < r->n; i++) {
        const hr_choice *c = &r->choices[i];
        if (c->why != HR_FINISH_ERROR) continue;
        *status = 500;
        return hr_error_body(r->req->api, 500, c->detail ? c->detail : "engine error");
    }
    if (r->req->api == HR_API_MESSAGES) return hr_anth_body(r);
    if (r->req->api == HR_API_RESPONSES) return hr_resp_body(r);
    json_t *choices = json_array();
    for (int i = 0; i < r->n; i++) {
        hr_choice *c = &r->choices[i];
        hr_reply_append(r, choices,
                        is_chat(r) ? chat_body(c)
                                   : text_choice(c, c->content.s ? c->content.s : "",
                                                 c->content.len, 0, finish_str(c)));
    }
    return json_pack("{s:s, s:s, s:I, s:s, s:o, s:o}", "id", r->id, "object",
                     is_chat(r) ? "chat.completion" : "text_completion", "created",
                     (json_int_t)r->created, "model", r->model, "choices", choices, "usage",
                     usage(r));
}

json_t *hr_reply_body(hr_reply *r, int *status) {
    json_t *b = r->failed ? NULL : body(r, status);
    if (b && !r->failed) return b;
    json_decref(b);
    r->failed = 1;
    *status = 503;
    return NULL;
}
