/* Replies in OpenAI's Responses shapes: the response object (output items reasoning,
 * message, function_call in the order the model wrote them, usage, the request's echoed
 * fields) and its event stream: response.created, response.in_progress, then per item
 * response.output_item.added, (content_part.added, output_text / reasoning_text deltas,
 * .done, content_part.done) or function_call_arguments.delta/.done,
 * response.output_item.done, and last response.completed / .incomplete / .failed. Every
 * event has a sequence_number; there is no [DONE]. Items are built from the output
 * parser's events the same way streamed or not, so the body equals the stream's final
 * response. A finished response goes into the store (when asked) with its conversation. */
#include <ctype.h>
#include <stdio.h>

#include "base/json.h"
#include "server/reply_internal.h"
#include "server/response_store.h"

enum { ITEM_REASONING, ITEM_MESSAGE };

struct hr_resp_state {
    int seq;        /* next sequence_number */
    json_t *output; /* items so far; the open one is replaced when it closes */
    int open;       /* index of the open reasoning / message item, -1 none */
    int open_kind;
    char open_id[48];
    hr_sbuf text;    /* the open item's text */
    hr_sbuf thought; /* every reasoning item's text, for the stored conversation */
    hr_sbuf answer;  /* every message item's text, likewise */
    json_t *final;   /* the response object, once finished */
};

static const json_t *echo(const hr_reply *r) { return json_object_get(r->req->responses, "echo"); }

/* Appends "event: TYPE" and the event (type and sequence_number added); steals ev. */
static void put(hr_reply *r, const char *type, json_t *ev) {
    if (!r->req->stream) {
        json_decref(ev);
        return;
    }
    hr_reply_set(r, ev, "type", json_string(type));
    hr_reply_set(r, ev, "sequence_number", json_integer(r->resp->seq));
    hr_sse_put(r, type, ev);
    if (!r->failed) r->resp->seq++;
}

int hr_resp_next_seq(const hr_reply *r) { return r->resp ? r->resp->seq : 0; }

static json_t *usage(const hr_reply *r) {
    const hr_choice *c = &r->choices[0];
    int reasoning = hr_choice_reasoning_tokens(c);
    return json_pack("{s:i, s:{s:i}, s:i, s:{s:i}, s:i}", "input_tokens", r->prompt_tokens,
                     "input_tokens_details", "cached_tokens", r->cached_tokens, "output_tokens",
                     c->completion_tokens, "output_tokens_details", "reasoning_tokens", reasoning,
                     "total_tokens", r->prompt_tokens + c->completion_tokens);
}

/* The response object with status; finished ones carry usage and their end's details. */
static json_t *response(hr_reply *r, const char *status) {
    const hr_choice *c = &r->choices[0];
    int done = c->finished;
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:s, s:n, s:n, s:s, s:O}", "id", r->id, "object", "response",
                  "created_at", (json_int_t)r->created, "status", status, "error",
                  "incomplete_details", "model", r->model, "output", r->resp->output);
    if (done && c->why == HR_FINISH_LENGTH)
        hr_reply_set(r, o, "incomplete_details", json_pack("{s:s}", "reason", "max_output_tokens"));
    const char *msg = c->detail ? c->detail : "engine error";
    if (done && c->why == HR_FINISH_ERROR)
        hr_reply_set(r, o, "error",
                     json_pack("{s:s, s:o}", "code", "server_error", "message",
                               hr_json_string_lossy(msg, strlen(msg))));
    if (!o || (echo(r) && json_object_update(o, (json_t *)echo(r)))) hr_reply_fail(r);
    hr_reply_set(r, o, "usage", done ? usage(r) : json_null());
    json_t *copy = hr_json_deep_copy(o); /* output items keep changing; the event must not */
    json_decref(o);
    return hr_reply_chk(r, copy);
}

void hr_resp_start(hr_reply *r) {
    if (r->resp) return;
    if (!(r->resp = calloc(1, sizeof *r->resp))) {
        hr_reply_fail(r);
        return;
    }
    r->resp->open = -1;
    r->resp->output = hr_reply_chk(r, json_array());
    put(r, "response.created", json_pack("{s:o}", "response", response(r, "in_progress")));
    put(r, "response.in_progress", json_pack("{s:o}", "response", response(r, "in_progress")));
}

static json_t *part(int kind, const char *text, size_t len) {
    json_t *t = hr_json_string_lossy(text ? text : "", len);
    if (kind == ITEM_REASONING) return json_pack("{s:s, s:o}", "type", "reasoning_text", "text", t);
    return json_pack("{s:s, s:o, s:[], s:[]}", "type", "output_text", "text", t, "annotations",
                     "logprobs");
}

