/* Reply builders: scripted engine events into OpenAI chat / completion bodies and SSE
 * chunks and Anthropic messages and their event sequence, checked field by field. */
#include "harness.h"

#include "server/reply.h"

static const hr_server_backend BE = {
    .tool_format = HR_TOOLS_QWEN, .reasoning = 1, .limits = {.max_tokens_limit = 1000}};

static hr_api_request *
req(hr_err *(*fn)(const json_t *, const hr_request_limits *, hr_api_request **), const char *src) {
    json_t *j = json_loads(src, 0, NULL);
    hr_api_request *r = NULL;
    hr_err *e = fn(j, &BE.limits, &r);
    if (e) printf("# bad test request: %s\n", hr_err_msg(e));
    hr_err_free(e);
    json_decref(j);
    return r;
}

/* Feeds pieces (NULL-terminated) as choice's tokens, then finishes it. */
static void script_choice(hr_reply *r, int choice, const char **pieces, hr_finish why) {
    hr_reply_begin(r, choice, 10, 4, 0);
    int n = 0;
    for (; pieces[n]; n++) {
        hr_token_alt alt[2] = {{pieces[n], strlen(pieces[n]), -0.5f}, {"x", 1, -2.0f}};
        hr_gen_token t = {.text = pieces[n],
                          .len = strlen(pieces[n]),
                          .token = n,
                          .token_text = pieces[n],
                          .token_len = strlen(pieces[n]),
                          .logprob = -0.5f,
                          .top = alt,
                          .n_top = 2};
        hr_reply_token(r, choice, &t);
    }
    hr_reply_finish(r, choice, why, n, NULL);
}

static void script(hr_reply *r, const char **pieces, hr_finish why) {
    script_choice(r, 0, pieces, why);
}

/* Splits SSE text into its data payloads (JSON parsed; [DONE] as the string "[DONE]")
 * and event names (array of strings, "" when none). */
static json_t *sse_parse(const char *s, json_t **names) {
    json_t *out = json_array();
    *names = json_array();
    const char *ev = "";
    char evbuf[64];
    while (*s) {
        const char *nl = strchr(s, '\n');
        if (!nl) break;
        if (!strncmp(s, "event: ", 7)) {
            snprintf(evbuf, sizeof evbuf, "%.*s", (int)(nl - s - 7), s + 7);
            ev = evbuf;
        } else if (!strncmp(s, "data: ", 6)) {
            json_t *v = !strncmp(s + 6, "[DONE]", 6)
                            ? json_string("[DONE]")
                            : json_loadb(s + 6, (size_t)(nl - s - 6), 0, NULL);
            json_array_append_new(out, v ? v : json_string("BAD JSON"));
            json_array_append_new(*names, json_string(ev));
            ev = "";
        }
        s = nl + 1;
    }
    return out;
}

static const char *path_str(const json_t *v, const char *path) {
    char key[64];
    while (v && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(key)) : json_object_get(v, key);
        path += n + (dot ? 1 : 0);
    }
    return json_is_string(v) ? json_string_value(v)
           : json_is_null(v) ? "null"
           : v               ? "(non-string)"
                             : "(missing)";
}

static json_int_t path_int(const json_t *v, const char *path) {
    char key[64];
    while (v && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(key)) : json_object_get(v, key);
        path += n + (dot ? 1 : 0);
    }
    return json_is_integer(v) ? json_integer_value(v) : -999;
}

