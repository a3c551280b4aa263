/* Replies in Anthropic's Messages shapes: the message object, and the streaming event
 * sequence message_start, (content_block_start, ping after the first one,
 * content_block_delta..., content_block_stop)*, message_delta, message_stop. Blocks are
 * thinking (thinking_delta), text (text_delta) and tool_use (one input_json_delta).
 * Messages have no n: everything is choice 0. */
#include "base/json.h"
#include "server/reply_internal.h"

enum { BLOCK_TEXT, BLOCK_THINKING, BLOCK_TOOL };

static const char *stop_reason(const hr_choice *c) {
    if (c->why == HR_FINISH_LENGTH) return "max_tokens";
    if (json_array_size(c->tool_calls)) return "tool_use";
    return c->why == HR_FINISH_STOP && c->detail ? "stop_sequence" : "end_turn";
}

/* The matched stop sequence, or JSON null. */
static json_t *stop_sequence(const hr_choice *c) {
    return c->finished && c->why == HR_FINISH_STOP && c->detail ? json_string(c->detail)
                                                                : json_null();
}

static json_t *message(hr_reply *r, json_t *content, const char *stop, int output_tokens) {
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s?, s:o, s:{s:i, s:i, s:i}}", "id", r->id, "type",
                     "message", "role", "assistant", "model", r->model, "content", content,
                     "stop_reason", stop, "stop_sequence", stop_sequence(&r->choices[0]), "usage",
                     "input_tokens", r->prompt_tokens - r->cached_tokens, "cache_read_input_tokens",
                     r->cached_tokens, "output_tokens", output_tokens);
}

void hr_anth_start(hr_reply *r) {
    hr_sse_put(r, "message_start",
               json_pack("{s:s, s:o}", "type", "message_start", "message",
                         message(r, json_array(), NULL, 1)));
}

static void close_block(hr_reply *r) {
    if (r->block < 0) return;
    hr_sse_put(r, "content_block_stop",
               json_pack("{s:s, s:i}", "type", "content_block_stop", "index", r->block));
    r->block = -1;
}

static void ping(hr_reply *r) {
    if (r->ping_sent) return;
    r->ping_sent = 1;
    hr_sse_put(r, "ping", json_pack("{s:s}", "type", "ping"));
}

static void open_block(hr_reply *r, int kind, json_t *block) {
    close_block(r);
    r->block = r->n_blocks++;
    r->block_kind = kind;
    hr_sse_put(r, "content_block_start",
               json_pack("{s:s, s:i, s:o}", "type", "content_block_start", "index", r->block,
                         "content_block", block));
    ping(r);
}

static void delta(hr_reply *r, json_t *d) {
    hr_sse_put(
        r, "content_block_delta",
        json_pack("{s:s, s:i, s:o}", "type", "content_block_delta", "index", r->block, "delta", d));
}

void hr_anth_event(hr_reply *r, const hr_out_event *ev) {
    if (ev->kind == HR_OUT_TOOL_CALL) {
        json_t *tc = json_array_get(r->choices[0].tool_calls, (size_t)ev->tool_index);
        open_block(r, BLOCK_TOOL,
                   json_pack("{s:s, s:O, s:s, s:{}}", "type", "tool_use", "id",
                             json_object_get(tc, "id"), "name", ev->tool_name, "input"));
        delta(r,
              json_pack("{s:s, s:s}", "type", "input_json_delta", "partial_json", ev->tool_args));
        close_block(r);
        return;
    }
    int thinking = ev->kind == HR_OUT_REASONING;
    int kind = thinking ? BLOCK_THINKING : BLOCK_TEXT;
    if (r->block < 0 || r->block_kind != kind)
        open_block(r, kind,
                   thinking ? json_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking", "",
                                        "signature", "")
                            : json_pack("{s:s, s:s}", "type", "text", "text", ""));
    delta(r, json_pack("{s:s, s:o}", "type", thinking ? "thinking_delta" : "text_delta",
                       thinking ? "thinking" : "text", hr_json_string_lossy(ev->text, ev->len)));
}

void hr_anth_finish(hr_reply *r) {
    const hr_choice *c = &r->choices[0];
    if (c->why == HR_FINISH_ERROR) {
        hr_sse_put(r, "error",
                   hr_error_body(HR_API_MESSAGES, 500, c->detail ? c->detail : "engine error"));
        return;
    }
    close_block(r);
    ping(r);
    hr_sse_put(r, "message_delta",
               json_pack("{s:s, s:{s:s, s:o}, s:{s:i}}", "type", "message_delta", "delta",
                         "stop_reason", stop_reason(c), "stop_sequence", stop_sequence(c), "usage",
                         "output_tokens", c->completion_tokens));
    hr_sse_put(r, "message_stop", json_pack("{s:s}", "type", "message_stop"));
}

json_t *hr_anth_body(hr_reply *r) {
    const hr_choice *c = &r->choices[0];
    json_t *content = json_array();
    if (c->reasoning.len)
        hr_reply_append(r, content,
                        json_pack("{s:s, s:o, s:s}", "type", "thinking", "thinking",
                                  hr_json_string_lossy(c->reasoning.s, c->reasoning.len),
                                  "signature", ""));
    if (c->content.len)
        hr_reply_append(r, content,
                        json_pack("{s:s, s:o}", "type", "text", "text",
                                  hr_json_string_lossy(c->content.s, c->content.len)));
    size_t i;
    const json_t *tc;
    json_array_foreach(c->tool_calls, i, tc) {
        const json_t *fn = json_object_get(tc, "function");
        hr_reply_append(r, content,
                        json_pack("{s:s, s:O, s:O, s:o}", "type", "tool_use", "id",
                                  json_object_get(tc, "id"), "name", json_object_get(fn, "name"),
                                  "input", hr_reply_call_args(r, tc)));
    }
    return message(r, content, stop_reason(c), c->completion_tokens);
}