static json_t *item(hr_reply *r, const char *status, int whole) {
    hr_resp_state *st = r->resp;
    json_t *content = json_array();
    if (whole) hr_reply_append(r, content, part(st->open_kind, st->text.s, st->text.len));
    if (st->open_kind == ITEM_REASONING)
        return json_pack("{s:s, s:s, s:[], s:o}", "id", st->open_id, "type", "reasoning", "summary",
                         "content", content);
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "id", st->open_id, "type", "message", "status",
                     status, "role", "assistant", "content", content);
}

/* {"item_id", "output_index", "content_index": 0} for the open item's events. */
static json_t *at(const hr_resp_state *st) {
    return json_pack("{s:s, s:i, s:i}", "item_id", st->open_id, "output_index", st->open,
                     "content_index", 0);
}

static void close_item(hr_reply *r, const char *status) {
    hr_resp_state *st = r->resp;
    if (st->open < 0) return;
    json_t *text = hr_json_string_lossy(st->text.s ? st->text.s : "", st->text.len);
    json_t *ev = at(st);
    hr_reply_set(r, ev, "text", text);
    if (st->open_kind == ITEM_MESSAGE) hr_reply_set(r, ev, "logprobs", json_array());
    put(r,
        st->open_kind == ITEM_MESSAGE ? "response.output_text.done"
                                      : "response.reasoning_text.done",
        ev);
    ev = at(st);
    hr_reply_set(r, ev, "part", part(st->open_kind, st->text.s, st->text.len));
    put(r, "response.content_part.done", ev);
    json_t *done = item(r, status, 1);
    if (json_array_set(st->output, (size_t)st->open, done)) hr_reply_fail(r);
    put(r, "response.output_item.done",
        json_pack("{s:i, s:o}", "output_index", st->open, "item", done));
    hr_sbuf *all = st->open_kind == ITEM_MESSAGE ? &st->answer : &st->thought;
    if (all->len && st->text.len) hr_reply_add(r, all, "\n\n", 2);
    hr_reply_add(r, all, st->text.s ? st->text.s : "", st->text.len);
    free(st->text.s);
    st->text = (hr_sbuf){0};
    st->open = -1;
}

static void open_item(hr_reply *r, int kind) {
    hr_resp_state *st = r->resp;
    close_item(r, "completed");
    st->open = (int)json_array_size(st->output);
    st->open_kind = kind;
    hr_make_id(st->open_id, sizeof st->open_id, kind == ITEM_MESSAGE ? "msg_" : "rs_");
    json_t *added = item(r, "in_progress", 0);
    if (json_array_append(st->output, added)) hr_reply_fail(r);
    put(r, "response.output_item.added",
        json_pack("{s:i, s:o}", "output_index", st->open, "item", added));
    json_t *ev = at(st);
    hr_reply_set(r, ev, "part", part(kind, "", 0));
    put(r, "response.content_part.added", ev);
}

/* Content or reasoning text: whitespace before an item's first visible character is
 * dropped (the newlines between </think> or a tool call and the next text). */
static void text_event(hr_reply *r, int kind, const char *s, size_t n) {
    hr_resp_state *st = r->resp;
    if (st->open < 0 || st->open_kind != kind) {
        while (n && isspace((unsigned char)*s))
            s++, n--;
        if (!n) return;
        open_item(r, kind);
    }
    hr_reply_add(r, &st->text, s, n);
    json_t *ev = at(st);
    hr_reply_set(r, ev, "delta", hr_json_string_lossy(s, n));
    if (kind == ITEM_MESSAGE) hr_reply_set(r, ev, "logprobs", json_array());
    put(r, kind == ITEM_MESSAGE ? "response.output_text.delta" : "response.reasoning_text.delta",
        ev);
}

/* A whole tool call: one function_call item, its arguments in one delta. The call_id is
 * the id reply.c gave the call. */
static void call_event(hr_reply *r, const hr_out_event *ev) {
    hr_resp_state *st = r->resp;
    close_item(r, "completed");
    const json_t *tc = json_array_get(r->choices[0].tool_calls, (size_t)ev->tool_index);
    char id[48];
    hr_make_id(id, sizeof id, "fc_");
    int index = (int)json_array_size(st->output);
    json_t *it = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s}", "id", id, "type", "function_call",
                           "status", "in_progress", "call_id", json_object_get(tc, "id"), "name",
                           ev->tool_name, "arguments", "");
    put(r, "response.output_item.added",
        json_pack("{s:i, s:O}", "output_index", index, "item", it));
    put(r, "response.function_call_arguments.delta",
        json_pack("{s:s, s:i, s:s}", "item_id", id, "output_index", index, "delta", ev->tool_args));
    put(r, "response.function_call_arguments.done",
        json_pack("{s:s, s:i, s:s, s:s}", "item_id", id, "output_index", index, "name",
                  ev->tool_name, "arguments", ev->tool_args));
    hr_reply_set(r, it, "status", json_string("completed"));
    hr_reply_set(r, it, "arguments", json_string(ev->tool_args));
    if (json_array_append(st->output, it)) hr_reply_fail(r);
    put(r, "response.output_item.done", json_pack("{s:i, s:o}", "output_index", index, "item", it));
}