static void test_chat_body(void) {
    hr_api_request *q =
        req(hr_parse_chat_request,
            "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}],"
            " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], "
            "\"logprobs\": true, \"top_logprobs\": 1}");
    HR_CHECK(q, "request");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "default", 1700000000, &BE, &r));
    const char *p[] = {"<think>hm</think>", "Hi", " there",
                       "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>", NULL};
    script(r, p, HR_FINISH_STOP);
    int status;
    json_t *b = hr_reply_body(r, &status);
    HR_CHECK(status == 200, "status");
    HR_CHECK(!strncmp(path_str(b, "id"), "chatcmpl-", 9) && strlen(path_str(b, "id")) == 33,
             "id %s", path_str(b, "id"));
    HR_CHECK(!strcmp(path_str(b, "object"), "chat.completion") &&
                 path_int(b, "created") == 1700000000 && !strcmp(path_str(b, "model"), "m1"),
             "header fields");
    HR_CHECK(!strcmp(path_str(b, "choices.0.message.role"), "assistant"), "role");
    HR_CHECK(!strcmp(path_str(b, "choices.0.message.content"), "Hi there"), "content %s",
             path_str(b, "choices.0.message.content"));
    HR_CHECK(!strcmp(path_str(b, "choices.0.message.reasoning_content"), "hm"), "reasoning");
    HR_CHECK(!strcmp(path_str(b, "choices.0.message.tool_calls.0.function.name"), "f") &&
                 !strcmp(path_str(b, "choices.0.message.tool_calls.0.function.arguments"),
                         "{\"a\":1}") &&
                 !strcmp(path_str(b, "choices.0.message.tool_calls.0.type"), "function") &&
                 !strncmp(path_str(b, "choices.0.message.tool_calls.0.id"), "call_", 5),
             "tool call");
    HR_CHECK(!strcmp(path_str(b, "choices.0.finish_reason"), "tool_calls"), "finish");
    HR_CHECK(path_int(b, "usage.prompt_tokens") == 10 &&
                 path_int(b, "usage.completion_tokens") == 4 &&
                 path_int(b, "usage.total_tokens") == 14 &&
                 path_int(b, "usage.prompt_tokens_details.cached_tokens") == 4,
             "usage");
    HR_CHECK(
        !strcmp(path_str(b, "choices.0.logprobs.content.1.token"), "Hi") &&
            path_int(b, "choices.0.logprobs.content.1.bytes.0") == 'H' &&
            !strcmp(path_str(b, "choices.0.logprobs.content.1.top_logprobs.0.token"), "Hi") &&
            json_array_size(json_object_get(
                json_array_get(json_object_get(
                                   json_object_get(json_array_get(json_object_get(b, "choices"), 0),
                                                   "logprobs"),
                                   "content"),
                               1),
                "top_logprobs")) == 1,
        "logprobs");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);
}

static void test_chat_stream(void) {
    hr_api_request *q =
        req(hr_parse_chat_request,
            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream\": true,"
            " \"stream_options\": {\"include_usage\": true},"
            " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "default", 5, &BE, &r));
    const char *p[] = {"<think>",  "a",
                       "</think>", "Hel",
                       "lo<tool_", "call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
                       NULL};
    script(r, p, HR_FINISH_STOP);
    size_t len;
    char *s = hr_reply_take(r, &len);
    HR_CHECK(s && len == strlen(s), "sse text");
    json_t *names, *ev = sse_parse(s, &names);
    free(s);
    size_t n = json_array_size(ev);
    HR_CHECK(n == 8, "8 data lines, got %zu", n);
    json_t *c0 = json_array_get(ev, 0);
    HR_CHECK(!strcmp(path_str(c0, "object"), "chat.completion.chunk") &&
                 !strcmp(path_str(c0, "model"), "default") &&
                 !strcmp(path_str(c0, "choices.0.delta.role"), "assistant") &&
                 !strcmp(path_str(c0, "usage"), "null") &&
                 !strcmp(path_str(c0, "choices.0.finish_reason"), "null"),
             "first chunk");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 1), "choices.0.delta.reasoning_content"), "a"),
             "reasoning delta");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 2), "choices.0.delta.content"), "Hel"),
             "content 1");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 3), "choices.0.delta.content"), "lo"),
             "content 2");
    json_t *tc = json_array_get(ev, 4);
    HR_CHECK(path_int(tc, "choices.0.delta.tool_calls.0.index") == 0 &&
                 !strcmp(path_str(tc, "choices.0.delta.tool_calls.0.function.name"), "f") &&
                 !strcmp(path_str(tc, "choices.0.delta.tool_calls.0.function.arguments"), "{}"),
             "tool delta");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 5), "choices.0.finish_reason"), "tool_calls"),
             "finish chunk");
    json_t *u = json_array_get(ev, 6);
    HR_CHECK(json_array_size(json_object_get(u, "choices")) == 0 &&
                 path_int(u, "usage.completion_tokens") == 6,
             "usage chunk");
    HR_CHECK(!strcmp(path_str(ev, "7"), "[DONE]"), "done");
    const char *id = path_str(c0, "id");
    for (size_t i = 0; i + 1 < n; i++)
        HR_CHECK(!strcmp(path_str(json_array_get(ev, i), "id"), id), "same id in every chunk");
    json_decref(ev);
    json_decref(names);
    hr_reply_free(r);
    hr_api_request_free(q);
}

