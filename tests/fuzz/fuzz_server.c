/* libFuzzer target for the engine-independent server code. Input: one selector byte,
 * then a request body, a NUL, and model output. The body goes through every request
 * parser (chat, completions, Anthropic messages, Responses); the output through the output parser
 * (whole and split must agree) and through a reply of each API, streamed and not (n > 1 and a
 * forced tool call's prefill included), whose every SSE data line must be valid JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/output_parse.h"
#include "server/reply.h"

static const hr_request_limits LIM = {.max_tokens_limit = 4096, .vocab_size = 1000};

typedef struct {
    char buf[1 << 18];
    size_t n;
} text;

/* Content, reasoning and tool calls, each kind concatenated: event boundaries may differ
 * between splits, what comes out per kind may not. */
typedef struct {
    text kind[3];
} outputs;

static void add(text *t, const char *s, size_t n) {
    if (t->n + n > sizeof t->buf) __builtin_trap(); /* inputs are capped well below this */
    memcpy(t->buf + t->n, s, n);
    t->n += n;
}

static void collect(void *ud, const hr_out_event *ev) {
    outputs *o = ud;
    text *t = &o->kind[ev->kind];
    if (ev->kind != HR_OUT_TOOL_CALL) {
        add(t, ev->text, ev->len);
        return;
    }
    add(t, ev->tool_name, strlen(ev->tool_name));
    add(t, ev->tool_args, strlen(ev->tool_args));
    add(t, "\n", 1);
}

static void parse_out(const hr_out_config *cfg, const char *s, size_t n, size_t step, outputs *o) {
    hr_out_parser *p;
    memset(o, 0, sizeof *o);
    if (hr_out_parser_create(cfg, collect, o, &p)) return;
    for (size_t off = 0; off < n; off += step)
        hr_out_parser_feed(p, s + off, n - off < step ? n - off : step);
    hr_out_parser_finish(p);
    hr_out_parser_free(p);
}

static void check_split_invariance(const hr_out_config *cfg, const char *s, size_t n, size_t step) {
    static outputs a, b;
    parse_out(cfg, s, n, n ? n : 1, &a);
    parse_out(cfg, s, n, step, &b);
    for (int k = 0; k < 3; k++)
        if (a.kind[k].n != b.kind[k].n || memcmp(a.kind[k].buf, b.kind[k].buf, a.kind[k].n))
            __builtin_trap();
}

static void check_sse(const char *s, size_t n) {
    if (!s) return;
    for (const char *p = s, *end = s + n; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) __builtin_trap();
        int done = nl - p == 12 && !memcmp(p, "data: [DONE]", 12);
        if (nl - p > 6 && !memcmp(p, "data: ", 6) && !done) {
            json_t *v = json_loadb(p + 6, (size_t)(nl - p - 6), JSON_ALLOW_NUL, NULL);
            if (!v) __builtin_trap();
            json_decref(v);
        }
        p = nl + 1;
    }
}

static const char *const REQS[] = {
    "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream\": true, \"logprobs\": "
    "true,"
    " \"stream_options\": {\"include_usage\": true}, \"tools\": [{\"type\": \"function\", "
    "\"function\": {\"name\": \"f\"}}]}",
    "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [{\"type\": "
    "\"function\", \"function\": {\"name\": \"f\"}}]}",
    "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"n\": 2, \"stream\": true,"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}],"
    " \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"f\"}}}",
    "{\"prompt\": \"x\", \"stream\": true, \"logprobs\": 2, \"n\": 2}",
    "{\"max_tokens\": 9, \"stream\": true, \"messages\": [{\"role\": \"user\", \"content\": "
    "\"x\"}],"
    " \"tools\": [{\"name\": \"f\", \"input_schema\": {}}]}",
    "{\"max_tokens\": 9, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}",
    "{\"input\": \"x\", \"stream\": true, \"tools\": [{\"type\": \"function\", \"name\": \"f\"}]}",
    "{\"input\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [{\"type\": "
    "\"function\", \"name\": \"f\"}], \"tool_choice\": \"required\"}",
};

static void run_replies(hr_tool_format fmt, const char *s, size_t n, size_t step) {
    hr_server_backend be = {.tool_format = fmt, .reasoning = 1, .limits = LIM};
    for (size_t i = 0; i < sizeof REQS / sizeof *REQS; i++) {
        json_t *j = json_loads(REQS[i], 0, NULL);
        hr_api_request *q = NULL;
        hr_err *e = i < 3   ? hr_parse_chat_request(j, &LIM, &q)
                    : i < 4 ? hr_parse_completion_request(j, &LIM, &q)
                    : i < 6 ? hr_parse_messages_request(j, &LIM, &q)
                            : hr_parse_responses_request(j, &LIM, NULL, &q);
        json_decref(j);
        hr_reply *r = NULL;
        if (e || hr_reply_create(q, "m", 1, &be, &r)) __builtin_trap();
        hr_err_free(hr_request_set_prefill(q, fmt)); /* HR_TOOLS_NONE: no prefill */
        for (int c = 0; c < q->n; c++)
            hr_reply_begin(r, c, 3, 1, 0);
        for (size_t off = 0; off < n; off += step) {
            size_t k = n - off < step ? n - off : step;
            hr_token_alt alt = {s + off, k, -1.0f};
            hr_gen_token t = {s + off, k, 1, s + off, k, -0.5f, &alt, 1};
            for (int c = 0; c < q->n; c++) /* the choices' tokens interleaved */
                hr_reply_token(r, c, &t);
        }
        for (int c = q->n - 1; c >= 0; c--)
            hr_reply_finish(r, c, n % 3 ? HR_FINISH_STOP : HR_FINISH_LENGTH, (int)n, NULL);
        size_t len;
        char *sse = hr_reply_take(r, &len);
        check_sse(sse, len);
        free(sse);
        int status;
        json_decref(hr_reply_body(r, &status));
        hr_reply_free(r);
        hr_api_request_free(q);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    uint8_t sel = data[0];
    const char *rest = (const char *)data + 1;
    size_t rn = size - 1;
    const char *nul = memchr(rest, 0, rn);
    size_t bn = nul ? (size_t)(nul - rest) : rn;
    json_t *body = json_loadb(rest, bn, 0, NULL);
    if (body) {
        hr_api_request *q = NULL;
        hr_err_free(hr_parse_chat_request(body, &LIM, &q));
        hr_api_request_free(q);
        q = NULL;
        hr_err_free(hr_parse_completion_request(body, &LIM, &q));
        hr_api_request_free(q);
        q = NULL;
        hr_err_free(hr_parse_messages_request(body, &LIM, &q));
        hr_api_request_free(q);
        q = NULL;
        hr_err_free(hr_parse_responses_request(body, &LIM, NULL, &q));
        hr_api_request_free(q);
        json_decref(body);
    }
    const char *out = nul ? nul + 1 : rest;
    size_t on = nul ? rn - bn - 1 : rn;
    hr_out_config cfg = {.reasoning = sel & 1,
                         .in_reasoning = (sel >> 1) & 1,
                         .tools = (hr_tool_format)((sel >> 2) % 4)};
    size_t step = 1 + (sel >> 4);
    check_split_invariance(&cfg, out, on, step);
    run_replies(cfg.tools, out, on, step);
    return 0;
}