void hr_resp_event(hr_reply *r, const hr_out_event *ev) {
    hr_resp_state *st = r->resp;
    if (!st || r->failed) return;
    if (ev->kind == HR_OUT_TOOL_CALL) {
        call_event(r, ev);
    } else if (ev->kind == HR_OUT_REASONING) {
        text_event(r, ITEM_REASONING, ev->text, ev->len);
    } else {
        text_event(r, ITEM_MESSAGE, ev->text, ev->len);
    }
}

/* This turn as one assistant message in template form (tool-call arguments as objects). */
static json_t *turn_message(hr_reply *r) {
    hr_resp_state *st = r->resp;
    json_t *m = json_pack("{s:s, s:o}", "role", "assistant", "content",
                          hr_json_string_lossy(st->answer.s ? st->answer.s : "", st->answer.len));
    if (st->thought.len)
        hr_reply_set(r, m, "reasoning_content",
                     hr_json_string_lossy(st->thought.s, st->thought.len));
    json_t *calls = json_array();
    size_t i;
    const json_t *tc;
    json_array_foreach(r->choices[0].tool_calls, i, tc) {
        const json_t *fn = json_object_get(tc, "function");
        hr_reply_append(r, calls,
                        json_pack("{s:O, s:s, s:{s:O, s:o}}", "id", json_object_get(tc, "id"),
                                  "type", "function", "function", "name",
                                  json_object_get(fn, "name"), "arguments",
                                  hr_reply_call_args(r, tc)));
    }
    if (json_array_size(calls)) hr_reply_set(r, m, "tool_calls", json_incref(calls));
    json_decref(calls);
    return m;
}

/* Keeps the finished response and its conversation for previous_response_id and GET. */
static void store(hr_reply *r) {
    if (!r->store || !json_is_true(json_object_get(r->req->responses, "store"))) return;
    json_t *conv = hr_json_deep_copy(json_object_get(r->req->responses, "input"));
    hr_reply_append(r, conv, turn_message(r));
    if (r->failed) {
        json_decref(conv);
        return;
    }
    if (hr_response_store_put(r->store, r->id, hr_json_deep_copy(r->resp->final), conv) < 0)
        hr_reply_fail(r);
}

void hr_resp_finish(hr_reply *r) {
    hr_resp_state *st = r->resp;
    if (!st) return;
    hr_finish why = r->choices[0].why;
    const char *status = why == HR_FINISH_LENGTH      ? "incomplete"
                         : why == HR_FINISH_ERROR     ? "failed"
                         : why == HR_FINISH_CANCELLED ? "cancelled"
                                                      : "completed";
    close_item(r, why == HR_FINISH_STOP ? "completed" : "incomplete");
    if (r->failed) return;
    st->final = response(r, status);
    /* stored before the last event: a store that ran out of memory fails the reply */
    if (st->final && (why == HR_FINISH_STOP || why == HR_FINISH_LENGTH)) store(r);
    const char *event = why == HR_FINISH_STOP    ? "response.completed"
                        : why == HR_FINISH_ERROR ? "response.failed"
                                                 : "response.incomplete";
    put(r, event, json_pack("{s:O}", "response", st->final));
}

json_t *hr_resp_body(hr_reply *r) {
    if (r->resp && r->resp->final) return json_incref(r->resp->final);
    hr_reply_fail(r);
    return NULL;
}

void hr_resp_free(hr_reply *r) {
    hr_resp_state *st = r->resp;
    if (!st) return;
    json_decref(st->output);
    json_decref(st->final);
    free(st->text.s);
    free(st->thought.s);
    free(st->answer.s);
    free(st);
}

const char *hr_resp_error_param(const char *msg, char *buf, size_t cap) {
    if (!strncmp(msg, "Previous response with id", 25)) return "previous_response_id";
    const char *s = msg, *end;
    if (!strncmp(msg, "request: ", 9)) { /* the first quoted name */
        if (!(s = strchr(msg + 9, '"'))) return NULL;
        end = strchr(++s, '"');
    } else if (!strncmp(msg, "input[", 6) || !strncmp(msg, "tools[", 6)) {
        end = s + strcspn(s, " :");
    } else {
        return NULL;
    }
    if (!end || end == s) return NULL;
    snprintf(buf, cap, "%.*s", (int)(end - s), s);
    return buf;
}