static void test_completion(void) {
    hr_api_request *q =
        req(hr_parse_completion_request, "{\"prompt\": \"x\", \"stream\": true, \"logprobs\": 1}");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    const char *p[] = {"<think>", "ab", NULL};
    script(r, p, HR_FINISH_LENGTH);
    size_t len;
    char *s = hr_reply_take(r, &len);
    json_t *names, *ev = sse_parse(s, &names);
    free(s);
    HR_CHECK(json_array_size(ev) == 4, "2 text chunks, finish, DONE: %zu", json_array_size(ev));
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 0), "choices.0.text"), "<think>") &&
                 !strcmp(path_str(json_array_get(ev, 0), "object"), "text_completion"),
             "raw text, no parsing");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 1), "choices.0.logprobs.tokens.0"), "ab") &&
                 path_int(json_array_get(ev, 1), "choices.0.logprobs.text_offset.0") == 7,
             "legacy logprobs");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 2), "choices.0.finish_reason"), "length"),
             "length");
    json_decref(ev);
    json_decref(names);
    hr_reply_free(r);
    hr_api_request_free(q);

    q = req(hr_parse_completion_request, "{\"prompt\": [1, 2]}");
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    const char *p2[] = {"a", "b", NULL};
    script(r, p2, HR_FINISH_STOP);
    int status;
    json_t *b = hr_reply_body(r, &status);
    HR_CHECK(!strcmp(path_str(b, "object"), "text_completion") &&
                 !strcmp(path_str(b, "choices.0.text"), "ab") &&
                 !strcmp(path_str(b, "choices.0.logprobs"), "null") &&
                 !strncmp(path_str(b, "id"), "cmpl-", 5) && path_int(b, "usage.total_tokens") == 12,
             "completion body");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);
}

static void test_anthropic(void) {
    hr_api_request *q =
        req(hr_parse_messages_request, "{\"max_tokens\": 50, \"stream\": true, \"messages\": "
                                       "[{\"role\": \"user\", \"content\": \"x\"}],"
                                       " \"tools\": [{\"name\": \"f\", \"input_schema\": {}}]}");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "claude-x", 5, &BE, &r));
    const char *p[] = {"<think>plan</think>", "Sure", "!",
                       "<tool_call>{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}</tool_call>",
                       NULL};
    script(r, p, HR_FINISH_STOP);
    size_t len;
    char *s = hr_reply_take(r, &len);
    json_t *names, *ev = sse_parse(s, &names);
    free(s);
    static const char *want[] = {
        "message_start",       "content_block_start", "ping",
        "content_block_delta", "content_block_stop",  "content_block_start",
        "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta",       "message_stop"};
    size_t nw = sizeof want / sizeof *want;
    HR_CHECK(json_array_size(ev) == nw, "%zu events, want %zu", json_array_size(ev), nw);
    for (size_t i = 0; i < nw; i++) {
        HR_CHECK(!strcmp(json_string_value(json_array_get(names, i)), want[i]), "event %zu name",
                 i);
        HR_CHECK(!strcmp(path_str(json_array_get(ev, i), "type"), want[i]), "event %zu type %s", i,
                 path_str(json_array_get(ev, i), "type"));
    }
    json_t *ms = json_array_get(ev, 0);
    HR_CHECK(!strncmp(path_str(ms, "message.id"), "msg_", 4) &&
                 !strcmp(path_str(ms, "message.role"), "assistant") &&
                 !strcmp(path_str(ms, "message.model"), "claude-x") &&
                 path_int(ms, "message.usage.input_tokens") == 6 &&
                 json_array_size(json_object_get(json_object_get(ms, "message"), "content")) == 0,
             "message_start");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 1), "content_block.type"), "thinking") &&
                 !strcmp(path_str(json_array_get(ev, 3), "delta.thinking"), "plan") &&
                 !strcmp(path_str(json_array_get(ev, 3), "delta.type"), "thinking_delta"),
             "thinking block");
    HR_CHECK(path_int(json_array_get(ev, 5), "index") == 1 &&
                 !strcmp(path_str(json_array_get(ev, 5), "content_block.type"), "text") &&
                 !strcmp(path_str(json_array_get(ev, 7), "delta.text"), "!") &&
                 !strcmp(path_str(json_array_get(ev, 7), "delta.type"), "text_delta"),
             "text block");
    json_t *tu = json_array_get(ev, 9);
    HR_CHECK(
        path_int(tu, "index") == 2 && !strcmp(path_str(tu, "content_block.type"), "tool_use") &&
            !strncmp(path_str(tu, "content_block.id"), "toolu_", 6) &&
            !strcmp(path_str(tu, "content_block.name"), "f") &&
            json_object_size(json_object_get(json_object_get(tu, "content_block"), "input")) == 0,
        "tool_use start");
    HR_CHECK(!strcmp(path_str(json_array_get(ev, 10), "delta.type"), "input_json_delta") &&
                 !strcmp(path_str(json_array_get(ev, 10), "delta.partial_json"), "{\"k\":\"v\"}"),
             "input_json_delta");
    json_t *md = json_array_get(ev, 12);
    HR_CHECK(!strcmp(path_str(md, "delta.stop_reason"), "tool_use") &&
                 !strcmp(path_str(md, "delta.stop_sequence"), "null") &&
                 path_int(md, "usage.output_tokens") == 4,
             "message_delta");
    json_decref(ev);
    json_decref(names);
    hr_reply_free(r);
    hr_api_request_free(q);
}

static void test_anthropic_body(void) {
    hr_api_request *q =
        req(hr_parse_messages_request,
            "{\"max_tokens\": 50, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}],"
            " \"tools\": [{\"name\": \"f\", \"input_schema\": {}}]}");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "claude-x", 5, &BE, &r));
    const char *p[] = {"Hi", "<tool_call>{\"name\": \"f\", \"arguments\": {\"k\": 2}}</tool_call>",
                       NULL};
    script(r, p, HR_FINISH_STOP);
    int status;
    json_t *b = hr_reply_body(r, &status);
    HR_CHECK(!strcmp(path_str(b, "type"), "message") &&
                 !strcmp(path_str(b, "content.0.type"), "text") &&
                 !strcmp(path_str(b, "content.0.text"), "Hi") &&
                 !strcmp(path_str(b, "content.1.type"), "tool_use") &&
                 path_int(b, "content.1.input.k") == 2 &&
                 !strcmp(path_str(b, "stop_reason"), "tool_use") &&
                 path_int(b, "usage.output_tokens") == 2 &&
                 path_int(b, "usage.cache_read_input_tokens") == 4,
             "body");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);
    q = req(hr_parse_messages_request,
            "{\"max_tokens\": 5, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}");
    HR_CHECK_OK(hr_reply_create(q, "c", 5, &BE, &r));
    const char *p2[] = {"a", NULL};
    script(r, p2, HR_FINISH_LENGTH);
    b = hr_reply_body(r, &status);
    HR_CHECK(!strcmp(path_str(b, "stop_reason"), "max_tokens") &&
                 !strcmp(path_str(b, "stop_sequence"), "null"),
             "max_tokens");
    json_decref(b);
    hr_reply_free(r);
    HR_CHECK_OK(hr_reply_create(q, "c", 5, &BE, &r));
    hr_reply_token(r, 0, &(hr_gen_token){.text = "a", .len = 1});
    hr_reply_finish(r, 0, HR_FINISH_STOP, 1, "\n\nHuman:");
    b = hr_reply_body(r, &status);
    HR_CHECK(!strcmp(path_str(b, "stop_reason"), "stop_sequence") &&
                 !strcmp(path_str(b, "stop_sequence"), "\n\nHuman:"),
             "stop_sequence");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);
}

static void test_errors(void) {
    json_t *e = hr_error_body(HR_API_CHAT, 400, "bad \"x\"");
    HR_CHECK(!strcmp(path_str(e, "error.message"), "bad \"x\"") &&
                 !strcmp(path_str(e, "error.type"), "invalid_request_error") &&
                 path_int(e, "error.code") == 400,
             "openai");
    json_decref(e);
    e = hr_error_body(HR_API_MESSAGES, 401, "key");
    HR_CHECK(!strcmp(path_str(e, "type"), "error") &&
                 !strcmp(path_str(e, "error.type"), "authentication_error") &&
                 !strcmp(path_str(e, "error.message"), "key"),
             "anthropic");
    json_decref(e);
    static const struct {
        int status;
        const char *type;
    } anth[] = {{400, "invalid_request_error"},
                {401, "authentication_error"},
                {402, "billing_error"},
                {403, "permission_error"},
                {404, "not_found_error"},
                {405, "invalid_request_error"},
                {409, "invalid_request_error"},
                {413, "request_too_large"},
                {429, "rate_limit_error"},
                {500, "api_error"},
                {503, "api_error"},
                {529, "overloaded_error"}};
    for (size_t i = 0; i < sizeof anth / sizeof *anth; i++) {
        e = hr_error_body(HR_API_MESSAGES, anth[i].status, "m");
        HR_CHECK(!strcmp(path_str(e, "error.type"), anth[i].type), "anthropic %d: %s",
                 anth[i].status, path_str(e, "error.type"));
        json_decref(e);
    }
    hr_api_request *q =
        req(hr_parse_chat_request,
            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream\": true}");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    hr_reply_token(r, 0, &(hr_gen_token){.text = "a", .len = 1});
    hr_reply_finish(r, 0, HR_FINISH_ERROR, 1, "GPU on fire");
    size_t len;
    char *s = hr_reply_take(r, &len);
    HR_CHECK(strstr(s, "\"message\":\"GPU on fire\"") && strstr(s, "data: [DONE]"),
             "stream error: %s", s);
    free(s);
    int status;
    json_t *b = hr_reply_body(r, &status);
    HR_CHECK(status == 500 && !strcmp(path_str(b, "error.type"), "server_error"), "500 body");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);
}

/* Invalid UTF-8 becomes U+FFFD in text (the body joins split sequences first); logprobs
 * keep the raw bytes. */
static void test_invalid_utf8(void) {
    hr_api_request *q =
        req(hr_parse_chat_request,
            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": true}");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    const char *p[] = {"a\xff", "\xe6\x97", "\xa5\xed\xa0\x80", NULL};
    script(r, p, HR_FINISH_STOP);
    int status;
    json_t *b = hr_reply_body(r, &status);
    HR_CHECK(!strcmp(path_str(b, "choices.0.message.content"),
                     "a\xef\xbf\xbd\xe6\x97\xa5\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
             "content [%s]", path_str(b, "choices.0.message.content"));
    HR_CHECK(path_int(b, "choices.0.logprobs.content.0.bytes.1") == 0xff, "bytes kept");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);
}

static void token(hr_reply *r, int choice, const char *text) {
    hr_reply_token(r, choice, &(hr_gen_token){.text = text, .len = strlen(text)});
}

static int count_done(const json_t *ev) {
    int n = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(ev, i, v) n += json_is_string(v) && !strcmp(json_string_value(v), "[DONE]");
    return n;
}

/* n = 3 streamed with the choices' events interleaved: each chunk names its choice, the
 * usage chunk and [DONE] come once, after the last choice finished. */
static void test_n_stream(void) {
    hr_api_request *q = req(hr_parse_chat_request,
                            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"n\": 3,"
                            " \"stream\": true, \"stream_options\": {\"include_usage\": true}}");
    HR_CHECK(q && q->n == 3, "request");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    hr_reply_begin(r, 1, 10, 6, 0);
    hr_reply_begin(r, 0, 10, 4, 0);
    token(r, 1, "b1");
    token(r, 0, "a1");
    hr_reply_begin(r, 2, 10, 8, 0);
    token(r, 2, "c1");
    token(r, 1, "b2");
    hr_reply_finish(r, 1, HR_FINISH_STOP, 2, NULL);
    token(r, 0, "a2");
    hr_reply_finish(r, 0, HR_FINISH_LENGTH, 2, NULL);
    size_t len;
    char *s = hr_reply_take(r, &len);
    HR_CHECK(s && !strstr(s, "[DONE]") && !strstr(s, "\"usage\":{"),
             "no [DONE] or usage while choice 2 runs: %s", s);
    free(s);
    hr_reply_finish(r, 2, HR_FINISH_STOP, 1, NULL);
    s = hr_reply_take(r, &len);
    json_t *names, *ev = sse_parse(s, &names);
    free(s);
    HR_CHECK(json_array_size(ev) == 3 && count_done(ev) == 1 &&
                 !strcmp(path_str(ev, "2"), "[DONE]"),
             "choice 2's finish, usage, [DONE]: %zu", json_array_size(ev));
    HR_CHECK(path_int(json_array_get(ev, 0), "choices.0.index") == 2 &&
                 !strcmp(path_str(json_array_get(ev, 0), "choices.0.finish_reason"), "stop"),
             "choice 2 finish chunk");
    json_t *u = json_array_get(ev, 1);
    HR_CHECK(path_int(u, "usage.prompt_tokens") == 10 &&
                 path_int(u, "usage.completion_tokens") == 5 &&
                 path_int(u, "usage.total_tokens") == 15 &&
                 path_int(u, "usage.prompt_tokens_details.cached_tokens") == 4,
             "usage: prompt once, completions summed, least cached");
    json_decref(ev);
    json_decref(names);
    hr_reply_free(r);
    hr_api_request_free(q);

    /* n = 2, choice 1 before choice 0: every chunk in order */
    q = req(hr_parse_chat_request, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}],"
                                   " \"n\": 2, \"stream\": true}");
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    const char *p0[] = {"x", "y", NULL}, *p1[] = {"z", NULL};
    script_choice(r, 1, p1, HR_FINISH_STOP);
    script_choice(r, 0, p0, HR_FINISH_LENGTH);
    s = hr_reply_take(r, &len);
    ev = sse_parse(s, &names);
    free(s);
    static const struct {
        int index;
        const char *path, *want;
    } want[] = {{1, "choices.0.delta.role", "assistant"}, {1, "choices.0.delta.content", "z"},
                {1, "choices.0.finish_reason", "stop"},   {0, "choices.0.delta.role", "assistant"},
                {0, "choices.0.delta.content", "x"},      {0, "choices.0.delta.content", "y"},
                {0, "choices.0.finish_reason", "length"}};
    size_t nw = sizeof want / sizeof *want;
    HR_CHECK(json_array_size(ev) == nw + 1 && count_done(ev) == 1, "%zu events",
             json_array_size(ev));
    for (size_t i = 0; i < nw; i++) {
        json_t *c = json_array_get(ev, i);
        HR_CHECK(path_int(c, "choices.0.index") == want[i].index &&
                     !strcmp(path_str(c, want[i].path), want[i].want),
                 "chunk %zu: index %lld, %s = %s", i, (long long)path_int(c, "choices.0.index"),
                 want[i].path, path_str(c, want[i].path));
    }
    json_decref(ev);
    json_decref(names);
    hr_reply_free(r);
    hr_api_request_free(q);
}

static void test_n_body(void) {
    hr_api_request *q = req(hr_parse_chat_request,
                            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"n\": 3}");
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    const char *p0[] = {"Hi", NULL}, *p1[] = {"Yo", " there", NULL}, *p2[] = {"Hey", NULL};
    script_choice(r, 2, p2, HR_FINISH_STOP);
    script_choice(r, 0, p0, HR_FINISH_STOP);
    script_choice(r, 1, p1, HR_FINISH_LENGTH);
    int status;
    json_t *b = hr_reply_body(r, &status);
    HR_CHECK(status == 200 && json_array_size(json_object_get(b, "choices")) == 3, "3 choices");
    HR_CHECK(path_int(b, "choices.0.index") == 0 && path_int(b, "choices.1.index") == 1 &&
                 path_int(b, "choices.2.index") == 2,
             "indices");
    HR_CHECK(!strcmp(path_str(b, "choices.0.message.content"), "Hi") &&
                 !strcmp(path_str(b, "choices.1.message.content"), "Yo there") &&
                 !strcmp(path_str(b, "choices.2.message.content"), "Hey") &&
                 !strcmp(path_str(b, "choices.1.finish_reason"), "length") &&
                 !strcmp(path_str(b, "choices.2.finish_reason"), "stop"),
             "per-choice content and finish");
    HR_CHECK(path_int(b, "usage.prompt_tokens") == 10 &&
                 path_int(b, "usage.completion_tokens") == 4 &&
                 path_int(b, "usage.total_tokens") == 14,
             "usage");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);

    q = req(hr_parse_completion_request, "{\"prompt\": \"x\", \"n\": 2}");
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    script_choice(r, 1, p1, HR_FINISH_STOP);
    script_choice(r, 0, p0, HR_FINISH_STOP);
    b = hr_reply_body(r, &status);
    HR_CHECK(!strcmp(path_str(b, "choices.0.text"), "Hi") && path_int(b, "choices.1.index") == 1 &&
                 !strcmp(path_str(b, "choices.1.text"), "Yo there") &&
                 path_int(b, "usage.completion_tokens") == 3,
             "completion choices");
    json_decref(b);
    hr_reply_free(r);
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    script_choice(r, 0, p0, HR_FINISH_STOP);
    hr_reply_finish(r, 1, HR_FINISH_ERROR, 0, "choice 1 failed");
    b = hr_reply_body(r, &status);
    HR_CHECK(status == 500 && !strcmp(path_str(b, "error.message"), "choice 1 failed"),
             "one failed choice fails the request");
    json_decref(b);
    hr_reply_free(r);
    hr_api_request_free(q);
}

/* The first tool call of choice 0 and whether any content came: from the streamed chunks
 * (stream) or the body. Returns the call as a new reference, NULL when none. */
static json_t *first_call(hr_reply *r, int stream, int *content) {
    json_t *call = NULL, *names = NULL, *all;
    *content = 0;
    if (stream) {
        size_t len, i;
        char *s = hr_reply_take(r, &len);
        all = sse_parse(s, &names);
        free(s);
        json_t *c;
        json_array_foreach(all, i, c) {
            json_t *d = json_object_get(json_array_get(json_object_get(c, "choices"), 0), "delta");
            if (!call) call = json_array_get(json_object_get(d, "tool_calls"), 0);
            *content |= json_string_length(json_object_get(d, "content")) > 0;
        }
    } else {
        int status;
        all = hr_reply_body(r, &status);
        json_t *c0 = json_array_get(json_object_get(all, "choices"), 0);
        json_t *msg = json_object_get(c0, "message");
        call = json_array_get(json_object_get(msg, "tool_calls"), 0);
        *content = json_string_length(json_object_get(msg, "content")) > 0;
    }
    json_incref(call);
    json_decref(all);
    json_decref(names);
    return call;
}

/* tool_choice named / required: the reply feeds the prefill to the parser before the
 * model's continuation, so the call comes out whole (body and stream). */
static void test_forced_tool_call(void) {
    static const struct {
        hr_tool_format fmt;
        const char *choice, *continuation;
    } cases[] = {
        {HR_TOOLS_QWEN, "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}",
         "{\"city\": \"Paris\"}}\n</tool_call>"},
        {HR_TOOLS_QWEN, "\"required\"",
         "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
        {HR_TOOLS_LLAMA3, "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}",
         "{\"city\": \"Paris\"}}"},
        {HR_TOOLS_LLAMA3, "\"required\"", "get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
        {HR_TOOLS_GEMMA, "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}",
         "city=\"Paris\")\n```"},
        {HR_TOOLS_GEMMA, "\"required\"", "get_weather(city=\"Paris\")\n```"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int stream = 0; stream < 2; stream++) {
            hr_server_backend be = BE;
            be.tool_format = cases[i].fmt;
            char body[512];
            snprintf(body, sizeof body,
                     "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream\": %s,"
                     " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": "
                     "\"get_weather\"}}], \"tool_choice\": %s}",
                     stream ? "true" : "false", cases[i].choice);
            hr_api_request *q = req(hr_parse_chat_request, body);
            HR_CHECK(q, "case %zu request", i);
            HR_CHECK_OK(hr_request_set_prefill(q, cases[i].fmt));
            hr_reply *r;
            HR_CHECK_OK(hr_reply_create(q, "m", 5, &be, &r));
            hr_reply_begin(r, 0, 10, 0, 0);
            for (const char *c = cases[i].continuation; *c; c++) /* byte by byte */
                hr_reply_token(r, 0, &(hr_gen_token){.text = c, .len = 1});
            hr_reply_finish(r, 0, HR_FINISH_STOP, (int)strlen(cases[i].continuation), NULL);
            int content;
            json_t *call = first_call(r, stream, &content);
            int ok = call && !strcmp(path_str(call, "function.name"), "get_weather") &&
                     !strcmp(path_str(call, "function.arguments"), "{\"city\":\"Paris\"}") &&
                     !content;
            json_decref(call);
            hr_reply_free(r);
            hr_api_request_free(q);
            HR_CHECK(ok, "case %zu (%s): no whole tool call", i, stream ? "stream" : "body");
        }
    }
}

/* Out of memory: the static 503 bodies are what hr_error_body builds, an error message cut
 * inside a character still makes a body, and a failed reply has no body and a stream that
 * ends, after its whole events so far, with the API's error event. */
static void test_out_of_memory(void) {
    static const hr_api_kind apis[] = {HR_API_CHAT, HR_API_COMPLETION, HR_API_MESSAGES,
                                       HR_API_RESPONSES};
    for (size_t i = 0; i < sizeof apis / sizeof *apis; i++) {
        json_t *b = hr_error_body(apis[i], 503, "out of memory");
        char *s = json_dumps(b, JSON_COMPACT);
        HR_CHECK(s && !strcmp(s, hr_oom_body(apis[i])), "api %zu: %s vs %s", i, s,
                 hr_oom_body(apis[i]));
        free(s);
        json_decref(b);
        b = hr_error_body(apis[i], 400, "cut \xe2\x82");
        HR_CHECK(b, "api %zu: no body for a message cut inside a character", i);
        json_decref(b);
    }
    static const struct {
        hr_err *(*parse)(const json_t *, const hr_request_limits *, hr_api_request **);
        const char *body, *event, *type;
    } streams[] = {
        {hr_parse_chat_request,
         "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
         "\"stream\": true}",
         "", "server_error"},
        {hr_parse_messages_request,
         "{\"max_tokens\": 9, \"stream\": true, \"messages\": [{\"role\": \"user\", "
         "\"content\": \"x\"}]}",
         "error", "api_error"},
    };
    for (size_t i = 0; i < sizeof streams / sizeof *streams; i++) {
        hr_api_request *q = req(streams[i].parse, streams[i].body);
        hr_reply *r;
        HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
        hr_reply_begin(r, 0, 3, 0, 0);
        size_t len;
        char *first = hr_reply_take(r, &len);
        HR_CHECK(len > 0 && !hr_reply_failed(r) && !hr_reply_fail_event(r, &len), "stream %zu", i);
        hr_reply_fail(r);
        token(r, 0, "Hi");
        hr_reply_finish(r, 0, HR_FINISH_STOP, 1, NULL);
        char *rest = hr_reply_take(r, &len);
        HR_CHECK(len == 0, "stream %zu: %zu bytes after the failure", i, len);
        const char *tail = hr_reply_fail_event(r, &len);
        json_t *names, *ev = tail ? sse_parse(tail, &names) : NULL;
        HR_CHECK(ev && len == strlen(tail) &&
                     !strcmp(path_str(json_array_get(ev, 0), "error.type"), streams[i].type) &&
                     !strcmp(path_str(json_array_get(ev, 0), "error.message"), "out of memory") &&
                     !strcmp(path_str(names, "0"), streams[i].event),
                 "stream %zu: error event %s", i, tail);
        HR_CHECK(i != 0 || !strcmp(path_str(ev, "1"), "[DONE]"), "OpenAI's ends with [DONE]");
        int status;
        HR_CHECK(!hr_reply_body(r, &status) && status == 503, "no body, 503");
        hr_reply_summary sum;
        hr_reply_summarize(r, &sum);
        HR_CHECK(sum.finish && !strcmp(sum.finish, "error"), "counted as an error");
        json_decref(ev);
        json_decref(names);
        free(first);
        free(rest);
        hr_reply_free(r);
        hr_api_request_free(q);
    }
    /* Responses: the error event takes the next sequence_number (created, in_progress: 0, 1) */
    json_t *j = json_loads("{\"input\": \"x\", \"stream\": true}", 0, NULL);
    hr_api_request *q = NULL;
    HR_CHECK_OK(hr_parse_responses_request(j, &BE.limits, NULL, &q));
    json_decref(j);
    hr_reply *r;
    HR_CHECK_OK(hr_reply_create(q, "m", 5, &BE, &r));
    hr_reply_begin(r, 0, 3, 0, 0);
    hr_reply_fail(r);
    size_t len;
    json_t *names, *ev = sse_parse(hr_reply_fail_event(r, &len), &names);
    HR_CHECK(path_int(json_array_get(ev, 0), "sequence_number") == 2 &&
                 !strcmp(path_str(json_array_get(ev, 0), "type"), "error") &&
                 !strcmp(path_str(names, "0"), "error"),
             "responses error event");
    json_decref(ev);
    json_decref(names);
    free(hr_reply_take(r, &len));
    hr_reply_free(r);
    hr_api_request_free(q);
}

int main(void) {
    HR_RUN(test_invalid_utf8);
    HR_RUN(test_chat_body);
    HR_RUN(test_chat_stream);
    HR_RUN(test_completion);
    HR_RUN(test_anthropic);
    HR_RUN(test_anthropic_body);
    HR_RUN(test_errors);
    HR_RUN(test_out_of_memory);
    HR_RUN(test_n_stream);
    HR_RUN(test_n_body);
    HR_RUN(test_forced_tool_call);
    return hr_test_summary();
}
